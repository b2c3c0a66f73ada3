//! Pretty JSON text, byte for byte as `serde_json::to_string_pretty` writes
//! it (two spaces a level), but each line break and its indentation written
//! as one slice: serde_json's own formatter writes the indentation two bytes
//! at a time, which was a third of all the work on a 100,000-layer report.

use std::io::{self, IoSlice, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

/// A comma, a line break, then enough spaces for [`LEVELS`] levels, and
/// one more: [`Chunked::item`] copies [`LINE`] bytes from either of the
/// first two.
const BREAK: &[u8; 3 + 2 * LEVELS] = &{
    let mut b = [b' '; 3 + 2 * LEVELS];
    b[0] = b',';
    b[1] = b'\n';
    b
};
/// The longest line break [`Chunked::item`] writes in one copy.
const LINE: usize = 2 + 2 * LEVELS;
/// Levels indented with one write; deeper ones take one more per [`LEVELS`].
const LEVELS: usize = 32;

/// Two-space indentation, as serde_json's `PrettyFormatter` has it.
#[derive(Default)]
struct Pretty {
    level: usize,
    has_value: bool,
}

impl Pretty {
    /// A line break (after a comma unless `first`), then the current
    /// level's indentation, in one write up to [`LEVELS`] levels.
    fn newline<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        let mut left = self.level;
        let n = left.min(LEVELS);
        w.write_all(&BREAK[usize::from(first)..2 + 2 * n])?;
        left -= n;
        while left > 0 {
            let n = left.min(LEVELS);
            w.write_all(&BREAK[2..2 + 2 * n])?;
            left -= n;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w, true)?;
        }
        w.write_all(bracket)
    }

    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.newline(w, first)
    }
}

