//! Measured time joined to layers: each kernel of a runtime's profile
//! ([`crate::profile`]) is mapped to the layers it ran, so a layer gets the
//! time its kernel took.
//!
//! Runtimes rename what they run. onnxruntime keeps a node's name when it
//! runs the node alone, names a fused kernel after its group's last output
//! (`r2_nchwc`, `<output>_nchwc`) or after its main node (`fused <Gemm>`,
//! `<node>/QuickGeluFusion/`), numbers what it generates (`BiasGelu_token_3`)
//! and inserts layout nodes of its own (`ReorderInput`). So a kernel is
//! joined, in turn, by its name, by the name of an output (decorations
//! stripped), by the longest layer or tensor name it starts with, and last
//! by position: among the layers between its neighbours', the last whose
//! output has the kernel's output shape (one no kernel has, if any: a
//! function op the runtime expands runs as several kernels). A layout or
//! copy kernel the model has no node for goes with its neighbour (the next
//! kernel for one that prepares an input, the one before otherwise).
//!
//! The layers a kernel covers are then found along the graph: a layer no
//! kernel is named after belongs to the kernel all its consumers belong to
//! (the producers of a group's last output), else to the kernel that ran
//! last of those of its producers (an activation fused after a
//! convolution). Of a group's layers the one with the most work shows the
//! group's time; the others are marked as fused into it.
//!
//! A kernel that says which nodes it ran (TensorRT's layers, named after
//! their ONNX nodes) is joined to those layers first (the `members` module), and a
//! kernel inserted to serve one (a reformat) goes with the one it serves.

mod members;

use rustc_hash::FxHashMap;

use super::{CostReport, LayerCost};
use crate::error::{Error, Result};
use crate::ir::NodeIdentity;
use crate::profile::{Kernel, Profile};

/// A set of kernels and the layers they ran.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelGroup {
    /// The runtime's names, the one joined first then any inserted beside it.
    pub kernels: Vec<String>,
    /// The first kernel's operator (`Conv`, `FusedConv`).
    pub op: String,
    pub seconds: f64,
    /// The layers, ascending; `lead` shows the time.
    pub layers: Vec<usize>,
    pub lead: usize,
}

/// A kernel of the profile joined to no layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Unjoined {
    pub name: String,
    pub op: String,
    pub seconds: f64,
}

/// A kernel that ran a layer c3 folds away at load time (onnxruntime may
/// run a shape computation c3 evaluates).
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedKernel {
    pub name: String,
    pub layer: String,
    pub seconds: f64,
}

/// A kernel the runtime inserted, and the group it was given to.
#[derive(Debug, Clone, PartialEq)]
pub struct Inserted {
    pub name: String,
    pub op: String,
    pub seconds: f64,
    pub group: usize,
}

/// A profile joined to a report's layers.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The profile file and what ran it.
    pub path: String,
    pub runtime: String,
    pub provider: Option<String>,
    pub threads: Option<u64>,
    pub runs: usize,
    pub dropped: usize,
    /// The run's time as the runtime records it (median of the kept runs).
    pub run_s: Option<f64>,
    /// The kernels' times, summed.
    pub kernels_s: f64,
    pub kernels: usize,
    pub groups: Vec<KernelGroup>,
    /// Per layer of the report, its group.
    pub layer_group: Vec<Option<u32>>,
    pub inserted: Vec<Inserted>,
    pub folded: Vec<FoldedKernel>,
    pub unjoined: Vec<Unjoined>,
    /// Layers no kernel covers (removed by the runtime, or not run).
    pub without_kernel: Vec<usize>,
}

impl Measured {
    /// A layer's measured time: its group's, on the group's lead.
    pub fn layer_s(&self, i: usize) -> Option<f64> {
        let g = &self.groups[*self.layer_group.get(i)?.as_ref()? as usize];
        (g.lead == i).then_some(g.seconds)
    }

    /// The group a layer is in, when it is not the group's lead: the layer
    /// whose time it is in.
    pub fn fused_into(&self, i: usize) -> Option<usize> {
        let g = &self.groups[*self.layer_group.get(i)?.as_ref()? as usize];
        (g.lead != i).then_some(g.lead)
    }

