//! The fast Walsh–Hadamard transform: all parity answers in O(N log N).

use crate::data::DataError;

/// In-place unnormalized Walsh–Hadamard transform (`H_{k+1} = [[H_k, H_k],[H_k, −H_k]]`):
/// afterwards `a[S] = Σ_u (−1)^{|u ∧ S|} a_in[u]`. The length must be a power of two.
pub fn fwht(a: &mut [f64]) -> Result<(), DataError> {
    check_len(a.len())?;
    let mut h = 1;
    while h < a.len() {
        for block in a.chunks_exact_mut(2 * h) {
            let (lo, hi) = block.split_at_mut(h);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let (s, d) = (*x + *y, *x - *y);
                *x = s;
                *y = d;
            }
        }
        h *= 2;
    }
    Ok(())
}

/// The same transform on exact integers (for true counts).
pub fn fwht_i64(a: &mut [i64]) -> Result<(), DataError> {
    check_len(a.len())?;
    let mut h = 1;
    while h < a.len() {
        for block in a.chunks_exact_mut(2 * h) {
            let (lo, hi) = block.split_at_mut(h);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let (s, d) = (*x + *y, *x - *y);
                *x = s;
                *y = d;
            }
        }
        h *= 2;
    }
    Ok(())
}

fn check_len(n: usize) -> Result<(), DataError> {
    if n == 0 || !n.is_power_of_two() {
        return Err(DataError::InvalidValue(format!(
            "the Walsh–Hadamard transform needs a power-of-two length, got {n}"
        )));
    }
    Ok(())
}

/// Answers of the parity ("even") queries `f_S(x) = Σ_{u: |u∧S| even} x_u` for every
/// `S` at once: `f_S(x) = (Σx + x̂_S)/2`, one transform for all `2^d` sets.
///
/// ```
/// use privq_host::query::parity_answers;
/// let x = [0.5, 0.25, 0.125, 0.125]; // two binary attributes
/// let all = parity_answers(&x)?;
/// assert_eq!(all[0b00], 1.0);          // the empty set: always even
/// assert_eq!(all[0b01], 0.5 + 0.125);  // bit 0 clear
/// assert_eq!(all[0b11], 0.5 + 0.125);  // bits equal
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
pub fn parity_answers(x: &[f64]) -> Result<Vec<f64>, DataError> {
    let mut a = x.to_vec();
    fwht(&mut a)?;
    let total = a.first().copied().unwrap_or(0.0);
    a.iter_mut().for_each(|v| *v = (total + *v) / 2.0);
    Ok(a)
}

