//! Names from models, traces and packs are text, never terminal commands:
//! [`shown`] is the one place every human renderer (tables, Markdown, lists,
//! `explain`) and the error printer turn a name into something safe to
//! print. JSON keeps names exact (its own escaping covers them).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as itself: control characters (C0,
/// DEL, C1, escape sequences start with one), line and paragraph separators,
/// and the invisible direction marks and overrides that reorder what is shown.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

/// `name` as it is printed: every character `hidden` keeps is written as
/// an escape (`\n`, `\t`, `\r`, `\u{1b}`), the rest unchanged. Borrowed when
/// nothing needs escaping.
pub fn shown(name: &str) -> Cow<'_, str> {
    // Printable ASCII, the usual name, is never hidden: checked a byte at a
    // time before the characters are decoded.
    if name.bytes().all(|b| (b' '..b'\x7f').contains(&b)) || !name.chars().any(hidden) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`shown`], with the `|` that would end a Markdown table cell escaped.
pub fn md_cell(cell: &str) -> Cow<'_, str> {
    match shown(cell) {
        Cow::Borrowed(s) if !s.contains('|') => Cow::Borrowed(s),
        s => Cow::Owned(s.replace('|', "\\|")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_direction_marks_are_escaped() {
        assert_eq!(shown("conv1"), "conv1");
        assert!(matches!(shown("ÿ_ß"), Cow::Borrowed(_)));
        assert_eq!(shown("a\nb\tc\rd"), "a\\nb\\tc\\rd");
        assert_eq!(shown("\x1b[31mred\x1b[0m"), "\\u{1b}[31mred\\u{1b}[0m");
        assert_eq!(shown("x\u{202e}y\u{9b}z"), "x\\u{202e}y\\u{9b}z");
        assert_eq!(md_cell("a|b\nc"), "a\\|b\\nc");
    }
}
