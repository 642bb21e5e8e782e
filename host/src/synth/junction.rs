//! Junction trees: triangulate the graph of a set of cliques by greedy
//! elimination, keep the maximal cliques, and join them by a maximum-weight
//! spanning tree (weight = separator size), which has the running-intersection
//! property for the maximal cliques of a chordal graph (Jensen & Jensen, 1994).

use super::{Clique, SynthError};

/// A bitset over attributes.
#[derive(Clone, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(d: usize) -> Self {
        Bits(vec![0; d.div_ceil(64).max(1)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
    fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut x = word;
            std::iter::from_fn(move || {
                if x == 0 {
                    return None;
                }
                let b = x.trailing_zeros() as usize;
                x &= x - 1;
                Some(w * 64 + b)
            })
        })
    }
    fn is_subset(&self, other: &Bits) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| a & !b == 0)
    }
}

fn check_sizes(sizes: &[usize]) -> Result<(), SynthError> {
    if sizes.is_empty() {
        return Err(SynthError::InvalidDomain("no attributes".into()));
    }
    if let Some(a) = sizes.iter().position(|&s| s == 0) {
        return Err(SynthError::InvalidDomain(format!(
            "attribute {a} has no values"
        )));
    }
    Ok(())
}

/// The maximal cliques of a greedy triangulation of the graph whose edges join
/// attributes that share a clique (every attribute is a vertex, so attributes in
/// no clique end up as singletons), or the one clique of every attribute when that
/// is no larger.
///
/// Elimination order: repeatedly the vertex whose elimination clique (it and its
/// remaining neighbours) has the fewest cells ("min-weight"), ties broken by the
/// fewest fill-in edges, then by index.
fn triangulate(sizes: &[usize], cliques: &[Clique]) -> Result<Vec<Clique>, SynthError> {
    check_sizes(sizes)?;
    let d = sizes.len();
    let mut adj: Vec<Bits> = vec![Bits::new(d); d];
    for c in cliques {
        c.check(sizes)?;
        for &a in c.attributes() {
            for &b in c.attributes() {
                if a != b {
                    adj[a].set(b);
                }
            }
        }
    }
    let mut alive = Bits::new(d);
    (0..d).for_each(|i| alive.set(i));
    let mut elim: Vec<Bits> = Vec::with_capacity(d);
    for _ in 0..d {
        let mut best: Option<(u128, usize, usize)> = None;
        for v in alive.ones() {
            let nb: Vec<usize> = adj[v].ones().filter(|&u| alive.get(u)).collect();
            let weight = nb
                .iter()
                .fold(sizes[v] as u128, |w, &u| w.saturating_mul(sizes[u] as u128));
            if best.is_some_and(|(bw, _, _)| weight > bw) {
                continue;
            }
            let mut fill = 0usize;
            for (i, &u) in nb.iter().enumerate() {
                fill += nb[i + 1..].iter().filter(|&&w| !adj[u].get(w)).count();
            }
            let cand = (weight, fill, v);
            if best.is_none_or(|b| (cand.0, cand.1) < (b.0, b.1)) {
                best = Some(cand);
            }
        }
        let Some((_, _, v)) = best else { break };
        let nb: Vec<usize> = adj[v].ones().filter(|&u| alive.get(u)).collect();
        let mut clique = Bits::new(d);
        clique.set(v);
        for &u in &nb {
            clique.set(u);
            for &w in &nb {
                if u != w {
                    adj[u].set(w);
                }
            }
        }
        alive.0[v / 64] &= !(1 << (v % 64));
        elim.push(clique);
    }
    // An elimination clique is contained only in earlier ones (later ones lack
    // its eliminated vertex), so keep those not inside an earlier clique.
    let mut out = Vec::new();
    for (i, c) in elim.iter().enumerate() {
        if !elim[..i].iter().any(|e| c.is_subset(e)) {
            out.push(Clique::from_sorted(c.ones().collect()));
        }
    }
    // Tables holding as many cells as the whole universe, or more, give way to one
    // table over every attribute: no larger, and belief propagation then passes no
    // messages (one exponentiation a cell instead of about 1.5, no logarithms).
    let cells = out
        .iter()
        .fold(0u128, |acc, c| acc.saturating_add(c.cells_u128(sizes)));
    let universe = sizes
        .iter()
        .fold(1u128, |acc, &s| acc.saturating_mul(s as u128));
    if out.len() > 1 && universe <= cells {
        return Ok(vec![Clique::from_sorted((0..d).collect())]);
    }
    Ok(out)
}

/// The total table size, in cells, of the junction tree of `cliques` over
/// attributes of the given sizes: what a model over these cliques costs per
/// belief-propagation pass and in memory (× 8 bytes per table). Builds no table;
/// cost `O(d² · (max degree + d/64))`.
///
/// ```
/// use privq_host::synth::{Clique, model_cells};
/// let sizes = [2, 3, 4, 5];
/// // A chain 0-1, 1-2, 2-3: tables of 6 + 12 + 20 cells.
/// let c = [Clique::new([0, 1])?, Clique::new([1, 2])?, Clique::new([2, 3])?];
/// assert_eq!(model_cells(&sizes, &c)?, 38);
/// # Ok::<(), privq_host::synth::SynthError>(())
/// ```
pub fn model_cells(sizes: &[usize], cliques: &[Clique]) -> Result<u128, SynthError> {
    Ok(triangulate(sizes, cliques)?
        .iter()
        .fold(0u128, |acc, c| acc.saturating_add(c.cells_u128(sizes))))
}

