//! Inference on a junction tree: two-pass sum-product belief propagation in log
//! space (calibrated clique marginals), exact marginals of any clique, min-sum
//! (MAP value) of a sum of clique tables, and shared plans that compute many
//! marginals of one table (or broadcast many tables into it) in few passes.

use super::factor::Projection;
use super::{Clique, JunctionTree, SynthError};

/// Reusable belief propagation over one junction tree.
#[derive(Debug, Clone)]
pub struct BeliefPropagation {
    /// Clique → separator with its parent, per non-root clique.
    up: Vec<Option<Projection>>,
    /// Parent clique → separator, per non-root clique.
    down: Vec<Option<Projection>>,
    msg_up: Vec<Vec<f64>>,
    msg_down: Vec<Vec<f64>>,
    scratch: Vec<f64>,
}

impl BeliefPropagation {
    /// Prepares the projections of `tree`.
    pub fn new(tree: &JunctionTree) -> Result<Self, SynthError> {
        let sizes = tree.sizes();
        let m = tree.cliques().len();
        let mut up = Vec::with_capacity(m);
        let mut down = Vec::with_capacity(m);
        for c in 0..m {
            match tree.parent(c) {
                Some(p) => {
                    let s = tree.separator(c);
                    up.push(Some(Projection::new(sizes, &tree.cliques()[c], s)?));
                    down.push(Some(Projection::new(sizes, &tree.cliques()[p], s)?));
                }
                None => {
                    up.push(None);
                    down.push(None);
                }
            }
        }
        Ok(BeliefPropagation {
            up,
            down,
            msg_up: vec![Vec::new(); m],
            msg_down: vec![Vec::new(); m],
            scratch: Vec::new(),
        })
    }

    /// Calibrates: from log-potentials `theta` (one table per junction-tree clique,
    /// the model being `p(x) ∝ exp Σ_C θ_C(x_C)`) writes each clique's normalised
    /// log-marginal into `beliefs` and its probability marginal into `linear`, and
    /// returns `ln Z`.
    ///
    /// Messages are log tables; each is computed from the sending clique's table
    /// exponentiated once relative to its maximum and summed linearly (the
    /// downward messages of all children share one exponentiation: Hugin's
    /// "marginal of the belief minus the upward message"). A separator cell whose
    /// mass is below `f64::MIN_POSITIVE` times the clique's largest cell is
    /// floored there (≈ e^−708 relative), so no table ever holds −∞.
    pub fn calibrate(
        &mut self,
        tree: &JunctionTree,
        theta: &[Vec<f64>],
        beliefs: &mut [Vec<f64>],
        linear: &mut [Vec<f64>],
    ) -> f64 {
        let order = tree.order();
        let exp_rel = |b: &[f64], out: &mut Vec<f64>| -> f64 {
            let m = b.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            out.clear();
            out.extend(b.iter().map(|&x| (x - m).exp()));
            m
        };
        // Upward: b_c = θ_c + Σ_children up-messages; up-message = ln Σ onto the separator.
        for &c in order.iter().rev() {
            let b = &mut beliefs[c];
            b.clear();
            b.extend_from_slice(&theta[c]);
            for &k in tree.children(c) {
                if let Some(p) = &self.down[k] {
                    p.broadcast_add(b, &self.msg_up[k], 1.0);
                }
            }
            if let Some(p) = &self.up[c] {
                let m = exp_rel(b, &mut self.scratch);
                let msg = &mut self.msg_up[c];
                msg.clear();
                msg.resize(p.sub_len(), 0.0);
                p.sum_into(&self.scratch, msg);
                msg.iter_mut()
                    .for_each(|x| *x = x.max(f64::MIN_POSITIVE).ln() + m);
            }
        }
        // Downward: add the parent's message, exponentiate once, send
        // (marginal − up-message) to each child, normalise.
        let mut log_z = f64::NEG_INFINITY;
        for &c in order {
            if let Some(p) = &self.up[c] {
                p.broadcast_add(&mut beliefs[c], &self.msg_down[c], 1.0);
            }
            let lin = &mut linear[c];
            let m = exp_rel(&beliefs[c], lin);
            let z: f64 = lin.iter().sum();
            for &k in tree.children(c) {
                if let Some(p) = &self.down[k] {
                    let msg = &mut self.msg_down[k];
                    msg.clear();
                    msg.resize(p.sub_len(), 0.0);
                    p.sum_into(lin, msg);
                    for (x, u) in msg.iter_mut().zip(&self.msg_up[k]) {
                        *x = x.max(f64::MIN_POSITIVE).ln() + m - u;
                    }
                }
            }
            let lz = m + z.ln();
            if c == order[0] {
                log_z = lz;
            }
            lin.iter_mut().for_each(|x| *x /= z);
            beliefs[c].iter_mut().for_each(|x| *x -= lz);
        }
        log_z
    }

