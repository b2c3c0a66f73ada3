//! Reading a model file without reading its weights.
//!
//! A model's records (nodes, names, shapes) lie between its weights: an
//! initializer is its name and dimensions followed by megabytes of
//! `raw_data`. Mapping the file and decoding it touches a page here and
//! there, and the kernel maps (and, on a cold cache, reads ahead) the pages
//! around each one, so nearly the whole file ends up read and resident.
//!
//! Instead the file is read with positioned reads, in order, through the
//! messages that can hold tensors; a tensor payload of more than
//! [`LEAVE_BYTES`] is left out and replaced by a [`StoredPayload`] (where it
//! lies) in a copy of everything else, and one of more than [`SKIP_BYTES`]
//! is also jumped over by its length, unread. That copy is what prost
//! decodes (what it keeps of it copied out, so the copy is freed once
//! decoded; or, for an estimate, `skim_aside_then`'s, with the main graph's node
//! records set aside and what decoding keeps sliced from the copy); then
//! [`attach`] turns each stored payload into a slice of the file's mapping,
//! which estimating touches only for the few left out that a shape
//! computation reads as a value (a payload over [`SKIP_BYTES`] holds more
//! elements than a value may have, so only copying the model reads it).
//! Smaller payloads (shapes, axes, scalars), and int32 and int64 ones up
//! to [`SKIP_BYTES`], are copied with the records around them, so thousands
//! of constants read as values cost no page faults and map nothing; weights
//! of a few thousand bytes, which a model of many small layers holds by the
//! hundred thousand, are neither copied nor held.
//! Nested messages keep the width of their length prefix (a padded varint,
//! which protobuf allows), so the copy is written in one pass.
//!
//! Anything this reader does not understand (a malformed field, a group) is
//! copied as it is, so the decoder meets it and reports it as it would have.

use std::fs::File;
use std::io;

use bytes::Bytes;
use prost::Message;

use super::encoded::Blocks;
use crate::ir::MAX_MESSAGE_DEPTH;
use crate::proto::{AttributeProto, GraphProto, ModelProto, StoredPayload, TensorProto};
use crate::shape::fact::MAX_VALUE_ELEMENTS;

/// Tensor payloads of more than this many bytes are jumped over, unread:
/// they hold more than [`MAX_VALUE_ELEMENTS`] elements of any type c3
/// decodes (8 bytes at most), so they are never read as a value.
pub const SKIP_BYTES: u64 = 8 * MAX_VALUE_ELEMENTS as u64;

/// Tensor payloads of more than this many bytes are left in the file (read
/// past, not copied), unless they hold int32 or int64 elements (see
/// `leave_above`); smaller ones, which hold the shapes, axes and scalars
/// that shape computations read as values, are copied with the records
/// around them. A model of many small layers holds hundreds of thousands
/// of weights a few thousand bytes each: copied, they were most of its
/// memory and a third of the time to estimate it.
pub const LEAVE_BYTES: u64 = 1 << 10;

/// The field number [`StoredPayload`]s are written under: the largest
/// protobuf allows, unused by ONNX.
const STORED_FIELD: u64 = 536_870_911;

/// The first byte of a stored payload's tag (field [`STORED_FIELD`],
/// length-delimited), as a varint.
const STORED_TAG_FIRST_BYTE: u8 = (((STORED_FIELD << 3) | 2) as u8 & 0x7f) | 0x80;

/// Reads ahead of a record grow to this many bytes while records follow one
/// another.
const MAX_CHUNK: usize = 256 << 10;
const PAGE: u64 = 4096;

/// The messages on the way to a tensor.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Model,
    Graph,
    Node,
    Attribute,
    Function,
    Tensor,
    Sparse,
}

fn child(kind: Kind, field: u64) -> Option<Kind> {
    use Kind::*;
    Some(match (kind, field) {
        (Model, 7) | (Attribute, 6 | 11) => Graph,
        (Model, 25) => Function,
        (Graph, 1) | (Function, 7) => Node,
        (Graph, 5) | (Attribute, 5 | 10) | (Sparse, 1 | 2) => Tensor,
        (Graph, 15) | (Attribute, 22) => Sparse,
        (Node, 5) | (Function, 11) => Attribute,
        _ => return None,
    })
}

/// Tensor fields whose payload can stay in the file: `float_data`,
/// `raw_data`, `double_data`. Their elements have a fixed width, so the
/// loader's size checks need their length only (packed varints are counted,
/// so `int32_data` and `int64_data` are read).
fn is_payload(field: u64) -> bool {
    matches!(field, 4 | 9 | 10)
}

/// The size above which a tensor payload in `field` is left in the file,
/// given the tensor's `data_type` so far: [`LEAVE_BYTES`], but for the
/// `raw_data` of the types that shapes and indices take (int32, int64) or
/// of a type not yet read, [`SKIP_BYTES`]. Any payload left in the file
/// reads the same as a value; the types only say which are likely to be
/// read as one.
fn leave_above(field: u64, data_type: Option<u64>) -> u64 {
    match (field, data_type) {
        (9, Some(6 | 7) | None) => SKIP_BYTES,
        _ => LEAVE_BYTES,
    }
}

/// Positioned reads of a file (or of bytes, in tests).
pub trait Source {
    fn size(&self) -> u64;
    /// Fills `buf` from `offset`; the caller never reads past the end.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

impl Source for File {
    fn size(&self) -> u64 {
        self.metadata().map(|m| m.len()).unwrap_or(0)
    }
    #[cfg(unix)]
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
    #[cfg(windows)]
    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match std::os::windows::fs::FileExt::seek_read(self, buf, offset)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
}

impl Source for [u8] {
    fn size(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let src = self
            .get(start..start + buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// Tells the kernel not to read ahead: reads then fetch the pages asked for
/// and no more, so the weights between records stay on disk.
pub fn advise_random(file: &File) {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a hint on a descriptor this process owns; it reads nothing
        // and its failure changes nothing but speed.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let _ = file;
}

/// The file read through a buffer that holds what was read and not yet
/// consumed.
struct Input<'a, S: Source + ?Sized> {
    src: &'a S,
    len: u64,
    /// What was read, `buf[..end]`. The room past `end` is kept from read
    /// to read: grown (and zeroed) only when a read needs more, not zeroed
    /// again before each read.
    buf: Vec<u8>,
    end: usize,
    /// The file offset of `buf[0]`.
    start: u64,
    /// The cursor in `buf`.
    at: usize,
    /// How far the next read goes beyond what is needed: 0 after a jump,
    /// doubling while records follow one another.
    ahead: usize,
    /// Where the main graph's node records go instead of the copy, when
    /// they are set aside ([`skim_aside_then`]).
    aside: Option<Aside>,
}

/// The main graph's node records set aside, and whether the model and its
/// main graph were plainly readable (a reader that stops short leaves the
/// rest to the decoder, which needs the records in place to name the
/// fault).
struct Aside {
    blocks: Blocks,
    plain: bool,
}

impl<S: Source + ?Sized> Input<'_, S> {
    fn pos(&self) -> u64 {
        self.start + self.at as u64
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.at..self.end]
    }