// Everything else (numbers, strings, escapes) is the trait's default, the
// compact form, as in serde_json's own pretty formatter.
impl Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// `value` as pretty JSON text ending in a line break, into a buffer of
/// `capacity` bytes to start with.
pub fn to_string<T: Serialize + ?Sized>(value: &T, capacity: usize) -> String {
    let mut out = Vec::with_capacity(capacity);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
    value
        .serialize(&mut ser)
        .expect("JSON values always serialize");
    out.push(b'\n');
    // serde_json writes only valid UTF-8 (its strings are Rust strings).
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `value` as pretty JSON text ending in a line break, written to `w` as
/// it is made, a chunk at a time. An error of `w` is returned as it came.
/// What [`stream`]'s users are held to in tests.
#[cfg(test)]
pub fn to_writer<T: Serialize + ?Sized>(value: &T, w: &mut dyn Write) -> io::Result<()> {
    stream(w, |c| c.value(value, 0))
}

/// The writer's own error, with its kind (a closed pipe ends the output
/// quietly upstream).
fn io_error(e: serde_json::Error) -> io::Error {
    match e.io_error_kind() {
        Some(kind) => io::Error::new(kind, e),
        None => io::Error::other(e),
    }
}

/// Pretty JSON text written by hand where that is faster than serde
/// (a large report's layer rows), with values serialized where it is not:
/// `body` writes the text ([`Chunked::key`], [`Chunked::value`]...), and
/// a line break ends it. The bytes are those serde writes for the same
/// document (`to_writer`, the tests' reference).
pub(crate) fn stream(
    w: &mut dyn Write,
    body: impl FnOnce(&mut Chunked<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut chunks = Chunked {
        buf: Vec::with_capacity(CHUNK + 4096),
        out: w,
        seen: Rendered::default(),
    };
    body(&mut chunks)?;
    chunks.buf.push(b'\n');
    chunks.out.write_all(&chunks.buf)
}

/// What [`Chunked::key`] writes for `name` in an object whose entries are
/// `level` deep (after its first entry unless `first`), made once: a list
/// of like objects (a report's layer rows, 111k of them) then writes each
/// key in one copy instead of piecing it together each time.
pub(crate) fn key_text(level: usize, first: bool, name: &str) -> Vec<u8> {
    let mut sink = io::sink();
    let mut c = Chunked {
        buf: Vec::new(),
        out: &mut sink,
        seen: Rendered::default(),
    };
    // A key is far below a chunk: nothing is handed on to the sink.
    let _ = c.key(level, first, name);
    c.buf
}

impl Chunked<'_> {
    /// `value` as pretty JSON whose first line continues the current one,
    /// the lines after it indented for nesting `level` deep.
    pub(crate) fn value<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
        level: usize,
    ) -> io::Result<()> {
        let pretty = Pretty {
            level,
            has_value: false,
        };
        let mut ser = serde_json::Serializer::with_formatter(&mut *self, pretty);
        value.serialize(&mut ser).map_err(io_error)
    }

    /// A string, integer or float as JSON (as `value` writes it, faster).
    pub(crate) fn scalar<T: Serialize + ?Sized>(&mut self, value: &T) -> io::Result<()> {
        serde_json::to_writer(&mut *self, value).map_err(io_error)
    }

    /// A string as JSON, as [`Chunked::scalar`] writes it: quoted as it is
    /// when nothing in it needs escaping (a layer's name, its op type:
    /// some 220k of them in a large report), else through serde.
    pub(crate) fn text(&mut self, s: &str) -> io::Result<()> {
        if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
            return self.quoted(s);
        }
        self.scalar(s)
    }

    /// `s` in quotes, as it is: the caller knows it needs no escaping.
    #[inline]
    fn quoted(&mut self, s: &str) -> io::Result<()> {
        self.buf.reserve(s.len() + 2);
        self.buf.push(b'"');
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(b'"');
        self.flush_full()
    }

    /// An integer as JSON, as [`Chunked::scalar`] writes it without
    /// serde's layers (a large report writes some 1.4 M of them).
    pub(crate) fn uint(&mut self, n: u64) -> io::Result<()> {
        self.write_all(itoa::Buffer::new().format(n).as_bytes())
    }

    /// Starts the entry `name` of an object whose entries are `level`
    /// deep: a comma unless `first`, the line break and indentation, the
    /// key (a plain name, nothing to escape) and its colon.
    #[inline(always)]
    pub(crate) fn key(&mut self, level: usize, first: bool, name: &str) -> io::Result<()> {
        self.line_break(level, first);
        self.buf.push(b'"');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b"\": ");
        self.flush_full()
    }

    /// Starts an element of an array (or an entry of an object) whose
    /// elements are `level` deep: a comma unless `first`, the line break
    /// and indentation.
    #[inline]
    pub(crate) fn item(&mut self, level: usize, first: bool) -> io::Result<()> {
        self.line_break(level, first);
        self.flush_full()
    }

    /// [`Chunked::item`]'s text, gathered without handing anything on (the
    /// buffer has room for more than a chunk, and each caller hands on
    /// once after it).
    #[inline(always)]
    fn line_break(&mut self, level: usize, first: bool) {
        if level > LEVELS {
            return self.deep_line_break(level, first);
        }
        // [`LINE`] bytes copied whatever the level, a copy of known size
        // the compiler writes out in a few moves (the call a slice of any
        // length takes was a third of this), then cut to the level's.
        let end = self.buf.len() + 2 - usize::from(first) + 2 * level;
        self.buf
            .extend_from_slice(&BREAK[usize::from(first)..][..LINE]);
        self.buf.truncate(end);
    }

    /// A line break deeper than one copy reaches (rare: kept out of the
    /// common path, whose registers it would otherwise claim).
    #[cold]
    #[inline(never)]
    fn deep_line_break(&mut self, level: usize, first: bool) {
        let at = Pretty {
            level,
            has_value: false,
        };
        at.newline(&mut self.buf, first)
            .expect("writing to memory cannot fail");
    }

    /// A string c3 names itself (an element type's name), with nothing
    /// to escape, in quotes: the bytes [`Chunked::scalar`] writes for it.
    #[inline]
    pub(crate) fn plain(&mut self, s: &'static str) -> io::Result<()> {
        debug_assert!(
            s.bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
        );
        self.quoted(s)
    }

    /// Closes an object or array that holds something, its bracket at
    /// `level` (the level of the line that opened it).
    #[inline(always)]
    pub(crate) fn close(&mut self, level: usize, bracket: &[u8]) -> io::Result<()> {
        self.item(level, true)?;
        self.write_all(bracket)
    }
}