    /// `min_x Σ_C g_C(x_C)` over all joint cells (min-sum message passing, upward
    /// pass only); `work` is scratch.
    pub fn min_sum(&mut self, tree: &JunctionTree, g: &[Vec<f64>], work: &mut Vec<f64>) -> f64 {
        let mut result = 0.0;
        for &c in tree.order().iter().rev() {
            work.clear();
            work.extend_from_slice(&g[c]);
            for &k in tree.children(c) {
                if let Some(p) = &self.down[k] {
                    p.broadcast_add(work, &self.msg_up[k], 1.0);
                }
            }
            match &self.up[c] {
                Some(p) => {
                    let m = &mut self.msg_up[c];
                    m.clear();
                    m.resize(p.sub_len(), f64::INFINITY);
                    p.min_into(work, m);
                }
                None => result += work.iter().copied().fold(f64::INFINITY, f64::min),
            }
        }
        result
    }
}

/// The exact probability marginal of `q` under a calibrated junction tree
/// (`log_beliefs` = normalised log-marginals of the tree's cliques).
///
/// If a tree clique contains `q`, sums its marginal; otherwise eliminates
/// variables over the smallest subtree touching `q`'s attributes, whose cliques
/// represent the joint of their attributes as `Π μ_C / Π μ_S` (running
/// intersection), keeping only `q` and the separators in the messages.
pub fn marginal(
    tree: &JunctionTree,
    log_beliefs: &[Vec<f64>],
    q: &Clique,
) -> Result<Vec<f64>, SynthError> {
    let sizes = tree.sizes();
    q.check(sizes)?;
    let qn = q.cells(sizes)?;
    if let Some(c) = tree.containing(q) {
        let p = Projection::new(sizes, &tree.cliques()[c], q)?;
        let lin: Vec<f64> = log_beliefs[c].iter().map(|x| x.exp()).collect();
        let mut out = vec![0.0; qn];
        p.sum_into(&lin, &mut out);
        return Ok(out);
    }
    let cl = tree.cliques();
    let m = cl.len();
    // Adjacency of the tree.
    let mut nbrs = vec![Vec::new(); m];
    for c in 0..m {
        if let Some(p) = tree.parent(c) {
            nbrs[c].push(p);
            nbrs[p].push(c);
        }
    }
    // One clique per attribute of q (prefer one already chosen).
    let mut chosen: Vec<usize> = Vec::new();
    for &a in q.attributes() {
        if chosen.iter().any(|&c| cl[c].contains(a)) {
            continue;
        }
        if let Some(c) = (0..m).find(|&c| cl[c].contains(a)) {
            chosen.push(c);
        }
    }
    let root = chosen[0];
    // Re-root at `root`, mark the paths from every chosen clique to it.
    let mut par = vec![usize::MAX; m];
    let mut bfs = vec![root];
    par[root] = root;
    let mut k = 0;
    while k < bfs.len() {
        let c = bfs[k];
        k += 1;
        for &n in &nbrs[c] {
            if par[n] == usize::MAX {
                par[n] = c;
                bfs.push(n);
            }
        }
    }
    let mut keep = vec![false; m];
    for &c in &chosen {
        let mut x = c;
        while !keep[x] {
            keep[x] = true;
            if x == root {
                break;
            }
            x = par[x];
        }
    }
    // Post-order elimination over the kept subtree (reverse BFS order).
    let mut msgs: Vec<Option<(Clique, Vec<f64>)>> = vec![None; m];
    let mut scratch = Vec::new();
    for &c in bfs.iter().rev() {
        if !keep[c] {
            continue;
        }
        // Scope: the clique and the scopes of its kept children's messages.
        let kids: Vec<usize> = nbrs[c]
            .iter()
            .copied()
            .filter(|&n| n != root && par[n] == c && keep[n])
            .collect();
        let mut scope = cl[c].clone();
        for &kid in &kids {
            if let Some((s, _)) = &msgs[kid] {
                scope = scope.union(s);
            }
        }
        let len = scope.cells(sizes)?;
        let mut table = vec![0.0; len];
        Projection::new(sizes, &scope, &cl[c])?.broadcast_add(&mut table, &log_beliefs[c], 1.0);
        let sep = if c == root {
            Clique::empty()
        } else {
            cl[c].intersection(&cl[par[c]])
        };
        if c != root {
            // Divide by the separator marginal: the clique's conditional given it.
            let mut lsep = Vec::new();
            Projection::new(sizes, &cl[c], &sep)?.logsumexp(
                &log_beliefs[c],
                None,
                &mut lsep,
                &mut scratch,
            );
            Projection::new(sizes, &scope, &sep)?.broadcast_add(&mut table, &lsep, -1.0);
        }
        for &kid in &kids {
            if let Some((s, v)) = msgs[kid].take() {
                Projection::new(sizes, &scope, &s)?.broadcast_add(&mut table, &v, 1.0);
            }
        }
        let keep_vars = Clique::from_sorted(
            scope
                .attributes()
                .iter()
                .copied()
                .filter(|&a| q.contains(a) || sep.contains(a))
                .collect(),
        );
        let mut out = Vec::new();
        Projection::new(sizes, &scope, &keep_vars)?.logsumexp(&table, None, &mut out, &mut scratch);
        msgs[c] = Some((keep_vars, out));
    }
    let Some((scope, log_m)) = msgs[root].take() else {
        return Err(SynthError::NotASubset);
    };
    // scope == q (all of q's attributes were reached).
    let p = Projection::new(sizes, &scope, q)?;
    let lin: Vec<f64> = log_m.iter().map(|x| x.exp()).collect();
    let mut out = vec![0.0; qn];
    p.sum_into(&lin, &mut out);
    Ok(out)
}

