//! Every ONNX operator has a cost rule and a shape function (issue 4).
//!
//! The operator lists are committed fixtures: `tests/fixtures/onnx_operators.txt`
//! is every schema of the onnx package (written by `scripts/onnx_operators.py`),
//! `tests/fixtures/microsoft_operators.txt` the onnxruntime contrib operators
//! c3 claims to support. A test fails naming every operator that lacks either.

use std::collections::BTreeSet;

/// One line of an operator list: domain (empty for ai.onnx), op, and for the
/// ONNX list the newest since_version and whether it is deprecated.
#[derive(Debug)]
struct Listed {
    domain: String,
    op: String,
    deprecated: bool,
}

fn read_list(name: &str) -> Vec<Listed> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 2, "{path}:{}: want tab-separated fields", i + 1);
            Listed {
                domain: f[0].to_string(),
                op: f[1].to_string(),
                deprecated: f.get(3) == Some(&"yes"),
            }
        })
        .collect()
}

fn onnx_list() -> Vec<Listed> {
    let list = read_list("onnx_operators.txt");
    // onnx 1.23.2 has 203 ai.onnx, 19 ai.onnx.ml, 4 training and 1 preview operators.
    assert_eq!(list.len(), 203 + 19 + 4 + 1);
    list
}

/// The (domain, op) pairs of `list` that fail `supported`.
fn missing(list: &[Listed], supported: impl Fn(&str, &str) -> bool) -> Vec<String> {
    list.iter()
        .filter(|l| !supported(&l.domain, &l.op))
        .map(|l| c3::rules::rule::qualified(&l.domain, &l.op))
        .collect()
}

#[test]
fn every_onnx_operator_has_a_cost_rule() {
    let rules = c3::rules::RuleSet::builtin().unwrap();
    let list = onnx_list();
    let gaps = missing(&list, |d, o| rules.get(d, o).is_some());
    assert!(gaps.is_empty(), "no cost rule: {}", gaps.join(", "));
    // Deprecated operators still appear in older models (Upsample before
    // opset 10's Resize, Scatter before ScatterElements, the ML tree
    // ensembles before TreeEnsemble), so they are costed like the rest.
    let deprecated: Vec<_> = list.iter().filter(|l| l.deprecated).collect();
    assert_eq!(deprecated.len(), 4, "{deprecated:?}");
}

#[test]
fn every_onnx_operator_has_a_shape_function() {
    let gaps = missing(&onnx_list(), |d, o| c3::shape::registry(d, o).is_some());
    assert!(gaps.is_empty(), "no shape function: {}", gaps.join(", "));
}

#[test]
fn every_claimed_microsoft_operator_has_a_rule_and_a_shape_function() {
    let rules = c3::rules::RuleSet::builtin().unwrap();
    let list = read_list("microsoft_operators.txt");
    let gaps = missing(&list, |d, o| {
        rules.get(d, o).is_some() && c3::shape::registry(d, o).is_some()
    });
    assert!(
        gaps.is_empty(),
        "rule or shape function missing: {}",
        gaps.join(", ")
    );
    // The list is complete: every com.microsoft operator with a shape
    // function or a rule is on it, so a new one must be added there (and so
    // get both).
    let listed: BTreeSet<(String, String)> = list
        .iter()
        .map(|l| (l.domain.clone(), l.op.clone()))
        .collect();
    let mut unlisted: BTreeSet<String> = c3::shape::supported_ops()
        .into_iter()
        .filter(|(d, _)| *d == "com.microsoft")
        .filter(|(d, o)| !listed.contains(&(d.to_string(), o.to_string())))
        .map(|(d, o)| c3::rules::rule::qualified(d, o))
        .collect();
    unlisted.extend(
        rules
            .iter()
            .filter(|r| r.domain == "com.microsoft")
            .filter(|r| !listed.contains(&(r.domain.clone(), r.op.clone())))
            .map(|r| r.qualified_name()),
    );
    assert!(
        unlisted.is_empty(),
        "add to microsoft_operators.txt: {unlisted:?}"
    );
}

#[test]
fn every_shape_function_is_on_a_list_and_has_a_rule() {
    // The other direction: nothing c3 infers shapes for goes uncosted, and
    // nothing outside the two lists is claimed silently.
    let rules = c3::rules::RuleSet::builtin().unwrap();
    let mut listed: BTreeSet<(String, String)> = BTreeSet::new();
    for l in onnx_list()
        .into_iter()
        .chain(read_list("microsoft_operators.txt"))
    {
        listed.insert((l.domain, l.op));
    }
    let mut no_rule = Vec::new();
    let mut unlisted = Vec::new();
    for (d, o) in c3::shape::supported_ops() {
        let name = c3::rules::rule::qualified(d, o);
        if rules.get(d, o).is_none() {
            no_rule.push(name.clone());
        }
        if !listed.contains(&(d.to_string(), o.to_string())) {
            unlisted.push(name);
        }
    }
    assert!(no_rule.is_empty(), "shape function, no rule: {no_rule:?}");
    assert!(unlisted.is_empty(), "on neither list: {unlisted:?}");
}
