//! Issue 12, item 7: any Unicode name, in any name position, is text. A
//! model whose node, op, domain, tensor, symbol and attribute names and
//! file name are random (control characters, escape sequences, direction
//! marks, multi-byte characters included) is estimated in every format and
//! its shapes listed: nothing panics, no human format carries a raw control
//! character, JSON keeps every name exactly.

use super::*;
use c3::model::{EstimateOptions, Model};
use c3::report::{Format, ListFormat, ReportOptions};
use proptest::prelude::*;

/// A name: random characters of any kind, or a known-nasty one.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<char>(), 1..10).prop_map(String::from_iter),
        prop::sample::select(vec![
            "\x1b[2J\x1b[H",
            "\x1b]0;pwned\x07",
            "a\nb\r\nc",
            "x|y|z",
            "\u{202e}txt.exe",
            "ß-1",
            "日本語",
            "\u{9b}31m",
        ])
        .prop_map(String::from),
    ]
}

/// Characters no human format may print as themselves (newlines end lines
/// and are allowed as such).
fn raw_control(s: &str) -> Option<char> {
    s.chars().find(|&c| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
    })
}

/// x[sym, 8] -> Relu (named `node`, attribute `attr`) -> `tensor` -> `op` of
/// `domain` -> y.
fn model_bytes(
    node_name: &str,
    op: &str,
    domain: &str,
    tensor: &str,
    sym: &str,
    attr: &str,
) -> Vec<u8> {
    let mut relu = build::node("Relu", &["x"], &[tensor]);
    relu.name = Some(node_name.to_string());
    relu.attribute.push(build::int(attr, 1));
    let mut custom = build::node(op, &[tensor], &["y"]);
    custom.domain = Some(domain.to_string());
    let g = GraphProto {
        name: Some("main".into()),
        node: vec![relu, custom],
        input: vec![build::value("x", build::tensor_type(FLOAT, &[sym, "8"]))],
        output: vec![untyped("y")],
        ..Default::default()
    };
    let mut m = model(g);
    if !domain.is_empty() {
        m.opset_import.push(opset(domain, 1));
    }
    m.encode_to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn any_name_is_printed_as_text(
        node_name in name(),
        op in name(),
        domain in name(),
        tensor in name(),
        sym in name(),
        attr in name(),
        file in name(),
    ) {
        let bytes = model_bytes(&node_name, &op, &domain, &tensor, &sym, &attr);
        let model = match Model::from_bytes(bytes.clone(), &file) {
            Ok(m) => m,
            Err(e) => {
                // What the CLI prints: one line, no raw control character.
                let line = c3::error::one_line(&c3::report::text::shown(&e.to_string()));
                prop_assert!(raw_control(&line).is_none() && !line.contains('\n'), "{line:?}");
                return Ok(());
            }
        };
        let opts = EstimateOptions { device: Some("h100".into()), ..Default::default() };
        match model.estimate(&opts) {
            Ok(est) => {
                for format in [Format::Table, Format::Md, Format::Csv] {
                    let out = est.render(&ReportOptions { format, ..Default::default() });
                    prop_assert!(raw_control(&out).is_none(), "{format:?}: {out:?}");
                }
                for format in [Format::Html, Format::ModelExplorer] {
                    let _ = est.render(&ReportOptions { format, ..Default::default() });
                }
                let json: serde_json::Value = serde_json::from_str(
                    &est.render(&ReportOptions { format: Format::Json, ..Default::default() }),
                )
                .unwrap();
                // JSON keeps the node's name exactly (an empty one is named
                // after its op).
                if !node_name.is_empty() {
                    let names: Vec<&str> = json["layers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|l| l["name"].as_str())
                        .collect();
                    prop_assert!(names.contains(&node_name.as_str()), "{names:?}");
                }
            }
            Err(e) => {
                let line = c3::error::one_line(&c3::report::text::shown(&e.to_string()));
                prop_assert!(raw_control(&line).is_none() && !line.contains('\n'), "{line:?}");
            }
        }
        let model = Model::from_bytes(bytes, &file).unwrap();
        match model.shapes(&Default::default(), &Default::default()) {
            Ok(s) => {
                let table = c3::report::shapes::shapes(&s.inferred, ListFormat::Table, &s.meta);
                prop_assert!(raw_control(&table).is_none(), "{table:?}");
                let _ = c3::report::shapes::shapes(&s.inferred, ListFormat::Json, &s.meta);
            }
            Err(e) => {
                let line = c3::error::one_line(&c3::report::text::shown(&e.to_string()));
                prop_assert!(raw_control(&line).is_none(), "{line:?}");
            }
        }
    }
}
