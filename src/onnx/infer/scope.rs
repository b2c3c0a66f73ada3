//! The facts known at one graph level, by value name, over those of the
//! levels that enclose it.

use std::cell::Cell;

use rustc_hash::FxHashMap as HashMap;

use super::order::{NO_SLOT, Readers, node_uses};
use crate::proto::NodeProto;
use crate::shape::Fact;

/// Values visible to a graph: its own, then its enclosing graphs'.
pub(super) struct Scope<'p> {
    pub(super) vars: Vars,
    pub(super) parent: Option<&'p Scope<'p>>,
}

/// Facts by value name: the names index a list of boxed facts, so the
/// table's spare room (up to half of it) costs a few bytes a slot, and a
/// fact let go after its last reader gives its memory back (a list of the
/// facts themselves held 104 bytes for every value of the graph to the
/// end of the walk: 13 MB on a 111k-node graph).
pub(super) struct Vars {
    index: HashMap<String, u32>,
    facts: Vec<Option<Box<Fact>>>,
    /// Readers left per fact, for those counted ([`Vars::track`]).
    readers: Vec<u32>,
    /// What a let-go fact reads as.
    unknown: Fact,
}

impl Default for Vars {
    fn default() -> Vars {
        Vars {
            index: HashMap::default(),
            facts: Vec::new(),
            readers: Vec::new(),
            unknown: Fact::unknown(),
        }
    }
}

impl Vars {
    pub(super) fn reserve(&mut self, more: usize) {
        self.index.reserve(more);
        self.facts.reserve_exact(more);
    }

    /// Sets `name`'s fact, returning the one it replaces.
    pub(super) fn insert(&mut self, name: String, fact: Fact) -> Option<Fact> {
        self.set(name, fact).1
    }

    /// Sets `name`'s fact: where it is kept ([`take_listed`] takes it
    /// from there), and the fact it replaces.
    pub(super) fn set(&mut self, name: String, fact: Fact) -> (u32, Option<Fact>) {
        use std::collections::hash_map::Entry;
        match self.index.entry(name) {
            Entry::Occupied(e) => {
                let at = *e.get();
                let old = self.facts[at as usize].replace(Box::new(fact));
                (at, Some(old.map_or_else(Fact::unknown, |f| *f)))
            }
            Entry::Vacant(e) => {
                // Within u32: a model holds at most MAX_NODES nodes.
                let at = self.facts.len() as u32;
                e.insert(at);
                self.facts.push(Some(Box::new(fact)));
                (at, None)
            }
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Fact> {
        self.index
            .get(name)
            .map(|&i| self.facts[i as usize].as_deref().unwrap_or(&self.unknown))
    }

    /// Every name set here, in no order.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.index.keys().map(String::as_str)
    }

    /// Counts down `name`'s readers from `readers` (see [`Vars::release`]);
    /// true when it has none, so its fact is let go at once.
    pub(super) fn track(&mut self, name: &str, readers: u32) -> bool {
        let Some(&i) = self.index.get(name) else {
            return false;
        };
        let i = i as usize;
        if self.readers.len() <= i {
            self.readers.resize(i + 1, UNTRACKED);
        }
        self.readers[i] = readers;
        if readers == 0 {
            self.facts[i] = None;
        }
        readers == 0
    }

    /// One read of `name` done: once its last tracked reader has read it,
    /// its fact (a shape, a constant's values) is let go; true then.
    pub(super) fn release(&mut self, name: &str) -> bool {
        let Some(&i) = self.index.get(name) else {
            return false;
        };
        let i = i as usize;
        match self.readers.get_mut(i) {
            Some(n) if *n != UNTRACKED && *n > 0 => {
                *n -= 1;
                if *n == 0 {
                    self.facts[i] = None;
                }
                *n == 0
            }
            _ => false,
        }
    }
}

/// A value whose readers are not counted (a graph input, an initializer,
/// a value inside a function call): kept to the end.
const UNTRACKED: u32 = u32::MAX;

/// Where the walk keeps a value it defined: in the scope by name, at
/// this place of [`Vars`] ([`Vars::set`]), or in a slot of [`Slots`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kept {
    Var(u32),
    Slot(u32),
}

