//! The main graph's node records left encoded until inference reaches
//! them. Decoded all at once, a large graph's nodes take about ten times
//! their encoded size (every name, attribute and small tensor its own
//! allocation) and all of it is held at the start of inference; left
//! encoded, each is decoded when its turn comes and dropped once inferred,
//! so only the records' bytes (already read) and one node are held.
//!
//! Ordering the nodes needs only their names: [`Encoded::outline`] notes
//! where those lie in the records, and decodes whole only the nodes whose
//! attributes hold subgraphs (whose free names take part). The skim copies
//! the records into blocks of [`BLOCK`] nodes as it reads them (the rest of
//! the model is all it copies into one buffer), and each block is freed
//! once its nodes are decoded.
//!
//! In a large file, each block the skim fills is looked at on a second
//! thread while the skim reads on ([`look`]): its records are counted for
//! the wire check and outlined there, in file order, so neither pass is
//! left for after the skim.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};

use bytes::Bytes;
use prost::Message;

use super::proto::{GraphProto, NodeProto};
use super::wire::fields;

/// How many node records a block holds: a block is freed once all its
/// nodes are decoded, so the records are let go as inference goes.
const BLOCK: usize = 1024;

/// The main graph's node records, in file order, as the loader left them.
pub struct Encoded {
    /// The records, [`BLOCK`] nodes to a block; `None` once all of its
    /// nodes are decoded.
    blocks: Vec<Option<Box<[u8]>>>,
    /// Per block, how many of its nodes are not decoded yet.
    left: Vec<u32>,
    /// Each node's record: where it lies in its block.
    ranges: Vec<(u32, u32)>,
    /// The model's own bytes: the payloads the skim left out are slices of
    /// them.
    file: Bytes,
    /// The model's folder: external data must stay inside it.
    dir: PathBuf,
    /// The outline [`look`] made while the skim read on, until asked for.
    ahead: Option<Box<Ahead>>,
    /// Each node's number of inputs and outputs, as its outline read them
    /// ([`Encoded::keep_room`]), capped: a node decoded after gets room
    /// for its lists at once, where growing them a name at a time cost
    /// two or three reallocations a node.
    room: Vec<[u16; 2]>,
}

/// The main graph's node records, copied out of the skimmed model as the
/// skim reaches them ([`super::read::skim_aside_then`]): [`BLOCK`] records to a
/// block, each record's place in its block.
#[derive(Default)]
pub(super) struct Blocks {
    blocks: Vec<Box<[u8]>>,
    ranges: Vec<(u32, u32)>,
    /// The block being filled.
    last: Vec<u8>,
    /// Where filled blocks go to be looked at while the skim reads on
    /// ([`look`]); they come back with [`Blocks::looked_at`] once
    /// [`Blocks::send_last`] has sent the last.
    look: Option<Sender<Filled>>,
    /// What [`look`] made of the records, once they are back.
    looked: Option<Box<Looked>>,
}

/// A filled block on its way to [`look`]: its bytes and its records'
/// places in them.
pub(super) type Filled = (Box<[u8]>, Vec<(u32, u32)>);

/// What [`look`] made of the main graph's node records, in file order.
pub(super) struct Looked {
    /// Their counts for the wire check, or its error at the first record
    /// that breaks a limit.
    pub(super) counted: Result<super::wire::Counted, String>,
    outline: Ahead,
}

/// The outline made by [`look`]: up to the first record the plain reader
/// does not take, with none decoded whole yet, and which records hold
/// graphs (decoded whole when the outline is asked for, as then).
#[derive(Default)]
struct Ahead {
    outline: Outline,
    graphs: Vec<usize>,
    /// The first record not plainly readable.
    stop: Option<usize>,
    /// Set when the outline grew larger than the records it reads (tiny
    /// records, as a hostile file holds): [`Encoded::outline`] then makes
    /// it in its turn, after the wire check has had its say, as it would
    /// without a look ahead.
    gave_up: bool,
}