impl Chunked<'_> {
    /// Writes `items` in order with `each` (given an item's index too), the
    /// same bytes as a loop here. A long list is shared with a second thread
    /// when the machine has one: it renders every other block of [`BLOCK`]
    /// items into memory while this one writes the blocks between, and hands
    /// them over in order, at most two waiting.
    pub(crate) fn items<T: Sync>(
        &mut self,
        items: &[T],
        each: impl Fn(&mut Chunked<'_>, usize, &T) -> io::Result<()> + Sync,
    ) -> io::Result<()> {
        let block = |c: &mut Chunked<'_>, b: usize| -> io::Result<()> {
            let at = b * BLOCK;
            for (i, t) in items[at..(at + BLOCK).min(items.len())].iter().enumerate() {
                each(c, at + i, t)?;
            }
            Ok(())
        };
        let blocks = items.len().div_ceil(BLOCK);
        if items.len() < SHARED_FROM || !crate::threads::two_cores() {
            return (0..blocks).try_for_each(|b| block(self, b));
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<io::Result<Vec<u8>>>(2);
            // Each block's bytes, once written, go back to be filled again:
            // a fresh buffer a block touched fresh memory (a page fault
            // each 4 KB), and was freed on the other thread.
            let (back, spare) = std::sync::mpsc::channel::<Vec<u8>>();
            scope.spawn(move || {
                // Text rendered once is copied after, block to block.
                let mut seen = Rendered::default();
                for b in (1..blocks).step_by(2) {
                    let mut out = Vec::new();
                    let mut buf = spare.try_recv().unwrap_or_default();
                    buf.reserve(CHUNK);
                    let mut c = Chunked {
                        buf,
                        out: &mut out,
                        seen,
                    };
                    let done = block(&mut c, b);
                    seen = c.seen;
                    let rest = c.buf;
                    // A block under a chunk (most are) was never handed on:
                    // its bytes go as they are, not copied.
                    let done = done.map(|()| {
                        if out.is_empty() {
                            return rest;
                        }
                        out.extend_from_slice(&rest);
                        out
                    });
                    // A closed channel: this thread's reader stopped at an error.
                    if tx.send(done).is_err() {
                        return;
                    }
                }
            });
            for b in 0..blocks {
                if b % 2 == 0 {
                    block(self, b)?;
                } else {
                    let mut bytes = rx.recv().map_err(io::Error::other)??;
                    self.write_following(&bytes)?;
                    bytes.clear();
                    // The writer may have finished: its buffer is dropped.
                    let _ = back.send(bytes);
                }
            }
            Ok(())
        })
    }
}

/// Writes every byte of `bufs`, in order, with as few calls as `w` takes
/// (`Write::write_all_vectored` is not stable yet).
fn write_all_vectored(w: &mut dyn Write, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    // Empty pieces in front are dropped: a writer is offered bytes first.
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Items a block of [`Chunked::items`] (a layer row is some 600 bytes).
const BLOCK: usize = 64;
/// Lists shorter than this are written on one thread.
const SHARED_FROM: usize = 1024;

/// Bytes gathered before they are handed on.
const CHUNK: usize = 1 << 16;

impl Chunked<'_> {
    /// Hands the gathered bytes on once they fill a chunk.
    #[inline]
    fn flush_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= CHUNK {
            return self.hand_on(&[]);
        }
        Ok(())
    }

    /// Writes `bytes`, a large piece of text that comes next (a block the
    /// other thread rendered, [`Chunked::items`]): gathered with the rest
    /// while they fill less than a chunk, else handed on with what was
    /// gathered in one write, without being copied. A layer row is some
    /// 600 bytes, so a block of them is over half a chunk: copied here,
    /// half the report's text was copied once more.
    fn write_following(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.buf.len() + bytes.len() < CHUNK {
            self.buf.extend_from_slice(bytes);
            return Ok(());
        }
        self.hand_on(bytes)
    }

    /// Hands the gathered bytes on, and `next` after them in the same
    /// write (once a chunk: kept out of the inlined checks).
    #[cold]
    #[inline(never)]
    fn hand_on(&mut self, next: &[u8]) -> io::Result<()> {
        write_all_vectored(self.out, &mut [IoSlice::new(&self.buf), IoSlice::new(next)])?;
        self.buf.clear();
        self.seen.handed_on += 1;
        Ok(())
    }

    /// Writes what `render` writes, or the same bytes copied, when `key`
    /// was rendered before by this writer. The caller keys text by what
    /// it is made of: the address of a shared value the report holds
    /// unchanged while it is written (an `Arc` the rows share), with
    /// anything else the text depends on (its level, an element type). A
    /// report's rows share their attribute lists and their tensors' sizes
    /// between layers, so most such text is a copy.
    #[inline]
    pub(crate) fn shared(
        &mut self,
        key: Key,
        render: impl FnOnce(&mut Chunked<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(&(s, e)) = self.seen.at.get(&key) {
            self.buf
                .extend_from_slice(&self.seen.text[s as usize..e as usize]);
            return self.flush_full();
        }
        let (start, handed_on) = (self.buf.len(), self.seen.handed_on);
        render(self)?;
        // Text a hand-on cut in two is not kept (once a chunk).
        if self.seen.handed_on == handed_on {
            self.seen.keep(key, &self.buf[start..]);
        }
        Ok(())
    }
}