/// The facts of `names` (the values listed, in definition order, each
/// with where it is kept), for a walk that is done with them: each moved
/// out, not copied, but for a value listed twice, whose earlier entries
/// copy its fact (the last one set, as [`Vars::get`] reads a name set
/// twice).
pub(super) fn take_listed(
    vars: &mut Vars,
    slots: &mut Slots,
    names: Vec<(String, Kept)>,
) -> Vec<(String, Fact)> {
    // Walked from the end: a fact's last entry takes it, and `at` says
    // where it went for the entries before (vars' places, then slots').
    let vars_len = vars.facts.len();
    let mut at = vec![u32::MAX; vars_len + slots.facts.len()];
    let mut listed: Vec<(String, Fact)> = Vec::with_capacity(names.len());
    for (name, kept) in names.into_iter().rev() {
        let (k, place) = match kept {
            Kept::Var(i) => (i as usize, &mut vars.facts[i as usize]),
            Kept::Slot(s) => (vars_len + s as usize, &mut slots.facts[s as usize]),
        };
        let fact = match at[k] {
            u32::MAX => {
                // Within u32: one entry per value of the graph.
                at[k] = listed.len() as u32;
                place.take().map_or_else(|| vars.unknown.clone(), |f| *f)
            }
            first => listed[first as usize].1.clone(),
        };
        listed.push((name, fact));
    }
    listed.reverse();
    listed
}

impl Scope<'_> {
    pub(super) fn get(&self, name: &str) -> Option<&Fact> {
        self.vars
            .get(name)
            .or_else(|| self.parent.and_then(|p| p.get(name)))
    }
}

/// Where slot `slot` is kept, when slots are `on` and it is not read by
/// name (see [`Slots`]).
fn own(on: bool, readers: &Readers, slot: u32) -> Option<usize> {
    (on && slot != NO_SLOT && !readers.captured[slot as usize]).then_some(slot as usize)
}

/// The facts of a graph's node outputs kept by slot (an output's place in
/// [`Readers::counts`]) while estimating: each input is read through the
/// slot ordering found for it and its readers are counted down there, so
/// no name is copied or looked up (seven lookups a node, each a miss in a
/// table of every name once a large graph's outgrow the caches; 111k-node
/// graph: the walk 90 -> 73 ms). What a subgraph reads from outside (by
/// name) and what a function call defines inside go into the scope by
/// name, as does every value when slots are off (nodes not taken, a
/// subgraph's walk, values listed with model-local functions). Listing
/// the values of a main graph's taken nodes (`c3 shapes`), slots are on
/// but kept to the end: each read copies its fact, and nothing is
/// counted down (111k-node graph: 120k names neither copied into the
/// scope nor looked up there; `shapes` 270 -> 214 ms).
pub(super) struct Slots {
    on: bool,
    /// Kept to the end (values listed), not let go after their readers.
    keep: bool,
    facts: Vec<Option<Box<Fact>>>,
    /// Readers left per output, counted down as they read.
    left: Vec<u32>,
    readers: Readers,
}

impl Slots {
    /// Slots for the outputs `readers` counted, or, when off, the scope
    /// sized once to hold them all (a guess of two outputs a node doubled
    /// the table of a large graph).
    /// `keep`: kept to the end (with `on`).
    pub(super) fn new(mut readers: Readers, on: bool, keep: bool, scope: &mut Scope) -> Slots {
        let left = std::mem::take(&mut readers.counts);
        let mut facts = Vec::new();
        if on {
            facts.resize_with(left.len(), || None);
        } else {
            scope.vars.reserve(left.len());
        }
        Slots {
            on,
            keep: on && keep,
            facts,
            left,
            readers,
        }
    }

    /// The slot `slot` is kept in, when it is kept by slot.
    fn own(&self, slot: u32) -> Option<usize> {
        own(self.on, &self.readers, slot)
    }