/// Counts and outlines the records of the blocks sent, in the order sent,
/// as the wire check and [`Encoded::outline`] would one after the other;
/// returns the blocks in that order with what it made of them.
pub(super) fn look(blocks: Receiver<Filled>) -> (Vec<Box<[u8]>>, Looked) {
    let mut back = Vec::new();
    let mut counted = Ok(super::wire::Counted::default());
    let mut ahead = Ahead::default();
    let mut outputs = Vec::new();
    let mut i = 0;
    // The records' bytes so far, their keys and lengths counted as two.
    let mut read = 0usize;
    for (block, ranges) in blocks {
        for &(s, e) in &ranges {
            let rec = &block[s as usize..e as usize];
            read += rec.len() + 2;
            if let Ok(c) = &mut counted
                && let Err(m) = super::wire::count_node(rec, c)
            {
                counted = Err(m);
            }
            if ahead.stop.is_none() && !ahead.gave_up {
                match ahead.outline.read(rec, &mut outputs) {
                    Some(true) => ahead.graphs.push(i),
                    Some(false) => {}
                    None => ahead.stop = Some(i),
                }
            }
            i += 1;
        }
        back.push(block);
        let held = ahead.outline.briefs.len() * std::mem::size_of::<Brief>()
            + ahead.outline.names.len() * std::mem::size_of::<(u32, u32)>();
        if held > read {
            ahead = Ahead {
                gave_up: true,
                ..Ahead::default()
            };
        }
    }
    let looked = Looked {
        counted,
        outline: ahead,
    };
    (back, looked)
}

impl Blocks {
    /// Blocks that go to `look` as they fill.
    pub(super) fn looked_at_by(look: Sender<Filled>) -> Blocks {
        Blocks {
            look: Some(look),
            ..Blocks::default()
        }
    }

    /// Adds a record (a node's bytes, without its key and length); `None`
    /// when a block would outgrow the positions it can hold.
    pub(super) fn push(&mut self, record: &[u8]) -> Option<()> {
        if self.ranges.len().is_multiple_of(BLOCK) && !self.ranges.is_empty() {
            // The next block is made the size of the one just filled and
            // an eighth: a graph's records are alike, so it rarely grows
            // (growing copies it and takes fresh memory twice its size).
            let next = Vec::with_capacity(self.last.len() + self.last.len() / 8);
            let full = std::mem::replace(&mut self.last, next);
            self.seal(full);
        }
        let start = u32::try_from(self.last.len()).ok()?;
        self.last.extend_from_slice(record);
        self.ranges
            .push((start, u32::try_from(self.last.len()).ok()?));
        Some(())
    }

    /// Files a filled block: sent to be looked at, or kept here.
    fn seal(&mut self, full: Vec<u8>) {
        let full = full.into_boxed_slice();
        let Some(look) = &self.look else {
            self.blocks.push(full);
            return;
        };
        let at = self.blocks.len() * BLOCK;
        let ranges = self.ranges[at..(at + BLOCK).min(self.ranges.len())].to_vec();
        // Its place is held until it comes back. A looker that is gone
        // panicked, which joining it raises.
        match look.send((full, ranges)) {
            Ok(()) => self.blocks.push(Box::default()),
            Err(std::sync::mpsc::SendError((full, _))) => self.blocks.push(full),
        }
    }

    /// Sends the last block too and tells the looker there is no more: it
    /// ends once it has looked at what it was sent. True when there is a
    /// looker, whose answer [`Blocks::looked_at`] then takes.
    pub(super) fn send_last(&mut self) -> bool {
        if self.look.is_none() {
            return false;
        }
        if self.ranges.len() > self.blocks.len() * BLOCK {
            let last = std::mem::take(&mut self.last);
            self.seal(last);
        }
        self.look = None;
        true
    }

    /// The looker's answer, which `join` gives back once it has ended
    /// ([`Blocks::send_last`]): the blocks take their places again.
    pub(super) fn looked_at(&mut self, join: impl FnOnce() -> (Vec<Box<[u8]>>, Looked)) {
        // Every block was sent (a send fails only when the looker is gone,
        // and joining it then raises its panic), and comes back in order.
        let (blocks, looked) = join();
        debug_assert_eq!(blocks.len(), self.blocks.len());
        self.blocks = blocks;
        self.looked = Some(Box::new(looked));
    }

