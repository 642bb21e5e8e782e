//! Dense tables over a clique and the strided kernels that relate a table to a
//! table over a sub-clique (marginalise, broadcast), without per-cell allocation.
//!
//! A [`Projection`] from clique `B` onto a sub-clique `S ⊆ B` walks `B`'s cells in
//! order and yields, for maximal runs of consecutive cells, the index in `S`'s table
//! and the stride with which it advances. Adjacent dimensions whose `S`-strides line
//! up are merged first, so marginalising a 16-attribute table onto its first three
//! attributes is eight runs of 8192 cells, not 32 768 runs of two.

use super::{Clique, SynthError};

/// How the cells of a clique's table map onto a sub-clique's table.
#[derive(Debug, Clone)]
pub struct Projection {
    /// Merged dimensions of the big table (outermost first).
    dims: Vec<usize>,
    /// The sub-table stride of each merged dimension (0 where it is summed out).
    strides: Vec<usize>,
    big_len: usize,
    sub_len: usize,
}

impl Projection {
    /// The projection of `big` onto `sub` (which must be a subset).
    pub fn new(sizes: &[usize], big: &Clique, sub: &Clique) -> Result<Self, SynthError> {
        if !sub.is_subset(big) {
            return Err(SynthError::NotASubset);
        }
        let big_len = big.cells(sizes)?;
        let sub_len = sub.cells(sizes)?;
        // Row-major strides of `sub`, per attribute of `big`.
        let mut raw: Vec<(usize, usize)> = Vec::with_capacity(big.len());
        for &a in big.attributes() {
            let stride = if sub.contains(a) {
                sub.attributes()
                    .iter()
                    .filter(|&&b| b > a)
                    .map(|&b| sizes[b])
                    .product()
            } else {
                0
            };
            if sizes[a] > 1 {
                raw.push((sizes[a], stride));
            }
        }
        // Merge from the innermost dimension outwards.
        let mut dims: Vec<usize> = Vec::new();
        let mut strides: Vec<usize> = Vec::new();
        for &(n, s) in raw.iter().rev() {
            if let (Some(dl), Some(sl)) = (dims.last_mut(), strides.last())
                && s == *sl * *dl
            {
                *dl *= n;
                continue;
            }
            dims.push(n);
            strides.push(s);
        }
        dims.reverse();
        strides.reverse();
        if dims.is_empty() {
            dims.push(1);
            strides.push(0);
        }
        Ok(Projection {
            dims,
            strides,
            big_len,
            sub_len,
        })
    }

    /// Cells of the sub-table.
    pub fn sub_len(&self) -> usize {
        self.sub_len
    }

    /// Calls `f(big_start, sub_start, sub_stride, len)` for each run: big cells
    /// `big_start..big_start+len` map to sub cells `sub_start + t·sub_stride`.
    #[inline]
    pub fn runs(&self, f: impl FnMut(usize, usize, usize, usize)) {
        self.runs_between(0, self.big_len, f);
    }

    /// The length of the runs [`Projection::runs`] yields (every run has it).
    pub fn run_len(&self) -> usize {
        self.dims[self.dims.len() - 1]
    }

    /// [`Projection::runs`] for the big cells `from..to` only (both multiples of
    /// [`Projection::run_len`]).
    #[inline]
    pub fn runs_between(
        &self,
        from: usize,
        to: usize,
        mut f: impl FnMut(usize, usize, usize, usize),
    ) {
        let k = self.dims.len();
        let inner = self.dims[k - 1];
        let s_in = self.strides[k - 1];
        debug_assert!(from.is_multiple_of(inner) && to.is_multiple_of(inner) && to <= self.big_len);
        let mut ctr = [0usize; 64];
        let mut ctr_vec;
        let ctr: &mut [usize] = if k <= 64 {
            &mut ctr[..k]
        } else {
            ctr_vec = vec![0usize; k];
            &mut ctr_vec
        };
        // The counters and sub-table offset of run `from / inner`.
        let mut sub = 0usize;
        let mut rest = from / inner;
        for i in (0..k - 1).rev() {
            ctr[i] = rest % self.dims[i];
            rest /= self.dims[i];
            sub += ctr[i] * self.strides[i];
        }
        for o in from / inner..to / inner {
            f(o * inner, sub, s_in, inner);
            let mut i = k - 1;
            while i > 0 {
                i -= 1;
                ctr[i] += 1;
                sub += self.strides[i];
                if ctr[i] < self.dims[i] {
                    break;
                }
                sub -= self.strides[i] * self.dims[i];
                ctr[i] = 0;
            }
        }
    }

    /// `out[j] += Σ big[i]` over the cells `i` that map to `j` (`out` is not cleared).
    pub fn sum_into(&self, big: &[f64], out: &mut [f64]) {
        self.runs(|a, j, s, len| {
            let src = &big[a..a + len];
            if s == 0 {
                out[j] += src.iter().sum::<f64>();
            } else if s == 1 {
                for (o, x) in out[j..j + len].iter_mut().zip(src) {
                    *o += x;
                }
            } else {
                for (t, x) in src.iter().enumerate() {
                    out[j + t * s] += x;
                }
            }
        });
    }

    /// `out[j] = max(out[j], big[i] − minus[j])` (use `minus = None` for 0).
    pub fn max_into(&self, big: &[f64], minus: Option<&[f64]>, out: &mut [f64]) {
        self.runs(|a, j, s, len| {
            let src = &big[a..a + len];
            for (t, &x) in src.iter().enumerate() {
                let jj = j + t * s;
                let v = x - minus.map_or(0.0, |m| m[jj]);
                if v > out[jj] {
                    out[jj] = v;
                }
            }
        });
    }

