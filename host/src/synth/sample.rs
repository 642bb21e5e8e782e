//! Synthetic rows from a junction-tree model.
//!
//! Both samplers visit the junction-tree cliques parents first. A clique's
//! attributes outside the separator with its parent are drawn from the clique's
//! marginal conditioned on the separator values already in the row, so every row
//! is distributed as the model when drawn independently ([`forward`]).
//!
//! [`rounded`] replaces the independent draws by randomized rounding of the
//! model's counts: the root clique's cells get `⌊n·μ(x)⌋` or `⌈n·μ(x)⌉` rows
//! (systematic sampling: each count is rounded up with probability equal to its
//! fractional part, and the counts sum to n), and within every separator value
//! the rows holding it are split among the free values in rounded proportions to
//! the conditional. The root clique's counts are then within 1 of the model's in
//! every cell, and the other cliques' within the rounding of their separators,
//! instead of the `√(n·μ)` of i.i.d. sampling.

use privq_core::rand_core::Rng;

use super::factor::Projection;
use super::{Clique, JunctionTree, SynthError};

/// A uniform draw in [0, 1) with 53 random bits.
pub(crate) fn uniform<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

fn below<R: Rng + ?Sized>(rng: &mut R, n: usize) -> usize {
    // Floating-point is fine: sampling from a released model is post-processing.
    ((uniform(rng) * n as f64) as usize).min(n.saturating_sub(1))
}

/// Per clique: its separator and free attributes, and for each cell the index of
/// its separator values and of its free values.
struct Split {
    sep: Clique,
    free: Clique,
    sep_of: Vec<usize>,
    free_of: Vec<usize>,
    free_len: usize,
    sep_len: usize,
}

fn split(tree: &JunctionTree, c: usize) -> Result<Split, SynthError> {
    let sizes = tree.sizes();
    let cl = &tree.cliques()[c];
    let sep = tree.separator(c).clone();
    let free = Clique::from_sorted(
        cl.attributes()
            .iter()
            .copied()
            .filter(|&a| !sep.contains(a))
            .collect(),
    );
    let len = cl.cells(sizes)?;
    let index = |sub: &Clique| -> Result<(Vec<usize>, usize), SynthError> {
        let p = Projection::new(sizes, cl, sub)?;
        let mut idx = vec![0usize; len];
        p.runs(|a, j, s, l| {
            for t in 0..l {
                idx[a + t] = j + t * s;
            }
        });
        Ok((idx, p.sub_len()))
    };
    let (sep_of, sep_len) = index(&sep)?;
    let (free_of, free_len) = index(&free)?;
    Ok(Split {
        sep,
        free,
        sep_of,
        free_of,
        free_len,
        sep_len,
    })
}

/// The conditional table `[s·free_len + f] = μ(s, f)` of a clique.
fn conditional(sp: &Split, log_belief: &[f64]) -> Vec<f64> {
    let mut cond = vec![0.0; sp.sep_len * sp.free_len];
    for (cell, &lb) in log_belief.iter().enumerate() {
        cond[sp.sep_of[cell] * sp.free_len + sp.free_of[cell]] = lb.exp();
    }
    cond
}

fn sep_index(sizes: &[usize], sep: &Clique, row: &[usize]) -> usize {
    sep.attributes()
        .iter()
        .fold(0, |acc, &a| acc * sizes[a] + row[a])
}

fn write_free(sizes: &[usize], free: &Clique, mut f: usize, row: &mut [usize]) {
    for &a in free.attributes().iter().rev() {
        row[a] = f % sizes[a];
        f /= sizes[a];
    }
}

/// `n` i.i.d. rows from the model (value indices, one per attribute) by forward
/// sampling along the junction tree.
pub fn forward<R: Rng + ?Sized>(
    tree: &JunctionTree,
    log_beliefs: &[Vec<f64>],
    n: usize,
    rng: &mut R,
) -> Result<Vec<Vec<usize>>, SynthError> {
    let sizes = tree.sizes();
    let mut rows = vec![vec![0usize; sizes.len()]; n];
    for &c in tree.order() {
        let sp = split(tree, c)?;
        let mut cdf = conditional(&sp, &log_beliefs[c]);
        for block in cdf.chunks_mut(sp.free_len) {
            let mut acc = 0.0;
            for x in block.iter_mut() {
                acc += *x;
                *x = acc;
            }
        }
        for row in rows.iter_mut() {
            let s = sep_index(sizes, &sp.sep, row);
            let block = &cdf[s * sp.free_len..(s + 1) * sp.free_len];
            let total = block.last().copied().unwrap_or(0.0);
            let f = if total > 0.0 {
                let u = uniform(rng) * total;
                block.partition_point(|&x| x <= u).min(sp.free_len - 1)
            } else {
                below(rng, sp.free_len)
            };
            write_free(sizes, &sp.free, f, row);
        }
    }
    Ok(rows)
}

