//! The d_X-private mechanisms (Kamalaruban et al.; `docs/src/dx.md`): Laplace,
//! SmallDB, MWEM.

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::dx::{DxLaplace, DxMwem, FiniteMetric, Queries, SmallDb};
use privq_core::Epsilon;

/// The neighbouring histograms of the d_X cases on points 0, 1, 3: one record
/// moves from point 0 (on `D`) to point 1 (on `D′`), at distance d(0, 1) = 1.
fn moved_record(side: Side) -> [u64; 3] {
    if side == Side::D {
        [5, 2, 3]
    } else {
        [4, 3, 3]
    }
}

/// The d_X Laplace case's query: positions scaled by 1/3 (0, 1/3, 1 on the points
/// 0, 1, 3), so its coefficient gaps (1/3, 2/3, 1) are not multiples of any
/// power-of-two grid and neither neighbour's answer is on the grid.
fn thirds() -> Result<Queries, AuditError> {
    Queries::new(vec![vec![0.0, 1.0 / 3.0, 1.0]]).map_err(setup)
}

/// Theorem 1's scale for [`thirds`]: every pair's `|Δq|/d` is 1/3 (a hair above,
/// so float rounding of the thirds cannot fail the check).
const THIRDS_C: f64 = (1.0 / 3.0) * (1.0 + 1e-12);

/// d_X Laplace over three points on a line (d = |u_i − u_j|) with the query
/// (0, 1/3, 1) at Theorem 1's scale c = 1/3: one record moves from point 0 to
/// point 1, so the claim is ε = d(0, 1) = 1 and the answer moves by exactly c·d.
/// The coefficients are off the grid (thirds): the grid-level calibration
/// `⌈|ΔQ̃|/γ⌉/m ≤ d` rounds up on every pair and both answers are snapped. Events:
/// tails beyond both answers (3 + 2/3 and 4), where the ratio is the full `e^ε`.
pub fn dx_laplace(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let metric = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).map_err(setup)?;
    let mech = DxLaplace::new(&metric, thirds()?, vec![THIRDS_C]).map_err(setup)?;
    dx_laplace_case(mech, Epsilon::new(3, 1).map_err(setup)?, "DxLaplace")
}

/// The d_X Laplace case for a mechanism (the real one, or a twin), each run charged
/// to a budget of `charge`.
pub(crate) fn dx_laplace_case(
    mech: DxLaplace,
    charge: Epsilon,
    label: &str,
) -> Result<AuditCase, AuditError> {
    let events = (0..4).flat_map(|j| {
        let step = f64::from(j) / 6.0;
        [
            Event::at_least(0, 4.0 + 1.0 / 12.0 + step),
            Event::at_most(0, 3.0 + 2.0 / 3.0 - 1.0 / 12.0 - step),
        ]
    });
    Ok(AuditCase::new(
        "dx-laplace",
        "counts [5, 2, 3] vs [4, 3, 3] on points 0, 1, 3; d(0, 1) = 1; query (0, 1/3, 1), c = 1/3",
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let counts = moved_record(side);
        let mut accountant = Accountant::pure(charge);
        Ok(mech.release(&counts, &mut accountant, rng)?)
    })
    .events(events))
}

/// The metric of the d_X cases: points 0, 1, 3 on a line, and two queries that are
/// 1-Lipschitz in it (the positions, and a step between the first two points).
fn line() -> Result<(FiniteMetric, Queries), AuditError> {
    let metric = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).map_err(setup)?;
    let queries = Queries::new(vec![vec![0.0, 1.0, 3.0], vec![0.0, 1.0, 1.0]]).map_err(setup)?;
    Ok((metric, queries))
}

/// d_X SmallDB (c = 1, α = 0.7, so m = 2: six candidate databases) on the metric
/// of [`dx_laplace`]: counts [2, 1, 1] vs [1, 2, 1], one record moves from point 0
/// to point 1, so the claim is ε = d(0, 1) = 1; both queries move by the full
/// distance. The output is the chosen synthetic histogram (its code and cells).
pub fn smalldb(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let (metric, queries) = line()?;
    let db = SmallDb::new(queries, 1.0, 0.7).map_err(setup)?;
    smalldb_case(
        db,
        metric,
        Epsilon::new(3, 1).map_err(setup)?,
        "d_X SmallDB",
    )
}