    /// `out[j] = min(out[j], big[i])`.
    pub fn min_into(&self, big: &[f64], out: &mut [f64]) {
        self.runs(|a, j, s, len| {
            let src = &big[a..a + len];
            for (t, &x) in src.iter().enumerate() {
                let jj = j + t * s;
                if x < out[jj] {
                    out[jj] = x;
                }
            }
        });
    }

    /// Log-sum-exp marginalisation: `out[j] = ln Σ_{i→j} exp(big[i] − minus[j])`,
    /// stable per target cell (`scratch` holds the per-target maxima; both are
    /// resized to the sub-table).
    pub fn logsumexp(
        &self,
        big: &[f64],
        minus: Option<&[f64]>,
        out: &mut Vec<f64>,
        scratch: &mut Vec<f64>,
    ) {
        scratch.clear();
        scratch.resize(self.sub_len, f64::NEG_INFINITY);
        self.max_into(big, minus, scratch);
        out.clear();
        out.resize(self.sub_len, 0.0);
        let mx: &[f64] = scratch;
        self.runs(|a, j, s, len| {
            let src = &big[a..a + len];
            if s == 0 {
                let m = mx[j] + minus.map_or(0.0, |mm| mm[j]);
                if m > f64::NEG_INFINITY {
                    out[j] += src.iter().map(|&x| (x - m).exp()).sum::<f64>();
                }
            } else {
                for (t, &x) in src.iter().enumerate() {
                    let jj = j + t * s;
                    let m = mx[jj] + minus.map_or(0.0, |mm| mm[jj]);
                    if m > f64::NEG_INFINITY {
                        out[jj] += (x - m).exp();
                    }
                }
            }
        });
        for (o, &m) in out.iter_mut().zip(mx) {
            *o = if m > f64::NEG_INFINITY {
                m + o.ln()
            } else {
                f64::NEG_INFINITY
            };
        }
    }

    /// `big[i] += scale · small[j]` for every cell `i` mapping to `j`.
    pub fn broadcast_add(&self, big: &mut [f64], small: &[f64], scale: f64) {
        self.broadcast_add_between(0, big, small, scale);
    }

    /// [`Projection::broadcast_add`] into the big cells `from..from + part.len()`
    /// only, held in `part` (`from` and the length multiples of
    /// [`Projection::run_len`]).
    pub fn broadcast_add_between(&self, from: usize, part: &mut [f64], small: &[f64], scale: f64) {
        self.runs_between(from, from + part.len(), |a, j, s, len| {
            let dst = &mut part[a - from..a - from + len];
            if s == 0 {
                let v = scale * small[j];
                dst.iter_mut().for_each(|x| *x += v);
            } else if s == 1 {
                for (x, &y) in dst.iter_mut().zip(&small[j..j + len]) {
                    *x += scale * y;
                }
            } else {
                for (t, x) in dst.iter_mut().enumerate() {
                    *x += scale * small[j + t * s];
                }
            }
        });
    }
}

/// Stable `ln Σ exp(x)` of a slice (−∞ for an empty or all −∞ slice).
pub fn logsumexp(x: &[f64]) -> f64 {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + x.iter().map(|&v| (v - m).exp()).sum::<f64>().ln()
}

/// A dense table of `f64` over a clique (cells in [`Clique`] order): counts,
/// probabilities or log-potentials, as the caller decides. The tests' reference for
/// the projections the estimator uses (marginalising `[[1, 2, 3], [4, 5, 6]]` onto
/// attribute 1 gives `[5, 7, 9]`).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq)]
pub struct Factor {
    clique: Clique,
    values: Vec<f64>,
}

#[cfg(test)]
impl Factor {
    /// A table with the given values (one per cell of `clique`).
    pub fn new(sizes: &[usize], clique: Clique, values: Vec<f64>) -> Result<Self, SynthError> {
        let n = clique.cells(sizes)?;
        if values.len() != n {
            return Err(SynthError::TableLength {
                expected: n,
                got: values.len(),
            });
        }
        Ok(Factor { clique, values })
    }

    /// A constant table.
    pub fn constant(sizes: &[usize], clique: Clique, value: f64) -> Result<Self, SynthError> {
        let n = clique.cells(sizes)?;
        Ok(Factor {
            clique,
            values: vec![value; n],
        })
    }

    /// Its values.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Adds `scale·other` where `other`'s clique is a subset of this one (in log
    /// space: multiplies potentials).
    pub fn add_scaled(
        &mut self,
        sizes: &[usize],
        other: &Factor,
        scale: f64,
    ) -> Result<(), SynthError> {
        let p = Projection::new(sizes, &self.clique, &other.clique)?;
        p.broadcast_add(&mut self.values, &other.values, scale);
        Ok(())
    }

    /// The sum-marginal onto a sub-clique.
    pub fn marginalize(&self, sizes: &[usize], onto: &Clique) -> Result<Factor, SynthError> {
        let p = Projection::new(sizes, &self.clique, onto)?;
        let mut out = vec![0.0; p.sub_len()];
        p.sum_into(&self.values, &mut out);
        Ok(Factor {
            clique: onto.clone(),
            values: out,
        })
    }

    /// The log-sum-exp marginal onto a sub-clique (for log-space tables).
    pub fn log_marginalize(&self, sizes: &[usize], onto: &Clique) -> Result<Factor, SynthError> {
        let p = Projection::new(sizes, &self.clique, onto)?;
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        p.logsumexp(&self.values, None, &mut out, &mut scratch);
        Ok(Factor {
            clique: onto.clone(),
            values: out,
        })
    }
}