    /// The group of a layer.
    pub fn group_of(&self, i: usize) -> Option<&KernelGroup> {
        self.layer_group
            .get(i)
            .copied()
            .flatten()
            .map(|g| &self.groups[g as usize])
    }

    /// Kernel time joined to the layers (their groups, inserted kernels
    /// included).
    pub fn joined_s(&self) -> f64 {
        self.groups
            .iter()
            .map(|g| g.seconds)
            .fold(0.0, |a, b| a + b)
    }

    /// Kernel time joined to layers c3 folds away.
    pub fn folded_s(&self) -> f64 {
        self.folded
            .iter()
            .map(|k| k.seconds)
            .fold(0.0, |a, b| a + b)
    }

    /// Kernel time joined to no layer.
    pub fn unjoined_s(&self) -> f64 {
        self.unjoined
            .iter()
            .map(|k| k.seconds)
            .fold(0.0, |a, b| a + b)
    }

    /// The share of kernel time joined to a layer of the model (folded ones
    /// included), 0 to 1.
    pub fn joined_share(&self) -> f64 {
        if self.kernels_s > 0.0 {
            ((self.joined_s() + self.folded_s()) / self.kernels_s).min(1.0)
        } else {
            1.0
        }
    }

    /// Each kernel group's roofline bound on `r`'s device, as the one
    /// kernel the runtime ran it as: its layers' compute times summed,
    /// against the time of the bytes that cross the kernel's edge. A tensor
    /// one of its layers writes and only others of them read stays inside
    /// the kernel, so its write and those reads are no traffic (taken off
    /// the layers' own counts, never below zero, as a fusion pack does).
    /// Summing the layers' own bounds instead held a fused kernel to the
    /// traffic of the tensors it never writes (twice its measured time, on
    /// the committed TensorRT sample of ResNet-50). A graph output read inside
    /// the group is taken as staying there too, which only lowers a bound.
    pub fn group_bounds(&self, report: &CostReport, r: &super::Roofline) -> Vec<f64> {
        // Who reads each tensor that a layer of a group of several writes.
        let mut written: FxHashMap<&str, Vec<u32>> = FxHashMap::default();
        for g in self.groups.iter().filter(|g| g.layers.len() > 1) {
            for &i in &g.layers {
                for t in report.layers[i].outputs.iter().flatten() {
                    if let Some(name) = t.name.as_deref().filter(|_| !t.constant) {
                        written.insert(name, Vec::new());
                    }
                }
            }
        }
        for (j, l) in report.layers.iter().enumerate() {
            for t in l.inputs.iter().flatten() {
                if let Some(readers) = t.name.as_deref().and_then(|n| written.get_mut(n)) {
                    readers.push(j as u32);
                }
            }
        }
        self.groups
            .iter()
            .enumerate()
            .map(|(k, g)| match g.layers[..] {
                [i] => r.layers[i].bound_s,
                _ => self.fused_bound(report, r, k, g, &written),
            })
            .collect()
    }

    /// [`Measured::group_bounds`] of group `k`, `g`, of several layers.
    fn fused_bound(
        &self,
        report: &CostReport,
        r: &super::Roofline,
        k: usize,
        g: &KernelGroup,
        readers: &FxHashMap<&str, Vec<u32>>,
    ) -> f64 {
        let inside = |j: u32| self.layer_group.get(j as usize).copied().flatten() == Some(k as u32);
        // What is left of each layer's reads and writes, by its place in `g`.
        let mut left: Vec<(u64, u64)> = g
            .layers
            .iter()
            .map(|&i| (report.layers[i].mread, report.layers[i].mwrite))
            .collect();
        let at = |j: u32| g.layers.binary_search(&(j as usize)).ok();
        let runs = |i: usize| report.layers[i].runs.max(1);
        for (w, &i) in g.layers.iter().enumerate() {
            let l = &report.layers[i];
            for t in l.outputs.iter().flatten() {
                let Some(list) = t.name.as_deref().and_then(|n| readers.get(n)) else {
                    continue;
                };
                if t.constant || list.is_empty() || !list.iter().all(|&j| inside(j)) {
                    continue;
                }
                let bytes = super::fusion::bytes_of(t);
                left[w].1 = left[w].1.saturating_sub(bytes.saturating_mul(runs(i)));
                for &j in list {
                    if let Some(m) = at(j) {
                        let taken = bytes.saturating_mul(runs(j as usize));
                        left[m].0 = left[m].0.saturating_sub(taken);
                    }
                }
            }
        }
        let compute: f64 = g.layers.iter().map(|&i| r.layers[i].compute_s).sum();
        let moved = left.iter().map(|&(a, b)| a as f64 + b as f64).sum::<f64>();
        compute.max(moved / r.device.bandwidth)
    }
}