/// A plan computing the marginals of one table onto many sub-cliques ("targets")
/// through intermediate tables: targets are split by an attribute few of them
/// use; those without it are computed from the table with it summed out (half the
/// cells for a binary attribute), recursively. For `m` targets this costs about
/// `log₂ m` passes over the table instead of `m`. The transpose broadcasts target
/// tables back into the big table in as many passes.
#[derive(Debug, Clone)]
pub struct MarginalPlan {
    big_len: usize,
    /// Nodes in topological order: (parent node or None for the big table, projection from it).
    nodes: Vec<(Option<usize>, Projection)>,
    /// The node holding each target.
    target_node: Vec<usize>,
    buffers: Vec<Vec<f64>>,
}

impl MarginalPlan {
    /// A plan from a table over `big` to the `targets` (each a subset of `big`).
    pub fn new(sizes: &[usize], big: &Clique, targets: &[Clique]) -> Result<Self, SynthError> {
        let mut nodes = Vec::new();
        let mut scopes: Vec<Clique> = Vec::new();
        let mut target_node = vec![usize::MAX; targets.len()];
        let idx: Vec<usize> = (0..targets.len()).collect();
        Self::build(
            sizes,
            big,
            None,
            targets,
            idx,
            &mut nodes,
            &mut scopes,
            &mut target_node,
        )?;
        let buffers = nodes
            .iter()
            .map(|(_, p): &(Option<usize>, Projection)| vec![0.0; p.sub_len()])
            .collect();
        Ok(MarginalPlan {
            big_len: big.cells(sizes)?,
            nodes,
            target_node,
            buffers,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        sizes: &[usize],
        scope: &Clique,
        parent: Option<usize>,
        targets: &[Clique],
        mut todo: Vec<usize>,
        nodes: &mut Vec<(Option<usize>, Projection)>,
        scopes: &mut Vec<Clique>,
        target_node: &mut [usize],
    ) -> Result<(), SynthError> {
        let mut forbidden: Vec<usize> = Vec::new();
        while todo.len() > 2 {
            // The attribute (not yet split on) in the fewest remaining targets.
            let best = scope
                .attributes()
                .iter()
                .copied()
                .filter(|a| !forbidden.contains(a))
                .map(|a| (todo.iter().filter(|&&t| targets[t].contains(a)).count(), a))
                .min_by_key(|&(n, a)| (n, usize::MAX - sizes[a]));
            let Some((count, a)) = best else { break };
            forbidden.push(a);
            if count == todo.len() {
                continue;
            }
            let (with, without): (Vec<usize>, Vec<usize>) =
                todo.iter().partition(|&&t| targets[t].contains(a));
            let sub = without
                .iter()
                .fold(Clique::empty(), |u, &t| u.union(&targets[t]));
            nodes.push((parent, Projection::new(sizes, scope, &sub)?));
            scopes.push(sub.clone());
            let id = nodes.len() - 1;
            Self::build(
                sizes,
                &sub,
                Some(id),
                targets,
                without,
                nodes,
                scopes,
                target_node,
            )?;
            todo = with;
        }
        for t in todo {
            nodes.push((parent, Projection::new(sizes, scope, &targets[t])?));
            scopes.push(targets[t].clone());
            target_node[t] = nodes.len() - 1;
        }
        Ok(())
    }

    /// Number of targets.
    pub fn targets(&self) -> usize {
        self.target_node.len()
    }

    /// Computes every target's sum-marginal of `big` (read them with [`MarginalPlan::target`]).
    pub fn marginalize(&mut self, big: &[f64]) {
        debug_assert_eq!(big.len(), self.big_len);
        for i in 0..self.nodes.len() {
            let (before, rest) = self.buffers.split_at_mut(i);
            let out = &mut rest[0];
            out.iter_mut().for_each(|x| *x = 0.0);
            let (parent, proj) = &self.nodes[i];
            match parent {
                None => proj.sum_into(big, out),
                Some(p) => proj.sum_into(&before[*p], out),
            }
        }
    }

    /// The marginal of target `t` from the last [`MarginalPlan::marginalize`].
    pub fn target(&self, t: usize) -> &[f64] {
        &self.buffers[self.target_node[t]]
    }

    /// `big += scale · Σ_t broadcast(tables[t])`.
    pub fn broadcast_add(&mut self, big: &mut [f64], tables: &[&[f64]], scale: f64) {
        for b in self.buffers.iter_mut() {
            b.iter_mut().for_each(|x| *x = 0.0);
        }
        for (t, &n) in self.target_node.iter().enumerate() {
            for (x, y) in self.buffers[n].iter_mut().zip(tables[t]) {
                *x += y;
            }
        }
        for i in (0..self.nodes.len()).rev() {
            let (before, rest) = self.buffers.split_at_mut(i);
            let src = &rest[0];
            let (parent, proj) = &self.nodes[i];
            match parent {
                None => proj.broadcast_add(big, src, scale),
                Some(p) => proj.broadcast_add(&mut before[*p], src, 1.0),
            }
        }
    }
}
