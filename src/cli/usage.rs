//! Usage errors as c3 prints every error: one line on stderr, exit code 1.

/// Prints a clap error as one line (its hints, such as the possible values,
/// kept on it) and returns the exit code; `--help` and `--version` print
/// as clap writes them and succeed.
pub(super) fn clap_error(e: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return 0;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!("error: a command is needed; `c3 --help` lists them");
            return 1;
        }
        _ => {}
    }
    eprintln!("error: {}", clap_line(e));
    1
}

/// A clap error as the one line c3 prints after `error: `: the message,
/// its possible values, its tip, without the usage and help pointers.
pub(super) fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .collect();
    // `[possible values: ...]` completes the line before it; a `tip:` is a
    // clause of its own.
    let mut line = String::new();
    for p in parts {
        if !line.is_empty() {
            // A list after `...provided:` continues its sentence.
            let go_on = p.starts_with('[') || line.ends_with(':');
            line.push_str(if go_on { " " } else { "; " });
        }
        line.push_str(p);
    }
    let line = line.strip_prefix("error: ").unwrap_or(&line);
    crate::error::one_line(&crate::report::text::shown(line))
}
