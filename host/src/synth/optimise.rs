//! Mirror descent over the marginal polytope, shared by the junction-tree and the
//! dense estimators (Private-PGM, McKenna–Sheldon–Miklau 2019, §4: entropic
//! mirror descent on the potentials with a line search).
//!
//! Loss `L(p) = Σ_i Σ_j (N·(M_i p)_j − y_ij)² / (k_ij·σ_i²)` (M_i = marginal onto
//! clique C_i; `k_ij` = cell j's noise variance as a multiple of σ_i², 1 unless
//! the measurement gives per-cell variances: a merged value of a compressed
//! attribute, MST's 1/√k row scaling). Its gradient in the marginal of C_i is
//! `g_ij = 2N(N·μ_ij − y_ij)/(k_ij·σ_i²)`, and the
//! entropic mirror step is `θ ← θ − η·Σ_i g_i` on the log-potentials, which stays
//! in the model's exponential family because every `g_i` lives on a measured
//! clique. `L` is `L₀ = 2N²·Σ_i max_j (k_ij·σ_i²)⁻¹`-smooth relative to the entropy (Pinsker),
//! so `η = 1/L₀` always decreases it; each step tries the last accepted step
//! (doubled once two in a row were accepted at their first trial, and again on
//! each step while that lasts; a cold start doubles at once, a warm one begins
//! at the previous fit's step) and halves until the Armijo condition
//! `L(p') ≤ L(p) + ½⟨∇L(p), p' − p⟩` holds (or `η ≤ 1/L₀`).
//!
//! Stopping: the Frank–Wolfe gap `⟨∇L(p), p⟩ − min_x ∇L(p)(x)` bounds
//! `L(p) − min L` from above (convexity); the fit stops when it is at most
//! `tolerance × Σ_i cells(C_i)`. A fit given `stall > 0` also stops once
//! [`STALL_STEPS`] steps in a row each lowered `L` by less than
//! `stall × Σ_i cells(C_i)` — a heuristic: fitting noisy measurements, `L` at the
//! true distribution is about `Σ_i cells(C_i)` (each cell's squared noise over its
//! variance has mean 1) and at the fit at most about that, so such steps move the
//! fit far less than the noise it fits. Both rules read only the measurements:
//! post-processing. A fit given a `deadline` `(at, steps)` also stops after the
//! first step that ends past `at`, once it has taken `steps`: that reads the
//! clock, not the data.

use std::time::Instant;

use super::estimate::Measurement;
use super::infer::{CHUNK, PARALLEL_CELLS};

/// What the mirror descent needs from a parametrisation.
pub(crate) trait Oracle {
    /// The probability marginals of every measurement's clique under `theta`.
    fn evaluate(&mut self, theta: &[Vec<f64>], marginals: &mut [Vec<f64>]);
    /// `out = Σ_i broadcast(grads[i])` in the shape of `theta` (out is overwritten).
    fn gradient(&mut self, grads: &[Vec<f64>], out: &mut [Vec<f64>]);
    /// `min_x Σ_C g_C(x_C)`.
    fn min_value(&mut self, g: &[Vec<f64>]) -> f64;
}

/// The outcome of a run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub iterations: usize,
    /// Marginal-oracle calls (one belief propagation each for the tree).
    pub evaluations: usize,
    pub loss: f64,
    pub gap: f64,
    pub converged: bool,
    /// The last accepted step size.
    pub step: f64,
}

fn loss_and_grads(
    ms: &[Measurement],
    n: f64,
    marg: &[Vec<f64>],
    grads: Option<&mut [Vec<f64>]>,
) -> f64 {
    let mut loss = 0.0;
    match grads {
        Some(gs) => {
            for ((m, mu), g) in ms.iter().zip(marg).zip(gs.iter_mut()) {
                let w = 1.0 / (m.sigma * m.sigma);
                g.clear();
                match &m.cell_variance {
                    None => {
                        for (&p, &y) in mu.iter().zip(&m.values) {
                            let r = n * p - y;
                            loss += w * r * r;
                            g.push(2.0 * n * w * r);
                        }
                    }
                    Some(k) => {
                        for ((&p, &y), &k) in mu.iter().zip(&m.values).zip(k) {
                            let (r, w) = (n * p - y, w / k);
                            loss += w * r * r;
                            g.push(2.0 * n * w * r);
                        }
                    }
                }
            }
        }
        None => {
            for (m, mu) in ms.iter().zip(marg) {
                let w = 1.0 / (m.sigma * m.sigma);
                let sum = match &m.cell_variance {
                    None => mu
                        .iter()
                        .zip(&m.values)
                        .map(|(&p, &y)| (n * p - y).powi(2))
                        .sum::<f64>(),
                    Some(k) => mu
                        .iter()
                        .zip(&m.values)
                        .zip(k)
                        .map(|((&p, &y), &k)| (n * p - y).powi(2) / k)
                        .sum::<f64>(),
                };
                loss += sum * w;
            }
        }
    }
    loss
}