    /// Whether [`look`] gave its outline up (`None`: it did not look).
    #[cfg(test)]
    pub(super) fn outline_given_up(&self) -> Option<bool> {
        self.looked.as_ref().map(|l| l.outline.gave_up)
    }

    /// The wire counts [`look`] made, if it looked.
    pub(super) fn counted(&self) -> Option<&Result<super::wire::Counted, String>> {
        self.looked.as_ref().map(|l| &l.counted)
    }

    /// The records in order.
    pub(super) fn records(&self) -> impl Iterator<Item = &[u8]> {
        self.ranges.iter().enumerate().map(|(i, &(s, e))| {
            let block = match self.blocks.get(i / BLOCK) {
                Some(b) => &b[..],
                None => &self.last[..],
            };
            &block[s as usize..e as usize]
        })
    }
}

impl Encoded {
    pub(super) fn new(mut records: Blocks, file: Bytes, dir: PathBuf) -> Encoded {
        if records.ranges.len() > records.blocks.len() * BLOCK {
            let last = std::mem::take(&mut records.last);
            records.blocks.push(last.into_boxed_slice());
        }
        let n = records.ranges.len();
        let left = (0..records.blocks.len())
            .map(|b| (n - b * BLOCK).min(BLOCK) as u32)
            .collect();
        Encoded {
            blocks: records.blocks.into_iter().map(Some).collect(),
            left,
            ranges: records.ranges,
            file,
            dir,
            ahead: records.looked.map(|l| Box::new(l.outline)),
            room: Vec::new(),
        }
    }

    /// How many nodes the main graph has.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the main graph has no node.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Node `i`'s record (empty once its block is freed).
    fn record(&self, i: usize) -> &[u8] {
        let (s, e) = self.ranges[i];
        match &self.blocks[i / BLOCK] {
            Some(b) => &b[s as usize..e as usize],
            None => &[],
        }
    }

