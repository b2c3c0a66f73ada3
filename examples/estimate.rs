//! The library in a few lines: load a model, estimate its forward pass on a
//! device, read the figures and render a report.
//!
//! `cargo run --example estimate` costs ResNet50 (the light model shipped
//! in examples/onnx); `cargo run --example estimate -- MODEL.onnx` costs
//! another model or operator trace.

use c3::report::{Format, Parts};
use c3::{EstimateOptions, Model, ReportOptions};

fn main() -> Result<(), c3::Error> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/onnx/light_resnet50.onnx"
        )
        .to_string()
    });
    let model = Model::open(&path)?;

    // The built-in rules, a multiply-add counted as one FLOP, batch 1, and
    // roofline times on an A100.
    let opts = EstimateOptions {
        device: Some("a100".into()),
        ..EstimateOptions::default()
    };
    let estimate = model.estimate(&opts)?;

    let total = &estimate.report.total;
    println!("{path}");
    println!("  {} layers", estimate.report.layers.len());
    println!("  {:.3} GFLOPs", total.flops as f64 / 1e9);
    println!(
        "  {:.1} MiB read, {:.1} MiB written",
        mib(total.mread),
        mib(total.mwrite)
    );
    if let Some(roofline) = &estimate.roofline {
        println!(
            "  at least {:.3} ms on {} (roofline, layer by layer)",
            roofline.bound_s * 1e3,
            roofline.device.name
        );
    }

    // The same per-operator-type summary `c3 estimate --summary` prints.
    let text = estimate.render(&ReportOptions {
        format: Format::Md,
        parts: Parts::Summary,
        ..ReportOptions::default()
    });
    print!("{text}");
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