    /// Makes at least `need` bytes available at the cursor, or all that is
    /// left of the file. A read ends at a page boundary: the kernel reads
    /// whole pages anyway.
    fn fill(&mut self, need: usize) -> io::Result<()> {
        let have = self.end - self.at;
        if have >= need {
            return Ok(());
        }
        self.buf.copy_within(self.at..self.end, 0);
        self.start += self.at as u64;
        self.at = 0;
        self.end = have;
        let from = self.start + have as u64;
        let want = (need - have).max(self.ahead) as u64;
        let to = from
            .saturating_add(want)
            .div_ceil(PAGE)
            .saturating_mul(PAGE)
            .min(self.len);
        if to > from {
            let end = have + (to - from) as usize;
            if self.buf.len() < end {
                self.buf.resize(end, 0);
            }
            self.src.read_exact_at(&mut self.buf[have..end], from)?;
            self.end = end;
        }
        self.ahead = (self.ahead * 2).clamp(PAGE as usize, MAX_CHUNK);
        Ok(())
    }

    /// The varint at `offset` bytes past the cursor, and its width, if one
    /// ends before `end`.
    fn peek_varint(&mut self, offset: usize, end: u64) -> io::Result<Option<(u64, usize)>> {
        self.fill(offset + 10)?;
        let b = self.buffered();
        let room = (end.saturating_sub(self.pos()) as usize).min(b.len());
        let mut v = 0u64;
        for i in 0..10 {
            let Some(&byte) = b.get(offset + i).filter(|_| offset + i < room) else {
                return Ok(None);
            };
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(Some((v, i + 1)));
            }
        }
        Ok(None)
    }

    /// Copies the next `n` bytes to `out`.
    fn copy(&mut self, n: u64, out: &mut Vec<u8>) -> io::Result<()> {
        let n = usize::try_from(n).map_err(io::Error::other)?;
        let here = n.min(self.end - self.at);
        out.extend_from_slice(&self.buf[self.at..self.at + here]);
        self.at += here;
        if here < n {
            // Beyond the buffer: read straight into `out`.
            let rest = n - here;
            let old = out.len();
            out.resize(old + rest, 0);
            let from = self.pos();
            self.src.read_exact_at(&mut out[old..], from)?;
            self.start = from + rest as u64;
            self.end = 0;
            self.at = 0;
        }
        Ok(())
    }

    /// Moves the cursor `n` bytes on without reading them. Past more than
    /// [`SKIP_BYTES`], the next read starts small again: what follows a
    /// weight that large is a record, likely followed by another weight.
    fn skip(&mut self, n: u64) {
        let have = (self.end - self.at) as u64;
        if n <= have {
            self.at += n as usize;
        } else {
            self.start = self.pos() + n;
            self.end = 0;
            self.at = 0;
            if n > SKIP_BYTES {
                self.ahead = 0;
            }
        }
    }

    /// Whether the `len` bytes of a record `head` bytes past the cursor may
    /// hold a stored-payload field (they hold the first byte of its tag, or
    /// are not all there): a record no larger than [`LEAVE_BYTES`] holds no
    /// payload to leave out, and without that field it is skimmed as it is.
    fn may_hold_stored(&mut self, head: u64, len: u64) -> io::Result<bool> {
        let (head, len) = (head as usize, len as usize);
        self.fill(head + len)?;
        Ok(match self.buffered().get(head..head + len) {
            Some(record) => memchr::memchr(STORED_TAG_FIRST_BYTE, record).is_some(),
            None => true,
        })
    }