/// What [`Chunked::shared`] keys text by: an address and two more parts.
pub(crate) type Key = (usize, u32, u32);

/// Text [`Chunked::shared`] rendered, by key. Emptied when it holds
/// [`SEEN_TEXT`] bytes: rows that share a value lie close together (a
/// tensor's producer and its readers), and the text stays small.
#[derive(Default)]
struct Rendered {
    at: rustc_hash::FxHashMap<Key, (u32, u32)>,
    text: Vec<u8>,
    /// How many times the buffer was handed on.
    handed_on: u64,
}

/// The most text [`Rendered`] keeps.
const SEEN_TEXT: usize = 1 << 20;

impl Rendered {
    fn keep(&mut self, key: Key, bytes: &[u8]) {
        if self.text.len() + bytes.len() > SEEN_TEXT {
            if bytes.len() > SEEN_TEXT {
                return;
            }
            self.at.clear();
            self.text.clear();
        }
        let start = self.text.len() as u32;
        self.text.extend_from_slice(bytes);
        self.at.insert(key, (start, self.text.len() as u32));
    }
}

/// Gathers serde_json's many small writes (a quote, a key, a comma) in
/// memory, where each is a copy the compiler sees whole, and hands them on
/// [`CHUNK`] bytes at a time: the text is never whole in memory, and no
/// small write goes through a dynamic call.
pub(crate) struct Chunked<'a> {
    buf: Vec<u8>,
    out: &'a mut dyn Write,
    seen: Rendered,
}

