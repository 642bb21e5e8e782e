//! Query workloads and their efficient evaluation.

use std::collections::HashMap;

use super::linear::Query;
use super::wht::{parity_answers, parity_counts, pattern_answers, pattern_counts};
use crate::data::{DataError, Domain};

/// A fixed list of queries over one universe, evaluated together.
///
/// When every query is a parity query, all answers come from one fast
/// Walsh–Hadamard transform (O(N log N) instead of O(|Q|·N)); marginal cells are
/// answered one table per attribute set, by one pass that sums each cell into its
/// projected index — or, on a binary domain where it is cheaper, all marginal cells
/// and conjunctions from one Walsh–Hadamard transform (a `k`-way cell then costs
/// `2^k` terms).
///
/// ```
/// use privq_host::data::Domain;
/// use privq_host::query::Workload;
/// let d = Domain::binary((0..6).map(|i| format!("a{i}")))?;
/// let q3 = Workload::parities(&d, 3)?;
/// assert_eq!(q3.len(), 41); // parities of degree 1–3 (thesis §5.3): C(6,1) + C(6,2) + C(6,3)
/// let x = vec![1.0 / 64.0; 64];
/// assert!(q3.answers(&x).iter().all(|a| (a - 0.5).abs() < 1e-12));
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Workload {
    queries: Vec<Query>,
    cells: usize,
    all_parity: bool,
    /// `(mask, pattern)` of every query, when all are bit patterns of a binary
    /// universe and the transform is cheaper than one pass per attribute set.
    patterns: Option<Vec<(usize, usize)>>,
}

impl Workload {
    /// A workload over a universe of `cells` cells; every query must fit it.
    pub fn new(queries: Vec<Query>, cells: usize) -> Result<Self, DataError> {
        if queries.is_empty() {
            return Err(DataError::InvalidValue("the workload is empty".into()));
        }
        for q in &queries {
            q.check_universe(cells)?;
        }
        let all_parity = queries.iter().all(|q| matches!(q, Query::Parity { .. }));
        let patterns = transform_patterns(&queries, cells);
        Ok(Workload {
            queries,
            cells,
            all_parity,
            patterns,
        })
    }

    /// `Q_w`: the parity queries of every attribute set `S` with `1 ≤ |S| ≤ w`,
    /// ordered by size, then by mask. `|Q_w| = Σ_{j=1}^{w} C(d, j)`.
    pub fn parities(domain: &Domain, w: usize) -> Result<Self, DataError> {
        let masks = subsets_up_to(domain, w)?;
        let qs = masks
            .into_iter()
            .map(|mask| Query::Parity { mask })
            .collect();
        Workload::new(qs, domain.size())
    }

    /// All monotone conjunctions of `1..=w` attributes of a binary domain.
    pub fn conjunctions(domain: &Domain, w: usize) -> Result<Self, DataError> {
        let masks = subsets_up_to(domain, w)?;
        let qs = masks
            .into_iter()
            .map(|mask| Query::BitPattern {
                mask,
                pattern: mask,
            })
            .collect();
        Workload::new(qs, domain.size())
    }

    /// Every cell of every `k`-way marginal of any domain. On a binary domain the
    /// cells are bit patterns, which the MW engine updates block-wise and the
    /// workload answers from one transform.
    pub fn marginals(domain: &Domain, k: usize) -> Result<Self, DataError> {
        if k == 0 || k > domain.dims() {
            return Err(DataError::InvalidValue(format!(
                "marginal order {k} is not in 1..={}",
                domain.dims()
            )));
        }
        let mut qs = Vec::new();
        for set in combinations(domain.dims(), k) {
            let sizes: Vec<usize> = set.iter().map(|&a| domain.attributes()[a].size()).collect();
            let cells: usize = sizes.iter().product();
            for mut c in 0..cells {
                let mut values = Vec::with_capacity(k);
                for &s in &sizes {
                    values.push(c % s);
                    c /= s;
                }
                let cell = Query::marginal_cell(domain, &set, &values)?;
                qs.push(if domain.is_binary() {
                    as_bit_pattern(&cell).unwrap_or(cell)
                } else {
                    cell
                });
            }
        }
        Workload::new(qs, domain.size())
    }

    /// The queries.
    pub fn queries(&self) -> &[Query] {
        &self.queries
    }