    /// The facts of node `i`'s inputs (`n`), one copy each; `None` when
    /// slots are off (the node's inputs are then looked up by name). A
    /// fact this read is the last reader of is moved out of its slot, not
    /// copied: [`Slots::count_down`] would free it right after (most
    /// values of a large graph have one reader).
    pub(super) fn inputs(
        &mut self,
        i: usize,
        n: &NodeProto,
        scope: &Scope,
    ) -> Result<Option<Vec<Option<Fact>>>, String> {
        if !self.on {
            return Ok(None);
        }
        let Slots {
            on,
            keep,
            facts,
            left,
            readers,
        } = self;
        let slots = readers.inputs(i);
        // Ordering read the same record's inputs; differing would be a
        // fault of c3's, named rather than read into wrong facts.
        if slots.len() != n.input.len() {
            return Err("its inputs read differently by ordering and inference".into());
        }
        let fact = |(name, &slot): (&String, &u32)| {
            (!name.is_empty()).then(|| match own(*on, readers, slot) {
                // Its readers are counted by occurrence, so a count of one
                // is this read: no other input of the node names it.
                Some(s) if left[s] == 1 && !*keep => {
                    facts[s].take().map_or_else(Fact::unknown, |f| *f)
                }
                Some(s) => facts[s].as_deref().cloned().unwrap_or_else(Fact::unknown),
                None => scope.get(name).cloned().unwrap_or_else(Fact::unknown),
            })
        };
        Ok(Some(n.input.iter().zip(slots).map(fact).collect()))
    }

    /// Sets the fact of `name`, the `k`-th output in a record of node `i`
    /// (`n`): in its slot when it is one of the node's own outputs (in its
    /// place in the node's record; a function call's come in its last).
    /// Returns where it is kept.
    pub(super) fn define(
        &mut self,
        i: usize,
        n: &NodeProto,
        k: usize,
        name: &String,
        f: Fact,
        scope: &mut Scope,
    ) -> Kept {
        let made = match n.output.get(k) {
            Some(out) if out == name => Some(k),
            _ if self.on => n.output.iter().position(|out| out == name),
            _ => None,
        };
        let start = self.readers.starts[i] as usize;
        match made.and_then(|k| self.own((start + k) as u32)) {
            Some(s) => {
                self.facts[s] = Some(Box::new(f));
                // Within u32: slots were counted in u32.
                Kept::Slot(s as u32)
            }
            None => Kept::Var(scope.vars.set(name.clone(), f).0),
        }
    }

    /// The slots of node `i`'s (`n`'s) inputs, then of its outputs, into
    /// `list`: each value's slot where it is kept by slot, else
    /// [`NO_SLOT`]. False, with nothing listed, when slots are off.
    pub(super) fn list(&self, i: usize, n: &NodeProto, list: &mut Vec<u32>) -> bool {
        list.clear();
        if !self.on {
            return false;
        }
        let kept = |s: u32| self.own(s).map_or(NO_SLOT, |s| s as u32);
        list.extend(self.readers.inputs(i).iter().map(|&s| kept(s)));
        let start = self.readers.starts[i];
        // Within u32: slots were counted in u32.
        list.extend((0..n.output.len() as u32).map(|k| kept(start + k)));
        true
    }

