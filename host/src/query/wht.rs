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
}