/// The largest loss weight of a cell of `m`, `1/(min_j k_j·σ²)`.
fn max_weight(m: &Measurement) -> f64 {
    let k = m
        .cell_variance
        .as_ref()
        .map_or(1.0, |k| k.iter().copied().fold(f64::INFINITY, f64::min));
    1.0 / (k.max(1.0) * m.sigma * m.sigma)
}

/// How many steps in a row must be accepted at their first trial before the next
/// tries twice the step.
///
/// It was 1: a step near the largest accepted one then tried doubling every
/// other iteration, each refused doubling costing a second marginal-oracle call
/// (the test below counts 14 calls in 10 steps against 13). With 2,
/// mean 3-way TV of the model (seeds as given): NLTCS at ε = 0.1 0.0339 → 0.0332
/// (0–31; seeds 0–2 0.0340 → 0.0319), at ε = 1 0.00576 → 0.00574 (0–31), at
/// ε = 10 0.00113 → 0.00113 (0–5); Adult at ε = 1 0.0733 → 0.0726 (0–2; records
/// 0.0757 → 0.0749) and 0.0741 → 0.0736 (3–6), at ε = 0.1 0.1956 → 0.1964 (0–3).
const GROW_AFTER: usize = 2;

/// How many steps in a row must each lower the loss by less than `stall × Σ_i
/// cells(C_i)` to stop a fit that asks for it ([`mirror_descent`]'s `stall`).
const STALL_STEPS: usize = 3;

/// `out = theta − eta·g`, cell by cell, in parallel chunks on large tables.
fn step_into(out: &mut [f64], theta: &[f64], g: &[f64], eta: f64) {
    assert!(out.len() == theta.len() && g.len() == theta.len());
    crate::parallel::chunks(out, g, CHUNK, PARALLEL_CELLS, |k, out, gk| {
        let th = &theta[k * CHUNK..][..out.len()];
        for ((o, &x), &b) in out.iter_mut().zip(th).zip(gk) {
            *o = x - eta * b;
        }
    });
}

/// When a fit stops (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stop {
    /// At most this many steps.
    pub iterations: usize,
    /// The Frank–Wolfe gap's tolerance, per cell.
    pub tolerance: f64,
    /// The stall rule's least decrease of the loss per step, per cell (0: none).
    pub stall: f64,
    /// Stop after the first step that ends past this instant, once this many
    /// steps are done (None: no clock).
    pub deadline: Option<(Instant, usize)>,
}