/// A junction tree over all attributes: maximal cliques of a triangulation of the
/// given cliques' graph, rooted at clique 0, with each non-root clique's parent
/// and separator (its intersection with the parent).
#[derive(Debug, Clone)]
pub struct JunctionTree {
    sizes: Vec<usize>,
    cliques: Vec<Clique>,
    parent: Vec<Option<usize>>,
    separators: Vec<Clique>,
    order: Vec<usize>,
    children: Vec<Vec<usize>>,
}

impl JunctionTree {
    /// The junction tree of `cliques` over attributes of the given sizes (every
    /// attribute is covered, as a singleton where no clique holds it; one table
    /// over every attribute when its tables would hold as many cells as that).
    pub fn new(sizes: &[usize], cliques: &[Clique]) -> Result<Self, SynthError> {
        Self::ordered_by(sizes, sizes, cliques)
    }

    /// [`JunctionTree::new`] over `sizes`, triangulated as for attributes of
    /// `order_sizes` (the same number of attributes): its cliques are those of
    /// the tree over `order_sizes`, so a model fitted on a compressed domain and
    /// expanded back has exactly the cells [`model_cells`] prices at the original
    /// sizes.
    pub fn ordered_by(
        order_sizes: &[usize],
        sizes: &[usize],
        cliques: &[Clique],
    ) -> Result<Self, SynthError> {
        if order_sizes.len() != sizes.len() {
            return Err(SynthError::InvalidDomain(format!(
                "{} attribute sizes to order the tree by, for {} attributes",
                order_sizes.len(),
                sizes.len()
            )));
        }
        check_sizes(sizes)?;
        let jt = triangulate(order_sizes, cliques)?;
        // Every table must be addressable.
        for c in &jt {
            c.cells(sizes)?;
        }
        let m = jt.len();
        // Kruskal on all pairs by decreasing separator size.
        let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
        for i in 0..m {
            for j in i + 1..m {
                pairs.push((jt[i].intersection(&jt[j]).len(), i, j));
            }
        }
        pairs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut uf: Vec<usize> = (0..m).collect();
        fn find(uf: &mut [usize], mut x: usize) -> usize {
            while uf[x] != x {
                uf[x] = uf[uf[x]];
                x = uf[x];
            }
            x
        }
        let mut nbrs: Vec<Vec<usize>> = vec![Vec::new(); m];
        for (_, i, j) in pairs {
            let (ri, rj) = (find(&mut uf, i), find(&mut uf, j));
            if ri != rj {
                uf[ri] = rj;
                nbrs[i].push(j);
                nbrs[j].push(i);
            }
        }
        let mut parent = vec![None; m];
        let mut children = vec![Vec::new(); m];
        let mut order = Vec::with_capacity(m);
        let mut seen = vec![false; m];
        if m > 0 {
            seen[0] = true;
            order.push(0);
            let mut k = 0;
            while k < order.len() {
                let c = order[k];
                k += 1;
                for &n in &nbrs[c] {
                    if !seen[n] {
                        seen[n] = true;
                        parent[n] = Some(c);
                        children[c].push(n);
                        order.push(n);
                    }
                }
            }
        }
        let separators = (0..m)
            .map(|c| match parent[c] {
                Some(p) => jt[c].intersection(&jt[p]),
                None => Clique::empty(),
            })
            .collect();
        Ok(JunctionTree {
            sizes: sizes.to_vec(),
            cliques: jt,
            parent,
            separators,
            order,
            children,
        })
    }

    /// The attribute sizes.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The same tree (cliques, parents, separators) over other attribute sizes.
    pub(crate) fn resized(&self, sizes: &[usize]) -> Result<Self, SynthError> {
        for c in &self.cliques {
            c.cells(sizes)?;
        }
        Ok(JunctionTree {
            sizes: sizes.to_vec(),
            ..self.clone()
        })
    }

    /// The junction-tree cliques.
    pub fn cliques(&self) -> &[Clique] {
        &self.cliques
    }

    /// The parent of clique `c` (None for the root, clique 0).
    pub fn parent(&self, c: usize) -> Option<usize> {
        self.parent[c]
    }

    /// The children of clique `c`.
    pub fn children(&self, c: usize) -> &[usize] {
        &self.children[c]
    }

    /// The separator between clique `c` and its parent (empty for the root).
    pub fn separator(&self, c: usize) -> &Clique {
        &self.separators[c]
    }

    /// The cliques in breadth-first order from the root (parents before children).
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// Σ of the cliques' cells.
    pub fn cells(&self) -> u128 {
        self.cliques.iter().fold(0u128, |acc, c| {
            acc.saturating_add(c.cells_u128(&self.sizes))
        })
    }

    /// The smallest junction-tree clique containing `c`, if any.
    pub fn containing(&self, c: &Clique) -> Option<usize> {
        (0..self.cliques.len())
            .filter(|&i| c.is_subset(&self.cliques[i]))
            .min_by_key(|&i| self.cliques[i].cells_u128(&self.sizes))
    }
}