impl Write for Chunked<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        self.flush_full()
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A key made once is the bytes `key` writes in place: the comma
    /// unless first, the line break, two spaces a level, the quoted name
    /// and `": "`; deeper than one copy of indentation reaches too.
    #[test]
    fn a_key_made_once_is_what_key_writes() {
        assert_eq!(super::key_text(2, false, "flops"), b",\n    \"flops\": ");
        assert_eq!(super::key_text(1, true, "name"), b"\n  \"name\": ");
        let deep = super::LEVELS + 3;
        let mut out = Vec::new();
        super::stream(&mut out, |c| c.key(deep, false, "x")).unwrap();
        let mut made = super::key_text(deep, false, "x");
        made.push(b'\n');
        assert_eq!(made, out);
        assert_eq!(made.len(), 1 + 1 + 2 * deep + 3 + 2 + 1);
    }

    /// The text must be serde_json's own pretty text, byte for byte (issue
    /// 15: no output changes), deeper than one write of indentation too.
    #[test]
    fn writes_what_serde_json_pretty_writes() {
        let mut deep = json!([1, {"a": [], "b": {}}]);
        for i in 0..(super::LEVELS + 5) {
            deep = json!({"level": i, "inner": deep, "list": [i, "x\"y", null, 1.5]});
        }
        for v in [
            json!(null),
            json!([]),
            json!({}),
            json!({"k": [1, 2, {"z": "\u{e9}"}], "e": [], "o": {}}),
            deep,
        ] {
            let expected = serde_json::to_string_pretty(&v).unwrap() + "\n";
            assert_eq!(super::to_string(&v, 0), expected);
        }
    }

    /// A line break written by [`super::Chunked::item`] in one fixed-size
    /// copy, then cut, is the formatter's at every level: within one copy
    /// (up to [`super::LEVELS`]), at its edge and past it.
    #[test]
    fn a_line_break_is_the_formatters_at_every_level() {
        use std::io::Write;
        for level in 0..super::LEVELS + 3 {
            for first in [true, false] {
                let mut expected = Vec::new();
                let at = super::Pretty {
                    level,
                    has_value: false,
                };
                at.newline(&mut expected, first).unwrap();
                let mut out = Vec::new();
                super::stream(&mut out, |c| {
                    c.write_all(b"x")?;
                    c.item(level, first)?;
                    c.write_all(b"y")
                })
                .unwrap();
                // "x", the break (a comma unless first, "\n", two spaces a
                // level), "y", and the stream's closing line break.
                assert_eq!(expected.len(), 2 - usize::from(first) + 2 * level);
                assert_eq!(
                    out,
                    [&b"x"[..], &expected, b"y\n"].concat(),
                    "level {level}"
                );
            }
        }
    }

    /// Streamed, the text is the same bytes, handed on in pieces of at
    /// least [`super::CHUNK`] bytes but the last: a 10,000-row list is some
    /// 400 KB, several chunks.
    #[test]
    fn streams_the_same_text_a_chunk_at_a_time() {
        struct Pieces(Vec<usize>, Vec<u8>);
        impl std::io::Write for Pieces {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.push(b.len());
                self.1.extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let rows: Vec<_> = (0..10_000)
            .map(|i| json!({"name": format!("layer-{i}"), "flops": i * 7, "shape": [1, i]}))
            .collect();
        let v = json!({"layers": rows});
        let mut out = Pieces(Vec::new(), Vec::new());
        super::to_writer(&v, &mut out).unwrap();
        let expected = serde_json::to_string_pretty(&v).unwrap() + "\n";
        assert_eq!(String::from_utf8(out.1).unwrap(), expected);
        let (last, full) = out.0.split_last().unwrap();
        assert!(
            full.len() >= expected.len() / super::CHUNK - 1,
            "{:?}",
            out.0
        );
        assert!(
            full.iter().all(|&n| n >= super::CHUNK) && *last > 0,
            "{:?}",
            out.0
        );
    }

    /// A string written by [`super::Chunked::text`] is the bytes serde
    /// writes for it, whether it is copied as it is or needs escaping.
    #[test]
    fn text_is_what_serde_writes() {
        for s in [
            "",
            "/blocks.0/attn/MatMul_1",
            "caf\u{e9} \u{1f600}",
            "del \u{7f} kept",
            "quote \" in",
            "back \\ slash",
            "tab \t and \n and \u{1}",
        ] {
            let mut out = Vec::new();
            super::stream(&mut out, |c| c.text(s)).unwrap();
            let serde = serde_json::to_string(s).unwrap() + "\n";
            assert_eq!(String::from_utf8(out).unwrap(), serde, "{s:?}");
        }
    }

    /// Text written under a key it was written under before is the first
    /// text again, copied (the second render is never asked for), unless
    /// the first was cut by a hand-on or the kept text was emptied; the
    /// stream is the same bytes throughout.
    #[test]
    fn text_written_under_a_key_again_is_copied() {
        use std::io::Write;
        let mut out = Vec::new();
        let mut asked = 0;
        super::stream(&mut out, |c| {
            c.shared((1, 0, 0), |c| c.write_all(b"[1]"))?;
            // Same key: copied, even though this render would differ.
            c.shared((1, 0, 0), |c| {
                asked += 1;
                c.write_all(b"[2]")
            })?;
            // Another part of the key: rendered.
            c.shared((1, 1, 0), |c| c.write_all(b"[3]"))
        })
        .unwrap();
        assert_eq!(asked, 0);
        assert_eq!(out, b"[1][1][3]\n");

        // A text that a hand-on cut is rendered again the next time.
        let mut out = Vec::new();
        let mut asked = 0;
        let long = vec![b'x'; super::CHUNK];
        super::stream(&mut out, |c| {
            c.write_all(b"a")?;
            for _ in 0..2 {
                c.shared((2, 0, 0), |c| {
                    asked += 1;
                    c.write_all(&long)
                })?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(asked, 2);
        assert_eq!(out.len(), 1 + 2 * super::CHUNK + 1);

        // Past SEEN_TEXT bytes kept, the kept text starts over; a text
        // larger than that is not kept.
        let mut seen = super::Rendered::default();
        let piece = vec![b'y'; super::SEEN_TEXT / 4 + 1];
        for key in 0..3 {
            seen.keep((key, 0, 0), &piece);
        }
        assert_eq!((seen.at.len(), seen.text.len()), (3, 3 * piece.len()));
        // A fourth would pass SEEN_TEXT: it is kept alone.
        seen.keep((3, 0, 0), &piece);
        assert_eq!(seen.at.get(&(3, 0, 0)), Some(&(0, piece.len() as u32)));
        assert_eq!((seen.at.len(), seen.text.len()), (1, piece.len()));
        seen.keep((4, 0, 0), &vec![b'z'; super::SEEN_TEXT + 1]);
        assert_eq!(seen.at.len(), 1);
    }

    /// `list` as a pretty JSON array, its items shared with a second thread
    /// when there are enough.
    fn write_list(w: &mut dyn std::io::Write, list: &[Vec<u64>]) -> std::io::Result<()> {
        use std::io::Write;
        super::stream(w, |c| {
            c.write_all(b"[")?;
            c.items(list, |c, i, v| {
                c.item(1, i == 0)?;
                c.value(v, 1)
            })?;
            c.close(0, b"]")
        })
    }

    /// A list long enough to be shared with a second thread is written in
    /// order, the bytes serde writes; a writer that fails part way stops
    /// both threads with its error.
    #[test]
    fn a_list_shared_between_two_threads_is_the_same_text() {
        use std::io::Write;
        let list: Vec<Vec<u64>> = (0..5 * super::SHARED_FROM as u64)
            .map(|i| vec![i, i * i])
            .collect();
        let write = |w: &mut dyn Write| write_list(w, &list);
        let mut out = Vec::new();
        write(&mut out).unwrap();
        let expected = serde_json::to_string_pretty(&list).unwrap() + "\n";
        assert_eq!(String::from_utf8(out).unwrap(), expected);

        struct Fails(usize);
        impl Write for Fails {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                if self.0 < b.len() {
                    return Err(std::io::ErrorKind::BrokenPipe.into());
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let err = write(&mut Fails(super::CHUNK)).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    }

    /// A block the second thread rendered that fills a chunk with what
    /// this one gathered goes on with it in one write, not copied into
    /// it: through a writer that takes at most 777 bytes a call, across
    /// the two pieces, the text is still serde's.
    #[test]
    fn large_blocks_from_the_second_thread_are_written_whole_and_in_order() {
        use std::io::{IoSlice, Write};
        /// Takes at most 777 bytes a call; counts the calls offered two
        /// pieces or more.
        struct Trickle(Vec<u8>, usize);
        impl Write for Trickle {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.write_vectored(&[IoSlice::new(b)])
            }
            fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
                if bufs.iter().filter(|b| !b.is_empty()).count() > 1 {
                    self.1 += 1;
                }
                let mut room = 777;
                for b in bufs {
                    let n = b.len().min(room);
                    self.0.extend_from_slice(&b[..n]);
                    room -= n;
                }
                Ok(777 - room)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        // Items of 41 numbers are some 500 bytes pretty, a block of 64 of
        // them half a chunk; items of 161 numbers make a block larger
        // than a chunk.
        for width in [41u64, 161] {
            let list: Vec<Vec<u64>> = (0..2 * super::SHARED_FROM as u64)
                .map(|i| (0..width).map(|k| i * 1000 + k).collect())
                .collect();
            let mut out = Trickle(Vec::new(), 0);
            write_list(&mut out, &list).unwrap();
            let expected = serde_json::to_string_pretty(&list).unwrap() + "\n";
            assert_eq!(String::from_utf8(out.0).unwrap(), expected);
            assert!(out.1 > 0, "no block was written beside the gathered text");
        }
    }
}
