//! Each model of a batch in a process of its own: whatever one model does
//! (a memory bomb, an abort, a stack overflow), the others are still
//! reported. The `c3` binary runs itself again, with the same arguments and
//! the model in [`CHILD_MODEL`]; the child estimates that one model and
//! writes its outcome on standard output (one header line of JSON, then the
//! model's JSON report when the batch is JSON). A library caller, or a
//! system that refuses the process, runs the batch in its own process.

use std::io::Read;
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::json;

use crate::cost::Totals;
use crate::error::Result;
use crate::report::batch::{BatchFigures, BatchRow};
use crate::report::diff::Side;

/// The environment variable that makes `c3 estimate` the child estimating
/// one model of a batch (the model's path).
pub const CHILD_MODEL: &str = "C3_BATCH_CHILD";

/// What a child says of a model that ended it, at most: the first line of
/// its standard error.
const MAX_CHILD_STDERR: u64 = 64 * 1024;

/// The model this process estimates as a batch's child, when it is one.
pub(super) fn child_model() -> Option<String> {
    if !crate::exits_after_command() {
        return None;
    }
    let model = std::env::var(CHILD_MODEL).ok()?;
    // The first process the system ends when memory runs out: this one,
    // not the batch or another program.
    #[cfg(target_os = "linux")]
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
    Some(model)
}

/// Whether the models are estimated in children: only the binary runs
/// itself again, and only for more than one model.
pub(super) fn in_children(models: &[String]) -> bool {
    crate::exits_after_command() && models.len() > 1
}

/// The child's side: the outcome of `figures` on standard output, the exit
/// code 0 once it is written (the model's own exit code is in the header).
pub(super) fn child(outcome: Result<BatchFigures>) -> Result<String> {
    let (header, report) = match outcome {
        Ok(f) => {
            let header = json!({
                "totals": f.total.totals,
                "live": f.total.live,
                "bound_s": f.total.bound_s,
                "unsupported": f.unsupported,
            });
            (header, f.json)
        }
        Err(e) => (
            json!({"error": crate::error::one_line(&e.to_string()), "exit_code": e.exit_code()}),
            None,
        ),
    };
    let mut out = header.to_string();
    out.push('\n');
    if let Some(r) = report {
        out.push_str(&r);
    }
    Ok(out)
}

/// A model's figures, or its error's one line and exit code.
type Outcome = std::result::Result<BatchFigures, (String, i32)>;

/// The parent's side: `model` estimated by a child; `None` when the system
/// refuses to start one (the caller then estimates it here).
pub(super) fn run_child(model: &str) -> Option<Outcome> {
    let exe = std::env::current_exe().ok()?;
    let stdin = match model == crate::output::STDOUT {
        true => Stdio::inherit(),
        false => Stdio::null(),
    };
    let mut child = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD_MODEL, model)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // Standard error is read on a thread of its own, so that neither pipe
    // fills while the other is read (where the system refuses the thread,
    // after standard output: a child writes little there).
    let err_pipe = child.stderr.take();
    let (stdout, stderr) = std::thread::scope(|threads| {
        let reader =
            crate::threads::spawn_with(std::thread::Builder::new(), threads, err_pipe, read_err);
        let mut stdout = Vec::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_end(&mut stdout);
        }
        let stderr = match reader {
            Ok(thread) => crate::threads::joined(thread),
            Err(pipe) => read_err(pipe),
        };
        (stdout, stderr)
    });
    let status = child.wait();
    let stderr = String::from_utf8_lossy(&stderr);
    // What the child printed besides its outcome (a warning) goes on.
    let said = |text: &str| {
        for line in text.lines().filter(|l| !l.is_empty()) {
            eprintln!("{line}");
        }
    };
    let ended = |how: String| {
        let why = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let sep = if why.is_empty() { "" } else { ": " };
        let line = format!("estimating it ended its process ({how}){sep}{why}");
        Err((crate::error::one_line(&line), 2))
    };
    let status = match status {
        Ok(s) => s,
        Err(e) => return Some(ended(format!("not waited for: {e}"))),
    };
    if !status.success() {
        return Some(ended(describe(status)));
    }
    let (header, report) = match stdout.iter().position(|&b| b == b'\n') {
        Some(i) => (&stdout[..i], &stdout[i + 1..]),
        None => (&stdout[..], &[][..]),
    };
    let Ok(header) = serde_json::from_slice::<serde_json::Value>(header) else {
        return Some(ended("no outcome written".into()));
    };
    said(&stderr);
    if let Some(e) = header.get("error").and_then(|e| e.as_str()) {
        let code = header
            .get("exit_code")
            .and_then(serde_json::Value::as_i64)
            .and_then(|c| i32::try_from(c).ok())
            .unwrap_or(2);
        return Some(Err((e.to_string(), code)));
    }
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let Ok(totals) = Totals::deserialize(&header["totals"]) else {
        return Some(ended("no outcome written".into()));
    };
    Some(Ok(BatchFigures {
        total: Side {
            totals,
            live: n(&header["live"]),
            bound_s: header["bound_s"].as_f64(),
        },
        unsupported: n(&header["unsupported"]) as usize,
        json: (!report.is_empty()).then(|| String::from_utf8_lossy(report).into_owned()),
    }))
}

/// A child's standard error to its end, its first bytes kept.
fn read_err(pipe: Option<std::process::ChildStderr>) -> Vec<u8> {
    let mut kept = Vec::new();
    if let Some(mut p) = pipe {
        let _ = (&mut p).take(MAX_CHILD_STDERR).read_to_end(&mut kept);
        let _ = std::io::copy(&mut p, &mut std::io::sink());
    }
    kept
}

/// How a process ended that did not end well.
fn describe(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                libc::SIGABRT => ", SIGABRT: an abort",
                libc::SIGKILL => ", SIGKILL: out of memory, or killed",
                libc::SIGSEGV => ", SIGSEGV: a crash",
                libc::SIGBUS => ", SIGBUS",
                _ => "",
            };
            return format!("signal {sig}{name}");
        }
    }
    match status.code() {
        Some(c) => format!("exit code {c}"),
        None => "ended".into(),
    }
}

/// The rows of a batch, each model estimated by `here` in this process or
/// in a child of its own.
pub(super) fn rows(
    models: &[String],
    children: bool,
    here: impl Fn(&str) -> Result<BatchFigures> + Sync,
) -> Vec<BatchRow> {
    super::in_parallel(models, |m| {
        let outcome = match children.then(|| run_child(m)).flatten() {
            Some(o) => o,
            None => here(m).map_err(|e| (crate::error::one_line(&e.to_string()), e.exit_code())),
        };
        BatchRow {
            model: m.clone(),
            // The row names the model: its error need not repeat it.
            outcome: outcome.map_err(|(line, code)| {
                let line = line
                    .strip_prefix(&format!("{m}: "))
                    .map_or(line.clone(), str::to_string);
                (line, code)
            }),
        }
    })
}
