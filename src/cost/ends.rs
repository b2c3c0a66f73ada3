//! A large flat main level costed from both ends at once. This thread
//! takes its nodes from the front, the thread that costs the folded layers
//! takes them from the back once it is done with those, each a run of
//! [`CLAIM`] nodes at a time, until they meet. A level of 100k layers (a
//! convnet with a weight each) was costed on this thread alone while the
//! other, with a few folded layers to cost, waited.
//!
//! The report is the one the level costed in order gives: the back runs'
//! layers and unsupported nodes follow the front's in node order, and the
//! error returned is the first in node order (the front's, else the first
//! of the back's lowest run, everything below which the front has costed).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};

use crate::error::{Error, Result};
use crate::ir::{AHEAD, Graph, prefetch};
use crate::rules::{CountOptions, RuleSet};

use super::{Collected, FusedGroup, LayerCost, Unsupported, cost_plain, unanalysed};

/// Nodes a thread takes at a time.
const CLAIM: u64 = 256;

/// The nodes neither thread has taken yet, `lo..hi`, as one word (`lo` in
/// the high half): both ends move in one atomic step, so no node is taken
/// twice. A level of more than `u32::MAX` nodes is refused long before
/// ([`crate::ir::MAX_NODES`]).
pub(super) struct Ends {
    left: AtomicU64,
    /// The level's size: the back has taken something once `hi` is below.
    n: u64,
    /// Set by the front at an error: the back takes nothing more.
    stop: AtomicBool,
}

/// What the back end costed: its runs, from the back (highest first), and
/// the error it stopped at, if it met one.
pub(super) type Back = (Vec<(Vec<LayerCost>, Vec<Unsupported>)>, Option<Error>);

impl Ends {
    /// Ends for a level of `n` nodes; `None` beyond what a word holds.
    pub(super) fn new(n: usize) -> Option<Ends> {
        let n = u32::try_from(n).ok()? as u64;
        Some(Ends {
            left: AtomicU64::new(n),
            n,
            stop: AtomicBool::new(false),
        })
    }

    /// Takes the next run from the front (`true`) or the back.
    fn claim(&self, front: bool) -> Option<Range<usize>> {
        let mut now = self.left.load(Ordering::Relaxed);
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            let (lo, hi) = (now >> 32, now & u64::from(u32::MAX));
            if lo >= hi {
                return None;
            }
            let take = CLAIM.min(hi - lo);
            let (run, next) = match front {
                true => (lo..lo + take, (lo + take) << 32 | hi),
                false => (hi - take..hi, lo << 32 | (hi - take)),
            };
            match self
                .left
                .compare_exchange_weak(now, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Some(run.start as usize..run.end as usize),
                Err(seen) => now = seen,
            }
        }
    }

    /// Whether the back took any node (asked once the front has run out).
    fn back_took(&self) -> bool {
        self.left.load(Ordering::Acquire) & u64::from(u32::MAX) < self.n
    }
}

/// Costs the nodes `run` into `layers` and `unsupported`.
fn cost_run(
    graph: &Graph,
    run: Range<usize>,
    rules: &RuleSet,
    opts: CountOptions,
    layers: &mut Vec<LayerCost>,
    unsupported: &mut Vec<Unsupported>,
) -> Result<()> {
    let end = run.end;
    for i in run {
        prefetch(
            graph.nodes[..end]
                .get(i + AHEAD)
                .map(crate::ir::Node::ahead),
        );
        if let Some(layer) = cost_plain(&graph.nodes[i], rules, opts, unsupported)? {
            layers.push(layer);
        }
    }
    Ok(())
}

/// The front's share, then the back's put after it: the level's layers,
/// as [`super::level_costs`] gives them. `back` is where the other thread
/// sends its runs, when it took any.
pub(super) fn from_front(
    graph: &Graph,
    rules: &RuleSet,
    opts: CountOptions,
    ends: &Ends,
    back: &Receiver<Back>,
) -> Result<(Vec<LayerCost>, Vec<FusedGroup>, Collected)> {
    let mut layers = Vec::with_capacity(graph.nodes.len());
    let mut unsupported = Vec::new();
    while let Some(run) = ends.claim(true) {
        if let Err(e) = cost_run(graph, run, rules, opts, &mut layers, &mut unsupported) {
            ends.stop.store(true, Ordering::Relaxed);
            return Err(e);
        }
    }
    // The other thread has taken its last run, or is finishing it: it
    // sends them all (and a thread that panicked raises its panic when
    // joined, after this returns).
    if ends.back_took()
        && let Ok((runs, error)) = back.recv()
    {
        if let Some(e) = error {
            return Err(e);
        }
        for (l, u) in runs.into_iter().rev() {
            layers.extend(l);
            unsupported.extend(u);
        }
    }
    unanalysed(graph.unanalysed.as_slice(), rules, &mut unsupported);
    let acc = Collected {
        unsupported,
        skipped: Vec::new(),
    };
    Ok((layers, Vec::new(), acc))
}