/// Runs mirror descent from `theta` (updated in place).
pub(crate) fn mirror_descent<O: Oracle>(
    oracle: &mut O,
    theta: &mut Vec<Vec<f64>>,
    ms: &[Measurement],
    n: f64,
    stop: Stop,
    start_step: Option<f64>,
) -> Outcome {
    let Stop {
        iterations,
        tolerance,
        stall,
        deadline,
    } = stop;
    let l0 = 2.0 * n * n * ms.iter().map(max_weight).sum::<f64>();
    let eta_min = if l0 > 0.0 { 1.0 / l0 } else { 1.0 };
    let scale: f64 = ms
        .iter()
        .map(|m| m.values.len() as f64)
        .sum::<f64>()
        .max(1.0);
    let mut marg: Vec<Vec<f64>> = ms.iter().map(|m| vec![0.0; m.values.len()]).collect();
    let mut trial_marg = marg.clone();
    let mut grads: Vec<Vec<f64>> = vec![Vec::new(); ms.len()];
    let mut g_tables: Vec<Vec<f64>> = theta.iter().map(|t| vec![0.0; t.len()]).collect();
    let mut trial = theta.clone();
    oracle.evaluate(theta, &mut marg);
    let mut loss = loss_and_grads(ms, n, &marg, None);
    let mut eta = start_step
        .filter(|s| s.is_finite() && *s > eta_min)
        .unwrap_or(eta_min);
    // Steps in a row accepted at their first trial (a cold start may grow at once).
    let mut streak = if start_step.is_none() { GROW_AFTER } else { 0 };
    let mut out = Outcome {
        iterations: 0,
        evaluations: 1,
        loss,
        gap: f64::INFINITY,
        converged: false,
        step: eta,
    };
    // Steps in a row that each lowered the loss by less than stall × scale.
    let mut stalled = 0usize;
    for _ in 0..iterations {
        loss = loss_and_grads(ms, n, &marg, Some(&mut grads));
        oracle.gradient(&grads, &mut g_tables);
        let lin: f64 = grads
            .iter()
            .zip(&marg)
            .map(|(g, m)| g.iter().zip(m).map(|(a, b)| a * b).sum::<f64>())
            .sum();
        // A gap that is not finite (NaN from non-finite gradients or marginals,
        // −∞ from a bound of +∞) is no convergence.
        let gap = lin - oracle.min_value(&g_tables);
        let gap = if gap.is_finite() {
            gap.max(0.0)
        } else {
            f64::INFINITY
        };
        out.gap = gap;
        out.loss = loss;
        if gap <= tolerance * scale {
            out.converged = true;
            return out;
        }
        // Try a longer step only after GROW_AFTER accepted at their first trial.
        if streak >= GROW_AFTER {
            eta *= 2.0;
        }
        let mut first = true;
        loop {
            for (out, (th, g)) in trial.iter_mut().zip(theta.iter().zip(&g_tables)) {
                step_into(out, th, g, eta);
            }
            oracle.evaluate(&trial, &mut trial_marg);
            out.evaluations += 1;
            let new_loss = loss_and_grads(ms, n, &trial_marg, None);
            let dec: f64 = grads
                .iter()
                .zip(trial_marg.iter().zip(&marg))
                .map(|(g, (a, b))| {
                    g.iter()
                        .zip(a.iter().zip(b))
                        .map(|(g, (a, b))| g * (a - b))
                        .sum::<f64>()
                })
                .sum();
            if !new_loss.is_finite() && eta <= eta_min {
                // Numerically stuck even at the guaranteed step: keep the last iterate.
                return out;
            }
            if (new_loss.is_finite() && new_loss <= loss + 0.5 * dec) || eta <= eta_min {
                std::mem::swap(theta, &mut trial);
                std::mem::swap(&mut marg, &mut trial_marg);
                loss = new_loss;
                break;
            }
            eta *= 0.5;
            first = false;
        }
        streak = if first { streak + 1 } else { 0 };
        stalled = count_stall(stalled, out.loss - loss, stall * scale);
        out.iterations += 1;
        out.loss = loss;
        out.step = eta;
        if stall > 0.0 && stalled >= STALL_STEPS {
            break;
        }
        if deadline.is_some_and(|(at, steps)| out.iterations >= steps && Instant::now() >= at) {
            break;
        }
    }
    out
}

