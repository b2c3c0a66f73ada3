//! c3: the theoretical cost of a neural network's forward pass, layer by layer.
//!
//! Data moves one way, through these stages:
//!
//! 1. **load**: [`onnx`] decodes a model file into [`proto`] messages
//!    (zero-copy, checked against the [`ir`] limits); [`trace`] reads an
//!    operator trace.
//! 2. **shape inference**, on the protobuf, before any IR exists:
//!    [`onnx::infer`] walks the ONNX graph and asks [`shape`] for each op's
//!    output types and shapes (symbolic dimensions are [`ir::dim`] values).
//! 3. **IR**: the result becomes an [`ir::Graph`] (a trace becomes one
//!    directly).
//! 4. **cost**: [`cost`] applies the [`rules`] to every node, then applies
//!    fusion patterns and the roofline of a device ([`cost::fusion`],
//!    [`cost::roofline`](mod@cost::roofline)).
//! 5. **report**: [`report`] renders a cost report as a table, CSV, Markdown
//!    or JSON, and renders rule and device listings.
//!
//! Below the stages: [`ir`] (the graph, dtypes, domains, size limits),
//! [`proto`], [`error`], and [`rules`], the pack data the cost stage reads
//! (cost rules, device catalog, fusion definitions), and `threads`, the
//! second thread a large model's work is shared with. [`docs`] renders
//! DETAILS.md from the rules. No module imports one above it;
//! `scripts/module_graph.sh` checks that there is no cycle.
//!
//! ```
//! use c3::cost::estimate;
//! use c3::rules::{CountOptions, RuleSet};
//!
//! let trace = br#"{"layers": [{"op": "Relu", "inputs": [{"shape": [1, 64]}],
//!                               "outputs": [{"shape": [1, 64]}]}]}"#;
//! let graph = c3::trace::parse_trace(trace, "inline").unwrap();
//! let rules = RuleSet::builtin().unwrap();
//! let report = estimate(&graph, &rules, CountOptions::default()).unwrap();
//! assert_eq!(report.total.flops, 64); // one max per element
//! assert_eq!(report.total.mread, 64 * 4); // the float32 input, read once
//! assert_eq!(report.layers[0].name, "Relu-1");
//! ```

pub mod calibrate;
mod cli;
pub mod commands;
pub mod cost;
pub mod docs;
pub mod error;
/// The fuzz targets' entry points: only with the `fuzzing` feature (the
/// fuzz crate and the tests turn it on), not part of the library's API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz;
pub mod ir;
pub mod model;
pub mod onnx;
pub mod output;
pub mod profile;
pub mod proto;
pub mod report;
pub mod rules;
pub mod shape;
pub(crate) mod threads;
pub mod trace;

pub use error::{Error, Result};
/// Symbolic integers, at their old path: they live in [`ir::dim`].
pub use ir::dim;
pub use model::{Estimate, EstimateOptions, Model, Shapes};
pub use report::ReportOptions;

/// Set when the process ends with the command it runs (the binary).
static EXITS_AFTER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the commands that the process exits once the one it runs is done
/// (the binary, not a binding that runs many): what they made need not be
/// freed.
fn exit_after_command() {
    EXITS_AFTER.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the process ends with the command it runs: the `c3` binary, not
/// a program using the library (which a batch may then run again, one
/// model a process).
pub(crate) fn exits_after_command() -> bool {
    EXITS_AFTER.load(std::sync::atomic::Ordering::Relaxed)
}

/// Lets go of a large result. Freeing a large model's graph and report
/// piece by piece costs more than writing them (a tenth of an estimate's
/// work): a process about to exit leaves that to the system; otherwise
/// another thread does it, and the caller does not wait (or, when the
/// system refuses the thread, the caller does it).
pub(crate) fn release<T: Send + 'static>(result: T) {
    if EXITS_AFTER.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(result);
    } else {
        // A refused thread's closure, `result` with it, is dropped here.
        let _ = std::thread::Builder::new().spawn(move || drop(result));
    }
}

/// Runs the `c3` command line on the process's arguments, writes its output
/// and errors, and returns the exit code: the whole of the `c3` binary.
/// The flags themselves are not public API; call [`Model`] from code.
pub fn run_cli() -> i32 {
    exit_after_command();
    cli::main()
}

/// Ends a process whose output is written (the binary, after
/// [`run_cli`]): standard output and error are flushed, and exit handlers
/// are not run. Those left are the allocator's tidying of memory the system
/// is about to take back (mimalloc's walks and purges its pages: some 5 ms
/// on a large model).
pub fn exit(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(unix)]
    // SAFETY: ends the process; nothing runs after it.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