/// Below this share of kernels joined by name, the profile is taken to be
/// of another model and refused.
pub const MIN_NAMED_SHARE: f64 = 0.3;

/// Operators a runtime inserts to move or convert data, which no node of
/// the model stands for: +1 goes with the next kernel, -1 with the one before.
fn inserted_side(op: &str) -> Option<i8> {
    match op {
        "ReorderInput" | "MemcpyFromHost" => Some(1),
        "ReorderOutput" | "MemcpyToHost" | "Transpose" | "Cast" | "Reshape" | "Squeeze"
        | "Unsqueeze" | "Identity" | "Gather" | "Slice" | "Concat" | "Copy" => Some(-1),
        _ => None,
    }
}

/// Whether a name is one a runtime generated from an op type (`ReorderInput`,
/// `Transpose_token_4`).
fn generated(name: &str, op: &str) -> bool {
    !op.is_empty()
        && (name == op
            || name
                .strip_prefix(op)
                .and_then(|r| r.strip_prefix("_token_"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
}

/// A kernel name without the decorations runtimes add: `_token_N`
/// suffixes, then `_nchwc`, and a `fused ` prefix.
fn undecorated(name: &str) -> &str {
    let mut s = name;
    loop {
        let before = s;
        if let Some(at) = s.rfind("_token_") {
            let digits = &s[at + 7..];
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                s = &s[..at];
            }
        }
        s = s.strip_suffix("_nchwc").unwrap_or(s);
        s = s.strip_prefix("fused ").unwrap_or(s);
        if s == before {
            return s;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Anchor {
    /// The kernel runs this layer as its main node (named after it).
    Main(usize),
    /// The kernel ends with this layer (named after its output).
    End(usize),
    Folded(usize),
}

/// The names a kernel may be joined by.
struct Names<'r> {
    /// Layer names (and onnxruntime's names for unnamed nodes) → layer.
    layers: FxHashMap<&'r str, usize>,
    /// Tensor names → the layer that writes them.
    outputs: FxHashMap<&'r str, usize>,
    /// Folded layers' names and outputs → folded layer.
    folded: FxHashMap<&'r str, usize>,
    /// onnxruntime's names of unnamed nodes → layer, and → folded layer.
    runtime: FxHashMap<String, usize>,
    runtime_folded: FxHashMap<String, usize>,
}

impl<'r> Names<'r> {
    fn new(report: &'r CostReport, ids: &[NodeIdentity]) -> Names<'r> {
        let mut layers = FxHashMap::default();
        let mut outputs = FxHashMap::default();
        for (i, l) in report.layers.iter().enumerate() {
            layers.entry(l.name.as_str()).or_insert(i);
            for t in l.outputs.iter().flatten() {
                if let Some(n) = &t.name {
                    outputs.entry(&**n).or_insert(i);
                }
            }
        }
        let mut folded = FxHashMap::default();
        for (i, l) in report.folded.iter().enumerate() {
            folded.entry(l.name.as_str()).or_insert(i);
            for t in l.outputs.iter().flatten() {
                if let Some(n) = &t.name {
                    folded.entry(&**n).or_insert(i);
                }
            }
        }
        let mut runtime = FxHashMap::default();
        let mut runtime_folded = FxHashMap::default();
        for id in ids.iter().filter(|id| id.name.is_empty()) {
            if let Some(&i) = id.outputs.iter().find_map(|o| outputs.get(o.as_str())) {
                runtime.insert(id.runtime_name(), i);
            } else if let Some(&i) = id.outputs.iter().find_map(|o| folded.get(o.as_str())) {
                runtime_folded.insert(id.runtime_name(), i);
            }
        }
        Names {
            layers,
            outputs,
            folded,
            runtime,
            runtime_folded,
        }
    }

    fn exact(&self, s: &str) -> Option<Anchor> {
        if let Some(&i) = self.layers.get(s) {
            return Some(Anchor::Main(i));
        }
        if let Some(&i) = self.runtime.get(s) {
            return Some(Anchor::Main(i));
        }
        if let Some(&i) = self.folded.get(s) {
            return Some(Anchor::Folded(i));
        }
        if let Some(&i) = self.runtime_folded.get(s) {
            return Some(Anchor::Folded(i));
        }
        self.outputs.get(s).map(|&i| Anchor::End(i))
    }

    /// The layer a kernel is named after, if any.
    fn anchor(&self, k: &Kernel) -> Option<Anchor> {
        if let Some(a) = self.exact(&k.name) {
            return Some(a);
        }
        let bare = undecorated(&k.name);
        if let Some(a) = self.exact(bare).map(|a| match a {
            // `r2_nchwc` is named after r2, its last output.
            Anchor::Main(i) if bare != k.name && self.outputs.get(bare) == Some(&i) => {
                Anchor::End(i)
            }
            a => a,
        }) {
            return Some(a);
        }
        // The longest name the kernel's starts with, up to a separator.
        let name = k.name.as_str();
        for (at, c) in name.char_indices().rev() {
            if matches!(c, '/' | '_' | ' ' | ':' | '.')
                && at > 0
                && let Some(a) = self.exact(&name[..at])
            {
                return Some(a);
            }
        }
        None
    }
}

/// Joins a profile's kernels to a report's layers; `ids` are the model's
/// main-graph nodes (for onnxruntime's names of unnamed nodes). A profile
/// of another model (too few kernels joined by name) is an error.
pub fn join(report: &CostReport, profile: &Profile, ids: &[NodeIdentity]) -> Result<Measured> {
    let names = Names::new(report, ids);
    let n = report.layers.len();
    let kernels = &profile.kernels;
    let ran = members::Ran::new(report, &names, kernels);
    let serves = |k: usize| kernels[k].members.serves.is_some();
    let mut anchors: Vec<Option<Anchor>> = (0..kernels.len())
        .map(|k| {
            if serves(k) {
                None
            } else {
                ran.anchor(k).or_else(|| names.anchor(&kernels[k]))
            }
        })
        .collect();
    let named = anchors.iter().filter(|a| a.is_some()).count();
    // Kernels that serve another are not counted (they are named after it).
    let counted = (0..kernels.len()).filter(|&k| !serves(k)).count();
    if (named as f64) < MIN_NAMED_SHARE * counted as f64 {
        let strangers: Vec<String> = kernels
            .iter()
            .zip(&anchors)
            .filter(|(k, a)| {
                a.is_none() && !generated(&k.name, &k.op) && k.members.serves.is_none()
            })
            .take(3)
            .map(|(k, _)| crate::error::cut(&k.name, 60))
            .collect();
        return Err(Error::Input {
            path: profile.path.clone(),
            message: format!(
                "the profile is not of this model: {named} of its {counted} kernels are named after a layer of it (kernels such as {})",
                strangers.join(", ")
            ),
        });
    }
    let layer_at = |a: Anchor| match a {
        Anchor::Main(i) | Anchor::End(i) => Some(i),
        Anchor::Folded(_) => None,
    };
    // By position: a kernel named after nothing, between joined ones.
    let mut owned = vec![false; n];
    for a in anchors.iter().flatten().filter_map(|&a| layer_at(a)) {
        owned[a] = true;
    }
    for k in 0..kernels.len() {
        if anchors[k].is_some() || inserted_side(&kernels[k].op).is_some() || serves(k) {
            continue;
        }
        let before = anchors[..k]
            .iter()
            .rev()
            .flatten()
            .find_map(|&a| layer_at(a));
        let after = anchors[k + 1..].iter().flatten().find_map(|&a| layer_at(a));
        let lo = before.map_or(0, |b| b + 1);
        let hi = after.unwrap_or(n);
        let Some(shape) = kernels[k].outputs.first() else {
            continue;
        };
        let fits = |l: &LayerCost| {
            l.outputs.first().and_then(Option::as_ref).is_some_and(|t| {
                t.shape.len() == shape.len()
                    && t.shape
                        .iter()
                        .zip(shape)
                        .all(|(d, &s)| d.known().is_some_and(|d| s >= 0 && d == s as u64))
            })
        };
        // A layer no kernel has yet; else one that has (a layer the runtime
        // runs as several kernels: a function op expanded into its body).
        // (the layer of the kernel before included: the kernels of one
        // layer run one after another).
        let window = lo..hi.min(n);
        let fresh = window
            .clone()
            .rev()
            .find(|&i| !owned[i] && fits(&report.layers[i]));
        let again = || {
            (before.unwrap_or(0)..hi.min(n))
                .rev()
                .find(|&i| fits(&report.layers[i]))
        };
        if let Some(i) = fresh.or_else(again) {
            anchors[k] = Some(Anchor::End(i));
            owned[i] = true;
        }
    }
    // Groups in kernel order; a layer two kernels are named after is one
    // group of both.
    let mut owner: Vec<Option<u32>> = vec![None; n];
    let mut groups: Vec<KernelGroup> = Vec::new();
    let mut folded = Vec::new();
    let mut unjoined_at: Vec<usize> = Vec::new();
    let mut kernel_group: Vec<Option<usize>> = vec![None; kernels.len()];
    for (k, a) in anchors.iter().enumerate() {
        let kernel = &kernels[k];
        match a {
            Some(Anchor::Folded(f)) => folded.push(FoldedKernel {
                name: kernel.name.clone(),
                layer: report.folded[*f].name.clone(),
                seconds: kernel.seconds,
            }),
            Some(Anchor::Main(i) | Anchor::End(i)) => {
                let g = match owner[*i] {
                    Some(g) => {
                        let g = g as usize;
                        groups[g].kernels.push(kernel.name.clone());
                        groups[g].seconds += kernel.seconds;
                        g
                    }
                    None => {
                        groups.push(KernelGroup {
                            kernels: vec![kernel.name.clone()],
                            op: members::op_of(report, kernel, &ran.layers[k]),
                            seconds: kernel.seconds,
                            layers: vec![*i],
                            lead: *i,
                        });
                        owner[*i] = Some((groups.len() - 1) as u32);
                        groups.len() - 1
                    }
                };
                kernel_group[k] = Some(g);
            }
            None => unjoined_at.push(k),
        }
    }
    // The other layers a kernel names are its group's (a layer two
    // kernels name stays with the first).
    for (k, layers) in ran.layers.iter().enumerate() {
        if let Some(g) = kernel_group[k] {
            for &i in layers.iter().skip(1) {
                owner[i].get_or_insert(g as u32);
            }
        }
    }
    let served = members::served(kernels);
    // Inserted kernels go with a neighbour; the rest stay unjoined.
    let mut inserted = Vec::new();
    let mut unjoined = Vec::new();
    for k in unjoined_at {
        let kernel = &kernels[k];
        // A kernel serving another goes with it, else with its side's
        // neighbour.
        let target = served[k].and_then(|t| kernel_group[t].map(|g| (t, g)));
        let side = match (&kernel.members.serves, target) {
            (Some(_), Some((t, _))) => Some(if t > k { 1 } else { -1 }),
            (Some(_), None) => Some(-1),
            (None, _) => inserted_side(&kernel.op)
                .or_else(|| generated(&kernel.name, &kernel.op).then_some(-1)),
        };
        let neighbour = target.map(|(_, g)| g).or_else(|| {
            side.and_then(|s| {
                let found = if s > 0 {
                    kernel_group[k + 1..].iter().flatten().next()
                } else {
                    kernel_group[..k].iter().rev().flatten().next()
                };
                found
                    .or_else(|| kernel_group.iter().flatten().next())
                    .copied()
            })
        });
        match neighbour {
            Some(g) => {
                groups[g].kernels.push(kernel.name.clone());
                groups[g].seconds += kernel.seconds;
                inserted.push(Inserted {
                    name: kernel.name.clone(),
                    op: kernel.op.clone(),
                    seconds: kernel.seconds,
                    group: g,
                });
            }
            None => unjoined.push(Unjoined {
                name: kernel.name.clone(),
                op: kernel.op.clone(),
                seconds: kernel.seconds,
            }),
        }
    }
    spread(report, &mut owner);
    for g in &mut groups {
        g.layers.clear();
    }
    let mut without_kernel = Vec::new();
    for (i, o) in owner.iter().enumerate() {
        match o {
            Some(g) => groups[*g as usize].layers.push(i),
            None => without_kernel.push(i),
        }
    }
    for g in &mut groups {
        let work = |i: &usize| {
            let l = &report.layers[*i];
            (l.work.saturating_add(l.iops), l.mrw())
        };
        if let Some(&lead) = g
            .layers
            .iter()
            .max_by(|a, b| work(a).cmp(&work(b)).then(b.cmp(a)))
        {
            // The named layer keeps the time on a tie of work.
            if work(&lead) > work(&g.lead) {
                g.lead = lead;
            }
        }
    }
    Ok(Measured {
        path: profile.path.clone(),
        runtime: profile.runtime.clone(),
        provider: profile.provider.clone(),
        threads: profile.threads,
        runs: profile.runs,
        dropped: profile.dropped,
        run_s: profile.run_s,
        kernels_s: profile.kernels_s(),
        kernels: kernels.len(),
        groups,
        layer_group: owner,
        inserted,
        folded,
        unjoined,
        without_kernel,
    })
}

/// Gives the layers no kernel is named after to the group along the graph:
/// the one all their consumers are in, else the one that ran last of their
/// producers', until nothing changes.
fn spread(report: &CostReport, owner: &mut [Option<u32>]) {
    let n = report.layers.len();
    let mut made: FxHashMap<&str, usize> = FxHashMap::default();
    for (i, l) in report.layers.iter().enumerate() {
        for t in l.outputs.iter().flatten() {
            if let Some(name) = &t.name {
                made.entry(&**name).or_insert(i);
            }
        }
    }
    let mut producers: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, l) in report.layers.iter().enumerate() {
        for t in l.inputs.iter().flatten() {
            if let Some(&p) = t.name.as_deref().and_then(|name| made.get(name))
                && p != i
                && !producers[i].contains(&p)
            {
                producers[i].push(p);
                consumers[p].push(i);
            }
        }
    }
    loop {
        let mut changed = false;
        for i in (0..n).rev() {
            if owner[i].is_some() || consumers[i].is_empty() {
                continue;
            }
            let first = owner[consumers[i][0]];
            if first.is_some() && consumers[i].iter().all(|&c| owner[c] == first) {
                owner[i] = first;
                changed = true;
            }
        }
        for i in 0..n {
            if owner[i].is_some() {
                continue;
            }
            if let Some(g) = producers[i].iter().filter_map(|&p| owner[p]).max() {
                owner[i] = Some(g);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{CountOptions, RuleSet};

    /// Conv -> BatchNormalization -> Relu -> Conv -> Relu on named tensors.
    fn report() -> CostReport {
        let layer = |name: &str, op: &str, x: &str, y: &str, c_in: u64, c_out: u64| {
            let w = if op == "Conv" {
                format!(r#", {{"shape": [{c_out}, {c_in}, 3, 3], "const": true}}"#)
            } else if op == "BatchNormalization" {
                (0..4)
                    .map(|_| format!(r#", {{"shape": [{c_out}], "const": true}}"#))
                    .collect()
            } else {
                String::new()
            };
            let pads = if op == "Conv" {
                r#", "attrs": {"pads": [1, 1, 1, 1]}"#
            } else {
                ""
            };
            format!(
                r#"{{"name": "{name}", "op": "{op}"{pads}, "inputs": [{{"name": "{x}", "shape": [1, {c_in}, 8, 8]}}{w}], "outputs": [{{"name": "{y}", "shape": [1, {c_out}, 8, 8]}}]}}"#
            )
        };
        let layers = [
            layer("conv1", "Conv", "x", "c1", 3, 4),
            layer("bn1", "BatchNormalization", "c1", "b1", 4, 4),
            layer("relu1", "Relu", "b1", "r1", 4, 4),
            layer("conv2", "Conv", "r1", "c2", 4, 4),
            layer("relu2", "Relu", "c2", "r2", 4, 4),
        ];
        let trace = format!(r#"{{"layers": [{}]}}"#, layers.join(","));
        let graph = crate::trace::parse_trace(trace.as_bytes(), "inline").unwrap();
        let opts = CountOptions {
            timing: true,
            ..CountOptions::default()
        };
        super::super::estimate(&graph, &RuleSet::builtin().unwrap(), opts).unwrap()
    }

    fn kernel(name: &str, op: &str, us: f64, out: &[i64]) -> Kernel {
        Kernel {
            name: name.into(),
            op: op.into(),
            seconds: us * 1e-6,
            inputs: Vec::new(),
            outputs: vec![out.to_vec()],
            members: Default::default(),
        }
    }

    fn profile(kernels: Vec<Kernel>) -> Profile {
        Profile {
            path: "p.json".into(),
            runtime: "onnxruntime".into(),
            provider: None,
            threads: None,
            runs: 1,
            dropped: 0,
            run_s: Some(1e-3),
            kernels,
        }
    }

    #[test]
    fn fused_kernels_cover_their_groups_and_inserted_ones_a_neighbour() {
        let r = report();
        // onnxruntime's NCHWc kernels: the first named after its group's
        // last output (r1), the second after its main node (conv2), and a
        // layout kernel between them.
        let p = profile(vec![
            kernel("ReorderInput", "ReorderInput", 5.0, &[1, 3, 8, 8]),
            kernel("r1_nchwc", "Conv", 40.0, &[1, 4, 8, 8]),
            kernel("conv2", "FusedConv", 30.0, &[1, 4, 8, 8]),
            kernel("ReorderOutput", "ReorderOutput", 3.0, &[1, 4, 8, 8]),
        ]);
        let m = join(&r, &p, &[]).unwrap();
        assert_eq!(m.groups.len(), 2);
        // conv1, bn1 and relu1 in the first (the consumers-first walk back
        // from r1), conv2 and relu2 in the second (relu2 after its producer).
        assert_eq!(m.groups[0].layers, [0, 1, 2]);
        assert_eq!(m.groups[1].layers, [3, 4]);
        // Each group's time on its convolution: 5 + 40 µs, 30 + 3 µs.
        assert_eq!(m.groups[0].lead, 0);
        assert!((m.layer_s(0).unwrap() - 45e-6).abs() < 1e-12);
        assert!((m.layer_s(3).unwrap() - 33e-6).abs() < 1e-12);
        assert_eq!(m.layer_s(1), None);
        assert_eq!(m.fused_into(2), Some(0));
        assert_eq!(m.inserted.len(), 2);
        assert!(m.unjoined.is_empty() && m.without_kernel.is_empty());
        assert!((m.joined_share() - 1.0).abs() < 1e-12);
    }

    /// TensorRT names the layer of a node without a name `node_of_` and
    /// its first output: such members join the layer writing that tensor.
    #[test]
    fn members_named_after_their_output_join_the_layer_writing_it() {
        let r = report();
        let with = |name: &str, members: &[&str], range: Option<(&str, &str)>| Kernel {
            members: crate::profile::Members {
                names: members.iter().map(|m| m.to_string()).collect(),
                range: range.map(|(a, b)| (a.to_string(), b.to_string())),
                serves: None,
            },
            ..kernel(name, "", 10.0, &[1, 4, 8, 8])
        };
        let p = Profile {
            runtime: "tensorrt".into(),
            run_s: None,
            ..profile(vec![
                with(
                    "node_of_c1 + node_of_b1 + PWN(node_of_r1)",
                    &["node_of_c1", "node_of_b1", "node_of_r1"],
                    None,
                ),
                with(
                    "{ForeignNode[node_of_c2...node_of_r2]}",
                    &[],
                    Some(("node_of_c2", "node_of_r2")),
                ),
            ])
        };
        let m = join(&r, &p, &[]).unwrap();
        assert_eq!(m.groups.len(), 2);
        assert_eq!(m.groups[0].layers, [0, 1, 2]);
        assert_eq!(m.groups[1].layers, [3, 4]);
        assert!(m.unjoined.is_empty() && m.without_kernel.is_empty());
        // A name that is neither a layer's nor `node_of_` an output's
        // joins nothing by its members.
        let stranger = profile(vec![with("node_of_q", &["node_of_q"], None)]);
        assert!(join(&r, &stranger, &[]).is_err());
    }

    #[test]
    fn generated_names_join_by_shape_and_strangers_are_listed() {
        let r = report();
        let p = profile(vec![
            kernel("conv1", "Conv", 40.0, &[1, 4, 8, 8]),
            // No name of the model: the last layer between conv1 and conv2
            // with its output shape that no kernel has, relu1.
            kernel("BiasRelu_token_2", "BiasRelu", 10.0, &[1, 4, 8, 8]),
            kernel("conv2", "Conv", 30.0, &[1, 4, 8, 8]),
            kernel("Mystery", "Custom", 20.0, &[2, 2]),
        ]);
        let m = join(&r, &p, &[]).unwrap();
        let leads: Vec<usize> = m.groups.iter().map(|g| g.lead).collect();
        // bn1 joins the kernel of its consumer, relu1, and has more work.
        assert_eq!(leads, [0, 1, 3]);
        assert_eq!(m.groups[1].layers, [1, 2]);
        assert_eq!(m.unjoined.len(), 1);
        // 20 of 100 µs joined to nothing.
        assert!((m.joined_share() - 0.8).abs() < 1e-9);
    }

    #[test]
    fn a_profile_of_another_model_is_refused() {
        let r = report();
        let p = profile(vec![
            kernel("/encoder/layer.0/MatMul", "MatMul", 40.0, &[1, 4]),
            kernel("/encoder/layer.0/Add", "Add", 40.0, &[1, 4]),
        ]);
        let e = join(&r, &p, &[]).unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json: the profile is not of this model: 0 of its 2 kernels are named after a layer of it (kernels such as /encoder/layer.0/MatMul, /encoder/layer.0/Add)"
        );
    }

    #[test]
    fn unnamed_nodes_join_by_the_runtimes_name_for_them() {
        let r = report();
        let ids = vec![NodeIdentity {
            index: 7,
            name: String::new(),
            op: "Relu".into(),
            outputs: vec!["r2".into()],
        }];
        let p = profile(vec![
            kernel("conv1", "Conv", 40.0, &[1, 4, 8, 8]),
            kernel("Relu_7", "Relu", 2.0, &[1, 4, 8, 8]),
        ]);
        let m = join(&r, &p, &ids).unwrap();
        assert_eq!(
            m.group_of(4).map(|g| g.kernels.clone()),
            Some(vec!["Relu_7".into()])
        );
    }

    #[test]
    fn decorations_come_off() {
        assert_eq!(undecorated("r2_nchwc"), "r2");
        assert_eq!(undecorated("fused Gemm_3_token_12"), "Gemm_3");
        assert_eq!(undecorated("x_token_"), "x_token_");
        assert!(generated("Transpose_token_4", "Transpose"));
        assert!(generated("ReorderInput", "ReorderInput"));
        assert!(!generated("Transpose_4", "Transpose"));
    }
}