    /// The text at `span` of node `i`'s record.
    fn text(&self, i: usize, (s, e): (u32, u32)) -> &str {
        let bytes = self
            .record(i)
            .get(s as usize..e as usize)
            .unwrap_or_default();
        // SAFETY: every span is made by `brief`, only for bytes it checked
        // are UTF-8, and the records never change (a freed block yields no
        // bytes at all). Checking again here was most of the ordering's
        // work.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// Node `i` (in file order), decoded, its left-out payloads attached
    /// and checked as loading checks every node.
    pub fn decode(&self, i: usize) -> Result<NodeProto, String> {
        let mut n = NodeProto::default();
        if let Some(&[inputs, outputs]) = self.room.get(i) {
            n.input.reserve_exact(inputs.into());
            n.output.reserve_exact(outputs.into());
        }
        n.merge(self.record(i))
            .map_err(|e| format!("not a valid ONNX model: {}", super::decode_message(&e)))?;
        for a in &mut n.attribute {
            super::read::attach_attribute(a, &self.file)?;
        }
        super::check_nodes(
            std::slice::from_ref(&n),
            &mut super::tensor::ExternalFiles::new(&self.dir),
            1,
        )?;
        Ok(n)
    }

    /// The nodes whose records hold `needle`, decoded as
    /// [`Encoded::decode`] decodes them; the others are not decoded.
    pub fn decode_holding<'e>(
        &'e self,
        needle: &'e [u8],
    ) -> impl Iterator<Item = Result<NodeProto, String>> + 'e {
        let finder = memchr::memmem::Finder::new(needle);
        (0..self.len())
            .filter(move |&i| finder.find(self.record(i)).is_some())
            .map(|i| self.decode(i))
    }

    /// [`Encoded::decode`], each node once: its block is freed when its
    /// last node is taken.
    pub fn take(&mut self, i: usize) -> Result<NodeProto, String> {
        let n = self.decode(i);
        self.release(i);
        n
    }

    /// Marks node `i` as taken (decoded elsewhere), freeing its block after
    /// its last node.
    pub fn release(&mut self, i: usize) {
        let b = i / BLOCK;
        self.left[b] = self.left[b].saturating_sub(1);
        if self.left[b] == 0 {
            self.blocks[b] = None;
        }
    }

    /// Every node's names, read in place; `Ok(None)` when a record is not
    /// plainly readable but decodes (the caller then decodes them all).
    /// A large graph's second half is read on a second thread; the first
    /// half's answer stands when it is not an outline (as when read in
    /// turn, the first record in file order that is not plainly readable
    /// decides).
    pub fn outline(&mut self) -> Result<Option<Outline>, String> {
        if let Some(a) = self.ahead.take().filter(|a| !a.gave_up) {
            // As `outline_of` would have met them: the nodes that hold
            // graphs decoded in order, then the first record not plainly
            // readable (which comes after them all) left to the decoder.
            let a = *a;
            let mut o = a.outline;
            o.whole.reserve_exact(a.graphs.len());
            for i in a.graphs {
                o.whole.push((i, self.decode(i)?));
            }
            if let Some(i) = a.stop {
                self.decode(i)?;
                return Ok(None);
            }
            return Ok(Some(o));
        }
        let n = self.ranges.len();
        if !crate::threads::second_thread(n) {
            return self.outline_of(0..n);
        }
        let mid = n / 2;
        let (first, second) =
            crate::threads::both(|| self.outline_of(0..mid), || self.outline_of(mid..n));
        let Some(mut o) = first? else {
            return Ok(None);
        };
        let Some(rest) = second? else {
            return Ok(None);
        };
        // The second half's names follow the first's.
        let Ok(shift) = u32::try_from(o.names.len()) else {
            return Ok(None);
        };
        o.briefs.reserve_exact(rest.briefs.len());
        for mut b in rest.briefs {
            let Some(start) = b.start.checked_add(shift) else {
                return Ok(None);
            };
            b.start = start;
            o.briefs.push(b);
        }
        o.names.extend_from_slice(&rest.names);
        o.whole.extend(rest.whole);
        Ok(Some(o))
    }

    /// [`Encoded::outline`] of the nodes in `range`.
    fn outline_of(&self, range: std::ops::Range<usize>) -> Result<Option<Outline>, String> {
        let mut o = Outline {
            briefs: Vec::with_capacity(range.len()),
            names: Vec::with_capacity(range.len() * 3),
            whole: Vec::new(),
        };
        let mut outputs: Vec<(u32, u32)> = Vec::new();
        for i in range {
            let Some(graphs) = o.read(self.record(i), &mut outputs) else {
                // The decoder names the fault; a record it takes that the
                // plain reader does not is left to the decoder, with all.
                self.decode(i)?;
                return Ok(None);
            };
            if graphs {
                o.whole.push((i, self.decode(i)?));
            }
        }
        Ok(Some(o))
    }

    /// Keeps the number of inputs and outputs `o` read of each node, so
    /// that decoding a node gives its lists their room at once (a count
    /// past the cap is room for the first ones; the rest grow as ever).
    pub fn keep_room(&mut self, o: &Outline) {
        let cap = |n: u32| u16::try_from(n).unwrap_or(u16::MAX);
        self.room = o
            .briefs
            .iter()
            .map(|b| [cap(b.inputs), cap(b.outputs)])
            .collect();
    }

    /// Node `i`'s name and op type, as the outline read them.
    pub fn label(&self, o: &Outline, i: usize) -> (&str, &str) {
        let b = &o.briefs[i];
        (self.text(i, b.name), self.text(i, b.op))
    }

    /// Node `i`'s op type and domain.
    pub fn op(&self, o: &Outline, i: usize) -> (&str, &str) {
        let b = &o.briefs[i];
        (self.text(i, b.op), self.text(i, b.domain))
    }

    /// Node `i`'s inputs.
    pub fn inputs<'s>(&'s self, o: &'s Outline, i: usize) -> impl Iterator<Item = &'s str> {
        let b = &o.briefs[i];
        let s = b.start as usize;
        o.names[s..s + b.inputs as usize]
            .iter()
            .map(move |&span| self.text(i, span))
    }

    /// Node `i`'s outputs.
    pub fn outputs<'s>(&'s self, o: &'s Outline, i: usize) -> impl Iterator<Item = &'s str> {
        let b = &o.briefs[i];
        let s = b.start as usize + b.inputs as usize;
        o.names[s..s + b.outputs as usize]
            .iter()
            .map(move |&span| self.text(i, span))
    }
}

