//! The command line's conventions (issue 13, items 10 to 14): `explain`
//! infers and checks shapes, `rules check` reports every error, shell
//! completions and a man page, `--version` everywhere, aliases of devices,
//! symbolic shapes as lists.

use crate::common::cli::{C3, Run};

fn c3(args: &[&str]) -> Run {
    C3::new().args(args).run()
}

#[test]
fn explain_infers_the_outputs_with_the_models_shape_inference() {
    // ResNet50's first convolution, no Y given: Y = 1x64x112x112 since
    // (224 + 3 + 3 - 7) / 2 + 1 = 112; flops = 64 * 112 * 112 outputs
    // times a 3 * 7 * 7 = 147 window = 118013952.
    let r = c3(&[
        "explain",
        "Conv",
        "--in",
        "X=1x3x224x224",
        "--in",
        "W=64x3x7x7",
        "--attr",
        "strides=2,2",
        "--attr",
        "pads=3,3,3,3",
    ]);
    r.ok();
    assert!(r.stdout.contains("  flops  = 118013952\n"), "{}", r.stdout);
    // 64 * 112 * 112 float32 outputs written: 802816 * 4 bytes.
    assert!(
        r.stdout.contains("  mwrite = 3211264 bytes\n"),
        "{}",
        r.stdout
    );
    // Gemm infers Y = 2x5 from A = 2x3 and B = 3x5: 2 * 5 * 3 = 30 MACs.
    let r = c3(&["explain", "Gemm", "--in", "A=2x3", "--in", "B=3x5"]);
    r.ok();
    assert!(r.stdout.contains("  mwrite = 40 bytes\n"), "{}", r.stdout);
}

#[test]
fn explain_refuses_shapes_that_contradict_the_operator() {
    // A 3-d X with a 2-d kernel.
    let r = c3(&["explain", "Conv", "--in", "X=1x3x224", "--in", "W=64x3x7x7"]);
    let e = r.one_line_error(1);
    assert!(e.contains("Conv: the shapes given do not fit"), "{e}");
    // A given output that the inputs do not produce.
    let r = c3(&["explain", "Relu", "--in", "X=1x3", "--in", "Y=1x4"]);
    let e = r.one_line_error(1);
    assert!(e.contains("Relu gives Y the shape 1x3, not 1x4"), "{e}");
    // Gemm's inner dimensions differ.
    let r = c3(&["explain", "Gemm", "--in", "A=2x3", "--in", "B=4x5"]);
    let e = r.one_line_error(1);
    assert!(e.contains("3 does not match 4"), "{e}");
}

#[test]
fn explain_takes_a_domain_either_way_and_suggests_names() {
    for name in ["com.microsoft.Attention", "com.microsoft::Attention"] {
        let r = c3(&["explain", name]);
        r.ok();
        assert!(
            r.stdout.starts_with("com.microsoft::Attention — "),
            "{}",
            r.stdout
        );
    }
    for (typo, meant) in [
        ("Conx", "Conv"),
        ("matmull", "MatMul"),
        ("com.microsoft.Atention", "com.microsoft::Attention"),
    ] {
        let r = c3(&["explain", typo]);
        let e = r.one_line_error(1);
        assert!(e.contains(&format!("did you mean '{meant}'?")), "{e}");
    }
    // Nothing near: no guess.
    let e = c3(&["explain", "xyzzy"]).one_line_error(1).to_string();
    assert!(!e.contains("did you mean"), "{e}");
}