/// Exact parity counts `f_S(D)` for every `S` from integer counts.
pub fn parity_counts(counts: &[u64]) -> Result<Vec<u64>, DataError> {
    let mut a = counts
        .iter()
        .map(|&c| i64::try_from(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| DataError::InvalidValue("a count exceeds i64".into()))?;
    let total: i64 = a
        .iter()
        .try_fold(0i64, |s, &c| s.checked_add(c))
        .ok_or_else(|| DataError::InvalidValue("the total exceeds i64".into()))?;
    fwht_i64(&mut a)?;
    // (total + â_S) is even and in [0, 2·total].
    Ok(a.iter().map(|&v| ((total + v) / 2) as u64).collect())
}

/// Answers of bit-pattern queries `f(x) = Σ_{u: u ∧ mask = pattern} x_u` (marginal
/// cells and conjunctions of a binary domain) from one transform:
/// `f(x) = 2^{−|m|} Σ_{T ⊆ m} (−1)^{|pattern ∧ T|} x̂_T`, so a `k`-attribute cell costs
/// `2^k` terms after the `O(N log N)` transform instead of a pass over `x`.
///
/// ```
/// use privq_host::query::pattern_answers;
/// let x = [0.5, 0.25, 0.125, 0.125]; // two binary attributes
/// let a = pattern_answers(&x, &[(0b01, 0b01), (0b11, 0b10), (0, 0)])?;
/// assert_eq!(a, vec![0.25 + 0.125, 0.125, 1.0]);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
pub fn pattern_answers(x: &[f64], patterns: &[(usize, usize)]) -> Result<Vec<f64>, DataError> {
    let mut a = x.to_vec();
    fwht(&mut a)?;
    check_patterns(a.len(), patterns)?;
    Ok(patterns
        .iter()
        .map(|&(mask, pattern)| {
            let sum: f64 = subsets(mask)
                .map(|t| {
                    let v = a[t];
                    if (pattern & t).count_ones() & 1 == 0 {
                        v
                    } else {
                        -v
                    }
                })
                .sum();
            sum / (1u64 << mask.count_ones()) as f64
        })
        .collect())
}

/// Exact counts of bit-pattern queries from integer counts (see [`pattern_answers`]).
pub fn pattern_counts(counts: &[u64], patterns: &[(usize, usize)]) -> Result<Vec<u64>, DataError> {
    let mut a = counts
        .iter()
        .map(|&c| i64::try_from(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| DataError::InvalidValue("a count exceeds i64".into()))?;
    counts
        .iter()
        .try_fold(0i64, |s, &c| s.checked_add(i64::try_from(c).ok()?))
        .ok_or_else(|| DataError::InvalidValue("the total exceeds i64".into()))?;
    fwht_i64(&mut a)?;
    check_patterns(a.len(), patterns)?;
    patterns
        .iter()
        .map(|&(mask, pattern)| {
            let sum: i128 = subsets(mask)
                .map(|t| {
                    let v = i128::from(a[t]);
                    if (pattern & t).count_ones() & 1 == 0 {
                        v
                    } else {
                        -v
                    }
                })
                .sum();
            // The sum is 2^{|m|} times a count in [0, total]: exact division.
            let count = sum >> mask.count_ones();
            u64::try_from(count)
                .map_err(|_| DataError::InvalidValue("a pattern count is negative".into()))
        })
        .collect()
}

fn check_patterns(len: usize, patterns: &[(usize, usize)]) -> Result<(), DataError> {
    match patterns.iter().find(|&&(m, p)| m >= len || p & !m != 0) {
        Some(&(m, p)) => Err(DataError::InvalidValue(format!(
            "bit pattern {p:#b} under mask {m:#b} does not fit a universe of {len} cells"
        ))),
        None => Ok(()),
    }
}

/// Every subset of the bits of `mask`, the empty set included.
fn subsets(mask: usize) -> impl Iterator<Item = usize> {
    let mut next = Some(mask);
    std::iter::from_fn(move || {
        let t = next?;
        next = if t == 0 { None } else { Some((t - 1) & mask) };
        Some(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Query;

    #[test]
    fn matches_direct_evaluation() {
        let n = 1 << 7;
        let x: Vec<f64> = (0..n).map(|u| ((u * 37 + 11) % 17) as f64).collect();
        let c: Vec<u64> = x.iter().map(|&v| v as u64).collect();
        let fast = parity_answers(&x).unwrap();
        let exact = parity_counts(&c).unwrap();
        for mask in 0..n {
            let q = Query::Parity { mask };
            assert!((fast[mask] - q.evaluate(&x)).abs() < 1e-9);
            assert_eq!(Some(exact[mask]), q.count(&c));
        }
        assert!(parity_answers(&[1.0, 2.0, 3.0]).is_err());
    }

    #[test]
    fn patterns_match_direct_evaluation() {
        let n = 1 << 6;
        let x: Vec<f64> = (0..n).map(|u| ((u * 37 + 11) % 17) as f64).collect();
        let c: Vec<u64> = x.iter().map(|&v| v as u64).collect();
        let mut patterns = Vec::new();
        for mask in 0..n {
            let mut p = mask;
            loop {
                patterns.push((mask, p));
                if p == 0 {
                    break;
                }
                p = (p - 1) & mask;
            }
        }
        let fast = pattern_answers(&x, &patterns).unwrap();
        let exact = pattern_counts(&c, &patterns).unwrap();
        for ((&(mask, pattern), f), e) in patterns.iter().zip(fast).zip(exact) {
            let q = Query::BitPattern { mask, pattern };
            assert!((f - q.evaluate(&x)).abs() < 1e-9);
            assert_eq!(Some(e), q.count(&c));
        }
        assert!(pattern_answers(&x, &[(n, 0)]).is_err());
        assert!(pattern_counts(&c, &[(0b01, 0b10)]).is_err());
    }
}