/// What ordering reads of a node left encoded: where its texts lie in its
/// record.
pub struct Brief {
    name: (u32, u32),
    op: (u32, u32),
    domain: (u32, u32),
    /// Its inputs then its outputs in [`Outline`]'s names, from `start`.
    start: u32,
    inputs: u32,
    outputs: u32,
}

/// The main graph's nodes as ordering reads them: spans of their records.
#[derive(Default)]
pub struct Outline {
    briefs: Vec<Brief>,
    names: Vec<(u32, u32)>,
    /// The nodes whose attributes hold graphs, decoded whole, by position.
    pub whole: Vec<(usize, NodeProto)>,
}

impl Outline {
    /// Adds the next node's record: whether its attributes hold graphs, or
    /// `None` when it is not plainly readable (then nothing is added).
    /// `outputs` is room for its outputs' spans, reused between records.
    fn read(&mut self, rec: &[u8], outputs: &mut Vec<(u32, u32)>) -> Option<bool> {
        let start = self.names.len();
        outputs.clear();
        let Some((b, graphs)) = brief(rec, start, &mut self.names, outputs) else {
            self.names.truncate(start);
            return None;
        };
        self.names.extend_from_slice(outputs);
        self.briefs.push(b);
        Some(graphs)
    }

    pub fn len(&self) -> usize {
        self.briefs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.briefs.is_empty()
    }

    /// The graphs node `i`'s attributes hold (none unless decoded whole).
    pub fn graphs(&self, i: usize) -> impl Iterator<Item = &GraphProto> {
        let whole = self.whole.binary_search_by_key(&i, |(k, _)| *k).ok();
        whole.into_iter().flat_map(move |k| {
            self.whole[k]
                .1
                .attribute
                .iter()
                .flat_map(|a| a.g.iter().map(|g| &**g).chain(&a.graphs))
        })
    }
}

