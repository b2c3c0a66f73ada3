//! Error types of the library. Each says where the problem is (file:line:col,
//! layer name, flag) in one line; the binary maps them to exit codes.

use std::fmt;

/// A problem in a rule file, at `path:line:col`.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleError {
    pub path: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
    /// The offending text, shown after the message.
    pub text: Option<String>,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path, self.line, self.col, self.message
        )?;
        if let Some(t) = &self.text {
            let one_line: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
            let shown: String = if one_line.chars().count() > 100 {
                one_line.chars().take(97).collect::<String>() + "..."
            } else {
                one_line
            };
            write!(f, " in `{shown}`")?;
        }
        Ok(())
    }
}

impl std::error::Error for RuleError {}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rule file that does not load.
    #[error("{0}")]
    Rule(#[from] RuleError),
    /// A model or trace that cannot be read.
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    /// A layer the rules cannot be applied to.
    #[error("layer '{layer}' ({op}): {message}")]
    Layer {
        layer: String,
        op: String,
        message: String,
    },
    /// A rule formula that fails on a layer (overflow, division by zero):
    /// the formula's place first, then the layer it failed on.
    #[error("{origin}: {message} (layer '{layer}', {op})")]
    Formula {
        origin: String,
        message: String,
        layer: String,
        op: String,
    },
    /// Operators without a rule, under `--strict`.
    #[error(
        "{count} layer(s) are not counted ({ops}); drop --strict to report them as unsupported"
    )]
    Unsupported { count: usize, ops: String },
    /// Bad arguments.
    #[error("{0}")]
    Usage(String),
    /// `c3 docs --check` found DETAILS.md out of date.
    #[error("{0}")]
    Stale(String),
    /// Models of a batch that failed, each reported on its row; the exit
    /// code is the worst of theirs.
    #[error("{failed} of {total} model(s) failed (each is reported on its row)")]
    Batch {
        failed: usize,
        total: usize,
        code: i32,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Exit code: 1 usage, 2 bad input (model, rule file, trace), 3 unsupported
    /// operators under `--strict`.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Stale(_) => 1,
            Error::Rule(_)
            | Error::Input { .. }
            | Error::Layer { .. }
            | Error::Formula { .. }
            | Error::Io { .. } => 2,
            Error::Unsupported { .. } => 3,
            Error::Batch { code, .. } => *code,
        }
    }

    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors are printed at most this many characters long.
pub const MAX_ERROR_CHARS: usize = 480;

/// At most `n` characters of `s`, `…` marking a cut (a name quoted in an
/// error or shown in a chart).
pub fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The candidate closest to `name` in edits (case aside), if one is close
/// enough to be a typo: at most a third of the name's letters (so a name
/// of one or two letters only matches in another case).
/// Ties go to a candidate with the same first letter, then the shorter. Names past 200 characters get none
/// (the distance is quadratic in the lengths).
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if name.len() > 200 {
        return None;
    }
    let want = name.to_ascii_lowercase();
    let limit = want.chars().count() / 3;
    candidates
        .into_iter()
        .filter(|c| c.len() <= 200)
        .map(|c| {
            let lower = c.to_ascii_lowercase();
            // At equal distance, a name that starts alike, then the shorter.
            let apart = lower.chars().next() != want.chars().next();
            (strsim::levenshtein(&want, &lower), apart, c.len(), c)
        })
        .filter(|(d, ..)| *d <= limit)
        .min_by_key(|&(d, apart, len, _)| (d, apart, len))
        .map(|(.., c)| c)
}

/// `; did you mean 'X'?` for the nearest candidate, or nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    nearest(name, candidates).map_or(String::new(), |n| format!("; did you mean '{n}'?"))
}

/// An error as one line a person reads: control characters (a newline in a
/// node's name) become spaces, and an overlong message (a long chain of
/// nested subgraphs) keeps its start, which names the place, and its end,
/// which says what went wrong.
pub fn one_line(message: &str) -> String {
    let clean: Vec<char> = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.len() <= MAX_ERROR_CHARS {
        return clean.into_iter().collect();
    }
    let head = MAX_ERROR_CHARS / 3;
    let tail = MAX_ERROR_CHARS - head - 3;
    let mut out: String = clean[..head].iter().collect();
    out.push_str(" … ");
    out.extend(&clean[clean.len() - tail..]);
    out
}

/// Prints a warning on stderr as one line, cut as an error line is
/// ([`one_line`]): a model's megabyte-long op name does not fill the
/// terminal.
pub fn warn(message: &str) {
    eprintln!("warning: {}", one_line(message));
}
