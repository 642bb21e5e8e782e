//! Hit-and-run chords on a general body by a dense revised simplex (the hot path
//! of privq's practical substitute for thesis §3.7's provable grid walk;
//! `docs/src/knorm.md`).
//!
//! The ray-exit LP `max t` s.t. `A·λ − t·u = z`, `1ᵀλ + σ = 1`, `λ, σ, t ≥ 0`
//! (`A = [F, −F]`) has only `m = d + 1` rows but `2N + 2` columns. A general sparse
//! solver rebuilds and factorises it from scratch; here the basis inverse is a
//! dense `m × m` matrix updated in place, and one pricing pass is a single sweep
//! `g = πᵀF` over the row-major matrix (`O(dN)`), so an iteration costs
//! `O(dN + m²)`. Two phases (artificial variables on the equality rows), Dantzig
//! pricing with Bland's rule after a run of degenerate pivots, and a fresh
//! inverse every [`REFACTOR`] pivots. Any numerical trouble returns `None` and the
//! caller falls back to the general LP layer: chords only steer an approximate
//! walk and never decide released noise (see [`super`]).

use nalgebra::DMatrix;

/// Pivots between two refactorisations of the basis inverse.
const REFACTOR: usize = 50;
/// Smallest pivot element accepted.
const PIVOT_TOL: f64 = 1e-9;
/// A reduced cost below `−RC_TOL` improves the objective.
const RC_TOL: f64 = 1e-10;
/// Phase 1 ends feasible when the artificials sum to at most this.
const FEAS_TOL: f64 = 1e-9;
/// Consecutive degenerate pivots before Bland's rule takes over.
const DEGENERATE_RUN: usize = 30;
/// The scale of the right-hand-side shifts that break degeneracy.
const PERTURBATION: f64 = 1e-9;

/// The ray-exit LP of one chord end.
struct Chord<'a> {
    perturbed: bool,
    f: &'a [f64],
    d: usize,
    n: usize,
    z: &'a [f64],
    u: &'a [f64],
}

impl Chord<'_> {
    /// Variables: `0..n` are `+F·ⱼ`, `n..2n` are `−F·ⱼ`, `2n` is t, `2n + 1` is σ,
    /// `2n + 2 + i` is the artificial of row `i < d` (sign of `zᵢ`).
    fn vars(&self) -> usize {
        2 * self.n + 2 + self.d
    }

    fn artificial_sign(&self, i: usize) -> f64 {
        if self.z.get(i).copied().unwrap_or(0.0) >= 0.0 {
            1.0
        } else {
            -1.0
        }
    }

    fn is_artificial(&self, k: usize) -> bool {
        k >= 2 * self.n + 2
    }

    /// Column k of the constraint matrix (length d + 1).
    fn column(&self, k: usize, out: &mut [f64]) {
        let (d, n) = (self.d, self.n);
        out.iter_mut().for_each(|a| *a = 0.0);
        if k < 2 * n {
            let (j, s) = if k < n { (k, 1.0) } else { (k - n, -1.0) };
            for (i, o) in out.iter_mut().take(d).enumerate() {
                *o = s * self.f.get(i * n + j).copied().unwrap_or(0.0);
            }
            if let Some(o) = out.get_mut(d) {
                *o = 1.0;
            }
        } else if k == 2 * n {
            for (o, &ui) in out.iter_mut().zip(self.u) {
                *o = -ui;
            }
        } else if k == 2 * n + 1 {
            if let Some(o) = out.get_mut(d) {
                *o = 1.0;
            }
        } else {
            let i = k - 2 * n - 2;
            if let Some(o) = out.get_mut(i) {
                *o = self.artificial_sign(i);
            }
        }
    }

    /// The right-hand side `(z, 1)`, or with a tiny distinct shift on each
    /// equality row (`perturbed`): the classic cure for the degenerate start at
    /// `z = 0` (the gauge), where every basis through the origin has value 0 and
    /// the simplex stalls.
    fn rhs(&self, perturbed: bool) -> Vec<f64> {
        let mut b = self.z.to_vec();
        if perturbed {
            for (i, bi) in b.iter_mut().enumerate() {
                // Distinct, irrational-ratio shifts of order 10⁻⁹.
                *bi += PERTURBATION * (1.0 + (i as f64 * 0.618_033_988_75).fract());
            }
        }
        b.push(1.0);
        b
    }
}

/// The simplex state: basis, dense inverse, basic values.
struct Tableau {
    m: usize,
    basis: Vec<usize>,
    basic: Vec<bool>,
    binv: Vec<f64>,
    x: Vec<f64>,
}

impl Tableau {
    fn refactor(&mut self, lp: &Chord<'_>) -> Option<()> {
        self.refactor_with(lp, lp.perturbed)
    }