/// A node record's names, read as the decoder would (a repeated field's
/// entries in order, a single field's last entry): its inputs pushed onto
/// `names`, its outputs onto `outputs`; with whether an attribute holds a
/// graph. `None` at anything the decoder would refuse or read otherwise.
fn brief(
    rec: &[u8],
    start: usize,
    names: &mut Vec<(u32, u32)>,
    outputs: &mut Vec<(u32, u32)>,
) -> Option<(Brief, bool)> {
    let base = rec.as_ptr() as usize;
    // A record of ASCII bytes alone (most are: names, and keys, lengths
    // and numbers under 128) holds UTF-8 texts only; checking it at once
    // is quicker than checking each text.
    let ascii = rec.is_ascii();
    let text = |b: &[u8]| -> Option<(u32, u32)> {
        // Else each text on its own: names are ASCII where a record is
        // not (an attribute's float or a long length is not).
        if !ascii && !b.is_ascii() {
            std::str::from_utf8(b).ok()?;
        }
        let s = b.as_ptr() as usize - base;
        Some((u32::try_from(s).ok()?, u32::try_from(s + b.len()).ok()?))
    };
    let none = (0, 0);
    let (mut name, mut op, mut domain) = (none, none, none);
    let mut graphs = false;
    for f in fields(rec) {
        let f = f?;
        // Node fields: input 1, output 2, name 3, op_type 4, attribute 5,
        // domain 7; all length-delimited.
        if matches!(f.number, 1..=5 | 7) && f.kind != 2 {
            return None;
        }
        match f.number {
            1 => names.push(text(f.payload)?),
            2 => outputs.push(text(f.payload)?),
            3 => name = text(f.payload)?,
            4 => op = text(f.payload)?,
            7 => domain = text(f.payload)?,
            // AttributeProto.g 6, graphs 11.
            5 => {
                for a in fields(f.payload) {
                    graphs |= matches!(a?.number, 6 | 11);
                }
            }
            _ => {}
        }
    }
    let inputs = names.len() - start;
    Some((
        Brief {
            name,
            op,
            domain,
            start: u32::try_from(start).ok()?,
            inputs: u32::try_from(inputs).ok()?,
            outputs: u32::try_from(outputs.len()).ok()?,
        },
        graphs,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::build;

    #[test]
    fn the_skim_sets_the_main_nodes_aside_and_keeps_the_rest() {
        let m = build::GraphBuilder::new()
            .input(build::sized_value("x", build::FLOAT, &[1, 4]))
            .node(build::node("Relu", &["x"], &["y"]))
            .node(build::node("Relu", &["y"], &["z"]))
            .output(build::untyped("z"))
            .model(17);
        let bytes = m.encode_to_vec();
        let (rest, blocks) = crate::onnx::read::skim_aside(&bytes[..]).unwrap();
        let blocks = blocks.unwrap();
        assert_eq!(blocks.ranges.len(), 2);
        let records: Vec<&[u8]> = blocks.records().collect();
        assert_eq!(
            records[1],
            &m.graph.as_ref().unwrap().node[1].encode_to_vec()[..]
        );
        let back = crate::proto::ModelProto::decode(&rest[..]).unwrap();
        let g = back.graph.unwrap();
        assert!(g.node.is_empty());
        assert_eq!(g.input.len(), 1);
        assert_eq!(g.output.len(), 1);
        let mut e = Encoded::new(blocks, Bytes::from(bytes), PathBuf::from("."));
        let o = e.outline().unwrap().unwrap();
        assert_eq!(e.inputs(&o, 1).collect::<Vec<_>>(), ["y"]);
        assert_eq!(e.op(&o, 1), ("Relu", ""));
        let second = e.take(1).unwrap();
        assert_eq!(second.input, vec!["y".to_string()]);
        assert_eq!(second.output, vec!["z".to_string()]);
        // One block of two nodes: freed once both are taken.
        assert!(e.blocks[0].is_some());
        e.take(0).unwrap();
        assert!(e.blocks[0].is_none());
    }

    /// Once the outline's counts are kept, a decoded node's lists are
    /// given their room at once: five inputs take five places, where
    /// growing by half from one (1, 2, 3, 4, 6) leaves six. The node
    /// decoded is the same either way.
    #[test]
    fn a_decoded_nodes_lists_get_the_room_the_outline_counted() {
        let names = ["a", "b", "c", "d", "e"];
        let node = build::node("Concat", &names, &["y"]);
        let mut blocks = Blocks::default();
        blocks.push(&node.encode_to_vec()).unwrap();
        let mut e = Encoded::new(blocks, Bytes::new(), PathBuf::from("."));
        let grown = e.decode(0).unwrap();
        assert_eq!((grown.input.len(), grown.input.capacity()), (5, 6));
        let o = e.outline().unwrap().unwrap();
        e.keep_room(&o);
        let sized = e.decode(0).unwrap();
        assert_eq!((sized.input.len(), sized.input.capacity()), (5, 5));
        assert_eq!(sized.output.capacity(), 1);
        assert_eq!(sized, grown);
        assert_eq!(sized, node);
    }

    /// A graph of 4,096 nodes and more is outlined in two halves on two
    /// threads: the same names as the decoder reads, node by node, and
    /// the first record in file order that is not plainly readable still
    /// decides.
    #[test]
    fn a_large_graph_is_outlined_in_halves_as_in_turn() {
        let n = 5000;
        let records: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let x = format!("v{i}");
                let node = match i % 3 {
                    0 => build::node("Add", &[&x, "w"], &[&format!("v{}", i + 1)]),
                    // An If holds graphs: decoded whole by the outline.
                    1 if i == 3001 => {
                        let mut n = build::node("If", &[&x], &[&format!("v{}", i + 1)]);
                        n.attribute.push(build::graph_attr(
                            "then_branch",
                            build::GraphBuilder::new().build(),
                        ));
                        n
                    }
                    _ => build::node("Relu", &[&x], &[&format!("v{}", i + 1), "", "t"]),
                };
                node.encode_to_vec()
            })
            .collect();
        let encoded = |records: &[Vec<u8>]| {
            let mut blocks = Blocks::default();
            for r in records {
                blocks.push(r).unwrap();
            }
            Encoded::new(blocks, Bytes::new(), PathBuf::from("."))
        };
        let mut e = encoded(&records);
        let o = e.outline().unwrap().unwrap();
        assert_eq!(o.len(), n);
        for i in 0..n {
            let d = e.decode(i).unwrap();
            assert_eq!(e.inputs(&o, i).collect::<Vec<_>>(), d.input, "{i}");
            assert_eq!(e.outputs(&o, i).collect::<Vec<_>>(), d.output, "{i}");
            assert_eq!(e.op(&o, i).0, d.op_type.as_deref().unwrap_or(""), "{i}");
        }
        assert_eq!(o.whole.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [3001]);
        assert_eq!(o.graphs(3001).count(), 1);
        // A record the plain reader does not take (an unknown field held
        // as a group) and one nothing takes (a name longer than the
        // record): whichever comes first in the file decides, in either
        // half.
        let mut grouped = build::node("Relu", &["a"], &["b"]).encode_to_vec();
        grouped.extend([9 << 3 | 3, 9 << 3 | 4]);
        let broken = vec![0x0a, 0x05, b'a'];
        for (early, late, refused) in [(&grouped, &broken, false), (&broken, &grouped, true)] {
            // One in each half, then both in the second.
            for at in [[1000, 4000], [4000, 4001]] {
                let mut list = records.clone();
                list[at[0]] = early.clone();
                list[at[1]] = late.clone();
                let got = encoded(&list).outline();
                assert_eq!(got.is_err(), refused, "{at:?}");
                if let Ok(o) = got {
                    assert!(o.is_none(), "{at:?}");
                }
            }
        }
    }

    #[test]
    fn a_brief_reads_names_as_the_decoder_does() {
        let mut n = build::node("Add", &["a", "b"], &["c"]);
        n.name = Some("first".into());
        let mut bytes = n.encode_to_vec();
        // A second name field: the decoder keeps the last.
        let again = NodeProto {
            name: Some("last".into()),
            ..NodeProto::default()
        };
        bytes.extend(again.encode_to_vec());
        let (mut names, mut outputs) = (Vec::new(), Vec::new());
        let (b, graphs) = brief(&bytes, 0, &mut names, &mut outputs).unwrap();
        let at = |(s, e): (u32, u32)| std::str::from_utf8(&bytes[s as usize..e as usize]).unwrap();
        assert_eq!(
            (at(b.name), at(b.op), b.inputs, b.outputs),
            ("last", "Add", 2, 1)
        );
        let names: Vec<&str> = names.into_iter().map(at).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(at(outputs[0]), "c");
        assert!(!graphs);
        // Not UTF-8: left to the decoder.
        let bad = [0x0a, 0x01, 0xff];
        assert!(brief(&bad, 0, &mut Vec::new(), &mut Vec::new()).is_none());
        // A record that is not all ASCII has each text checked: UTF-8
        // beyond ASCII is read, bytes that are not UTF-8 are not, whatever
        // the other texts are.
        let accented = build::node("Add", &["naïve", "b"], &["c"]).encode_to_vec();
        let mut names = Vec::new();
        assert!(brief(&accented, 0, &mut names, &mut Vec::new()).is_some());
        let (s, e) = names[0];
        assert_eq!(&accented[s as usize..e as usize], "naïve".as_bytes());
        let mut mixed = build::node("Add", &["naïve"], &["c"]).encode_to_vec();
        mixed.extend([0x0a, 0x01, 0xff]);
        assert!(brief(&mixed, 0, &mut Vec::new(), &mut Vec::new()).is_none());
        // An unknown field held as a group (field 9, start and end): the
        // decoder skips it, the plain reader does not, so the outline
        // leaves every node to the decoder.
        let mut grouped = build::node("Relu", &["a"], &["b"]).encode_to_vec();
        grouped.extend([9 << 3 | 3, 9 << 3 | 4]);
        assert!(brief(&grouped, 0, &mut Vec::new(), &mut Vec::new()).is_none());
        let mut blocks = Blocks::default();
        blocks.push(&grouped).unwrap();
        let mut e = Encoded::new(blocks, Bytes::new(), PathBuf::from("."));
        assert!(e.outline().unwrap().is_none());
        assert_eq!(e.decode(0).unwrap().op_type.as_deref(), Some("Relu"));
    }
}