    /// Node `i` (`n`) inferred: its outputs nobody reads are let go, and
    /// what it read is counted down, each fact let go after its last
    /// reader (`let_go` hears its name, and its slot where it is kept by
    /// slot, else [`NO_SLOT`]).
    pub(super) fn count_down(
        &mut self,
        i: usize,
        n: &NodeProto,
        depth: usize,
        scope: &mut Scope,
        mut let_go: impl FnMut(&str, u32),
    ) {
        let Slots {
            on,
            facts,
            left,
            readers,
            ..
        } = self;
        let start = readers.starts[i] as usize;
        for (k, name) in n.output.iter().enumerate().filter(|(_, o)| !o.is_empty()) {
            let slot = start + k;
            if own(*on, readers, slot as u32).is_none() {
                if scope.vars.track(name, left[slot]) {
                    let_go(name, NO_SLOT);
                }
            } else if left[slot] == 0 {
                facts[slot] = None;
                let_go(name, slot as u32);
            }
        }
        // The same names the count saw; the look is not charged to the
        // visit budget again.
        let mut slot_of = readers.inputs(i).iter();
        let _ = node_uses(n, depth, &Cell::new(0), |name, input| {
            let slot = if input { slot_of.next() } else { None };
            // An input no node of this graph makes (an initializer, a graph
            // input, none) is never counted: not looked up (a table miss
            // for each weight a large graph reads).
            if *on && slot == Some(&NO_SLOT) {
                return Ok(());
            }
            match slot.and_then(|&s| own(*on, readers, s)) {
                Some(s) => {
                    let left = &mut left[s];
                    if *left > 0 {
                        *left -= 1;
                        if *left == 0 {
                            facts[s] = None;
                            let_go(name, s as u32);
                        }
                    }
                }
                None => {
                    if scope.vars.release(name) {
                        let_go(name, NO_SLOT);
                    }
                }
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, Dim};

    /// The listed facts are moved out in order, from the scope and from
    /// slots; a value listed twice gets its last fact both times.
    #[test]
    fn listed_facts_are_taken_in_order() {
        let shaped = |n: u64| Fact::tensor(Some(DType::Float32), Some(vec![Dim::Known(n)]));
        let mut vars = Vars::default();
        let mut names = Vec::new();
        for (name, n) in [("a", 1), ("b", 2), ("a", 3)] {
            names.push((
                name.to_string(),
                Kept::Var(vars.set(name.into(), shaped(n)).0),
            ));
        }
        let mut scope = Scope {
            vars: Vars::default(),
            parent: None,
        };
        // Two slots kept to the end, the first listed twice.
        let readers = Readers {
            counts: vec![0, 0],
            ..Readers::default()
        };
        let mut slots = Slots::new(readers, true, true, &mut scope);
        slots.facts[0] = Some(Box::new(shaped(4)));
        slots.facts[1] = Some(Box::new(shaped(5)));
        names.insert(1, ("s".to_string(), Kept::Slot(0)));
        names.push(("t".to_string(), Kept::Slot(1)));
        names.push(("s".to_string(), Kept::Slot(0)));
        let listed = take_listed(&mut vars, &mut slots, names);
        let got: Vec<(&str, String)> = listed
            .iter()
            .map(|(n, f)| (n.as_str(), f.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "float32[3]".into()),
                ("s", "float32[4]".into()),
                ("b", "float32[2]".into()),
                ("a", "float32[3]".into()),
                ("t", "float32[5]".into()),
                ("s", "float32[4]".into()),
            ]
        );
        // Moved out: neither the scope nor the slots hold them any more.
        assert!(vars.facts.iter().all(Option::is_none));
        assert!(slots.facts.iter().all(Option::is_none));
    }

    /// Kept to the end, a slot read by its last reader is copied, not
    /// taken: the listing takes it at the end.
    #[test]
    fn slots_kept_to_the_end_are_only_copied() {
        let node = NodeProto {
            input: vec!["x".into()],
            ..NodeProto::default()
        };
        let readers = Readers {
            starts: vec![0, 1],
            counts: vec![1, 0],
            input_starts: vec![0, 0],
            input_slots: vec![0],
            captured: vec![false; 2],
        };
        let mut scope = Scope {
            vars: Vars::default(),
            parent: None,
        };
        let shaped = Fact::tensor(Some(DType::Float32), Some(vec![Dim::Known(2)]));
        let mut slots = Slots::new(readers, true, true, &mut scope);
        slots.facts[0] = Some(Box::new(shaped.clone()));
        let read = slots.inputs(1, &node, &scope).unwrap().unwrap();
        assert_eq!(read, [Some(shaped)]);
        assert!(slots.facts[0].is_some());
    }

    /// Counted by slot, an input's fact is copied for each read but the
    /// last, which takes it from its slot: A makes `x`, read once by B;
    /// B makes `y`, read twice by C and once by D.
    #[test]
    fn the_last_reader_of_a_slot_takes_its_fact() {
        let node = |inputs: &[&str], output: &str| NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.to_string()],
            ..NodeProto::default()
        };
        let nodes = [
            node(&[], "x"),
            node(&["x"], "y"),
            node(&["y", "y"], "z"),
            node(&["y"], "w"),
        ];
        // Slots: x 0, y 1, z 2, w 3 (one output a node).
        let readers = Readers {
            starts: vec![0, 1, 2, 3],
            counts: vec![1, 3, 0, 0],
            input_starts: vec![0, 0, 1, 3],
            input_slots: vec![0, 1, 1, 1],
            captured: vec![false; 4],
        };
        let mut scope = Scope {
            vars: Vars::default(),
            parent: None,
        };
        let mut slots = Slots::new(readers, true, false, &mut scope);
        let shaped = |n: u64| Fact::tensor(Some(DType::Float32), Some(vec![Dim::Known(n)]));
        let held = |slots: &Slots| slots.facts.iter().map(Option::is_some).collect::<Vec<_>>();
        slots.define(0, &nodes[0], 0, &"x".into(), shaped(2), &mut scope);
        slots.count_down(0, &nodes[0], 0, &mut scope, |_, _| {});
        // B is x's one reader: the fact moves out of slot 0.
        let read = slots.inputs(1, &nodes[1], &scope).unwrap().unwrap();
        assert_eq!(read, [Some(shaped(2))]);
        assert_eq!(held(&slots), [false, false, false, false]);
        slots.define(1, &nodes[1], 0, &"y".into(), shaped(3), &mut scope);
        slots.count_down(1, &nodes[1], 0, &mut scope, |_, _| {});
        // C reads y twice of its three reads: both are copies.
        let read = slots.inputs(2, &nodes[2], &scope).unwrap().unwrap();
        assert_eq!(read, [Some(shaped(3)), Some(shaped(3))]);
        assert_eq!(held(&slots), [false, true, false, false]);
        let mut gone = Vec::new();
        slots.count_down(2, &nodes[2], 0, &mut scope, |_, s| gone.push(s));
        // z has no reader: let go at once; y has one read left.
        assert_eq!(gone, [2]);
        assert_eq!(slots.left[1], 1);
        // D's read is y's last: taken, and y is let go as it is counted.
        let read = slots.inputs(3, &nodes[3], &scope).unwrap().unwrap();
        assert_eq!(read, [Some(shaped(3))]);
        assert_eq!(held(&slots), [false, false, false, false]);
        slots.count_down(3, &nodes[3], 0, &mut scope, |_, s| gone.push(s));
        // Its own unread output first, then what it read.
        assert_eq!(gone, [2, 3, 1]);
    }

