//! The facts known at one graph level, by value name, over those of the
//! levels that enclose it.

use rustc_hash::FxHashMap as HashMap;

use crate::shape::Fact;

/// Values visible to a graph: its own, then its enclosing graphs'.
pub(super) struct Scope<'p> {
    pub(super) vars: Vars,
    pub(super) parent: Option<&'p Scope<'p>>,
}

/// Facts by value name: the names index a list, so the table's spare room
/// (up to half of it) costs a few bytes a slot rather than a whole fact.
#[derive(Default)]
pub(super) struct Vars {
    index: HashMap<String, u32>,
    facts: Vec<Fact>,
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
            Entry::Occupied(e) => Some(std::mem::replace(&mut self.facts[*e.get() as usize], fact)),
            Entry::Vacant(e) => {
                // Within u32: a model holds at most MAX_NODES nodes.
                e.insert(self.facts.len() as u32);
                self.facts.push(fact);
                None
            }
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Fact> {
        self.index.get(name).map(|&i| &self.facts[i as usize])
    }

    pub(super) fn contains_key(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }
}

impl Scope<'_> {
    pub(super) fn get(&self, name: &str) -> Option<&Fact> {
        self.vars
            .get(name)
            .or_else(|| self.parent.and_then(|p| p.get(name)))
    }
}
