//! Listings of what a rule set holds: `c3 rules list` and `c3 devices`.

use crate::ir::domain_shown;
use crate::rules::{CostRule, RuleSet};

use super::ListFormat;

fn source(r: &CostRule) -> String {
    format!("{}:{}", r.origin.file, r.origin.line)
}

/// Every rule in force and the file it came from.
pub fn rules_list(rules: &RuleSet, format: ListFormat) -> String {
    match format {
        ListFormat::Json => {
            let list: Vec<serde_json::Value> = rules
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "op": r.op,
                        "domain": domain_shown(&r.domain),
                        "category": r.category,
                        "source": source(r),
                        "builtin": r.origin.builtin,
                    })
                })
                .collect();
            super::pretty::to_string(&list, 4096)
        }
        ListFormat::Table => {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
                .set_header(vec!["Op", "Domain", "Category", "Source"]);
            for r in rules.iter() {
                let src = if r.origin.builtin {
                    format!("{} (built-in)", source(r))
                } else {
                    source(r)
                };
                t.add_row(
                    [r.op.as_str(), domain_shown(&r.domain), &r.category, &src]
                        .map(|c| super::text::shown(c).into_owned()),
                );
            }
            format!("{t}\n{} rules\n", rules.len())
        }
    }
}

/// The device catalog.
pub fn devices(rules: &RuleSet, format: ListFormat) -> String {
    match format {
        ListFormat::Json => {
            let list: Vec<serde_json::Value> = rules
                .devices
                .iter()
                .map(|d| {
                    let mut v = serde_json::json!({
                        "name": d.key,
                        "description": d.name,
                        "aliases": d.aliases,
                        "peak_flops": d.peak,
                        "bandwidth": d.bandwidth,
                        "source": d.source,
                        "peak_counts": d.peak_counts.key(),
                    });
                    if let Some(m) = d.memory {
                        v["memory_gib"] = serde_json::json!(m as f64 / (1u64 << 30) as f64);
                    }
                    if let Some(c) = &d.calibration {
                        v["calibration"] = serde_json::json!({
                            "date": c.date,
                            "runtime": c.runtime,
                            "provider": c.provider,
                            "threads": c.threads,
                            "reports": c.reports,
                            "kernels": c.kernels,
                            "models": c.models,
                            "error": c.error.map(|e| serde_json::json!({"median": e.median, "worst": e.worst})),
                        });
                    }
                    if let Some(t) = &d.time {
                        v["time_groups"] = serde_json::json!(t.groups.len());
                    }
                    v
                })
                .collect();
            super::pretty::to_string(&list, 4096)
        }
        ListFormat::Table => {
            let header = [
                "Device",
                "Name (aliases)",
                "FP32",
                "FP16",
                "BF16",
                "FP8",
                "INT8",
                "GB/s",
            ];
            let rows = rules
                .devices
                .iter()
                .map(|d| {
                    let tf = |p: &str| {
                        d.peak_tera(p)
                            .map_or("-".to_string(), |v| format!("{v:.1}"))
                    };
                    vec![
                        super::text::shown(&d.key).into_owned(),
                        super::text::shown(&if d.aliases.is_empty() {
                            d.name.clone()
                        } else {
                            format!("{} ({})", d.name, d.aliases.join(", "))
                        })
                        .into_owned(),
                        tf("fp32"),
                        tf("fp16"),
                        tf("bf16"),
                        tf("fp8"),
                        tf("int8"),
                        format!("{:.1}", d.bandwidth_giga()),
                    ]
                })
                .collect();
            let grid = super::Grid {
                title: String::new(),
                header: header.iter().map(|h| h.to_string()).collect(),
                keys: Vec::new(),
                numeric: header.iter().map(|h| !h.starts_with(['D', 'N'])).collect(),
                rows,
            };
            // On a terminal, fitted to its width: the keys a user types and
            // the figures keep theirs, the names wrap, rare precisions go.
            let width = super::terminal_width(std::io::IsTerminal::is_terminal(&std::io::stdout()));
            let (t, note) = super::fit::fitted_rows(&grid, width, false, false, true);
            let t = match note {
                Some(n) => format!("{t}\n{n}"),
                None => t,
            };
            let mut out = format!(
                "{t}\nPeaks in TFLOP/s (TOPS for INT8), dense; {} devices. Sources: c3 devices --format json\n",
                rules.devices.len()
            );
            // Calibrated devices say where their predictions come from.
            for d in rules.devices.iter() {
                let Some(c) = &d.calibration else { continue };
                let mut what: Vec<String> = Vec::new();
                what.extend(c.runtime.clone());
                what.extend(c.provider.clone());
                what.extend(
                    c.threads
                        .map(|n| format!("{n} thread{}", if n == 1 { "" } else { "s" })),
                );
                let error = c.error.map_or(String::new(), |e| {
                    format!(
                        "; totals of its models, each predicted without it: median error {:.1}%, worst {:.1}%",
                        100.0 * e.median,
                        100.0 * e.worst
                    )
                });
                out.push_str(&super::text::shown(&format!(
                    "{}: calibrated {} on {} from {} models ({} kernels){error}; {}",
                    d.key,
                    c.date.as_deref().unwrap_or("(undated)"),
                    what.join(", "),
                    c.models.len(),
                    c.kernels.unwrap_or(0),
                    d.origin
                )));
                out.push('\n');
            }
            super::fit::wrap_prose(&out, width)
        }
    }
}