    fn refactor_with(&mut self, lp: &Chord<'_>, perturbed: bool) -> Option<()> {
        let m = self.m;
        let mut b = DMatrix::zeros(m, m);
        let mut col = vec![0.0; m];
        for (c, &k) in self.basis.iter().enumerate() {
            lp.column(k, &mut col);
            for (r, &a) in col.iter().enumerate() {
                b[(r, c)] = a;
            }
        }
        let inv = b.try_inverse()?;
        for r in 0..m {
            for c in 0..m {
                *self.binv.get_mut(r * m + c)? = inv[(r, c)];
            }
        }
        let rhs = lp.rhs(perturbed);
        for r in 0..m {
            let row = self.binv.get(r * m..(r + 1) * m)?;
            let x: f64 = row.iter().zip(&rhs).map(|(a, b)| a * b).sum();
            if !perturbed && x < -1e-9 {
                // The perturbed problem's optimal basis is infeasible for the
                // original one: let the caller fall back to the LP layer.
                return None;
            }
            *self.x.get_mut(r)? = x.max(0.0);
        }
        Some(())
    }

    /// Pivots column `k` (its `B⁻¹·a_k` is `w`) into row `r`.
    fn pivot(&mut self, r: usize, k: usize, w: &[f64]) -> Option<()> {
        let m = self.m;
        let wr = *w.get(r)?;
        let theta = *self.x.get(r)? / wr;
        for (i, (xi, &wi)) in self.x.iter_mut().zip(w).enumerate() {
            if i == r {
                *xi = theta.max(0.0);
            } else {
                *xi = (*xi - theta * wi).max(0.0);
            }
        }
        let pivot_row: Vec<f64> = self
            .binv
            .get(r * m..(r + 1) * m)?
            .iter()
            .map(|a| a / wr)
            .collect();
        for (i, &wi) in w.iter().enumerate() {
            let row = self.binv.get_mut(i * m..(i + 1) * m)?;
            if i == r {
                row.copy_from_slice(&pivot_row);
            } else if wi != 0.0 {
                for (a, &p) in row.iter_mut().zip(&pivot_row) {
                    *a -= wi * p;
                }
            }
        }
        let old = std::mem::replace(self.basis.get_mut(r)?, k);
        *self.basic.get_mut(old)? = false;
        *self.basic.get_mut(k)? = true;
        Some(())
    }
}

/// How a phase ended.
enum Phase {
    Optimal,
    Unbounded,
}

/// The largest `t ≥ 0` with `z + t·u ∈ F·B₁ᴺ` (`f` row-major `d × n`), `0` when
/// `z` is outside the body by more than round-off, `+∞` when the ray never leaves
/// (only for `u = 0`); `None` when the simplex hit numerical trouble or its
/// iteration cap.
pub(crate) fn ray_exit(f: &[f64], d: usize, n: usize, z: &[f64], u: &[f64]) -> Option<f64> {
    if f.len() != d * n || z.len() != d || u.len() != d || n == 0 {
        return None;
    }
    // Shift the right-hand side only where the start is degenerate (some zᵢ = 0).
    let perturbed = z.contains(&0.0);
    let lp = Chord {
        perturbed,
        f,
        d,
        n,
        z,
        u,
    };
    let m = d + 1;
    let vars = lp.vars();
    let mut t = Tableau {
        m,
        basis: (0..d).map(|i| 2 * n + 2 + i).chain([2 * n + 1]).collect(),
        basic: vec![false; vars],
        binv: vec![0.0; m * m],
        x: vec![0.0; m],
    };
    for &k in &t.basis {
        *t.basic.get_mut(k)? = true;
    }
    t.refactor(&lp)?;
    // Phase 1: minimise the artificials.
    run_phase(&lp, &mut t, true)?;
    let infeasibility: f64 = t
        .basis
        .iter()
        .zip(&t.x)
        .filter(|(k, _)| lp.is_artificial(**k))
        .map(|(_, x)| x)
        .sum();
    if infeasibility > FEAS_TOL {
        // z is outside K (round-off at the boundary): the chord has length 0. A
        // shifted z can leave a flat body's range: the LP layer decides then.
        return if perturbed { None } else { Some(0.0) };
    }
    let phase = run_phase(&lp, &mut t, false)?;
    // The optimal basis re-evaluated from scratch (at the true (z, 1) when the
    // start was shifted), so in-place round-off cannot decide the answer.
    t.refactor_with(&lp, false)?;
    let artificial: f64 = t
        .basis
        .iter()
        .zip(&t.x)
        .filter(|(k, _)| lp.is_artificial(**k))
        .map(|(_, x)| x.abs())
        .sum();
    if t.x.iter().any(|x| !x.is_finite()) || artificial > FEAS_TOL {
        return None;
    }
    match phase {
        // K is compact: only u = 0 never leaves it; anything else is a numerical
        // miss, for the LP layer to decide.
        Phase::Unbounded if u.iter().all(|&v| v == 0.0) => Some(f64::INFINITY),
        Phase::Unbounded => None,
        Phase::Optimal => {
            let t_exit = t
                .basis
                .iter()
                .zip(&t.x)
                .find(|(k, _)| **k == 2 * n)
                .map_or(0.0, |(_, x)| *x);
            (t_exit.is_finite() && t_exit >= -FEAS_TOL).then_some(t_exit.max(0.0))
        }
    }
}