    #[test]
    fn a_fact_is_let_go_after_its_last_counted_reader() {
        let shaped = || {
            Fact::tensor(
                Some(DType::Float32),
                Some(vec![Dim::Known(2), Dim::Known(3)]),
            )
        };
        let mut vars = Vars::default();
        vars.insert("input".into(), shaped());
        vars.insert("a".into(), shaped());
        vars.insert("b".into(), shaped());
        vars.insert("unread".into(), shaped());
        // `a` has two readers, `b` one; `input` is not counted.
        // Each call says whether the fact was let go by it.
        assert!(!vars.track("a", 2));
        assert!(!vars.track("b", 1));
        assert!(vars.track("unread", 0));
        assert_eq!(vars.get("unread"), Some(&Fact::unknown()));
        assert!(!vars.release("a"));
        assert_eq!(vars.get("a"), Some(&shaped()));
        assert!(vars.release("b"));
        assert_eq!(vars.get("b"), Some(&Fact::unknown()));
        assert!(vars.release("a"));
        assert_eq!(vars.get("a"), Some(&Fact::unknown()));
        // Reads past the count, and of uncounted values, change nothing.
        assert!(!vars.release("a"));
        assert!(!vars.release("input"));
        assert!(!vars.release("nothing"));
        assert_eq!(vars.get("input"), Some(&shaped()));
        assert!(vars.names().any(|n| n == "a"));
        // Let go means freed: of the four facts, only `input`'s is held.
        let held: Vec<bool> = vars.facts.iter().map(Option::is_some).collect();
        assert_eq!(held, [true, false, false, false]);
        // A let-go name set again holds its new fact.
        assert_eq!(vars.insert("b".into(), shaped()), Some(Fact::unknown()));
        assert_eq!(vars.get("b"), Some(&shaped()));
    }
}
