//! The one way tests run the `c3` binary: `C3::new().args([...]).dir(tmp)
//! .run()`, and what a run must look like (an exit code, one line on stderr).

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_c3");
/// The repository: examples, rules and fixtures are found from here.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A model the repository ships: `examples/onnx/NAME.onnx`.
pub fn shipped(name: &str) -> String {
    format!("{ROOT}/examples/onnx/{name}.onnx")
}

/// A committed profile: `tests/fixtures/profiles/NAME`.
pub fn profile_fixture(name: &str) -> String {
    format!("{ROOT}/tests/fixtures/profiles/{name}")
}

/// A fresh, empty folder `AREA/NAME` under cargo's scratch folder for tests.
pub fn scratch(area: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(area).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A pack folder `AREA/NAME` (a fresh [`scratch`] folder) holding these
/// files, each `(file name, text)`.
pub fn pack_folder(area: &str, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = scratch(area, name);
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

/// One run of `c3` to be made.
#[derive(Debug, Clone)]
pub struct C3 {
    args: Vec<OsString>,
    dir: PathBuf,
    kill_after: Duration,
    stdin: Option<Vec<u8>>,
    stdout_to: Option<PathBuf>,
    stdout_limit: Option<u64>,
    env: Vec<(OsString, OsString)>,
}

impl Default for C3 {
    fn default() -> Self {
        Self::new()
    }
}

impl C3 {
    /// `c3` with no arguments, in the repository's folder, killed (and the
    /// test failed) if it runs past five minutes.
    pub fn new() -> Self {
        C3 {
            args: Vec::new(),
            dir: PathBuf::from(ROOT),
            kill_after: Duration::from_secs(300),
            stdin: None,
            stdout_to: None,
            stdout_limit: None,
            env: Vec::new(),
        }
    }

    /// Bytes fed to `c3` on standard input (otherwise it reads nothing).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Standard output goes to this file (`/dev/full`) instead of a pipe.
    pub fn stdout_to(mut self, path: impl AsRef<Path>) -> Self {
        self.stdout_to = Some(path.as_ref().to_path_buf());
        self
    }

    /// The reader of standard output goes away after `n` bytes, as `| head`
    /// does.
    pub fn stdout_closed_after(mut self, n: u64) -> Self {
        self.stdout_limit = Some(n);
        self
    }

    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Self {
        self.args.push(a.as_ref().to_os_string());
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// The folder `c3` runs in.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = dir.as_ref().to_path_buf();
        self
    }

    /// Sets an environment variable for the run (`COLUMNS` and `NO_COLOR`
    /// are otherwise unset, so the caller's terminal changes nothing).
    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Self {
        self.env
            .push((k.as_ref().to_os_string(), v.as_ref().to_os_string()));
        self
    }

    /// Kills `c3` and fails the test if it runs longer than `limit`.
    pub fn kill_after(mut self, limit: Duration) -> Self {
        self.kill_after = limit;
        self
    }

    /// Runs `c3` to the end. Fails the test if it could not start, ran past
    /// its limit, died of a signal (a stack overflow aborts) or panicked:
    /// whatever the input, c3 answers with a report or an error.
    pub fn run(&self) -> Run {
        let shown = format!("c3 {:?}", self.args);
        let mut child = Command::new(BIN)
            .args(&self.args)
            .current_dir(&self.dir)
            .env_remove("COLUMNS")
            .env_remove("NO_COLOR")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(match &self.stdout_to {
                Some(p) => Stdio::from(std::fs::OpenOptions::new().write(true).open(p).unwrap()),
                None => Stdio::piped(),
            })
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{shown}: does not start: {e}"));
        // Read both pipes while c3 runs, or a full pipe would stall it.
        let drain = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = r.read_to_end(&mut buf);
                String::from_utf8_lossy(&buf).into_owned()
            })
        };
        if let (Some(bytes), Some(mut pipe)) = (self.stdin.clone(), child.stdin.take()) {
            std::thread::spawn(move || {
                let _ = std::io::Write::write_all(&mut pipe, &bytes);
            });
        }
        let out: Box<dyn Read + Send> = match (child.stdout.take(), self.stdout_limit) {
            (None, _) => Box::new(std::io::empty()),
            (Some(o), None) => Box::new(o),
            (Some(o), Some(n)) => Box::new(o.take(n)),
        };
        let out = drain(out);
        let err = drain(Box::new(child.stderr.take().unwrap()));
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > self.kill_after {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{shown}: still running after {:?}", self.kill_after);
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let stdout = out.join().unwrap();
        let stderr = err.join().unwrap();
        let code = status
            .code()
            .unwrap_or_else(|| panic!("{shown}: died of a signal: {status:?}; {stderr}"));
        assert!(
            !stderr.contains("panicked") && code != 101,
            "{shown}: c3 panicked: {stderr}"
        );
        Run {
            shown,
            code,
            stdout,
            stderr,
        }
    }
}

/// A finished run of `c3`.
#[derive(Debug)]
pub struct Run {
    /// The command, for failure messages.
    pub shown: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code (the message shows stderr).
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code, want,
            "{}: exit code; stderr: {}",
            self.shown, self.stderr
        );
        self
    }

    /// Asserts success (exit 0).
    pub fn ok(&self) -> &Self {
        self.code(0)
    }

    /// Asserts exit `code` with exactly one line on stderr; returns it.
    pub fn one_line_error(&self, code: i32) -> &str {
        self.code(code);
        assert_eq!(
            self.stderr.lines().count(),
            1,
            "{}: not one line: {:?}",
            self.shown,
            self.stderr
        );
        self.stderr.trim_end()
    }

    /// Asserts success; stdout read as JSON.
    pub fn json(&self) -> serde_json::Value {
        self.ok();
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{}: {e}: {}", self.shown, self.stdout))
    }
}
