//! The facts known at one graph level, by value name, over those of the
//! levels that enclose it.

use rustc_hash::FxHashMap as HashMap;

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
        use std::collections::hash_map::Entry;
        match self.index.entry(name) {
            Entry::Occupied(e) => {
                let old = self.facts[*e.get() as usize].replace(Box::new(fact));
                Some(old.map_or_else(Fact::unknown, |f| *f))
            }
            Entry::Vacant(e) => {
                // Within u32: a model holds at most MAX_NODES nodes.
                e.insert(self.facts.len() as u32);
                self.facts.push(Some(Box::new(fact)));
                None
            }
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Fact> {
        self.index
            .get(name)
            .map(|&i| self.facts[i as usize].as_deref().unwrap_or(&self.unknown))
    }

    pub(super) fn contains_key(&self, name: &str) -> bool {
        self.index.contains_key(name)
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

impl Scope<'_> {
    pub(super) fn get(&self, name: &str) -> Option<&Fact> {
        self.vars
            .get(name)
            .or_else(|| self.parent.and_then(|p| p.get(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{DType, Dim};

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
        assert!(vars.contains_key("a"));
        // Let go means freed: of the four facts, only `input`'s is held.
        let held: Vec<bool> = vars.facts.iter().map(Option::is_some).collect();
        assert_eq!(held, [true, false, false, false]);
        // A let-go name set again holds its new fact.
        assert_eq!(vars.insert("b".into(), shaped()), Some(Fact::unknown()));
        assert_eq!(vars.get("b"), Some(&shaped()));
    }
}