/// The stall rule's count after a step that lowered the loss by `decrease`: one
/// more when that is below `floor`, else 0 (a larger decrease, or a NaN one,
/// starts the count again).
fn count_stall(stalled: usize, decrease: f64, floor: f64) -> usize {
    if decrease < floor { stalled + 1 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::Clique;

    /// Only steps in a row count: a larger decrease between small ones starts
    /// the count again, and so does a NaN one.
    #[test]
    fn the_stall_count_is_of_steps_in_a_row() {
        let count = |decreases: &[f64]| {
            decreases
                .iter()
                .scan(0, |n, &d| {
                    *n = count_stall(*n, d, 1.0);
                    Some(*n)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(count(&[0.5, 0.5, 2.0, 0.5, 0.5, 0.5]), [1, 2, 0, 1, 2, 3]);
        assert_eq!(count(&[0.5, f64::NAN, 0.5, 1.0, -1.0]), [1, 0, 1, 0, 1]);
        assert!(
            count(&[0.5, 0.5, 2.0, 0.5, 0.5])
                .iter()
                .all(|&n| n < STALL_STEPS)
        );
    }

    /// A quadratic, cell by cell, whose Armijo test passes exactly when
    /// η ≤ 48/L₀: μ = θ, the loss Σ_j (μ_j − y_j)², and a gradient table 1/48 of
    /// the measured one, so each trial residual is r·(1 − η/24) and the test
    /// holds iff η ≤ 24.
    struct Quadratic {
        evaluations: usize,
    }

    impl Oracle for Quadratic {
        fn evaluate(&mut self, theta: &[Vec<f64>], marginals: &mut [Vec<f64>]) {
            self.evaluations += 1;
            marginals[0].copy_from_slice(&theta[0]);
        }
        fn gradient(&mut self, grads: &[Vec<f64>], out: &mut [Vec<f64>]) {
            out[0]
                .iter_mut()
                .zip(&grads[0])
                .for_each(|(o, g)| *o = g / 48.0);
        }
        fn min_value(&mut self, _: &[Vec<f64>]) -> f64 {
            f64::NEG_INFINITY // no Frank–Wolfe stop
        }
    }

    /// The fit of one clique measured as `cells` (σ = 1) from θ = 0, cold.
    fn cold_fit(oracle: &mut impl Oracle, cells: &[f64], stop: Stop) -> Outcome {
        let y = Measurement::new(Clique::new([0]).unwrap(), cells.to_vec(), 1.0).unwrap();
        let mut theta = vec![vec![0.0; cells.len()]];
        mirror_descent(
            oracle,
            &mut theta,
            std::slice::from_ref(&y),
            1.0,
            stop,
            None,
        )
    }

    /// [`Quadratic`] whose Frank–Wolfe bound is the given value.
    struct FixedBound(Quadratic, f64);

    impl Oracle for FixedBound {
        fn evaluate(&mut self, theta: &[Vec<f64>], marginals: &mut [Vec<f64>]) {
            self.0.evaluate(theta, marginals);
        }
        fn gradient(&mut self, grads: &[Vec<f64>], out: &mut [Vec<f64>]) {
            self.0.gradient(grads, out);
        }
        fn min_value(&mut self, _: &[Vec<f64>]) -> f64 {
            self.1
        }
    }

    /// A duality gap that is not finite is not convergence: the fit runs its
    /// steps and says it did not converge (`max(0.0)` alone turned a NaN gap,
    /// and a gap of −∞ from a bound of +∞, into 0, "converged").
    #[test]
    fn a_gap_that_is_not_finite_is_not_convergence() {
        let stop = Stop {
            iterations: 5,
            tolerance: 1.0,
            stall: 0.0,
            deadline: None,
        };
        for bound in [f64::NAN, f64::INFINITY] {
            let mut oracle = FixedBound(Quadratic { evaluations: 0 }, bound);
            let out = cold_fit(&mut oracle, &[1000.0], stop);
            assert!(!out.converged && out.iterations == 5, "{bound}: {out:?}");
            assert_eq!(out.gap, f64::INFINITY, "{bound}");
        }
    }

    /// The step doubles only after [`GROW_AFTER`] first-trial acceptances in a
    /// row (a cold start at once): trials of 2, 4, 8, 16, 32, 64 ✗ 32, 32, 32,
    /// 64 ✗ 32, 32 times 1/L₀ — 13 oracle calls in 10 steps (doubling after every
    /// first-trial acceptance took 14). A warm start at 4/L₀ tries 4, 4, 8, … .
    #[test]
    fn the_step_doubles_after_two_first_trial_acceptances() {
        let y = Measurement::new(Clique::new([0]).unwrap(), vec![1000.0], 1.0).unwrap();
        let eta_min = 0.5; // 1/L₀, L₀ = 2·n²/σ²
        for start in [None, Some(4.0 * eta_min)] {
            let mut oracle = Quadratic { evaluations: 0 };
            let mut theta = vec![vec![0.0]];
            let ys = std::slice::from_ref(&y);
            let out = mirror_descent(
                &mut oracle,
                &mut theta,
                ys,
                1.0,
                Stop {
                    iterations: 10,
                    tolerance: 0.0,
                    stall: 0.0,
                    deadline: None,
                },
                start,
            );
            assert_eq!((out.iterations, out.evaluations), (10, 13), "{start:?}");
            assert_eq!(oracle.evaluations, 13);
            assert_eq!(out.step, 32.0 * eta_min);
        }
    }

    /// A deadline already past stops the fit after its first step, or after the
    /// steps it must take first; one far ahead changes nothing.
    #[test]
    fn a_fit_stops_at_its_deadline() {
        let cells = [1000.0, 500.0, 250.0, 125.0];
        let fit = |deadline| {
            let stop = Stop {
                iterations: 50,
                tolerance: 0.0,
                stall: 0.0,
                deadline,
            };
            cold_fit(&mut Quadratic { evaluations: 0 }, &cells, stop)
        };
        assert_eq!(fit(Some((Instant::now(), 0))).iterations, 1);
        assert_eq!(fit(Some((Instant::now(), 7))).iterations, 7);
        let later = Instant::now() + std::time::Duration::from_secs(3600);
        let (free, bounded) = (fit(None), fit(Some((later, 0))));
        assert_eq!(free.iterations, 50);
        assert_eq!(free.loss.to_bits(), bounded.loss.to_bits());
    }

    /// With `stall`, the fit stops once [`STALL_STEPS`] steps in a row each
    /// lowered the loss by less than `stall × cells`, and not before: the
    /// four-cell quadratic's loss falls ninefold a step once the step has grown,
    /// so it stalls long before 100 steps; without, all 100 run.
    #[test]
    fn the_fit_stops_when_the_loss_stalls() {
        let cells = [1000.0, 500.0, 250.0, 125.0];
        // The fit of `iterations` steps from θ = 0, cold.
        let fit = |iterations: usize, stall: f64| {
            let stop = Stop {
                iterations,
                tolerance: 0.0,
                stall,
                deadline: None,
            };
            cold_fit(&mut Quadratic { evaluations: 0 }, &cells, stop)
        };
        let stall = 3e-4;
        assert_eq!(fit(100, 0.0).iterations, 100);
        let out = fit(100, stall);
        assert!(out.iterations < 100, "{out:?}");
        // Replay: the same fit step by step, each run one step longer, records
        // the loss after each step; the last STALL_STEPS fell by < stall × 4
        // cells, and no earlier run of STALL_STEPS did.
        let losses: Vec<f64> = (0..=out.iterations).map(|k| fit(k, stall).loss).collect();
        let small: Vec<bool> = losses
            .windows(2)
            .map(|w| w[0] - w[1] < stall * 4.0)
            .collect();
        assert!(
            small.iter().rev().take(STALL_STEPS).all(|&s| s),
            "{losses:?}"
        );
        assert!(
            !small[..small.len() - 1]
                .windows(STALL_STEPS)
                .any(|w| w.iter().all(|&s| s)),
            "{losses:?}"
        );
    }

    /// The trial step over several parallel chunks (and a partial last one) is
    /// the copy-and-update it replaced, bit for bit.
    #[test]
    fn the_step_is_theta_minus_eta_g_in_every_chunk() {
        let n = 3 * CHUNK.max(PARALLEL_CELLS) + 5;
        let theta: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let g: Vec<f64> = (0..n).map(|i| (i as f64 * 1.13).cos() * 1e3).collect();
        let eta = 1.7e-4;
        let mut out = vec![f64::NAN; n];
        step_into(&mut out, &theta, &g, eta);
        let mut want = theta.clone();
        want.iter_mut().zip(&g).for_each(|(x, &b)| *x -= eta * b);
        assert!(
            out.iter()
                .map(|x| x.to_bits())
                .eq(want.iter().map(|x| x.to_bits()))
        );
    }

    /// The step-size bound's weight is the measurement's largest cell weight: a
    /// bound too small (a weight under-stated) would let mirror descent step past
    /// the minimum.
    #[test]
    fn the_largest_cell_weight_bounds_the_step() {
        let clique = Clique::new([0]).unwrap();
        let plain = Measurement::new(clique.clone(), vec![1.0, 2.0], 2.0).unwrap();
        assert_eq!(max_weight(&plain), 0.25);
        let merged = |k: Vec<f64>| Measurement {
            clique: clique.clone(),
            values: vec![1.0; k.len()],
            sigma: 2.0,
            cell_variance: Some(k),
            groups: None,
        };
        // A kept value (k = 1) next to a merged one: the kept cell's 1/σ².
        assert_eq!(max_weight(&merged(vec![3.0, 1.0])), 0.25);
        // Every cell merged from at least two values: 1/(2σ²).
        assert_eq!(max_weight(&merged(vec![2.0, 5.0])), 0.125);
    }
}
