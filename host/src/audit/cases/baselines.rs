//! The distance-query baselines (privq's, the paper has none; `docs/src/distance.md`):
//! the tree CDF, Laplace per query, and MWEM on a grid.

use privq_core::Epsilon;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::distance::baselines::{GridMwem, GridMwemConfig, LaplacePerQuery, TreeCdf};
use crate::distance::privacy::Privacy;
use crate::distance::{BoxDomain, Columns};

/// n − 1 points at 1/2 and one record at `far` (0 on `D`, 1 on `D′`).
fn points(n: usize, far: f64) -> Vec<[f64; 1]> {
    std::iter::once([far])
        .chain(std::iter::repeat_n([0.5], n - 1))
        .collect()
}

/// Thresholds on `F(0) − F(1)` (outputs `i` and `j`) over `[lo, hi]` in steps of
/// `step`, both directions.
fn gap_events(i: usize, j: usize, lo: f64, hi: f64, step: f64) -> Vec<Event> {
    let steps = ((hi - lo) / step).round() as usize;
    (0..=steps)
        .flat_map(|s| {
            let u = lo + s as f64 * step;
            [
                Event::new(
                    format!("out[{i}] - out[{j}] >= {u:.3}"),
                    move |o: &[f64]| o[i] - o[j] >= u,
                ),
                Event::new(
                    format!("out[{i}] - out[{j}] <= {u:.3}"),
                    move |o: &[f64]| o[i] - o[j] <= u,
                ),
            ]
        })
        .collect()
}