/// Runs a `c3` command line given as arguments, without the program name
/// (`["devices", "--format", "json"]`), and returns what it prints on
/// standard output: how language bindings reach `explain`, `devices` and
/// `rules list`. A bad argument is an [`Error::Usage`] with the one-line
/// message the binary prints.
pub fn run_args(args: Vec<String>) -> Result<String> {
    cli::run_args(args)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// A small model (AlexNet, 40 nodes, 4 KB) is read, estimated with a
    /// device, reported in every format and listed by `shapes` without
    /// asking how many cores there are: that is a dozen system calls, a
    /// tenth of such a run, and no work of it is shared.
    #[test]
    fn a_small_model_never_asks_for_the_core_count() {
        use crate::report::{Format, ReportOptions};
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/onnx/light_bvlc_alexnet.onnx"
        );
        let asked = || crate::threads::ASKED.with(std::cell::Cell::get);
        let before = asked();
        let opts = crate::EstimateOptions {
            device: Some("h100".into()),
            ..crate::EstimateOptions::default()
        };
        let e = crate::Model::estimate_file(path, &opts).unwrap();
        // The run did its work: 40 nodes, of which the 16 ConstantOfShape
        // that make the weights fold away, leave 24 layers.
        assert_eq!(e.report.layers.len(), 24);
        assert!(e.roofline.is_some());
        for format in <Format as clap::ValueEnum>::value_variants() {
            let report = ReportOptions {
                format: *format,
                ..ReportOptions::default()
            };
            let mut text = Vec::new();
            e.write(&report, &mut text).unwrap();
            assert!(text.len() > 1000, "{format:?}: {} bytes", text.len());
        }
        let shapes = crate::Model::open(path)
            .unwrap()
            .shapes(&Default::default(), &Default::default())
            .unwrap();
        // The input, the 17 initializers and the 42 outputs of the nodes.
        assert_eq!(shapes.inferred.values.len(), 1 + 17 + 42);
        assert_eq!(asked() - before, 0);
    }

    /// A large model (5,000 nodes, 2 MB: every helper thread wanted) is
    /// estimated the same when the system refuses every helper thread: the
    /// skim's looker, the outline and ordering halves, the producers beside
    /// the initializers, the decoding ahead, the recorder, the costing, the
    /// weights' tally and the Markdown rows all run on this one.
    #[test]
    fn a_large_model_is_estimated_the_same_on_one_thread() {
        use crate::onnx::build::{self, FLOAT, GraphBuilder, node, sized_value, untyped};
        let n = 5_000;
        let mut g = GraphBuilder::new()
            .input(sized_value("v0", FLOAT, &[1, 512]))
            .initializer(build::raw_tensor(
                "w",
                FLOAT,
                &[512, 1024],
                Some(vec![0; 512 * 1024 * 4]),
            ))
            .node(node("MatMul", &["v0", "w"], &["m"]))
            .node(node("Relu", &["m"], &["v1"]));
        for i in 1..n {
            let (x, y) = (format!("v{i}"), format!("v{}", i + 1));
            let op = if i % 2 == 0 { "Relu" } else { "Sigmoid" };
            g = g.node(node(op, &[&x], &[&y]));
        }
        let m = g.output(untyped(&format!("v{n}"))).model(17);
        let dir = std::env::temp_dir().join(format!("c3-one-thread-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("large.onnx");
        std::fs::write(&path, build::encode(&m)).unwrap();
        let path = path.to_str().unwrap();
        let opts = crate::EstimateOptions::default();
        let md = crate::report::ReportOptions {
            format: crate::report::Format::Md,
            ..crate::report::ReportOptions::default()
        };
        let run = |refuse: bool| {
            crate::threads::refuse_threads(refuse);
            let before = crate::threads::STARTED.with(std::cell::Cell::get);
            let e = crate::Model::estimate_file(path, &opts).unwrap();
            let mut text = Vec::new();
            e.write(&md, &mut text).unwrap();
            crate::threads::refuse_threads(false);
            let started = crate::threads::STARTED.with(std::cell::Cell::get) - before;
            (e.to_json(), text, started)
        };
        let (json, text, started) = run(false);
        assert!(
            json.contains("\"layers\": 5001"),
            "{}",
            &json[..json.len().min(400)]
        );
        // The looker, the outline's second half, the producers (listed
        // beside the initializers' facts), the ordering's second half, the
        // decoder, the recorder, the unbound symbols' second half, the
        // costing's second thread (live bytes beside the layers' costs, and
        // layers from the back) and the weights' tally's two (the second
        // half of the layers' sources, then of the names), when the machine
        // has two cores.
        if crate::threads::two_cores() {
            assert_eq!(started, 10);
        }
        assert_eq!(run(true), (json, text, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