/// The SmallDB case for a database mechanism checked against `metric` (the real
/// one, or a twin), each run charged `charge`; the claim is d(0, 1) = 1.
pub(crate) fn smalldb_case(
    db: SmallDb,
    metric: FiniteMetric,
    charge: Epsilon,
    label: &str,
) -> Result<AuditCase, AuditError> {
    let m = db.size() as u64;
    let base = (m + 1) as f64;
    let mut events: Vec<Event> = (0..(m + 1).pow(3))
        .map(|code| Event::equals(0, code as f64))
        .collect();
    events.extend((1..=3).flat_map(|i| {
        (0..=m).flat_map(move |v| [Event::at_least(i, v as f64), Event::at_most(i, v as f64)])
    }));
    Ok(AuditCase::new(
        "smalldb",
        format!("counts [2, 1, 1] vs [1, 2, 1] on points 0, 1, 3; d(0, 1) = 1; m = {m}"),
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let counts: [u64; 3] = if side == Side::D {
            [2, 1, 1]
        } else {
            [1, 2, 1]
        };
        let mut accountant = Accountant::pure(charge);
        let out = db.run(&metric, &counts, &mut accountant, rng)?;
        let y: Vec<f64> = out.synthetic.iter().map(|&v| v as f64).collect();
        let code = y.iter().fold(0.0, |acc, &v| acc * base + v);
        Ok(std::iter::once(code).chain(y).collect())
    })
    .events(events))
}

/// The d_X MWEM pair: one record moves from point 0 to point 1. Both queries'
/// answers rise by the distance 1, but the positions' answer (11 → 12) moves
/// towards the uniform start's 13⅓ while the step's (7 → 8) moves away from its
/// 6⅔, so the two selection scores move in opposite directions (the exponential
/// mechanism's worst case).
const DX_MWEM_PAIR: ([u64; 3], [u64; 3]) = ([3, 5, 2], [2, 6, 2]);

/// d_X MWEM (c = 1, T = 1) on the metric of [`dx_laplace`] with the pair
/// ([3, 5, 2] vs [2, 6, 2]), claim ε = d(0, 1) = 1. One round: the selection and the
/// measurement each at d_X/2, and the synthetic histogram (one MW step from the
/// uniform start) reveals the measurement given the choice. The output is the
/// synthetic histogram, the released answers and the query chosen; the events
/// threshold the changed cells and the position sum finely, and the choice. (At
/// T = 2 the average of two iterates blurs the measurements: the old case read
/// 0.24, and the twin below 0.59.)
pub fn dx_mwem(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let (metric, queries) = line()?;
    dx_mwem_case(DxMwemSetup {
        queries,
        metric,
        rounds: 1,
        pair: DX_MWEM_PAIR,
        steep: 1.0,
        charge: Epsilon::new(3, 1).map_err(setup)?,
        label: "d_X MWEM",
    })
}

/// What a d_X MWEM case runs: the queries `Q'` checked against `metric`, the
/// rounds, the pair, how much steeper than the real case's the queries are (the
/// position-sum events scale with it), each run's charge and the label.
pub(crate) struct DxMwemSetup {
    pub(crate) queries: Queries,
    pub(crate) metric: FiniteMetric,
    pub(crate) rounds: usize,
    pub(crate) pair: ([u64; 3], [u64; 3]),
    pub(crate) steep: f64,
    pub(crate) charge: Epsilon,
    pub(crate) label: &'static str,
}