/// One simplex phase: phase 1 minimises the artificials, phase 2 minimises `−t`
/// with the artificials barred from entering (and pivoted out when they block).
fn run_phase(lp: &Chord<'_>, t: &mut Tableau, phase1: bool) -> Option<Phase> {
    let (d, n, m) = (lp.d, lp.n, t.m);
    let vars = lp.vars();
    let cost = |k: usize| -> f64 {
        if phase1 {
            if lp.is_artificial(k) { 1.0 } else { 0.0 }
        } else if k == 2 * n {
            -1.0
        } else {
            0.0
        }
    };
    let max_iter = 60 * m + 500;
    let mut g = vec![0.0; n];
    let mut w = vec![0.0; m];
    let mut col = vec![0.0; m];
    let mut degenerate = 0usize;
    for iter in 0..max_iter {
        if iter > 0 && iter % REFACTOR == 0 {
            t.refactor(lp)?;
        }
        // π = c_Bᵀ B⁻¹.
        let mut pi = vec![0.0; m];
        for (r, &k) in t.basis.iter().enumerate() {
            let c = cost(k);
            if c != 0.0 {
                let row = t.binv.get(r * m..(r + 1) * m)?;
                for (p, &a) in pi.iter_mut().zip(row) {
                    *p += c * a;
                }
            }
        }
        // g = πᵀF over the first d rows, one sweep of the row-major matrix.
        g.iter_mut().for_each(|a| *a = 0.0);
        for (i, &pi_i) in pi.iter().take(d).enumerate() {
            if pi_i != 0.0 {
                let row = lp.f.get(i * n..(i + 1) * n)?;
                for (gj, &a) in g.iter_mut().zip(row) {
                    *gj += pi_i * a;
                }
            }
        }
        let pi_d = *pi.get(d)?;
        let bland = degenerate >= DEGENERATE_RUN;
        let mut entering: Option<(usize, f64)> = None;
        let mut consider = |k: usize, rc: f64| {
            if rc < -RC_TOL {
                match entering {
                    None => entering = Some((k, rc)),
                    Some((_, best)) if !bland && rc < best => entering = Some((k, rc)),
                    _ => {}
                }
            }
        };
        for (j, &gj) in g.iter().enumerate() {
            if !t.basic.get(j).copied().unwrap_or(true) {
                consider(j, cost(j) - (gj + pi_d));
            }
        }
        for (j, &gj) in g.iter().enumerate() {
            if !t.basic.get(n + j).copied().unwrap_or(true) {
                consider(n + j, cost(n + j) - (-gj + pi_d));
            }
        }
        if !t.basic.get(2 * n).copied().unwrap_or(true) {
            let pu: f64 = pi.iter().zip(lp.u).map(|(p, ui)| p * ui).sum();
            consider(2 * n, cost(2 * n) + pu);
        }
        if !t.basic.get(2 * n + 1).copied().unwrap_or(true) {
            consider(2 * n + 1, cost(2 * n + 1) - pi_d);
        }
        if phase1 {
            for k in 2 * n + 2..vars {
                if !t.basic.get(k).copied().unwrap_or(true) {
                    let i = k - 2 * n - 2;
                    consider(k, cost(k) - pi.get(i)? * lp.artificial_sign(i));
                }
            }
        }
        let Some((k, _)) = entering else {
            return Some(Phase::Optimal);
        };
        // w = B⁻¹ a_k.
        lp.column(k, &mut col);
        for (r, wr) in w.iter_mut().enumerate() {
            let row = t.binv.get(r * m..(r + 1) * m)?;
            *wr = row.iter().zip(&col).map(|(a, b)| a * b).sum();
        }
        // Ratio test; in phase 2 a basic artificial (at 0) leaves at once.
        let mut leave: Option<(usize, f64, f64)> = None;
        for (r, (&wr, &xr)) in w.iter().zip(&t.x).enumerate() {
            let basic_k = *t.basis.get(r)?;
            let ratio = if !phase1 && lp.is_artificial(basic_k) && wr.abs() > PIVOT_TOL {
                0.0
            } else if wr > PIVOT_TOL {
                xr / wr
            } else {
                continue;
            };
            let better = match leave {
                None => true,
                Some((lr, best, bw)) => {
                    if ratio < best - 1e-12 {
                        true
                    } else if ratio <= best + 1e-12 {
                        if bland {
                            basic_k < *t.basis.get(lr)?
                        } else {
                            wr.abs() > bw
                        }
                    } else {
                        false
                    }
                }
            };
            if better {
                leave = Some((r, ratio, wr.abs()));
            }
        }
        let Some((r, ratio, _)) = leave else {
            return if phase1 { None } else { Some(Phase::Unbounded) };
        };
        degenerate = if ratio <= 1e-12 { degenerate + 1 } else { 0 };
        t.pivot(r, k, &w)?;
    }
    None
}
