//! Inference on a junction tree: two-pass sum-product belief propagation in log
//! space (calibrated clique marginals), exact marginals of any clique, min-sum
//! (MAP value) of a sum of clique tables, and shared plans that compute many
//! marginals of one table (or broadcast many tables into it) in few passes.

use std::borrow::Cow;

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

/// Tables from this many cells on are processed in parallel chunks (each
/// element on its own, so the result does not depend on the threads); models
/// this large compute their cliques' marginals and gradients one clique a task.
pub(crate) const PARALLEL_CELLS: usize = 1 << 15;

/// The cells of one parallel chunk.
pub(crate) const CHUNK: usize = 1 << 13;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// `f(out[i], src[i])` for every cell (`src` empty: `f(out[i], &0.0)`), in
/// parallel chunks on large tables.
fn elementwise(out: &mut [f64], src: &[f64], f: impl Fn(&mut f64, &f64) + Sync) {
    crate::parallel::elementwise(out, src, CHUNK, PARALLEL_CELLS, f);
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
    ///
    /// With `log_beliefs` false, `beliefs` is scratch (unnormalised, or untouched
    /// for a tree of one clique, which is exponentiated straight from `theta`);
    /// only `linear` and the returned `ln Z` are defined, the same as with true.
    /// That is what the fit's inner loop needs, one or two passes over the table
    /// fewer.
    pub fn calibrate(
        &mut self,
        tree: &JunctionTree,
        theta: &[Vec<f64>],
        beliefs: &mut [Vec<f64>],
        linear: &mut [Vec<f64>],
        log_beliefs: bool,
    ) -> f64 {
        let order = tree.order();
        let lone = !log_beliefs && order.len() == 1;
        // `out = exp(b − max b)`; returns the maximum and `Σ out` (summed per chunk,
        // the chunks' sums in order).
        let exp_rel = |b: &[f64], out: &mut Vec<f64>| -> (f64, f64) {
            let m = crate::parallel::max(b, CHUNK, PARALLEL_CELLS);
            out.clear();
            out.resize(b.len(), 0.0);
            let sums = crate::parallel::chunks(out, b, CHUNK, PARALLEL_CELLS, |_, o, x| {
                let mut sum = 0.0;
                for (o, &x) in o.iter_mut().zip(x) {
                    *o = (x - m).exp();
                    sum += *o;
                }
                sum
            });
            (m, sums.iter().sum())
        };
        // Upward: b_c = θ_c + Σ_children up-messages; up-message = ln Σ onto the separator.
        // (A lone clique has no messages; its table is read from theta below.)
        if !lone {
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
                    let (m, _) = exp_rel(b, &mut self.scratch);
                    let msg = &mut self.msg_up[c];
                    msg.clear();
                    msg.resize(p.sub_len(), 0.0);
                    p.sum_into(&self.scratch, msg);
                    msg.iter_mut()
                        .for_each(|x| *x = x.max(f64::MIN_POSITIVE).ln() + m);
                }
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
            let (m, z) = exp_rel(if lone { &theta[c] } else { &beliefs[c] }, lin);
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
            elementwise(lin, &[], |x, _| *x /= z);
            if log_beliefs {
                elementwise(&mut beliefs[c], &[], |x, _| *x -= lz);
            }
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

/// [`marginal_from`], exponentiating the clique it reads on each call.
#[cfg(test)]
pub fn marginal(
    tree: &JunctionTree,
    log_beliefs: &[Vec<f64>],
    q: &Clique,
) -> Result<Vec<f64>, SynthError> {
    let linear = |c: usize| Cow::Owned(log_beliefs[c].iter().map(|x| x.exp()).collect());
    marginal_from(tree, log_beliefs, &linear, q)
}

/// The exact probability marginal of `q` under a calibrated junction tree
/// (`log_beliefs` = normalised log-marginals of the tree's cliques).
///
/// If a tree clique contains `q`, sums its marginal; otherwise eliminates
/// every other variable of the smallest subtree touching `q`'s attributes, whose
/// cliques represent the joint of their attributes as `Π μ_C / Π μ_S` (running
/// intersection), by variable elimination that never builds the full product.
///
/// `linear(c)` gives clique `c`'s probability table `exp(log_beliefs[c])` (a
/// model keeps them between queries).
pub fn marginal_from<'a>(
    tree: &JunctionTree,
    log_beliefs: &[Vec<f64>],
    linear: &dyn Fn(usize) -> Cow<'a, [f64]>,
    q: &Clique,
) -> Result<Vec<f64>, SynthError> {
    let sizes = tree.sizes();
    q.check(sizes)?;
    let qn = q.cells(sizes)?;
    if let Some(c) = tree.containing(q) {
        let p = Projection::new(sizes, &tree.cliques()[c], q)?;
        let mut out = vec![0.0; qn];
        p.sum_into(&linear(c), &mut out);
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
    // The kept subtree's joint is Π μ_C / Π μ_S (running intersection): one factor
    // per kept clique — the root's belief, every other clique's conditional
    // μ_C / μ_S given its parent separator (at most 1, so no reciprocal of a tiny
    // separator marginal ever appears) — and everything outside q is summed out in
    // the order elimination picks.
    let mut factors = Vec::new();
    let mut scratch = Vec::new();
    for &c in &bfs {
        if !keep[c] {
            continue;
        }
        if c == root {
            factors.push(Scaled::from_log(cl[c].clone(), &log_beliefs[c]));
            continue;
        }
        let sep = cl[c].intersection(&cl[par[c]]);
        let mut lsep = Vec::new();
        Projection::new(sizes, &cl[c], &sep)?.logsumexp(
            &log_beliefs[c],
            None,
            &mut lsep,
            &mut scratch,
        );
        let mut conditional = log_beliefs[c].clone();
        Projection::new(sizes, &cl[c], &sep)?.broadcast_add(&mut conditional, &lsep, -1.0);
        // μ_C = μ_S = 0 (−∞ − −∞): a cell of probability 0.
        conditional
            .iter_mut()
            .filter(|x| x.is_nan())
            .for_each(|x| *x = f64::NEG_INFINITY);
        factors.push(Scaled::from_log(cl[c].clone(), &conditional));
    }
    let Scaled {
        scope,
        mut values,
        log_scale,
    } = eliminate(sizes, factors, q)?;
    // Every attribute of q was reached, and nothing else is left.
    if scope != *q || values.len() != qn {
        return Err(SynthError::NotASubset);
    }
    // A zero stays zero (never 0·∞ = NaN).
    let scale = log_scale.exp();
    values
        .iter_mut()
        .for_each(|x| *x = if *x == 0.0 { 0.0 } else { *x * scale });
    Ok(values)
}

/// A nonnegative table `exp(log_scale) · values` over `scope`, with the values
/// scaled to a maximum of 1, so products of many factors neither overflow nor
/// underflow and no step between factors takes a logarithm or an exponential.
#[derive(Debug, Clone)]
struct Scaled {
    scope: Clique,
    values: Vec<f64>,
    log_scale: f64,
}

impl Scaled {
    /// From log-space values.
    fn from_log(scope: Clique, log: &[f64]) -> Self {
        let m = log.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let m = if m.is_finite() { m } else { 0.0 };
        Scaled {
            scope,
            values: log.iter().map(|x| (x - m).exp()).collect(),
            log_scale: m,
        }
    }

    /// From linear values and the log of a factor already taken out.
    fn from_linear(scope: Clique, mut values: Vec<f64>, log_scale: f64) -> Self {
        let m = values.iter().copied().fold(0.0, f64::max);
        if m > 0.0 && m.is_finite() {
            values.iter_mut().for_each(|x| *x /= m);
            Scaled {
                scope,
                values,
                log_scale: log_scale + m.ln(),
            }
        } else {
            Scaled {
                scope,
                values,
                log_scale,
            }
        }
    }
}

/// Sums every variable outside `keep` out of the product of `factors`
/// (variable elimination). Each step takes the variable whose factors span the
/// fewest cells and sums out, in one pass that never builds their product, every
/// variable that only those factors hold: memory is the size of the result, not
/// of the product (for a 3-way marginal across a separator of 84 cells, under a
/// million cells instead of seventy million).
fn eliminate(
    sizes: &[usize],
    mut factors: Vec<Scaled>,
    keep: &Clique,
) -> Result<Scaled, SynthError> {
    let union = |fs: &mut dyn Iterator<Item = &Clique>| fs.fold(Clique::empty(), |u, s| u.union(s));
    loop {
        let all = union(&mut factors.iter().map(|f| &f.scope));
        let mut best: Option<(u128, usize)> = None;
        for &v in all.attributes().iter().filter(|&&v| !keep.contains(v)) {
            let cells = union(&mut factors.iter().map(|f| &f.scope).filter(|s| s.contains(v)))
                .cells_u128(sizes);
            if best.is_none_or(|(b, _)| cells < b) {
                best = Some((cells, v));
            }
        }
        let Some((_, v)) = best else {
            return sum_product(sizes, &factors, &all);
        };
        let (group, rest): (Vec<_>, Vec<_>) =
            factors.into_iter().partition(|f| f.scope.contains(v));
        let scope = union(&mut group.iter().map(|f| &f.scope));
        let outside = union(&mut rest.iter().map(|f| &f.scope));
        let out = Clique::from_sorted(
            scope
                .attributes()
                .iter()
                .copied()
                .filter(|&a| keep.contains(a) || outside.contains(a))
                .collect(),
        );
        let table = sum_product(sizes, &group, &out)?;
        factors = rest;
        factors.push(table);
    }
}

/// The sum of the product of `factors` over the variables of their scopes
/// outside `out` (a subset of their union), by one odometer pass over the
/// union's cells that writes straight into the result.
fn sum_product(sizes: &[usize], factors: &[Scaled], out: &Clique) -> Result<Scaled, SynthError> {
    let union = factors
        .iter()
        .fold(Clique::empty(), |u, f| u.union(&f.scope));
    let attrs = union.attributes();
    // The stride of each union attribute in a scope (0 when the scope lacks it).
    let strides = |scope: &Clique| -> Vec<usize> {
        attrs
            .iter()
            .map(|&a| {
                if scope.contains(a) {
                    scope
                        .attributes()
                        .iter()
                        .filter(|&&b| b > a)
                        .map(|&b| sizes[b])
                        .product()
                } else {
                    0
                }
            })
            .collect()
    };
    let shift: f64 = factors.iter().map(|f| f.log_scale).sum();
    let lin: Vec<(Vec<usize>, &[f64])> = factors
        .iter()
        .map(|f| (strides(&f.scope), f.values.as_slice()))
        .collect();
    let ostr = strides(out);
    let mut res = vec![0.0; out.cells(sizes)?];
    let dims: Vec<usize> = attrs.iter().map(|&a| sizes[a]).collect();
    // The inner loop runs over a large attribute that the largest factor holds
    // at a small stride (or not at all), so it walks memory nearly in order.
    let largest = lin.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let biggest = dims.iter().copied().max().unwrap_or(1);
    let stride_in_largest = |d: usize| {
        lin.iter()
            .filter(|(_, v)| v.len() == largest)
            .map(|(st, _)| st[d])
            .max()
            .unwrap_or(0)
    };
    let Some(inner) = (0..dims.len())
        .filter(|&d| dims[d] >= biggest.min(16))
        .min_by_key(|&d| (stride_in_largest(d), std::cmp::Reverse(dims[d])))
    else {
        res[0] = lin.iter().map(|(_, v)| v[0]).product();
        return Ok(Scaled::from_linear(out.clone(), res, shift));
    };
    // The inner loop runs over `inner`; the odometer over the rest, in order.
    let n = dims[inner];
    let order: Vec<usize> = (0..dims.len()).filter(|&d| d != inner).collect();
    let dims: Vec<usize> = order.iter().map(|&d| dims[d]).collect();
    let take = |st: &[usize]| -> (usize, Vec<usize>) {
        (st[inner], order.iter().map(|&d| st[d]).collect())
    };
    let (o_in, ostr) = take(&ostr);
    type Strided<'v> = (Vec<usize>, &'v [f64]);
    let (in_st, lin): (Vec<usize>, Vec<Strided>) = lin
        .into_iter()
        .map(|(st, v)| {
            let (i, st) = take(&st);
            (i, (st, v))
        })
        .unzip();
    let mut idx = vec![0usize; dims.len()];
    let mut offs = vec![0usize; lin.len()];
    let mut o = 0usize;
    let mut varying: Vec<(usize, usize)> = Vec::with_capacity(lin.len());
    loop {
        // Factors without the inner attribute are constant along the loop.
        let mut c = 1.0;
        varying.clear();
        for (f, ((_, v), &st)) in lin.iter().zip(&in_st).enumerate() {
            if st == 0 {
                c *= v[offs[f]];
            } else {
                varying.push((f, st));
            }
        }
        if c != 0.0 {
            let column = |f: usize, st: usize| lin[f].1[offs[f]..].iter().step_by(st).take(n);
            match (varying.as_slice(), o_in) {
                ([], 0) => res[o] += c * n as f64,
                ([(f, s)], 0) => res[o] += c * column(*f, *s).sum::<f64>(),
                ([(f, s), (g, t)], 0) => {
                    res[o] += c * column(*f, *s)
                        .zip(column(*g, *t))
                        .map(|(a, b)| a * b)
                        .sum::<f64>()
                }
                ([(f, s)], _) => {
                    for (r, a) in res[o..].iter_mut().step_by(o_in).zip(column(*f, *s)) {
                        *r += c * a;
                    }
                }
                ([(f, s), (g, t)], _) => {
                    let cells = column(*f, *s).zip(column(*g, *t));
                    for (r, (a, b)) in res[o..].iter_mut().step_by(o_in).zip(cells) {
                        *r += c * a * b;
                    }
                }
                _ => {
                    for i in 0..n {
                        let p: f64 = varying
                            .iter()
                            .map(|&(f, st)| lin[f].1[offs[f] + i * st])
                            .product();
                        res[o + i * o_in] += c * p;
                    }
                }
            }
        }
        // Advance the odometer over the other attributes.
        let mut d = dims.len();
        loop {
            if d == 0 {
                return Ok(Scaled::from_linear(out.clone(), res, shift));
            }
            d -= 1;
            idx[d] += 1;
            for ((st, _), f) in lin.iter().zip(offs.iter_mut()) {
                *f += st[d];
            }
            o += ostr[d];
            if idx[d] < dims[d] {
                break;
            }
            for ((st, _), f) in lin.iter().zip(offs.iter_mut()) {
                *f -= st[d] * dims[d];
            }
            o -= ostr[d] * dims[d];
            idx[d] = 0;
        }
    }
}

/// A node of a [`MarginalPlan`]: its parent node (None: the big table) and the
/// projection from it.
type PlanNode = (Option<usize>, Projection);

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
    nodes: Vec<PlanNode>,
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
            .map(|(_, p): &PlanNode| vec![0.0; p.sub_len()])
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
        nodes: &mut Vec<PlanNode>,
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

    /// Computes every target's sum-marginal of `big` (read them with
    /// [`MarginalPlan::target`]). On a big table of [`PARALLEL_CELLS`] or more the
    /// passes from the big table, each with the nodes under it, are tasks.
    pub fn marginalize(&mut self, big: &[f64]) {
        debug_assert_eq!(big.len(), self.big_len);
        // Split the nodes (and their buffers) at every pass from the big table: a
        // node's descendants follow it before the next such pass.
        let mut parts = Vec::new();
        let (mut nodes, mut buffers) = (&self.nodes[..], &mut self.buffers[..]);
        let mut first = 0;
        while !nodes.is_empty() {
            let len = 1 + nodes[1..].iter().take_while(|(p, _)| p.is_some()).count();
            let (n, rest_n) = nodes.split_at(len);
            let (b, rest_b) = std::mem::take(&mut buffers).split_at_mut(len);
            parts.push((first, n, b));
            (nodes, buffers, first) = (rest_n, rest_b, first + len);
        }
        let parallel = big.len() >= PARALLEL_CELLS;
        crate::parallel::each_mut(&mut parts, parallel, |(first, nodes, buffers)| {
            for i in 0..nodes.len() {
                let (before, rest) = buffers.split_at_mut(i);
                let out = &mut rest[0];
                out.iter_mut().for_each(|x| *x = 0.0);
                let (parent, proj) = &nodes[i];
                match parent {
                    None => proj.sum_into(big, out),
                    Some(p) => proj.sum_into(&before[*p - *first], out),
                }
            }
        });
    }

    /// The plan's passes from the big table.
    #[cfg(test)]
    pub fn roots(&self) -> usize {
        self.nodes.iter().filter(|(p, _)| p.is_none()).count()
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
            if let (Some(p), proj) = &self.nodes[i] {
                proj.broadcast_add(&mut before[*p], src, 1.0);
            }
        }
        // The passes into the big table, last node first, over blocks of it (every
        // cell receives the same additions in the same order either way).
        let roots: Vec<(&Projection, &[f64])> = self
            .nodes
            .iter()
            .zip(&self.buffers)
            .filter(|((p, _), _)| p.is_none())
            .map(|((_, proj), b)| (proj, b.as_slice()))
            .collect();
        let block = roots.iter().fold(CHUNK, |b, (proj, _)| {
            let r = proj.run_len();
            (b / gcd(b, r)).saturating_mul(r).min(big.len())
        });
        let min_parallel = if big.len() >= 2 * block {
            PARALLEL_CELLS
        } else {
            usize::MAX
        };
        crate::parallel::chunks(big, &[], block, min_parallel, |k, part, _| {
            for (proj, b) in roots.iter().rev() {
                proj.broadcast_add_between(k * block, part, b, scale);
            }
        });
    }
}