/// The back's share: runs taken from the back until the ends meet (or
/// `most` runs), sent to the front when there is any.
pub(super) fn from_back(
    graph: &Graph,
    rules: &RuleSet,
    opts: CountOptions,
    ends: &Ends,
    to_front: Sender<Back>,
    most: usize,
) {
    let mut runs = Vec::new();
    let mut error = None;
    while runs.len() < most
        && let Some(run) = ends.claim(false)
    {
        let (mut layers, mut unsupported) = (Vec::with_capacity(run.len()), Vec::new());
        let costed = cost_run(graph, run, rules, opts, &mut layers, &mut unsupported);
        runs.push((layers, unsupported));
        // The front goes on up to this run: an error below it comes first.
        if let Err(e) = costed {
            error = Some(e);
            break;
        }
    }
    if !runs.is_empty() {
        // The front has stopped at an error when nobody takes them.
        let _ = to_front.send((runs, error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ends take every node once, in runs of at most [`CLAIM`], until
    /// they meet; the back has taken something once it took a run.
    #[test]
    fn the_ends_take_every_node_once() {
        let ends = Ends::new(1000).unwrap();
        assert!(!ends.back_took());
        let mut taken = vec![0u8; 1000];
        let mut turn = true;
        while let Some(run) = ends.claim(turn) {
            assert!(run.len() as u64 <= CLAIM && !run.is_empty());
            run.for_each(|i| taken[i] += 1);
            turn = !turn;
        }
        assert!(taken.iter().all(|&t| t == 1));
        assert!(ends.back_took());
        // 1000 = 256 (front) + 256 (back) + 256 (front) + 232 (back).
        let ends = Ends::new(1000).unwrap();
        let runs: Vec<_> = [true, false, true, false, true]
            .iter()
            .map(|&f| ends.claim(f))
            .collect();
        assert_eq!(
            runs,
            [
                Some(0..256),
                Some(744..1000),
                Some(256..512),
                Some(512..744),
                None
            ]
        );
    }

    /// Two threads taking runs at once take every node exactly once.
    #[test]
    fn two_threads_take_every_node_once() {
        let n = 100_000;
        let ends = Ends::new(n).unwrap();
        let take = |front: bool| {
            let mut got = Vec::new();
            while let Some(run) = ends.claim(front) {
                got.extend(run);
            }
            got
        };
        let (a, b) = std::thread::scope(|s| {
            let b = s.spawn(|| take(false));
            (take(true), b.join().unwrap())
        });
        let mut all: Vec<usize> = a.into_iter().chain(b).collect();
        all.sort_unstable();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
    }

    /// A graph of `n` layers cycling through three ops on 1 x i, every
    /// 101st an op without a rule, and a symbolic size (which no rule can
    /// count: an error) at each of `failing`.
    fn layers(n: usize, failing: &[usize]) -> Graph {
        let layer = |i: usize| {
            let op = match i % 101 {
                0 => "NoSuchOp",
                _ => ["Relu", "Sigmoid", "Neg"][i % 3],
            };
            let d = match failing.contains(&i) {
                true => "\"b\"".to_string(),
                false => i.to_string(),
            };
            format!(
                r#"{{"op": "{op}", "inputs": [{{"shape": [1, {d}]}}], "outputs": [{{"shape": [1, {d}]}}]}}"#
            )
        };
        let layers: Vec<String> = (0..n).map(layer).collect();
        let trace = format!(r#"{{"layers": [{}]}}"#, layers.join(","));
        crate::trace::parse_trace(trace.as_bytes(), "inline").unwrap()
    }

    /// `graph` costed with the back taking `runs` runs first, then the
    /// front the rest: what the front returns.
    fn from_both(graph: &Graph, runs: usize) -> Result<(Vec<LayerCost>, Vec<Unsupported>)> {
        let rules = RuleSet::builtin().unwrap();
        let opts = CountOptions::default();
        let ends = Ends::new(graph.nodes.len()).unwrap();
        let (to_front, back) = std::sync::mpsc::channel();
        from_back(graph, &rules, opts, &ends, to_front, runs);
        let (layers, _, acc) = from_front(graph, &rules, opts, &ends, &back)?;
        Ok((layers, acc.unsupported))
    }

    /// However many runs the back took (none, some, all: 2,000 nodes are 8
    /// runs), the front gives the layers and the unsupported nodes of the
    /// level costed in order: 2,000 layers less the 20 without a rule.
    #[test]
    fn the_level_from_both_ends_is_the_level_in_order() {
        let graph = layers(2000, &[]);
        let rules = RuleSet::builtin().unwrap();
        let (want, _, acc) =
            super::super::level_costs(&graph, &rules, CountOptions::default()).unwrap();
        assert_eq!(want.len(), 1980);
        assert_eq!(acc.unsupported.len(), 20);
        for runs in [0, 1, 3, 8, 100] {
            let (layers, unsupported) = from_both(&graph, runs).unwrap();
            assert!(layers == want, "{runs} runs from the back");
            assert_eq!(unsupported, acc.unsupported, "{runs} runs from the back");
        }
    }

    /// The error is the first in node order: the front's when both ends
    /// meet one, the back's when only it does, as costing in order finds.
    #[test]
    fn the_first_error_in_node_order_is_returned() {
        let rules = RuleSet::builtin().unwrap();
        let in_order = |g: &Graph| {
            super::super::level_costs(g, &rules, CountOptions::default())
                .err()
                .unwrap()
                .to_string()
        };
        // Two runs from the back take nodes 1,488 to 1,999.
        for failing in [&[300, 1900][..], &[1900], &[1500, 1900]] {
            let graph = layers(2000, failing);
            let want = in_order(&graph);
            let name = &graph.nodes[failing[0]].name;
            assert!(want.contains(name.as_str()), "{want}");
            for runs in [0, 2, 8] {
                let got = from_both(&graph, runs).err().unwrap().to_string();
                assert_eq!(
                    got, want,
                    "failing at {failing:?}, {runs} runs from the back"
                );
            }
        }
    }

    /// A stopped pair takes nothing more; a level beyond a word is refused.
    #[test]
    fn a_stop_ends_the_taking() {
        let ends = Ends::new(10_000).unwrap();
        assert!(ends.claim(true).is_some());
        ends.stop.store(true, Ordering::Relaxed);
        assert_eq!(ends.claim(false), None);
        assert!(Ends::new(u32::MAX as usize + 1).is_none());
    }
}