/// Integer counts summing to `k` with `E[count_j] = k·w_j/Σw` and each count
/// within 1 of its target (systematic randomized rounding).
fn round_counts<R: Rng + ?Sized>(weights: &[f64], k: usize, rng: &mut R) -> Vec<usize> {
    let sum: f64 = weights.iter().sum();
    let len = weights.len();
    if k == 0 || len == 0 {
        return vec![0; len];
    }
    if sum.is_nan() || sum <= 0.0 {
        let mut out = vec![k / len; len];
        for _ in 0..k % len {
            out[below(rng, len)] += 1;
        }
        return out;
    }
    let targets: Vec<f64> = weights.iter().map(|w| k as f64 * w / sum).collect();
    let mut out: Vec<usize> = targets.iter().map(|t| t.floor() as usize).collect();
    let floor_sum: usize = out.iter().sum();
    let rem = k.saturating_sub(floor_sum);
    let fr: Vec<f64> = targets
        .iter()
        .zip(&out)
        .map(|(t, &f)| t - f as f64)
        .collect();
    let fr_sum: f64 = fr.iter().sum();
    if rem > 0 && fr_sum > 0.0 {
        let scale = rem as f64 / fr_sum;
        let u = uniform(rng);
        let mut cum = 0.0;
        for (o, f) in out.iter_mut().zip(&fr) {
            let lo = (cum + u).floor();
            cum += f * scale;
            *o += ((cum + u).floor() - lo).max(0.0) as usize;
        }
    }
    // Repair any floating-point slack so the counts sum to k exactly.
    let mut total: usize = out.iter().sum();
    while total < k {
        let j = (0..len)
            .max_by(|&a, &b| fr[a].total_cmp(&fr[b]))
            .unwrap_or(0);
        out[j] += 1;
        total += 1;
    }
    while total > k {
        if let Some(j) = (0..len)
            .filter(|&j| out[j] > 0)
            .min_by(|&a, &b| fr[a].total_cmp(&fr[b]))
        {
            out[j] -= 1;
        }
        total -= 1;
    }
    out
}

fn shuffle<R: Rng + ?Sized, T>(v: &mut [T], rng: &mut R) {
    for i in (1..v.len()).rev() {
        let j = below(rng, i + 1);
        v.swap(i, j);
    }
}

/// `n` rows whose clique counts are the model's counts, randomly rounded: see the
/// [module documentation](self).
pub fn rounded<R: Rng + ?Sized>(
    tree: &JunctionTree,
    log_beliefs: &[Vec<f64>],
    n: usize,
    rng: &mut R,
) -> Result<Vec<Vec<usize>>, SynthError> {
    let sizes = tree.sizes();
    let mut rows = vec![vec![0usize; sizes.len()]; n];
    for &c in tree.order() {
        let sp = split(tree, c)?;
        let cond = conditional(&sp, &log_beliefs[c]);
        // Rows by separator value.
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); sp.sep_len];
        for (r, row) in rows.iter().enumerate() {
            groups[sep_index(sizes, &sp.sep, row)].push(r);
        }
        for (s, group) in groups.iter().enumerate() {
            if group.is_empty() {
                continue;
            }
            let counts = round_counts(
                &cond[s * sp.free_len..(s + 1) * sp.free_len],
                group.len(),
                rng,
            );
            let mut values: Vec<usize> = Vec::with_capacity(group.len());
            for (f, &k) in counts.iter().enumerate() {
                values.extend(std::iter::repeat_n(f, k));
            }
            shuffle(&mut values, rng);
            for (&r, &f) in group.iter().zip(&values) {
                write_free(sizes, &sp.free, f, &mut rows[r]);
            }
        }
    }
    Ok(rows)
}