/// The d_X MWEM case for a setup (the real one, or a twin); the claim is
/// d(0, 1) = 1.
pub(crate) fn dx_mwem_case(s: DxMwemSetup) -> Result<AuditCase, AuditError> {
    let DxMwemSetup {
        queries,
        metric,
        rounds,
        pair,
        steep,
        charge,
        label,
    } = s;
    let mech = DxMwem::new(queries, 1.0, rounds).map_err(setup)?;
    let mut events = Vec::new();
    for s in 0..=40 {
        let t = s as f64 / 4.0;
        events.extend([
            Event::at_least(0, t),
            Event::at_most(0, t),
            Event::at_least(1, t),
            Event::at_most(1, t),
        ]);
    }
    for s in 0..=48 {
        let t = (6.0 + s as f64 / 4.0) * steep;
        events.extend([Event::at_least(3, t), Event::at_most(3, t)]);
    }
    for r in 0..rounds {
        events.extend([Event::equals(5 + r, 0.0), Event::equals(5 + r, 1.0)]);
    }
    Ok(AuditCase::new(
        "dx-mwem",
        format!(
            "counts {:?} vs {:?} on points 0, 1, 3; d(0, 1) = 1; T = {rounds}",
            pair.0, pair.1
        ),
        Claim::Pure(1.0),
        50_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let counts = if side == Side::D { pair.0 } else { pair.1 };
        let mut accountant = Accountant::pure(charge);
        let out = mech.run(&metric, &counts, &mut accountant, rng)?;
        Ok(out
            .synthetic
            .iter()
            .chain(&out.answers)
            .copied()
            .chain(out.chosen.iter().map(|&k| k as f64))
            .collect())
    })
    .events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::cases::twins::check;

    /// d_X MWEM's twin with each of its two steps (selection, measurement) at d_X
    /// instead of d_X/(2T): queries twice as steep pass Theorem 7 on the metric 2d,
    /// so both steps see twice the distance the claim d(0, 1) = 1 allows.
    #[test]
    fn the_auditor_flags_the_whole_budget_per_step_twin_of_dx_mwem() {
        let twice = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 2.0).unwrap();
        let steep = Queries::new(vec![vec![0.0, 2.0, 6.0], vec![0.0, 2.0, 2.0]]).unwrap();
        let twin = dx_mwem_case(DxMwemSetup {
            queries: steep,
            metric: twice,
            rounds: 1,
            pair: DX_MWEM_PAIR,
            steep: 2.0,
            charge: Epsilon::new(6, 1).unwrap(),
            label: "twin: each step at d_X",
        })
        .unwrap();
        check(
            "dx-mwem",
            &dx_mwem(true).unwrap(),
            &[("each step at d_X instead of d_X/2", &twin)],
        );
    }

    /// The d_X Laplace twin calibrated for twice the metric (half the noise) is
    /// flagged; the real mechanism passes.
    #[test]
    fn the_auditor_flags_the_half_noise_twin_of_dx_laplace() {
        let twice = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 2.0).unwrap();
        let twin = DxLaplace::new(&twice, thirds().unwrap(), vec![THIRDS_C / 2.0]).unwrap();
        let twin =
            dx_laplace_case(twin, Epsilon::new(6, 1).unwrap(), "twin: half the noise").unwrap();
        let real = dx_laplace(true).unwrap();
        check("dx-laplace", &real, &[("half the noise", &twin)]);
    }

    /// SmallDB's twin checked against the wrong metric: queries twice as steep
    /// (0, 2, 6 and 0, 2, 2) pass Theorem 5 on the metric 2d, so the utilities move
    /// twice as far between the neighbours as the claim d(0, 1) = 1 allows.
    #[test]
    fn the_auditor_flags_the_wrong_metric_twin_of_smalldb() {
        let twice = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 2.0).unwrap();
        let steep = Queries::new(vec![vec![0.0, 2.0, 6.0], vec![0.0, 2.0, 2.0]]).unwrap();
        let db = SmallDb::new(steep, 1.0, 0.7).unwrap();
        let twin = smalldb_case(db, twice, Epsilon::new(6, 1).unwrap(), "twin").unwrap();
        check(
            "smalldb",
            &smalldb(true).unwrap(),
            &[("the wrong metric", &twin)],
        );
    }

    /// The ceiling of the grid-level calibration is exercised: the pair's answers
    /// differ by a gap that is not a whole number of grid steps, the snapped gap is
    /// its ceiling or floor, and the exact lattice loss `|s − t|/m` stays within
    /// d = 1. (A calibration by the floor deploys at most one step in m ≥ 1 024 less
    /// noise: a loss 2⁻¹⁰ above the claim, far below what sampling can resolve, so
    /// this exact check, not the auditor, pins the ceiling.)
    #[test]
    fn the_dx_laplace_case_exercises_the_grid_ceiling() {
        let metric = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).unwrap();
        let mech = DxLaplace::new(&metric, thirds().unwrap(), vec![THIRDS_C]).unwrap();
        let (s, m) = mech.snapped(0, &moved_record(Side::D)).unwrap();
        let (t, _) = mech.snapped(0, &moved_record(Side::DPrime)).unwrap();
        let gamma = mech.scale(0) / m as f64;
        let exact = mech.exact_answers(&moved_record(Side::DPrime)).unwrap()[0]
            - mech.exact_answers(&moved_record(Side::D)).unwrap()[0];
        let steps = exact / gamma;
        assert!(steps.fract() > 0.01 && steps.fract() < 0.99, "{steps}");
        let gap = (t - s).unsigned_abs() as f64;
        assert!(
            gap == steps.floor() || gap == steps.ceil(),
            "{gap} vs {steps}"
        );
        assert!(gap / m as f64 <= 1.0, "{gap}/{m}");
        assert!(steps.ceil() / m as f64 <= 1.0 && mech.loss_ratio() <= 1.0);
        // The ceiling is what binds: on this mechanism, other neighbours with the
        // same move (0 → 1), [6, 1, 3] vs [5, 2, 3], snap a whole ⌈ΔQ̃/γ⌉ steps apart,
        // and the calibration counted exactly that: the lattice loss of that pair
        // is the claim d = 1 up to the float margin of the check (one step in m).
        let (s, _) = mech.snapped(0, &[6, 1, 3]).unwrap();
        let (t, _) = mech.snapped(0, &[5, 2, 3]).unwrap();
        let ceiling = (t - s).unsigned_abs() as f64;
        assert_eq!(ceiling, steps.ceil());
        assert!(ceiling / m as f64 <= 1.0, "{ceiling}/{m}");
        assert!(ceiling / m as f64 >= 1.0 - 1.5 / m as f64, "{ceiling}/{m}");
    }
}