    /// Copies a message's fields up to `end`, entering those that lead to
    /// tensors and leaving large tensor payloads out.
    fn message(&mut self, kind: Kind, end: u64, depth: usize, out: &mut Vec<u8>) -> io::Result<()> {
        let mut stored: Vec<StoredPayload> = Vec::new();
        // A tensor's `data_type`, once read (writers put it before the
        // payload, in field order).
        let mut data_type = None;
        while self.pos() < end {
            let Some((tag, tag_w)) = self.peek_varint(0, end)? else {
                break;
            };
            let field = tag >> 3;
            if tag & 7 != 2 {
                let size = match tag & 7 {
                    0 => self.peek_varint(tag_w, end)?.map(|(v, w)| {
                        if kind == Kind::Tensor && field == 2 {
                            data_type = Some(v);
                        }
                        w as u64
                    }),
                    1 => Some(8),
                    5 => Some(4),
                    _ => None,
                };
                match size {
                    Some(s) if self.pos() + tag_w as u64 + s <= end => {
                        self.copy(tag_w as u64 + s, out)?;
                        continue;
                    }
                    _ => break,
                }
            }
            let Some((len, len_w)) = self.peek_varint(tag_w, end)? else {
                break;
            };
            let head = (tag_w + len_w) as u64;
            let body = self.pos() + head;
            if len > end - body {
                break;
            }
            if kind == Kind::Tensor && (field == STORED_FIELD || is_payload(field)) {
                // The last occurrence of a field is the one that counts.
                stored.retain(|s| u64::from(s.field.unwrap_or(0)) != field);
                if field == STORED_FIELD {
                    self.skip(head + len);
                    continue;
                }
                if len > leave_above(field, data_type) {
                    stored.push(StoredPayload {
                        field: Some(field as u32),
                        offset: Some(body),
                        length: Some(len),
                    });
                    self.skip(head + len);
                    continue;
                }
            }
            let mark = out.len();
            // The main graph is entered whatever its size when its node
            // records are set aside.
            let enter = self.aside.is_some() && kind == Kind::Model && field == 7;
            match child(kind, field) {
                Some(_) if len <= LEAVE_BYTES && !enter && !self.may_hold_stored(head, len)? => {
                    // Nothing in it to leave out: the bytes the walk copies.
                    self.copy(head + len, out)?;
                }
                Some(c) if depth < MAX_MESSAGE_DEPTH => {
                    self.copy(tag_w as u64, out)?;
                    self.skip(len_w as u64);
                    let at = out.len();
                    out.resize(at + len_w, 0);
                    self.message(c, body + len, depth + 1, out)?;
                    let new_len = (out.len() - at - len_w) as u64;
                    put_padded_varint(&mut out[at..at + len_w], new_len)?;
                }
                _ => self.copy(head + len, out)?,
            }
            if let Some(a) = &mut self.aside
                && kind == Kind::Graph
                && depth == 1
                && field == 1
            {
                // A node of the main graph: its record (past its key and
                // length, `head` bytes whatever was left out of it) goes
                // to the blocks.
                a.plain &= a.blocks.push(&out[mark + head as usize..]).is_some();
                out.truncate(mark);
            }
        }
        // What could not be walked goes as it is, for the decoder to report.
        let rest = end.saturating_sub(self.pos());
        if rest > 0
            && (kind == Kind::Model || (kind == Kind::Graph && depth == 1))
            && let Some(a) = &mut self.aside
        {
            a.plain = false;
        }
        self.copy(rest, out)?;
        for s in &stored {
            put_varint(out, (STORED_FIELD << 3) | 2);
            put_varint(out, s.encoded_len() as u64);
            s.encode_raw(out);
        }
        Ok(())
    }
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes `v` as a varint of exactly `slot.len()` bytes.
fn put_padded_varint(slot: &mut [u8], v: u64) -> io::Result<()> {
    let w = slot.len();
    if w < 10 && v >> (7 * w) != 0 {
        return Err(io::Error::other(
            "a message grew while its payloads were left out",
        ));
    }
    for (i, b) in slot.iter_mut().enumerate() {
        let more = if i + 1 < w { 0x80 } else { 0 };
        *b = ((v >> (7 * i)) as u8 & 0x7f) | more;
    }
    Ok(())
}

/// The model's bytes with every tensor payload that `leave_above` leaves
/// in the file left out (and located by a [`StoredPayload`] in its tensor).
pub fn skim<S: Source + ?Sized>(src: &S) -> io::Result<Vec<u8>> {
    Ok(skimmed(src, None)?.0)
}

/// [`skim`], with the main graph's node records set aside in blocks as
/// they are read, in file order, and left out of the copy (the main graph
/// then holds no node). The copy holds everything else, so it is small,
/// and each record is copied once. Without blocks when the model or its
/// main graph is not plainly readable: the copy then holds the records.
/// A file of [`LOOK_FROM`] bytes and more has its records looked at on a
/// second thread as the skim reads on ([`super::encoded::look`]). With
/// what `meanwhile` makes of the copy once the records are set aside,
/// while that thread looks at the last of them (`None` when they were not
/// set aside).
pub(super) fn skim_aside_then<S: Source + ?Sized, R>(
    src: &S,
    meanwhile: impl FnOnce(&Bytes) -> R,
) -> io::Result<(Bytes, Option<Blocks>, Option<R>)> {
    skim_aside_meanwhile(
        src,
        src.size() >= LOOK_FROM && crate::threads::two_cores(),
        meanwhile,
    )
}

/// [`skim_aside_then`] with nothing to do meanwhile.
#[cfg(test)]
pub(super) fn skim_aside<S: Source + ?Sized>(src: &S) -> io::Result<(Bytes, Option<Blocks>)> {
    skim_aside_looking(src, src.size() >= LOOK_FROM && crate::threads::two_cores())
}

/// Files smaller than this are skimmed on one thread: a second one would
/// cost more than the few records it could look at.
const LOOK_FROM: u64 = 1 << 20;

/// [`skim_aside`], with the records looked at on a second thread or not
/// (nor when the system refuses the thread).
#[cfg(test)]
pub(super) fn skim_aside_looking<S: Source + ?Sized>(
    src: &S,
    look: bool,
) -> io::Result<(Bytes, Option<Blocks>)> {
    let (copy, blocks, _) = skim_aside_meanwhile(src, look, |_| ())?;
    Ok((copy, blocks))
}

/// [`skim_aside_then`], with the records looked at on a second thread or
/// not (nor when the system refuses the thread).
fn skim_aside_meanwhile<S: Source + ?Sized, R>(
    src: &S,
    look: bool,
    meanwhile: impl FnOnce(&Bytes) -> R,
) -> io::Result<(Bytes, Option<Blocks>, Option<R>)> {
    let alone = || Aside {
        blocks: Blocks::default(),
        plain: true,
    };
    // The copy as shared bytes (what decoding keeps of it are slices), and
    // what `meanwhile` made of it, when the records were set aside: once
    // the looker, if there is one, has been sent the last of them (and
    // true then: its answer is still to be taken).
    let then = |(out, mut aside): (Vec<u8>, Option<Aside>)| {
        let out = Bytes::from(out);
        let looking = aside.as_mut().is_some_and(|a| a.blocks.send_last());
        let made = aside.as_ref().filter(|a| a.plain).map(|_| meanwhile(&out));
        (out, aside, made, looking)
    };
    let (out, aside, made) = if look {
        std::thread::scope(|threads| {
            let (sender, filled) = std::sync::mpsc::channel();
            let Ok(looker) = crate::threads::spawn_with(
                crate::threads::helper(),
                threads,
                filled,
                super::encoded::look,
            ) else {
                let (out, aside, made, _) = then(skimmed(src, Some(alone()))?);
                return Ok((out, aside, made));
            };
            let aside = Aside {
                blocks: Blocks::looked_at_by(sender),
                plain: true,
            };
            // On an error the blocks (and their sender) are dropped, and
            // the looker ends with what it was sent.
            let (out, mut aside, made, looking) = then(skimmed(src, Some(aside))?);
            if let Some(a) = &mut aside
                && looking
            {
                a.blocks.looked_at(|| crate::threads::joined(looker));
            }
            Ok::<_, io::Error>((out, aside, made))
        })?
    } else {
        let (out, aside, made, _) = then(skimmed(src, Some(alone()))?);
        (out, aside, made)
    };
    match aside {
        Some(a) if a.plain => Ok((out, Some(a.blocks), made)),
        // Read again with the records in place, for the decoder to name
        // the fault where it lies.
        _ => Ok((Bytes::from(skim(src)?), None, None)),
    }
}

/// The most room the copy is given at once (address space: what it does
/// not fill is never touched); a copy that needs more grows as a list does.
const COPY_ROOM: usize = 64 << 20;

fn skimmed<S: Source + ?Sized>(
    src: &S,
    aside: Option<Aside>,
) -> io::Result<(Vec<u8>, Option<Aside>)> {
    let len = src.size();
    let mut input = Input {
        src,
        len,
        buf: Vec::new(),
        end: 0,
        start: 0,
        at: 0,
        ahead: 0,
        aside,
    };
    // The copy is not shrunk to its size: that would copy it again into
    // fresh memory, and the room it does not fill is never touched. For
    // the same reason it is given room for the whole file at once (up to
    // COPY_ROOM): growing it by doubling copied it each time, into fresh
    // memory twice its size.
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(usize::MAX).min(COPY_ROOM));
    input.message(Kind::Model, len, 0, &mut out)?;
    Ok((out, input.aside))
}