/// The tree CDF (depth 2, four leaves) on the unit interval under replace-one:
/// n − 1 points spread evenly over the four leaves' centres (so no noisy CDF value
/// sits at a clamp) and one record at 0 on `D`, at 1 on `D′` — the move changes
/// the first and last leaf and both nodes of the level below the root. The output
/// is the answers at 0, 1/4, 1/2, 3/4, 1; the events threshold `F(0)`, `F(1)`,
/// `F(0) − F(1)` (which the move shifts by 2/n) and the noisy CDF values the
/// move lowers, read back from the answers, finely around the true values. The
/// released CDF uses the root rather than the last leaf and its parent, so only
/// 2 of the 6 charged units are visible here: the reachable ε is about 1/3.
pub fn tree_cdf(small: bool) -> Result<AuditCase, AuditError> {
    let n = if small { 21 } else { 41 };
    let depth = 2;
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let domain = BoxDomain::unit_cube(1).map_err(setup)?;
    let spread = |far: f64| -> Vec<[f64; 1]> {
        std::iter::once([far])
            .chain((0..n - 1).map(|i| [(i % 4) as f64 / 4.0 + 0.125]))
            .collect()
    };
    let (d, d_prime) = (
        Columns::new(&domain, &spread(0.0)).map_err(setup)?,
        Columns::new(&domain, &spread(1.0)).map_err(setup)?,
    );
    let step = 0.5 / n as f64;
    let mut events = gap_events(0, 4, -1.0, 1.0, step);
    // The noisy CDF at 1/4 and 1/2 read back from the answers (h = 1/4):
    // C(1/4) + C(1/2) = 4·(F(1/2) − F(1/4) + 1/4); both drop by 1/n on D′.
    let cdf_sum = |o: &[f64]| 4.0 * (o[2] - o[1] + 0.25);
    events.extend((0..=(2.0 / step).round() as usize).flat_map(|s| {
        let u = s as f64 * step;
        [
            Event::new(format!("C(1/4) + C(1/2) >= {u:.3}"), move |o: &[f64]| {
                cdf_sum(o) >= u
            }),
            Event::new(format!("C(1/4) + C(1/2) <= {u:.3}"), move |o: &[f64]| {
                cdf_sum(o) <= u
            }),
        ]
    }));
    events.extend((1..20).flat_map(|i| {
        let t = i as f64 / 20.0;
        [
            Event::at_least(0, t),
            Event::at_most(0, t),
            Event::at_least(4, t),
            Event::at_most(4, t),
        ]
    }));
    Ok(AuditCase::new(
        "tree-cdf",
        format!(
            "replace-one, n = {n}: n − 1 points at 1/8, 3/8, 5/8, 7/8; one record at 0 vs at 1; depth {depth}"
        ),
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism("TreeCdf (depth 2)")
    .run(move |side, rng| {
        let cols = if side == Side::D { &d } else { &d_prime };
        let mut accountant = Accountant::pure(eps);
        let tree = TreeCdf::release(cols, eps, depth, &mut accountant, rng)?;
        [0.0, 0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|&y| Ok(tree.answer(&[y])?))
            .collect()
    })
    .events(events))
}

/// Laplace per query with k = 4 queries, asked at 0, 1, 0, 1, on the pair of
/// [`grid_mwem`] (n points): every answer moves by the sensitivity 1/n, the ones
/// at 0 up and the ones at 1 down, so the k answers together attain the whole ε.
/// The events threshold `(a₀ + a₂) − (a₁ + a₃)`, which the move shifts by 4/n.
pub fn laplace_per_query(small: bool) -> Result<AuditCase, AuditError> {
    let n = if small { 10 } else { 20 };
    const QUERIES: [f64; 4] = [0.0, 1.0, 0.0, 1.0];
    let k = QUERIES.len();
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let privacy = Privacy::pure(eps);
    let domain = BoxDomain::unit_cube(1).map_err(setup)?;
    let (d, d_prime) = (
        Columns::new(&domain, &points(n, 0.0)).map_err(setup)?,
        Columns::new(&domain, &points(n, 1.0)).map_err(setup)?,
    );
    let stat = |o: &[f64]| o[0] + o[2] - o[1] - o[3];
    let step = 0.5 / n as f64;
    let steps = (4.0 / step).round() as usize;
    let events = (0..=steps).flat_map(move |s| {
        let u = -2.0 + s as f64 * step;
        [
            Event::new(
                format!("a0 + a2 - a1 - a3 >= {u:.3}"),
                move |o: &[f64]| stat(o) >= u,
            ),
            Event::new(
                format!("a0 + a2 - a1 - a3 <= {u:.3}"),
                move |o: &[f64]| stat(o) <= u,
            ),
        ]
    });
    Ok(AuditCase::new(
        "laplace-per-query",
        format!("replace-one, n = {n}: n − 1 points at 1/2; one record at 0 vs at 1; k = {k} queries at 0, 1, 0, 1"),
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism("Laplace per query")
    .run(move |side, rng| {
        let cols = if side == Side::D { &d } else { &d_prime };
        let mut accountant = Accountant::exactly(privacy.cost())?;
        let mut lap = LaplacePerQuery::new(cols, k, privacy, &mut accountant)?;
        QUERIES
            .iter()
            .map(|&y| Ok(lap.answer(cols, &[y], rng)?))
            .collect()
    })
    .events(events))
}

/// MWEM on a 1-D grid of 8 bins (3 rounds, 16 workload points, the default noisy
/// initialisation, which n = 100 makes informative) under replace-one: n − 1
/// points at 1/2 and one record at 0 on `D`, at 1 on `D′`, so it moves from the
/// first bin to the last. The output is the answers at 0, 1/16, 1/2, 15/16, 1;
/// the events threshold `F(0) − F(1)`, which the move shifts by 2·(7/8)/n,
/// finely around the true values.
pub fn grid_mwem(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let n = 100;
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let domain = BoxDomain::unit_cube(1).map_err(setup)?;
    let config = GridMwemConfig {
        workload: 16,
        rounds: Some(3),
        ..GridMwemConfig::new(eps, 8)
    };
    let (d, d_prime) = (points(n, 0.0), points(n, 1.0));
    let mut events = gap_events(0, 4, -0.2, 0.2, 0.005);
    events.extend(gap_events(0, 4, -1.0, 1.0, 0.1));
    Ok(AuditCase::new(
        "grid-mwem",
        format!(
            "replace-one, n = {n}: n − 1 points at 1/2; one record at 0 vs at 1; 8 bins, T = 3"
        ),
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism("MWEM on a grid (8 bins)")
    .run(move |side, rng| {
        let pts = if side == Side::D { &d } else { &d_prime };
        let mut accountant = Accountant::pure(eps);
        let m = GridMwem::release(&domain, pts, &config, &mut accountant, rng)?;
        [0.0, 1.0 / 16.0, 0.5, 15.0 / 16.0, 1.0]
            .iter()
            .map(|&y| Ok(m.answer(&[y])?))
            .collect()
    })
    .events(events))
}
