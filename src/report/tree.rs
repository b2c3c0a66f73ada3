//! The module tree (`--depth N`): layers grouped by their names' leading
//! parts, as exporters name nodes (`/layer1/layer1.0/conv1/Conv`) and the
//! PyTorch hook names modules (`layer1.0.conv1`), each node with its
//! layers' totals and its share of the model's FLOPs.

use serde::Serialize;

use super::{Column, CostReport, Grid, Scaler};

/// The parts of a layer's name: an exporter's path (`/layer1/layer1.0/
/// conv1/Conv`, from the root) split at `/`, its parts holding dots; a
/// module path (`layer1.0.conv1`, or `layer1.0/Add` for a container's own
/// op) split at `/` and `.`. Empty parts are dropped.
pub fn parts(name: &str) -> Vec<&str> {
    let exported = name.starts_with('/');
    name.split(|c| c == '/' || (!exported && c == '.'))
        .filter(|p| !p.is_empty())
        .collect()
}

/// One node of the tree: a name prefix and what its layers add up to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeNode {
    /// The prefix's parts joined by `/`.
    pub path: String,
    /// 1 for the top level.
    pub level: usize,
    pub layers: u64,
    pub flops: u64,
    pub mread: u64,
    pub mwrite: u64,
}

/// The tree down to `depth` levels, nodes in the order their first layer
/// comes, each under its parent. A layer whose name has fewer parts than a
/// level counts at its last one.
pub fn tree(report: &CostReport, depth: usize) -> Vec<TreeNode> {
    let mut nodes: Vec<TreeNode> = Vec::new();
    let mut index: rustc_hash::FxHashMap<String, usize> = rustc_hash::FxHashMap::default();
    // Children of each node, by index, to list the tree depth first.
    let mut children: Vec<Vec<usize>> = Vec::new();
    let mut roots: Vec<usize> = Vec::new();
    for l in &report.layers {
        let p = parts(&l.name);
        let mut parent: Option<usize> = None;
        for level in 1..=depth.min(p.len().max(1)) {
            let path = if p.is_empty() {
                l.name.clone()
            } else {
                p[..level].join("/")
            };
            let i = match index.get(&path) {
                Some(&i) => i,
                None => {
                    let i = nodes.len();
                    nodes.push(TreeNode {
                        path: path.clone(),
                        level,
                        layers: 0,
                        flops: 0,
                        mread: 0,
                        mwrite: 0,
                    });
                    children.push(Vec::new());
                    match parent {
                        Some(up) => children[up].push(i),
                        None => roots.push(i),
                    }
                    index.insert(path, i);
                    i
                }
            };
            let n = &mut nodes[i];
            n.layers += 1;
            n.flops = n.flops.saturating_add(l.flops);
            n.mread = n.mread.saturating_add(l.mread);
            n.mwrite = n.mwrite.saturating_add(l.mwrite);
            parent = Some(i);
        }
    }
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(children[i].iter().rev());
    }
    order.into_iter().map(|i| nodes[i].clone()).collect()
}

/// The tree as a table: each node's last part indented by its level, its
/// layers, FLOPs, bytes and share of the FLOPs; the total last.
pub(super) fn grid(report: &CostReport, s: &Scaler, depth: usize, csv: bool) -> Grid {
    let metrics = [Column::Flops, Column::Mread, Column::Mwrite, Column::Mrw];
    let t = &report.total;
    let mut header = vec![
        if csv { "Path" } else { "Module" }.to_string(),
        "# Layers".to_string(),
    ];
    header.extend(metrics.iter().map(|&c| s.header(c)));
    header.push(s.header(Column::FlopsPct));
    let mut keys = vec![
        if csv { "path" } else { "module" }.to_string(),
        "layers".to_string(),
    ];
    keys.extend(metrics.iter().map(|&c| s.key(c)));
    keys.push(s.key(Column::FlopsPct));
    let mut rows = Vec::new();
    for n in tree(report, depth) {
        let name = if csv {
            n.path.clone()
        } else {
            let last = n.path.rsplit('/').next().unwrap_or(&n.path);
            format!("{}{last}", "  ".repeat(n.level - 1))
        };
        let mut r = vec![name, n.layers.to_string()];
        let values = [n.flops, n.mread, n.mwrite, n.mread.saturating_add(n.mwrite)];
        r.extend(metrics.iter().zip(values).map(|(&c, v)| s.value(v, c)));
        r.push(s.percent(n.flops, t.flops));
        rows.push(r);
    }
    let mut total = vec!["total".to_string(), t.layers.to_string()];
    let values = [t.flops, t.mread, t.mwrite, t.mrw];
    total.extend(metrics.iter().zip(values).map(|(&c, v)| s.value(v, c)));
    total.push(s.percent(t.flops, t.flops));
    rows.push(total);
    Grid {
        title: format!("Module tree (depth {depth})"),
        numeric: (0..header.len()).map(|i| i > 0).collect(),
        header,
        keys,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn names_split_as_exporters_and_the_hook_write_them() {
        assert_eq!(
            parts("/layer1/layer1.0/conv1/Conv"),
            ["layer1", "layer1.0", "conv1", "Conv"]
        );
        assert_eq!(parts("layer1.0.conv1"), ["layer1", "0", "conv1"]);
        assert_eq!(parts("layer1.0/Add"), ["layer1", "0", "Add"]);
        assert_eq!(parts("n7"), ["n7"]);
        assert!(parts("").is_empty());
    }
}