/// Turns every stored payload of `model` into a slice of `file` (the bytes
/// the model was read from, mapped), in the field it was left out of.
pub fn attach(model: &mut ModelProto, file: &Bytes) -> Result<(), String> {
    if let Some(g) = &mut model.graph {
        attach_graph(g, file)?;
    }
    for f in &mut model.functions {
        for n in &mut f.node {
            for a in &mut n.attribute {
                attach_attribute(a, file)?;
            }
        }
        for a in &mut f.attribute_proto {
            attach_attribute(a, file)?;
        }
    }
    Ok(())
}

fn attach_graph(g: &mut GraphProto, file: &Bytes) -> Result<(), String> {
    for t in &mut g.initializer {
        attach_tensor(t, file)?;
    }
    for sp in &mut g.sparse_initializer {
        for t in sp.values.iter_mut().chain(sp.indices.iter_mut()) {
            attach_tensor(t, file)?;
        }
    }
    for n in &mut g.node {
        for a in &mut n.attribute {
            attach_attribute(a, file)?;
        }
        // The decoder grows each list from four places up: a node of one
        // attribute held room for four (over 1 KB), most of a large
        // graph's records. They are read, never grown, from here on.
        n.attribute.shrink_to_fit();
        n.input.shrink_to_fit();
        n.output.shrink_to_fit();
    }
    g.node.shrink_to_fit();
    g.initializer.shrink_to_fit();
    Ok(())
}

pub(super) fn attach_attribute(a: &mut AttributeProto, file: &Bytes) -> Result<(), String> {
    for t in a.t.iter_mut().map(|t| &mut **t).chain(a.tensors.iter_mut()) {
        attach_tensor(t, file)?;
    }
    if let Some(sp) = &mut a.sparse_tensor {
        for t in sp.values.iter_mut().chain(sp.indices.iter_mut()) {
            attach_tensor(t, file)?;
        }
    }
    for g in a.g.iter_mut().map(|g| &mut **g).chain(a.graphs.iter_mut()) {
        attach_graph(g, file)?;
    }
    Ok(())
}