    /// Query `i`.
    pub fn get(&self, i: usize) -> Option<&Query> {
        self.queries.get(i)
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// True for an empty workload (never, by construction).
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The universe size.
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// Every answer `f(x)` on a vector `x` of length N.
    pub fn answers(&self, x: &[f64]) -> Vec<f64> {
        if self.all_parity
            && let Ok(all) = parity_answers(x)
        {
            return self
                .queries
                .iter()
                .map(|q| match q {
                    Query::Parity { mask } => all.get(*mask).copied().unwrap_or(0.0),
                    other => other.evaluate(x),
                })
                .collect();
        }
        if let Some(patterns) = &self.patterns
            && let Ok(all) = pattern_answers(x, patterns)
        {
            return all;
        }
        let mut tables: HashMap<Vec<(usize, usize)>, Vec<f64>> = HashMap::new();
        self.queries
            .iter()
            .map(|q| match q {
                Query::Box(r) if r.iter().all(|a| a.lo == a.hi) => {
                    let key: Vec<(usize, usize)> = r.iter().map(|a| (a.stride, a.radix)).collect();
                    let table = tables
                        .entry(key)
                        .or_insert_with_key(|key| marginal_table(key, x));
                    let mut idx = 0;
                    let mut mul = 1;
                    for a in r.iter() {
                        idx += a.lo * mul;
                        mul *= a.radix;
                    }
                    table.get(idx).copied().unwrap_or(0.0)
                }
                other => other.evaluate(x),
            })
            .collect()
    }

    /// Exact answers on counts for 0/1 queries (`None` if some query is fractional).
    pub fn counts(&self, counts: &[u64]) -> Option<Vec<u64>> {
        if self.all_parity {
            let all = parity_counts(counts).ok()?;
            return self
                .queries
                .iter()
                .map(|q| match q {
                    Query::Parity { mask } => all.get(*mask).copied(),
                    _ => None,
                })
                .collect();
        }
        if let Some(patterns) = &self.patterns
            && let Ok(all) = pattern_counts(counts, patterns)
        {
            return Some(all);
        }
        self.queries.iter().map(|q| q.count(counts)).collect()
    }
}

/// The `(mask, pattern)` form of every query when all are bit patterns of a binary
/// universe of `cells = 2^d` cells (conjunctions, or marginal cells of binary
/// attributes) and one transform plus `Σ 2^{|mask|}` terms costs less than a pass
/// over the universe per distinct attribute set.
fn transform_patterns(queries: &[Query], cells: usize) -> Option<Vec<(usize, usize)>> {
    if !cells.is_power_of_two() {
        return None;
    }
    let patterns = queries
        .iter()
        .map(|q| match as_bit_pattern(q)? {
            Query::BitPattern { mask, pattern } => Some((mask, pattern)),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let log_n = cells.trailing_zeros() as u128;
    let terms: u128 = patterns
        .iter()
        .map(|&(m, _)| 1u128 << m.count_ones().min(127))
        .sum();
    let mut masks: Vec<usize> = patterns.iter().map(|&(m, _)| m).collect();
    masks.sort_unstable();
    masks.dedup();
    let transform = cells as u128 * log_n + terms;
    (transform < masks.len() as u128 * cells as u128).then_some(patterns)
}

/// A bit pattern as itself, and a marginal cell of binary attributes (strides
/// powers of two) as the equivalent bit pattern; `None` for anything else.
fn as_bit_pattern(q: &Query) -> Option<Query> {
    match q {
        Query::BitPattern { .. } => Some(q.clone()),
        Query::Box(ranges) => {
            let (mask, pattern) = ranges.iter().try_fold((0usize, 0usize), |(m, p), a| {
                let bit = a.stride;
                let binary = a.radix == 2 && a.lo == a.hi && bit.is_power_of_two();
                (binary && m & bit == 0).then_some((m | bit, if a.lo == 1 { p | bit } else { p }))
            })?;
            Some(Query::BitPattern { mask, pattern })
        }
        _ => None,
    }
}

/// One pass over `x`: the marginal table of the attributes `(stride, radix)`.
fn marginal_table(attrs: &[(usize, usize)], x: &[f64]) -> Vec<f64> {
    let size: usize = attrs.iter().map(|a| a.1).product();
    let mut table = vec![0.0; size];
    for (u, &p) in x.iter().enumerate() {
        let mut idx = 0;
        let mut mul = 1;
        for &(stride, radix) in attrs {
            idx += (u / stride % radix) * mul;
            mul *= radix;
        }
        if let Some(t) = table.get_mut(idx) {
            *t += p;
        }
    }
    table
}

fn subsets_up_to(domain: &Domain, w: usize) -> Result<Vec<usize>, DataError> {
    if !domain.is_binary() {
        return Err(DataError::InvalidDomain(
            "parity and conjunction workloads need a binary domain".into(),
        ));
    }
    let d = domain.dims();
    if w == 0 || w > d {
        return Err(DataError::InvalidValue(format!(
            "workload degree {w} is not in 1..={d}"
        )));
    }
    let mut masks = Vec::new();
    for k in 1..=w {
        for set in combinations(d, k) {
            masks.push(set.iter().fold(0usize, |m, &a| m | 1 << a));
        }
    }
    Ok(masks)
}

/// All `k`-subsets of `0..n` in lexicographic order.
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur: Vec<usize> = (0..k).collect();
    if k > n {
        return out;
    }
    loop {
        out.push(cur.clone());
        let mut i = k;
        while i > 0 && cur[i - 1] == n - k + i - 1 {
            i -= 1;
        }
        if i == 0 {
            return out;
        }
        cur[i - 1] += 1;
        for j in i..k {
            cur[j] = cur[j - 1] + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Attribute;

    #[test]
    fn workload_sizes_match_spec() {
        for (d, sizes) in [(6, [6, 21, 41]), (8, [8, 36, 92]), (16, [16, 136, 696])] {
            let dom = Domain::binary((0..d).map(|i| format!("a{i}"))).unwrap();
            for (w, &s) in sizes.iter().enumerate() {
                assert_eq!(Workload::parities(&dom, w + 1).unwrap().len(), s);
            }
        }
        let dom = Domain::binary(["a", "b"]).unwrap();
        assert!(Workload::parities(&dom, 0).is_err());
        assert!(Workload::parities(&dom, 3).is_err());
    }

    #[test]
    fn fast_paths_agree_with_direct() {
        let dom = Domain::new(vec![
            Attribute::binary("a"),
            Attribute::categorical("b", ["x", "y", "z"]).unwrap(),
            Attribute::binary("c"),
        ])
        .unwrap();
        let x: Vec<f64> = (0..12).map(|u| (u * 7 % 5) as f64 / 10.0).collect();
        let w = Workload::marginals(&dom, 2).unwrap();
        assert_eq!(w.len(), 2 * 3 + 2 * 2 + 3 * 2);
        for (q, a) in w.queries().iter().zip(w.answers(&x)) {
            assert!((q.evaluate(&x) - a).abs() < 1e-12);
        }
        let bin = Domain::binary((0..5).map(|i| format!("a{i}"))).unwrap();
        let x: Vec<f64> = (0..32).map(|u| (u % 3) as f64).collect();
        let c: Vec<u64> = x.iter().map(|&v| v as u64).collect();
        let w = Workload::parities(&bin, 3).unwrap();
        let counts = w.counts(&c).unwrap();
        for ((q, a), n) in w.queries().iter().zip(w.answers(&x)).zip(counts) {
            assert!((q.evaluate(&x) - a).abs() < 1e-12);
            assert_eq!(q.count(&c), Some(n));
        }
        assert_eq!(Workload::conjunctions(&bin, 2).unwrap().len(), 15);
    }

    #[test]
    fn binary_marginals_and_conjunctions_use_the_transform() {
        let bin = Domain::binary((0..10).map(|i| format!("a{i}"))).unwrap();
        let x: Vec<f64> = (0..1024).map(|u| ((u * 37 + 5) % 11) as f64).collect();
        let c: Vec<u64> = x.iter().map(|&v| v as u64).collect();
        for w in [
            Workload::marginals(&bin, 3).unwrap(),
            Workload::conjunctions(&bin, 3).unwrap(),
        ] {
            assert!(w.patterns.is_some());
            let counts = w.counts(&c).unwrap();
            for ((q, a), n) in w.queries().iter().zip(w.answers(&x)).zip(counts) {
                assert!((q.evaluate(&x) - a).abs() < 1e-9);
                assert_eq!(q.count(&c), Some(n));
            }
        }
        // One 10-way marginal: 1024 cells of 1024 terms each; a pass is cheaper.
        assert!(Workload::marginals(&bin, 10).unwrap().patterns.is_none());
    }
}