fn attach_tensor(t: &mut TensorProto, file: &Bytes) -> Result<(), String> {
    for s in std::mem::take(&mut t.stored) {
        let (offset, len) = (s.offset.unwrap_or(0), s.length.unwrap_or(0));
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| Some(o..o.checked_add(l)?))
            .filter(|r| r.end <= file.len())
            .ok_or("a tensor payload lies outside the file")?;
        let data = Some(file.slice(range));
        match s.field {
            Some(4) => t.float_data = data,
            Some(9) => t.raw_data = data,
            Some(10) => t.double_data = data,
            _ => return Err("a tensor payload of an unknown field".into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{NodeProto, SparseTensorProto};

    fn tensor(name: &str, raw: usize) -> TensorProto {
        TensorProto {
            name: Some(name.into()),
            dims: vec![raw as i64],
            data_type: Some(2), // uint8
            raw_data: Some(Bytes::from((0..raw).map(|i| i as u8).collect::<Vec<_>>())),
            ..Default::default()
        }
    }

    /// Skims `m`'s bytes and decodes them as the loader does.
    fn round_trip(m: &ModelProto) -> (ModelProto, usize) {
        let bytes = Bytes::from(m.encode_to_vec());
        let meta = skim(&bytes[..]).unwrap();
        let mut back = ModelProto::decode(&meta[..]).unwrap();
        attach(&mut back, &bytes).unwrap();
        (back, meta.len())
    }

    /// The copy is given room for the whole file at once, so it is never
    /// grown (each growth copied it into fresh memory); the room is
    /// address space, capped at COPY_ROOM.
    #[test]
    fn the_copy_has_room_for_the_file_at_once() {
        let m = ModelProto {
            graph: Some(GraphProto {
                initializer: (0..50).map(|i| tensor(&format!("w{i}"), 1000)).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let bytes = m.encode_to_vec();
        let copy = skim(&bytes[..]).unwrap();
        // 50 small tensors: all of it is copied, 50 KB and more.
        assert!(copy.len() > 50_000 && copy.len() <= bytes.len());
        assert_eq!(copy.capacity(), bytes.len());
        assert_eq!(ModelProto::decode(&copy[..]).unwrap(), m);
    }

    /// A float32 weight of 2,400 bytes is left in the file; the int64
    /// tensor of the same size, the type of shapes and indices, and a
    /// float32 one of 800 bytes are copied with the records.
    #[test]
    fn weights_over_a_kilobyte_stay_in_the_file_shapes_are_copied() {
        let typed = |name: &str, data_type: i32, bytes: usize| TensorProto {
            data_type: Some(data_type),
            dims: vec![(bytes / 4) as i64],
            ..tensor(name, bytes)
        };
        let mut shape = typed("shape", 7, 2400);
        shape.dims = vec![300];
        let m = ModelProto {
            graph: Some(GraphProto {
                initializer: vec![typed("w", 1, 2400), shape, typed("b", 1, 800)],
                ..Default::default()
            }),
            ..Default::default()
        };
        let bytes = Bytes::from(m.encode_to_vec());
        let meta = skim(&bytes[..]).unwrap();
        let mut back = ModelProto::decode(&meta[..]).unwrap();
        attach(&mut back, &bytes).unwrap();
        assert_eq!(back, m);
        let in_file = |t: &TensorProto| {
            let at = t.raw_data.as_ref().unwrap().as_ptr_range();
            bytes.as_ptr_range().contains(&at.start)
        };
        let kept = &back.graph.as_ref().unwrap().initializer;
        assert_eq!(
            kept.iter().map(in_file).collect::<Vec<_>>(),
            [true, false, false]
        );
        // The copy lacks the weight's 2,400 bytes, less the 16 or so of
        // the note of where they lie.
        let whole = bytes.len();
        assert!(meta.len() < whole - 2400 + 32, "{} of {whole}", meta.len());
        assert!(meta.len() > whole - 2400, "{} of {whole}", meta.len());
    }

    proptest::proptest! {
        /// Whatever the tensors' types, sizes and data fields, the skim
        /// decodes to the model itself, and what it leaves in the file is
        /// what [`leave_above`] says: never an int32 or int64 payload of
        /// 32 KB or less, always anything else over 1 KB.
        #[test]
        fn skimmed_tensors_decode_to_the_model(
            specs in proptest::collection::vec((0usize..5, 0usize..5000, proptest::bool::ANY), 1..12)
        ) {
            // (data_type, element width): float32, int64, uint8, float16,
            // int32.
            const TYPES: [(i32, usize); 5] = [(1, 4), (7, 8), (2, 1), (10, 2), (6, 4)];
            let mut left_out = 0;
            let initializer: Vec<TensorProto> = specs
                .iter()
                .enumerate()
                .map(|(i, &(ty, n, as_field))| {
                    let (data_type, width) = TYPES[ty];
                    let bytes = Bytes::from((0..n * width).map(|b| b as u8).collect::<Vec<_>>());
                    let mut t = TensorProto {
                        name: Some(format!("t{i}")),
                        dims: vec![n as i64],
                        data_type: Some(data_type),
                        ..Default::default()
                    };
                    // float32 may come in float_data, the rest in raw_data.
                    let field = if as_field && data_type == 1 { 4 } else { 9 };
                    if field == 4 {
                        t.float_data = Some(bytes);
                    } else {
                        t.raw_data = Some(bytes);
                    }
                    if (n * width) as u64 > leave_above(field, Some(data_type as u64)) {
                        left_out += n * width;
                    }
                    t
                })
                .collect();
            let m = ModelProto {
                graph: Some(GraphProto {
                    initializer,
                    ..Default::default()
                }),
                ..Default::default()
            };
            let whole = m.encoded_len();
            let (back, meta) = round_trip(&m);
            proptest::prop_assert_eq!(&back, &m);
            // Each payload left out leaves a note of where it lies: 32
            // bytes at most.
            proptest::prop_assert!(meta <= whole - left_out + 32 * specs.len());
            proptest::prop_assert!(meta + left_out >= whole);
        }
    }

    #[test]
    fn payloads_are_left_out_and_found_again() {
        let constant = NodeProto {
            op_type: Some("Constant".into()),
            attribute: vec![AttributeProto {
                name: Some("value".into()),
                t: Some(Box::new(tensor("c", 40_000))),
                ..Default::default()
            }],
            ..Default::default()
        };
        let sub = GraphProto {
            initializer: vec![tensor("in_body", 50_000)],
            node: vec![constant.clone()],
            ..Default::default()
        };
        let with_body = NodeProto {
            op_type: Some("If".into()),
            attribute: vec![AttributeProto {
                name: Some("then_branch".into()),
                g: Some(Box::new(sub)),
                ..Default::default()
            }],
            ..Default::default()
        };
        let m = ModelProto {
            graph: Some(GraphProto {
                node: vec![constant, with_body],
                initializer: vec![tensor("small", 2048), tensor("big", 200_000)],
                sparse_initializer: vec![SparseTensorProto {
                    values: Some(tensor("sparse", 33_000)),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let (back, meta) = round_trip(&m);
        assert_eq!(back, m);
        // Left out: 40,000 (the Constant, in the graph and in the body) x 2
        // + 50,000 + 200,000 + 33,000 = 363,000 bytes of payload; what
        // remains are the records and the 2,048-byte tensor.
        let whole = m.encoded_len();
        assert!(
            whole > 363_000 && meta < whole - 363_000 + 200,
            "{meta} of {whole}"
        );
    }

    #[test]
    fn the_last_payload_of_a_field_counts_and_forged_references_are_dropped() {
        // A large tensor (walked field by field) and a small one (whose
        // record would be copied whole were the tag's first byte not in it).
        for size in [40_000, 100] {
            last_payload_counts_and_forged_reference_is_dropped(size);
        }
    }

    /// Records with nothing to leave out are skimmed to their own bytes,
    /// copied whole: small tensors, nodes, attributes.
    #[test]
    fn small_records_are_their_own_skim() {
        let node = NodeProto {
            op_type: Some("Constant".into()),
            output: vec!["c".into()],
            attribute: vec![crate::proto::AttributeProto {
                name: Some("value".into()),
                t: Some(Box::new(tensor("v", 64))),
                ..Default::default()
            }],
            ..Default::default()
        };
        let m = ModelProto {
            graph: Some(GraphProto {
                node: vec![node; 3],
                initializer: vec![tensor("small", 200)],
                ..Default::default()
            }),
            ..Default::default()
        };
        let bytes = m.encode_to_vec();
        assert!(!bytes.contains(&STORED_TAG_FIRST_BYTE));
        assert_eq!(skim(&bytes[..]).unwrap(), bytes);
    }

    fn last_payload_counts_and_forged_reference_is_dropped(size: usize) {
        let t = tensor("t", size);
        let mut bytes = t.encode_to_vec();
        // A second, small raw_data after the first: it is the one decoded.
        bytes.extend_from_slice(&[0x4a, 2, 7, 8]);
        // A reference the file itself holds, pointing anywhere.
        let forged = StoredPayload {
            field: Some(9),
            offset: Some(0),
            length: Some(3),
        };
        put_varint(&mut bytes, (STORED_FIELD << 3) | 2);
        put_varint(&mut bytes, forged.encoded_len() as u64);
        forged.encode_raw(&mut bytes);
        // The model's graph (field 7) holding the tensor as its initializer (5).
        let mut graph = Vec::new();
        put_varint(&mut graph, (5 << 3) | 2);
        put_varint(&mut graph, bytes.len() as u64);
        graph.extend_from_slice(&bytes);
        let mut model = Vec::new();
        put_varint(&mut model, (7 << 3) | 2);
        put_varint(&mut model, graph.len() as u64);
        model.extend_from_slice(&graph);
        let model = Bytes::from(model);
        let mut back = ModelProto::decode(&skim(&model[..]).unwrap()[..]).unwrap();
        attach(&mut back, &model).unwrap();
        let init = &back.graph.unwrap().initializer[0];
        assert_eq!(init.raw_data.as_deref(), Some(&[7u8, 8][..]));
        assert!(init.stored.is_empty());
    }

    /// A graph of `n` Relus, the first a Constant holding `payload` bytes.
    fn chain(n: usize, payload: usize) -> ModelProto {
        let constant = NodeProto {
            op_type: Some("Constant".into()),
            output: vec!["v0".into()],
            attribute: vec![crate::proto::AttributeProto {
                name: Some("value".into()),
                t: Some(Box::new(tensor("c", payload))),
                ..Default::default()
            }],
            ..Default::default()
        };
        let relu = |i: usize| NodeProto {
            op_type: Some("Relu".into()),
            input: vec![format!("v{}", i - 1)],
            output: vec![format!("v{i}")],
            ..Default::default()
        };
        ModelProto {
            ir_version: Some(8),
            graph: Some(GraphProto {
                node: std::iter::once(constant).chain((1..n).map(relu)).collect(),
                initializer: vec![tensor("w", 64)],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The records set aside are the nodes' own bytes, in order, across
    /// blocks (a payload left out of one, as the plain skim leaves it out);
    /// the copy is the model without them, and the wire check counts the
    /// same as on the whole skim.
    #[test]
    fn the_main_nodes_are_set_aside_record_by_record() {
        for (n, payload) in [(2_500, 40_000), (3, 10)] {
            let m = chain(n, payload);
            let bytes = Bytes::from(m.encode_to_vec());
            let (rest, blocks) = skim_aside(&bytes[..]).unwrap();
            let blocks = blocks.unwrap();
            let records: Vec<&[u8]> = blocks.records().collect();
            assert_eq!(records.len(), n);
            let g = m.graph.as_ref().unwrap();
            // The Relus are copied as they are.
            for (r, node) in records.iter().zip(&g.node).skip(1) {
                assert_eq!(*r, &node.encode_to_vec()[..]);
            }
            // The Constant's payload is where its record says, in the file.
            let mut first = NodeProto::decode(records[0]).unwrap();
            attach_attribute(&mut first.attribute[0], &bytes).unwrap();
            assert_eq!(first, g.node[0]);
            // 40,000 bytes (more than SKIP_BYTES) are left in the file.
            assert!(records[0].len() < 200);
            let mut back = ModelProto::decode(&rest[..]).unwrap();
            attach(&mut back, &bytes).unwrap();
            let bg = back.graph.as_ref().unwrap();
            assert!(bg.node.is_empty());
            assert_eq!(bg.initializer, g.initializer);
            let whole = skim(&bytes[..]).unwrap();
            let counted = super::super::wire::check(&rest, Some(&blocks), bytes.len());
            assert_eq!(
                counted,
                super::super::wire::check(&whole, None, bytes.len())
            );
            assert_eq!(counted.unwrap().nodes, n);
        }
    }

    /// Names node `at` of `m` and gives it one attribute more than a node
    /// may hold.
    fn widen(m: &mut ModelProto, at: usize, name: &str) {
        let node = &mut m.graph.as_mut().unwrap().node[at];
        node.name = Some(name.into());
        node.attribute = (0..=crate::ir::MAX_NODE_ATTRIBUTES)
            .map(|i| crate::proto::AttributeProto {
                name: Some(format!("a{i}")),
                i: Some(1),
                ..Default::default()
            })
            .collect();
    }

    /// A node over a limit is named the same whether its record was set
    /// aside or checked in place.
    #[test]
    fn a_node_set_aside_is_checked_as_in_place() {
        let mut m = chain(3, 10);
        widen(&mut m, 2, "wide");
        let bytes = m.encode_to_vec();
        let (rest, blocks) = skim_aside(&bytes[..]).unwrap();
        let aside = super::super::wire::check(&rest, blocks.as_ref(), bytes.len());
        let whole = super::super::wire::check(&skim(&bytes[..]).unwrap(), None, bytes.len());
        assert_eq!(aside, whole);
        assert!(
            aside
                .unwrap_err()
                .starts_with("node 'wide' (Relu) has 1025 attributes")
        );
    }

    /// A model whose main graph is not plainly readable keeps its records in
    /// the copy, as the plain skim makes it, for the decoder to report.
    #[test]
    fn an_unreadable_main_graph_keeps_its_nodes_in_place() {
        // A group (wire type 3, field 9: its start and end) after the
        // graph's fields.
        let mut graph = chain(3, 10).graph.unwrap().encode_to_vec();
        graph.extend([9 << 3 | 3, 9 << 3 | 4]);
        let mut bytes = Vec::new();
        put_varint(&mut bytes, (7 << 3) | 2);
        put_varint(&mut bytes, graph.len() as u64);
        bytes.extend_from_slice(&graph);
        let (rest, blocks) = skim_aside(&bytes[..]).unwrap();
        assert!(blocks.is_none());
        assert_eq!(rest, skim(&bytes[..]).unwrap());
        for bad in [&[0x3a, 0x05, 0x2a][..], &[0x3a, 0x02, 0x0b, 0x0c][..]] {
            let (rest, blocks) = skim_aside(bad).unwrap();
            assert!(blocks.is_none());
            assert_eq!(rest, bad);
        }
    }

    /// Two graph fields (decoding merges them): the nodes of both, in order.
    #[test]
    fn nodes_of_every_graph_field_are_set_aside_in_order() {
        let a = chain(2, 10).encode_to_vec();
        let b = chain(3, 10).encode_to_vec();
        let bytes: Vec<u8> = a.iter().chain(&b).copied().collect();
        let (rest, blocks) = skim_aside(&bytes[..]).unwrap();
        let records: Vec<Vec<u8>> = blocks.unwrap().records().map(<[u8]>::to_vec).collect();
        let all: Vec<Vec<u8>> = [chain(2, 10), chain(3, 10)]
            .iter()
            .flat_map(|m| m.graph.clone().unwrap().node)
            .map(|n| n.encode_to_vec())
            .collect();
        assert_eq!(records, all);
        let back = ModelProto::decode(&rest[..]).unwrap();
        assert_eq!(back.graph.unwrap().initializer.len(), 2);
    }

    /// What the looker makes of the records beside the skim (their wire
    /// counts and their outline) is what the wire check and the outline
    /// make of them after it, on a graph of four blocks: plain, with a
    /// node holding a graph, with limits broken in two blocks (the first
    /// in file order is named), with a record the plain reader does not
    /// take before a node holding a graph, and with one nothing takes.
    #[test]
    fn records_looked_at_beside_the_skim_are_read_as_after_it() {
        use super::super::encoded::Encoded;
        let n = 3_500;
        let holds_graph = |m: &mut ModelProto, at: usize| {
            let node = &mut m.graph.as_mut().unwrap().node[at];
            node.attribute.push(crate::proto::AttributeProto {
                name: Some("body".into()),
                g: Some(Box::new(GraphProto::default())),
                ..Default::default()
            });
        };
        // Each record replaced after encoding: (position, bytes).
        let grouped = {
            let mut r = chain(2, 10).graph.unwrap().node[1].encode_to_vec();
            r.extend([9 << 3 | 3, 9 << 3 | 4]);
            r
        };
        let broken = vec![0x0a, 0x05, b'a'];
        // Records named as exporters name them: longer than their outline.
        let chain = |n: usize, payload: usize| {
            let mut m = chain(n, payload);
            for (i, node) in m.graph.as_mut().unwrap().node.iter_mut().enumerate() {
                node.name = Some(format!("/model/layers.{i}/mlp/activation/Relu"));
            }
            m
        };
        type Case = (ModelProto, Vec<(usize, Vec<u8>)>);
        let mut cases: Vec<Case> = vec![(chain(n, 40_000), vec![])];
        let mut m = chain(n, 40_000);
        holds_graph(&mut m, 2_500);
        cases.push((m, vec![]));
        let mut m = chain(n, 40_000);
        widen(&mut m, 1_500, "wide1500");
        widen(&mut m, 3_000, "wide3000");
        cases.push((m, vec![]));
        let mut m = chain(n, 40_000);
        holds_graph(&mut m, 900);
        holds_graph(&mut m, 2_500);
        cases.push((m.clone(), vec![(2_100, grouped)]));
        cases.push((m, vec![(1_200, broken)]));
        // Records of 18 bytes: an outline larger than they are is given up
        // and made in its turn.
        let tiny = |i: usize| NodeProto {
            op_type: Some("Relu".into()),
            input: vec![format!("{:04}", i)],
            output: vec![format!("{:04}", i + 1)],
            ..Default::default()
        };
        let mut m = chain(1, 10);
        m.graph.as_mut().unwrap().node = (0..n).map(tiny).collect();
        cases.push((m, vec![]));
        let outline = |blocks: Blocks, file: &Bytes| {
            let mut e = Encoded::new(blocks, file.clone(), ".".into());
            e.outline().map(|o| {
                o.map(|o| {
                    let nodes: Vec<(Vec<String>, Vec<String>, String)> = (0..o.len())
                        .map(|i| {
                            let names = |it: &mut dyn Iterator<Item = &str>| {
                                it.map(str::to_string).collect::<Vec<_>>()
                            };
                            (
                                names(&mut e.inputs(&o, i)),
                                names(&mut e.outputs(&o, i)),
                                e.op(&o, i).0.to_string(),
                            )
                        })
                        .collect();
                    let whole: Vec<usize> = o.whole.iter().map(|(i, _)| *i).collect();
                    (nodes, whole)
                })
            })
        };
        let mut seen = Vec::new();
        let mut gave_up = Vec::new();
        for (m, replaced) in cases {
            let mut g = m.graph.clone().unwrap();
            let mut records: Vec<Vec<u8>> = g.node.iter().map(|n| n.encode_to_vec()).collect();
            for (at, r) in replaced {
                records[at] = r;
            }
            // The graph written by hand around the records, as a writer
            // puts them: nodes first.
            g.node.clear();
            let mut graph = Vec::new();
            for r in &records {
                put_varint(&mut graph, (1 << 3) | 2);
                put_varint(&mut graph, r.len() as u64);
                graph.extend_from_slice(r);
            }
            g.encode_raw(&mut graph);
            let mut bytes = Vec::new();
            put_varint(&mut bytes, (7 << 3) | 2);
            put_varint(&mut bytes, graph.len() as u64);
            bytes.extend_from_slice(&graph);
            let bytes = Bytes::from(bytes);
            let read = [false, true].map(|look| {
                let (rest, blocks) = skim_aside_looking(&bytes[..], look).unwrap();
                let blocks = blocks.unwrap();
                assert_eq!(blocks.counted().is_some(), look);
                gave_up.push(blocks.outline_given_up());
                let copies: Vec<Vec<u8>> = blocks.records().map(<[u8]>::to_vec).collect();
                assert_eq!(copies.len(), n);
                let checked = super::super::wire::check(&rest, Some(&blocks), bytes.len());
                // The copy counted first, the records then added (how a
                // load counts it while the looker ends): the same answer.
                let copy = super::super::wire::count_copy(&rest, bytes.len())
                    .expect("the copy alone keeps within every limit");
                let added = super::super::wire::check_counted(copy, Some(&blocks), bytes.len());
                assert_eq!(added, checked);
                (rest, copies, checked, blocks)
            });
            let [
                (rest0, copies0, checked0, blocks0),
                (rest1, copies1, checked1, blocks1),
            ] = read;
            assert_eq!((rest0, copies0), (rest1, copies1));
            assert_eq!(checked0, checked1);
            let got = match checked0 {
                Err(m) => Err(m),
                Ok(_) => {
                    let (a, b) = (outline(blocks0, &bytes), outline(blocks1, &bytes));
                    assert_eq!(a, b);
                    a.map(|o| o.map(|(nodes, whole)| (nodes.len(), whole)))
                }
            };
            seen.push(got);
        }
        // What each case comes to, so that none compares two failures of
        // the same kind by accident.
        assert_eq!(seen[0], Ok(Some((n, vec![]))));
        assert_eq!(seen[1], Ok(Some((n, vec![2_500]))));
        assert!(
            seen[2]
                .as_ref()
                .unwrap_err()
                .starts_with("node 'wide1500' (Relu) has 1025 attributes")
        );
        assert_eq!(seen[3], Ok(None));
        assert!(seen[4].is_err());
        assert_eq!(seen[5], Ok(Some((n, vec![]))));
        // Looked at in every case, the outline given up only on the last.
        // A looker the system refuses (Linux refuses an exbibyte of
        // stack) leaves the skim as it is alone.
        if cfg!(target_os = "linux") {
            let m = chain(n, 40_000).encode_to_vec();
            crate::threads::refuse_threads(true);
            let refused = skim_aside_looking(&m[..], true);
            crate::threads::refuse_threads(false);
            let (rest, blocks) = refused.unwrap();
            let blocks = blocks.unwrap();
            assert!(blocks.counted().is_none());
            let (alone, by_one) = skim_aside_looking(&m[..], false).unwrap();
            assert_eq!(rest, alone);
            assert!(blocks.records().eq(by_one.unwrap().records()));
        }
        let given_up = [false, false, false, false, false, true];
        let expected: Vec<Option<bool>> = given_up.iter().flat_map(|&g| [None, Some(g)]).collect();
        assert_eq!(gave_up, expected);
    }

    #[test]
    fn malformed_bytes_reach_the_decoder_unchanged() {
        // A graph whose length runs past the end; an initializer with a
        // truncated varint; a group.
        for bad in [
            &[0x3a, 0x05, 0x2a][..],
            &[0x3a, 0x03, 0x2a, 0x01, 0x08][..],
            &[0x3a, 0x02, 0x0b, 0x0c][..],
        ] {
            assert_eq!(skim(bad).unwrap(), bad);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod reads {
    use super::*;
    use crate::proto::NodeProto;

    /// Bytes this thread has read through system calls so far.
    fn read_chars() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        io.lines()
            .find_map(|l| l.strip_prefix("rchar: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn loading_reads_the_records_not_the_weights() {
        // 40 initializers of 200 KB (8 MB of weights) between 40 small
        // ones of 2,400 bytes, and 1000 nodes: the records and the small
        // tensors are about 140 KB.
        let mut g = GraphProto::default();
        for i in 0..40 {
            g.initializer.push(TensorProto {
                name: Some(format!("w{i}")),
                dims: vec![50_000],
                data_type: Some(1), // float32
                raw_data: Some(Bytes::from(vec![1u8; 200_000])),
                ..Default::default()
            });
            // 300 int64 values (2,400 bytes, read with the records).
            g.initializer.push(TensorProto {
                name: Some(format!("s{i}")),
                dims: vec![300],
                data_type: Some(7),
                raw_data: Some(Bytes::from(
                    (0..300i64).flat_map(i64::to_le_bytes).collect::<Vec<_>>(),
                )),
                ..Default::default()
            });
        }
        for i in 0..1000 {
            g.node.push(NodeProto {
                op_type: Some("Relu".into()),
                input: vec![format!("x{i}")],
                output: vec![format!("x{}", i + 1)],
                ..Default::default()
            });
        }
        let m = ModelProto {
            graph: Some(g),
            ..Default::default()
        };
        let path = std::env::temp_dir().join(format!("c3-read-{}.onnx", std::process::id()));
        std::fs::write(&path, m.encode_to_vec()).unwrap();
        let before = read_chars();
        let loaded = crate::onnx::load(path.to_str().unwrap());
        let read = read_chars() - before;
        std::fs::remove_file(&path).unwrap();
        let loaded = loaded.unwrap();
        // Not a page of the file's mapping is resident yet.
        assert_eq!(resident_kb(loaded.bytes.as_ptr()), 0);
        // Per pair of initializers: the small one's 2,400 bytes and at most
        // two reads that end at a page boundary (each at most 4 KB); the
        // 1000 nodes (about 14 KB) take a few reads: about 490 KB at most,
        // a sixteenth of the 8.1 MB file (305 KB when written).
        assert!(
            read < 40 * (2400 + 2 * 4096) + 64 * 1024,
            "read {read} bytes"
        );
        // A value decoded: 300 int64s.
        let s = &loaded.model.graph.as_ref().unwrap().initializer[1];
        assert_eq!(
            crate::onnx::tensor::decode(s, std::path::Path::new(".")),
            Ok(crate::shape::TensorValue::ints(
                (0..300).map(Into::into).collect()
            ))
        );
        // Still nothing of the mapping is resident: the value was read with
        // the records.
        assert_eq!(resident_kb(loaded.bytes.as_ptr()), 0);
        // Comparing reads every payload.
        assert_eq!(loaded.model, m);
    }

    /// Kilobytes resident of the mapping that holds `p` (/proc/self/smaps).
    fn resident_kb(p: *const u8) -> u64 {
        let at = p as u64;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16))
            {
                inside = lo <= at && at < hi;
            } else if inside && let Some(kb) = line.strip_prefix("Rss:") {
                return kb.trim().trim_end_matches("kB").trim().parse().unwrap();
            }
        }
        panic!("no mapping holds {at:#x}");
    }
}
