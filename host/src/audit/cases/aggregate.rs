//! The cases for private statistics by group (`aggregate`, `privq sql`): one per
//! safeguard its guarantee rests on — contribution bounding, clamping, private
//! group selection, the quantile's noise, the variance's centred squares and a
//! histogram's bins as bounded group keys (one bin, and every bin) — each
//! on the add/remove-one-unit pair that safeguard is most fragile against, and the
//! broken twins they must catch.
//!
//! Every case runs the public API (`Plan::builder(..).build(ε)`,
//! `Table::from_csv`, `plan.release`) end to end. The twins are the same plans
//! with one safeguard defeated through public parameters (limits set huge with the
//! noise of small ones, a δ that lowers τ by one, twice the ε for the quantile), or,
//! for clamping and the squares' noise, which no parameter reaches alone, a
//! line-by-line mimic of the measurement without the clamp or with the squares'
//! noise for g·r·Δ·H instead of g·r·Δ·H² (each checked against the faithful mimic).

use privq_core::Epsilon;

use super::setup;
use crate::aggregate::{
    Aggregate, Binning, Bounds, Contribution, Groups, Plan, Query, Release, Table,
};
use crate::audit::{AuditCase, AuditError, Claim, Event, RunError, Side};

/// The two tables of a pair, read with the plan's columns.
fn tables(plan: &Plan, d: &str, d_prime: &str) -> Result<[Table; 2], AuditError> {
    let read = |csv: &str| Table::from_csv(csv.as_bytes(), &plan.columns(), 1 << 24);
    Ok([read(d).map_err(setup)?, read(d_prime).map_err(setup)?])
}

/// One release of `plan` on the side's table, under the plan's own accountant.
fn release(
    plan: &Plan,
    [d, d_prime]: &[Table; 2],
    side: Side,
    rng: &mut rand_chacha::ChaCha12Rng,
) -> Result<Release, RunError> {
    let table = if side == Side::D { d } else { d_prime };
    Ok(plan.release(table, rng)?.0)
}

/// Every released row's first estimate, in release order (a single-aggregate query's
/// output per group).
fn first_estimates(
    plan: &Plan,
    pair: &[Table; 2],
    side: Side,
    rng: &mut rand_chacha::ChaCha12Rng,
) -> Result<Vec<f64>, RunError> {
    let r = release(plan, pair, side, rng)?;
    Ok(r.rows()
        .iter()
        .map(|row| row.estimates()[0].value())
        .collect())
}

fn bounds(text: &str) -> Result<Bounds, AuditError> {
    text.parse().map_err(setup)
}

// --- 1. A heavy unit: contribution bounding. -------------------------------------

/// Light units in D (ten in `a`, five in `b`); D′ adds one unit with `heavy` rows.
fn heavy_tables(heavy: usize) -> (String, String) {
    let mut d = String::from("device,region\n");
    for i in 0..15 {
        d.push_str(&format!("u{i},{}\n", if i < 10 { "a" } else { "b" }));
    }
    let mut d_prime = d.clone();
    d_prime.push_str(&"heavy,a\n".repeat(heavy));
    (d, d_prime)
}

/// `COUNT(*) GROUP BY region` over the public keys `a`, `b`, at total ε.
fn heavy_plan(limits: Contribution, eps: Epsilon) -> Result<Plan, AuditError> {
    Plan::builder(Query::new(["region"], [("n", Aggregate::Count)]))
        .privacy_unit("device", limits)
        .groups(Groups::public([["a"], ["b"]]))
        .build(eps)
        .map_err(setup)
}

fn heavy_case(plan: Plan, heavy: usize, claim: Claim, runs: u64) -> Result<AuditCase, AuditError> {
    let (d, d_prime) = heavy_tables(heavy);
    let pair = tables(&plan, &d, &d_prime)?;
    let limits = plan.contribution();
    Ok(AuditCase::new(
        "aggregate-heavy-unit",
        format!(
            "add/remove one unit: ten units in group a vs the same and one unit with {heavy} \
             rows in a"
        ),
        claim,
        runs,
    )
    .mechanism(format!(
        "aggregate COUNT by public group (at most {} group(s), {} row(s) per unit)",
        limits.max_groups(),
        limits.max_rows()
    ))
    .run(move |side, rng| first_estimates(&plan, &pair, side, rng))
    // The bounded count of a is 10 on D and 12 on D′; ≥ 12 are the tail events
    // with the full ratio e^ε, ≥ 30 catches any unbounded leak.
    .events(
        (10..=14)
            .chain([30])
            .map(|t| Event::at_least(0, f64::from(t))),
    ))
}

/// One unit with 10 000 rows in one group, at most 2 rows per unit (1 group):
/// `COUNT(*) GROUP BY region` with public keys, ε = 1. Bounding caps the unit at
/// 2 rows, so the count of `a` is 10 on D and 12 on D′ under noise of scale 2:
/// the tail events `count ≥ t`, t ≥ 12, carry the full ratio e^ε.
pub fn aggregate_heavy_unit(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let plan = heavy_plan(Contribution::new(1, 2).map_err(setup)?, eps)?;
    heavy_case(
        plan,
        10_000,
        Claim::Pure(1.0),
        if small { 4_000 } else { 50_000 },
    )
}

// --- 2. An outlier: clamping. -----------------------------------------------------

/// Readings in `[0, 100]` (grid 1/16: 1 600 steps); twenty units read 0 once each.
/// D′ adds a unit with three readings of 10⁹.
const OUTLIER: f64 = 1e9;

fn outlier_tables() -> (String, String) {
    let mut d = String::from("device,temp\n");
    for i in 0..20 {
        d.push_str(&format!("u{i},0\n"));
    }
    let mut d_prime = d.clone();
    d_prime.push_str(&format!("rogue,{OUTLIER}\n").repeat(3));
    (d, d_prime)
}

/// `SUM(temp), AVG(temp)` over the whole table, temp in `[0, 100]`, at most 2 rows
/// per unit, ε = 1 (split over the sum, the count and the centred sum).
fn outlier_plan() -> Result<Plan, AuditError> {
    let query = Query::new(
        Vec::<String>::new(),
        [
            ("total", Aggregate::Sum("temp".into())),
            ("mean", Aggregate::Mean("temp".into())),
        ],
    );
    Plan::builder(query)
        .privacy_unit("device", Contribution::new(1, 2).map_err(setup)?)
        .bounds("temp", bounds("0:100")?)
        .build(Epsilon::new(1, 1).map_err(setup)?)
        .map_err(setup)
}

/// Output `[sum, mean]`. On D the sum is 0 and the mean 0; clamped, D′'s unit adds
/// 200 to the sum (2 rows at 100: its full sensitivity) and raises the mean, through
/// both the centred sum and the count, to about 9.1.
fn outlier_events() -> Vec<Event> {
    let mut events: Vec<Event> = [100.0, 200.0, 400.0, 800.0, 1600.0]
        .into_iter()
        .map(|t| Event::at_least(0, t))
        .collect();
    events.extend([10.0, 20.0, 40.0, 80.0].map(|t| Event::at_least(1, t)));
    for (s, m) in [(200.0, 20.0), (400.0, 40.0), (800.0, 40.0)] {
        events.push(Event::new(
            format!("sum >= {s} and mean >= {m}"),
            move |o: &[f64]| o.len() == 2 && o[0] >= s && o[1] >= m,
        ));
    }
    events
}

fn outlier_case(
    run: impl Fn(Side, &mut rand_chacha::ChaCha12Rng) -> Result<Vec<f64>, RunError>
    + Send
    + Sync
    + 'static,
    label: &str,
) -> AuditCase {
    AuditCase::new(
        "aggregate-outlier",
        "add/remove one unit: twenty units reading 0 vs the same and one unit with three \
         readings of 1e9 (bounds 0:100, 2 rows per unit)",
        Claim::Pure(1.0),
        200_000,
    )
    .mechanism(label)
    .run(run)
    .events(outlier_events())
}

/// `SUM` and `AVG` of a column bounded to `[0, 100]`, ε = 1, with an outlier far
/// outside the bounds in D′ (clamping must cap its effect at the bound).
pub fn aggregate_outlier(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let plan = outlier_plan()?;
    let (d, d_prime) = outlier_tables();
    let pair = tables(&plan, &d, &d_prime)?;
    Ok(outlier_case(
        move |side, rng| {
            let r = release(&plan, &pair, side, rng)?;
            Ok(r.rows()[0].estimates().iter().map(|e| e.value()).collect())
        },
        "aggregate SUM and AVG (clamped grid sums, discrete Laplace)",
    ))
}

// --- 3. A rare key: private group selection. --------------------------------------

/// δ just above `P[Z ≥ 6] = e^{−3}/(1 + e^{−1/2}) ≈ 0.030991` for the selection's
/// noise (scale 2: ε/2 = 1/2 of the budget, one group per unit): τ = 7 is then
/// tight, and a key held by one unit is released with probability 0.9997·δ.
const RARE_DELTA: f64 = 0.031;

fn rare_tables() -> (String, String) {
    let mut d = String::from("patient,site\n");
    for i in 0..30 {
        d.push_str(&format!("p{i},a\np{i},a\n"));
    }
    let mut d_prime = d.clone();
    d_prime.push_str("rare,zz\nrare,zz\n");
    (d, d_prime)
}

/// `COUNT(*) GROUP BY site` with privately selected groups at (ε, δ), one group and
/// two rows per unit.
fn rare_plan(delta: f64) -> Result<Plan, AuditError> {
    Plan::builder(Query::new(["site"], [("n", Aggregate::Count)]))
        .privacy_unit("patient", Contribution::new(1, 2).map_err(setup)?)
        .groups(Groups::Private { delta })
        .build(Epsilon::new(1, 1).map_err(setup)?)
        .map_err(setup)
}

fn rare_case(plan: Plan, delta: f64) -> Result<AuditCase, AuditError> {
    let (d, d_prime) = rare_tables();
    let pair = tables(&plan, &d, &d_prime)?;
    let tau = plan.threshold().unwrap_or(0);
    Ok(AuditCase::new(
        "aggregate-rare-group",
        format!(
            "add/remove one unit: thirty units at site a vs the same and one unit at a site \
             zz nobody else has (threshold {tau})"
        ),
        Claim::Approximate {
            epsilon: 1.0,
            delta,
        },
        200_000,
    )
    .mechanism("aggregate COUNT by privately selected group")
    .run(move |side, rng| {
        let r = release(&plan, &pair, side, rng)?;
        let zz = r.rows().iter().find(|row| row.key()[0] == "zz");
        Ok(vec![
            f64::from(u8::from(zz.is_some())),
            zz.map_or(f64::NAN, |row| row.estimates()[0].value()),
        ])
    })
    // The rare key released (with probability ≤ δ on D′, never on D) and, among
    // those releases, with a count that looks like one unit's.
    .events([
        Event::equals(0, 1.0),
        Event::equals(0, 0.0),
        Event::new("zz released with count <= 4", |o: &[f64]| {
            o[0] == 1.0 && o[1] <= 4.0
        }),
    ]))
}

/// Private groups: D′ adds a unit holding a key no other unit has. That key must
/// appear with probability at most δ; the claim is (ε, δ) = (1, 0.031), δ set so
/// that τ is tight (the auditor's bound is δ-adjusted: `ln((p − δ)/q)`).
pub fn aggregate_rare_group(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    rare_case(rare_plan(RARE_DELTA)?, RARE_DELTA)
}

// --- 4. A quantile at a data gap: the quantile's noise. ---------------------------

fn quantile_tables() -> (String, String) {
    let mut d = String::from("unit,x\n");
    for i in 0..20 {
        d.push_str(&format!("u{i},{}\n", if i < 18 { 0 } else { 60 }));
    }
    let mut d_prime = d.clone();
    d_prime.push_str("new,95\n");
    (d, d_prime)
}

/// `QUANTILE(x, 0.9)` over `[0, 100]` with the public candidates 0, 25, 50, 75,
/// 100, at total ε.
fn quantile_plan(eps: Epsilon) -> Result<Plan, AuditError> {
    let q = Aggregate::quantile("x", 0.9).map_err(setup)?;
    Plan::builder(Query::new(Vec::<String>::new(), [("p90", q)]))
        .bounds("x", bounds("0:100")?)
        .quantile_candidates(4)
        .build(eps)
        .map_err(setup)
}

fn quantile_case(plan: Plan) -> Result<AuditCase, AuditError> {
    let (d, d_prime) = quantile_tables();
    let pair = tables(&plan, &d, &d_prime)?;
    Ok(AuditCase::new(
        "aggregate-quantile-gap",
        "add/remove one unit: 18 values at 0 and 2 at 60 (the 0.9-quantile anywhere in the \
         gap [0, 60)) vs the same and one value at 95",
        Claim::Pure(1.0),
        200_000,
    )
    .mechanism("aggregate QUANTILE (report noisy max over 5 public candidates)")
    .run(move |side, rng| {
        let r = release(&plan, &pair, side, rng)?;
        Ok(vec![r.rows()[0].estimates()[0].value()])
    })
    .events(
        [0.0, 25.0, 50.0, 75.0, 100.0]
            .into_iter()
            .map(|c| Event::equals(0, c))
            .chain([Event::at_least(0, 75.0)]),
    ))
}

/// `QUANTILE(x, 0.9)` at a data gap, ε = 1, one row per unit. In scores
/// `−|#{x ≤ c} − q·n|` (in rows) the candidates 0–50 inside the gap score 0 on D and
/// −0.9 on D′, while 75 rises from −2 to −1.1: a relative move of 1.8 rows, close to
/// the 2·Δ the noise's factor 2 pays for (at the median no pair moves two scores
/// apart by more than Δ, so halving the noise there is no violation). The true loss
/// of the event "75 is released" is about 0.83 of ε = 1, and 1.73 at half the noise.
pub fn aggregate_quantile_gap(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    quantile_case(quantile_plan(Epsilon::new(1, 1).map_err(setup)?)?)
}

// --- 5. A unit at the bound: the variance's centred sum of squares. -------------

/// Units in D, each reading the midpoint 50 of `[0, 100]` once (centred value 0).
const EDGE_UNITS: usize = 50;

/// D: fifty units at the midpoint; D′ adds a unit with three readings at the bound
/// 100 (two kept by bounding), centred value H = 50 (800 grid steps) each.
fn edge_tables() -> (String, String) {
    let mut d = String::from("device,temp\n");
    for i in 0..EDGE_UNITS {
        d.push_str(&format!("u{i},50\n"));
    }
    let mut d_prime = d.clone();
    d_prime.push_str(&"edge,100\n".repeat(3));
    (d, d_prime)
}

/// `VARIANCE(temp)` over the whole table, temp in `[0, 100]`, at most 2 rows per
/// unit, ε = 1 (a third each for the count, the centred sum and the centred sum of
/// squares).
fn edge_plan() -> Result<Plan, AuditError> {
    let query = Query::new(
        Vec::<String>::new(),
        [("var", Aggregate::Variance("temp".into()))],
    );
    Plan::builder(query)
        .privacy_unit("device", Contribution::new(1, 2).map_err(setup)?)
        .bounds("temp", bounds("0:100")?)
        .build(Epsilon::new(1, 1).map_err(setup)?)
        .map_err(setup)
}

/// Output `[variance]`, in temp². On D it is the noise's `s2/n − (s1/n)²` clamped
/// at 0, the squares' noise (scale 3·2·800² steps², 150 temp² after dividing by
/// n = 50) dominating; D′'s unit raises the centred squares by 2·H² (its full
/// sensitivity), the variance by about 2·50²/52 ≈ 96 temp², while its count and
/// centred sum move it by little.
fn edge_events() -> Vec<Event> {
    [25.0, 50.0, 100.0, 200.0, 300.0, 400.0, 600.0, 800.0]
        .into_iter()
        .map(|t| Event::at_least(0, t))
        .collect()
}

fn edge_case(
    run: impl Fn(Side, &mut rand_chacha::ChaCha12Rng) -> Result<Vec<f64>, RunError>
    + Send
    + Sync
    + 'static,
    label: &str,
) -> AuditCase {
    AuditCase::new(
        "aggregate-variance-edge",
        "add/remove one unit: fifty units reading the midpoint 50 vs the same and one unit \
         with three readings at the bound 100 (bounds 0:100, 2 rows per unit)",
        Claim::Pure(1.0),
        200_000,
    )
    .mechanism(label)
    .run(run)
    .events(edge_events())
}

/// `VARIANCE` of a column bounded to `[0, 100]`, ε = 1, with D′ adding a unit at the
/// bound to units at the midpoint: the centred squares move by their whole
/// sensitivity g·r·Δ·H² while the variance's other two totals barely matter.
pub fn aggregate_variance_edge(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let plan = edge_plan()?;
    let (d, d_prime) = edge_tables();
    let pair = tables(&plan, &d, &d_prime)?;
    Ok(edge_case(
        move |side, rng| {
            let r = release(&plan, &pair, side, rng)?;
            Ok(vec![r.rows()[0].estimates()[0].value()])
        },
        "aggregate VARIANCE (count, centred sum and centred sum of squares, discrete Laplace)",
    ))
}

// --- 6. A heavy unit in one bin: a histogram's bins are bounded group keys. -------

/// The histogram's edges: bins `[0, 10)`, `[10, 20)`, `[20, 30]`.
const HIST_EDGES: [f64; 4] = [0.0, 10.0, 20.0, 30.0];

/// Readings of the value outside the edges D′'s heavy unit holds.
const HIST_HEAVY: usize = 10_000;

/// D: ten units with one reading each, at 5, 15, 25, 5, … (4, 3 and 3 per bin). D′
/// adds one unit with 10 000 readings of 10⁹, far above the last edge: clamped into
/// the last bin, never dropped.
fn histogram_tables() -> (String, String) {
    let mut d = String::from("device,temp\n");
    for i in 0..10 {
        d.push_str(&format!("u{i},{}\n", [5, 15, 25][i % 3]));
    }
    let mut d_prime = d.clone();
    d_prime.push_str(&"heavy,1e9\n".repeat(HIST_HEAVY));
    (d, d_prime)
}

/// `COUNT(*) GROUP BY BIN(temp, 0, 10, 20, 30)` (every bin public, from the edges)
/// at total ε.
fn histogram_plan(limits: Contribution, eps: Epsilon) -> Result<Plan, AuditError> {
    let bins = Binning::new("temp", &HIST_EDGES).map_err(setup)?;
    let query = Query::new(Vec::<String>::new(), [("n", Aggregate::Count)]).bin("band", bins);
    Plan::builder(query)
        .privacy_unit("device", limits)
        .build(eps)
        .map_err(setup)
}

fn histogram_case(plan: Plan, runs: u64) -> Result<AuditCase, AuditError> {
    let (d, d_prime) = histogram_tables();
    let pair = tables(&plan, &d, &d_prime)?;
    let limits = plan.contribution();
    Ok(AuditCase::new(
        "aggregate-histogram",
        format!(
            "add/remove one unit: ten units across the bins [0, 10), [10, 20), [20, 30] vs \
             the same and one unit with {HIST_HEAVY} readings of 1e9 (clamped into the last bin)"
        ),
        Claim::Pure(1.0),
        runs,
    )
    .mechanism(format!(
        "aggregate histogram: COUNT by BIN over public edges (at most {} bin(s), {} row(s) \
         per bin per unit)",
        limits.max_groups(),
        limits.max_rows()
    ))
    .run(move |side, rng| first_estimates(&plan, &pair, side, rng))
    // The last bin's bounded count is 3 on D and 5 on D′ under noise of scale 2:
    // `≥ t` for t ≥ 5 carries the full ratio e^ε; ≥ 30 catches an unbounded unit.
    .events(
        (3..=7)
            .chain([30])
            .map(|t| Event::at_least(2, f64::from(t))),
    ))
}

/// A histogram (`COUNT(*)` by `BIN(temp, 0, 10, 20, 30)`, all three bins public), at
/// most 1 bin and 2 rows per unit, ε = 1: D′ adds one unit with 10 000 readings far
/// outside the edges, all clamped into the last bin. Bounding caps the unit at 2
/// rows in one bin, so the last bin's count moves by 2 under noise of scale 2.
pub fn aggregate_histogram(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let plan = histogram_plan(Contribution::new(1, 2).map_err(setup)?, eps)?;
    histogram_case(plan, if small { 4_000 } else { 50_000 })
}

// --- 7. A heavy unit in every bin: bins count toward max_groups. ----------------

/// Readings of each value D′'s spread unit holds.
const SPREAD_ROWS: usize = 3_000;

/// D's count in each bin (the ten units of [`histogram_tables`]).
const SPREAD_LIGHT: [f64; 3] = [4.0, 3.0, 3.0];

/// D: the ten units of [`histogram_tables`]. D′ adds one unit with 3 000 readings
/// each of −10⁹, 15 and 10⁹: rows in every bin, two of the three values clamped
/// into the end bins.
fn spread_tables() -> (String, String) {
    let (d, _) = histogram_tables();
    let mut d_prime = d.clone();
    for v in ["-1e9", "15", "1e9"] {
        d_prime.push_str(&format!("heavy,{v}\n").repeat(SPREAD_ROWS));
    }
    (d, d_prime)
}

fn spread_case(plan: Plan, runs: u64) -> Result<AuditCase, AuditError> {
    let (d, d_prime) = spread_tables();
    let pair = tables(&plan, &d, &d_prime)?;
    let limits = plan.contribution();
    Ok(AuditCase::new(
        "aggregate-histogram-spread",
        format!(
            "add/remove one unit: ten units across the bins [0, 10), [10, 20), [20, 30] vs \
             the same and one unit with {SPREAD_ROWS} readings each of -1e9, 15 and 1e9 (rows \
             in every bin, two values clamped into the end bins)"
        ),
        Claim::Pure(1.0),
        runs,
    )
    .mechanism(format!(
        "aggregate histogram: COUNT by BIN over public edges (at most {} bin(s), {} row(s) \
         per bin per unit)",
        limits.max_groups(),
        limits.max_rows()
    ))
    .run(move |side, rng| first_estimates(&plan, &pair, side, rng))
    // Bounded, the unit adds 2 rows to each of the 3 bins under noise of scale
    // g·r/ε = 6 per bin: the joint tail "every bin ≥ its D count + t" and the sum's
    // tail carry about the full ratio e^ε, e^{3ε} if the noise is for r alone.
    .events(
        (0..=8)
            .map(|t| {
                let t = f64::from(t);
                Event::new(
                    format!("every bin >= its D count + {t}"),
                    move |o: &[f64]| {
                        o.len() == 3 && o.iter().zip(SPREAD_LIGHT).all(|(x, l)| *x >= l + t)
                    },
                )
            })
            .chain((0..=8).map(|t| {
                let s = 10.0 + 3.0 * f64::from(t);
                Event::new(format!("sum of bins >= {s}"), move |o: &[f64]| {
                    o.len() == 3 && o.iter().sum::<f64>() >= s
                })
            })),
    ))
}

/// `COUNT(*)` by `BIN(temp, 0, 10, 20, 30)`, at most 3 bins and 2 rows per unit,
/// ε = 1: D′ adds one unit with rows in every bin (3 000 each, two of its values far
/// outside the edges). Bounding keeps 2 rows in each bin, so the unit moves the
/// vector of counts by g·r = 6 in ℓ1 and the noise of scale 6 per bin must cover all
/// three bins at once; noise for r alone (or bins not counted toward max_groups) is
/// a loss of 3ε.
pub fn aggregate_histogram_spread(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let plan = histogram_plan(Contribution::new(3, 2).map_err(setup)?, eps)?;
    spread_case(plan, if small { 10_000 } else { 50_000 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::cases::twins::test_runs;
    use crate::audit::{AuditReport, audit};
    use privq_core::sample::DiscreteLaplace;
    use rand_chacha::ChaCha12Rng;

    /// The real case passes and its one twin is flagged; both reports.
    fn check(name: &str, real: &AuditCase, twin: &AuditCase) -> (AuditReport, AuditReport) {
        let mut reports = super::super::twins::check(name, real, &[("twin", twin)]);
        let twin = reports.pop().unwrap();
        (reports.pop().unwrap(), twin)
    }

    /// No bounding: limits of 10 000 rows (the heavy unit keeps every row) with
    /// ε scaled by 5 000, so the noise is the scale 2 of the real limits.
    #[test]
    fn the_heavy_unit_case_flags_a_count_without_bounding() {
        let real = heavy_plan(
            Contribution::new(1, 2).unwrap(),
            Epsilon::new(1, 1).unwrap(),
        )
        .unwrap();
        let twin = heavy_plan(
            Contribution::new(1, 10_000).unwrap(),
            Epsilon::new(5_000, 1).unwrap(),
        )
        .unwrap();
        let scale = |p: &Plan| p.contribution().rows_per_unit() as f64 / p.epsilon_share().to_f64();
        assert_eq!(scale(&real), scale(&twin));
        let twin = heavy_case(twin, 10_000, Claim::Pure(1.0), 1).unwrap();
        check(
            "aggregate-heavy-unit",
            &aggregate_heavy_unit(true).unwrap(),
            &twin,
        );
    }

    /// No bounding: 10 000 rows per bin (the heavy unit keeps every row) with ε
    /// scaled by 5 000, so the noise is the scale 2 of the real limits.
    #[test]
    fn the_histogram_case_flags_bins_without_bounding() {
        let real = histogram_plan(
            Contribution::new(1, 2).unwrap(),
            Epsilon::new(1, 1).unwrap(),
        )
        .unwrap();
        let twin = histogram_plan(
            Contribution::new(1, 10_000).unwrap(),
            Epsilon::new(5_000, 1).unwrap(),
        )
        .unwrap();
        let scale = |p: &Plan| p.contribution().rows_per_unit() as f64 / p.epsilon_share().to_f64();
        assert_eq!(scale(&real), scale(&twin));
        let twin = histogram_case(twin, 1).unwrap();
        check(
            "aggregate-histogram",
            &aggregate_histogram(true).unwrap(),
            &twin,
        );
        // Every bin is released on both sides, the heavy unit's rows in the last.
        let case = aggregate_histogram(true).unwrap();
        let mut rng = crate::seeded_rng(3);
        assert_eq!(case.sample(Side::D, &mut rng).unwrap().len(), 3);
        assert_eq!(case.sample(Side::DPrime, &mut rng).unwrap().len(), 3);
    }

    /// Noise for r instead of g·r: limits (3 bins, 2 rows) at 3ε, scale r/ε = 2 per
    /// bin — also what bins left out of max_groups would release (limits (1, 2) at ε
    /// keeping 2 rows in each of the 3 bins under scale 2). And half the noise (2ε).
    #[test]
    fn the_histogram_spread_case_flags_noise_for_r_not_g_times_r() {
        let plan = |eps: Epsilon| histogram_plan(Contribution::new(3, 2).unwrap(), eps).unwrap();
        let scale = |p: &Plan| {
            let c = p.contribution();
            (c.max_groups() * c.max_rows()) as f64 / p.epsilon_share().to_f64()
        };
        let real = plan(Epsilon::new(1, 1).unwrap());
        let per_bin = plan(Epsilon::new(3, 1).unwrap());
        assert_eq!(scale(&real), 6.0);
        assert_eq!(scale(&per_bin), 2.0);
        let per_bin = spread_case(per_bin, 1).unwrap();
        let half = spread_case(plan(Epsilon::new(2, 1).unwrap()), 1).unwrap();
        super::super::twins::check(
            "aggregate-histogram-spread",
            &aggregate_histogram_spread(true).unwrap(),
            &[
                ("noise for r, not g·r", &per_bin),
                ("half the noise", &half),
            ],
        );
        // Every bin is released on both sides; D′'s unit adds 2 rows to each.
        let case = aggregate_histogram_spread(true).unwrap();
        let mut rng = crate::seeded_rng(3);
        assert_eq!(case.sample(Side::D, &mut rng).unwrap().len(), 3);
        assert_eq!(case.sample(Side::DPrime, &mut rng).unwrap().len(), 3);
    }

    /// The spread pair with limits of 1 bin per unit at ε (the real histogram
    /// case's plan): bounding keeps the unit's rows in one bin, so it must pass.
    #[test]
    fn the_histogram_spread_pair_passes_with_one_bin_per_unit() {
        let one = histogram_plan(
            Contribution::new(1, 2).unwrap(),
            Epsilon::new(1, 1).unwrap(),
        )
        .unwrap();
        let r = audit(
            &spread_case(one, 1).unwrap(),
            test_runs("aggregate-histogram-spread"),
            7,
            &|_| {},
        )
        .unwrap();
        eprintln!(
            "aggregate-histogram-spread, limits (1, 2): {:.3}",
            r.empirical_epsilon
        );
        assert!(r.passed(), "{r:?}");
    }

    /// The outlier case's measurement, line by line as `Plan::release` does it for
    /// this pair (one group; no unit over the row limit except the outlier, whose
    /// rows are all equal), with the clamp optional.
    fn outlier_mimic(
        clamp: bool,
    ) -> impl Fn(Side, &mut ChaCha12Rng) -> Result<Vec<f64>, RunError> + Send + Sync + 'static {
        let b = bounds("0:100").unwrap();
        assert_eq!(
            (b.grid_exp(), b.step_range(), b.mid_steps()),
            (-4, (0, 1600), 800)
        );
        let share = Epsilon::new(1, 3).unwrap();
        // Sensitivities for 2 rows per unit under add/remove: 2, 2·1600, 2·800.
        let count = DiscreteLaplace::for_sensitivity(2, share).unwrap();
        let sum = DiscreteLaplace::for_sensitivity(2 * 1600, share).unwrap();
        let centred = DiscreteLaplace::for_sensitivity(2 * 800, share).unwrap();
        move |side, rng| {
            let mut rows = vec![0.0; 20];
            if side == Side::DPrime {
                rows.extend([OUTLIER; 2]);
            }
            let steps = |x: f64| {
                if clamp {
                    b.steps(x) as i128
                } else {
                    (x * 16.0).round() as i128
                }
            };
            let s: i128 = rows.iter().map(|&x| steps(x)).sum();
            let total = s + i128::from(sum.sample(rng)?);
            let n = rows.len() as i128 + i128::from(count.sample(rng)?);
            let c: i128 = rows.iter().map(|&x| steps(x) - 800).sum();
            let c = c + i128::from(centred.sample(rng)?);
            let mean = if n < 1 {
                800.0
            } else {
                (800.0 + c as f64 / n as f64).clamp(0.0, 1600.0)
            };
            Ok(vec![b.value(total as f64), b.value(mean)])
        }
    }

    /// No clamping: the outlier's readings enter the sums as they are. The mimic
    /// with the clamp must pass as the real mechanism does.
    #[test]
    fn the_outlier_case_flags_sums_without_clamping() {
        let faithful = outlier_case(outlier_mimic(true), "mimic with clamping");
        let twin = outlier_case(outlier_mimic(false), "mimic without clamping");
        let (real, _) = check(
            "aggregate-outlier",
            &aggregate_outlier(true).unwrap(),
            &twin,
        );
        let faithful = audit(&faithful, test_runs("aggregate-outlier"), 7, &|_| {}).unwrap();
        eprintln!(
            "aggregate-outlier: faithful mimic {:.3}",
            faithful.empirical_epsilon
        );
        assert!(faithful.passed());
        // Same distribution: the mimic sees about what the real mechanism sees.
        assert!(
            (faithful.empirical_epsilon - real.empirical_epsilon).abs() < 0.15,
            "{faithful:?} vs {real:?}"
        );
    }

    /// Threshold τ − 1: the same plan with a δ just large enough to lower τ by one,
    /// still claiming the real δ. The real case must release the rare key at a rate
    /// near δ (so the event is live) and not above it.
    #[test]
    fn the_rare_group_case_flags_a_threshold_one_lower() {
        let real = rare_plan(RARE_DELTA).unwrap();
        let tau = real.threshold().unwrap();
        assert_eq!(tau, 7);
        // The selection's noise has scale 1/share (one group per unit, add/remove):
        // P[Z ≥ k] = e^{−k·share}/(1 + e^{−share}); τ − 1 needs δ' ≥ P[Z ≥ τ − 2].
        let share = real.epsilon_share().to_f64();
        let tail = |k: i64| (-share * k as f64).exp() / (1.0 + (-share).exp());
        assert!(tail(tau - 1) <= RARE_DELTA && tail(tau - 1) > 0.99 * RARE_DELTA);
        let lowered = rare_plan(tail(tau - 2) * (1.0 + 1e-9)).unwrap();
        assert_eq!(lowered.threshold(), Some(tau - 1));
        let twin = rare_case(lowered, RARE_DELTA).unwrap();
        let case = aggregate_rare_group(true).unwrap();
        check("aggregate-rare-group", &case, &twin);
        // How often the real mechanism releases zz on D′.
        let runs = 10_000u64;
        let mut kept = 0u64;
        for i in 0..runs {
            let mut rng = crate::seeded_rng(1_000_000 + i);
            kept += u64::from(case.sample(Side::DPrime, &mut rng).unwrap()[0] == 1.0);
        }
        let rate = kept as f64 / runs as f64;
        eprintln!(
            "aggregate-rare-group: zz released in {rate:.4} of runs on D' (δ = {RARE_DELTA})"
        );
        assert!(rate > 0.5 * RARE_DELTA && rate < 1.3 * RARE_DELTA, "{rate}");
    }

    /// No factor 2: the same plan at 2ε (half the noise), claiming ε.
    #[test]
    fn the_quantile_case_flags_half_the_noise() {
        let twin = quantile_case(quantile_plan(Epsilon::new(2, 1).unwrap()).unwrap()).unwrap();
        check(
            "aggregate-quantile-gap",
            &aggregate_quantile_gap(true).unwrap(),
            &twin,
        );
    }

    /// The variance case's measurement, line by line as `Plan::release` does it for
    /// this pair (one group; the edge unit's three rows are equal, so bounding keeps
    /// two of them whichever it picks), with the centred squares' sensitivity given.
    fn edge_mimic(
        squares_l1: u64,
    ) -> impl Fn(Side, &mut ChaCha12Rng) -> Result<Vec<f64>, RunError> + Send + Sync + 'static {
        let b = bounds("0:100").unwrap();
        assert_eq!(
            (
                b.grid_exp(),
                b.step_range(),
                b.mid_steps(),
                b.half_width_steps()
            ),
            (-4, (0, 1600), 800, 800)
        );
        let share = Epsilon::new(1, 3).unwrap();
        // Sensitivities for 2 rows per unit under add/remove: 2, 2·800 (and 2·800²).
        let count = DiscreteLaplace::for_sensitivity(2, share).unwrap();
        let centred = DiscreteLaplace::for_sensitivity(2 * 800, share).unwrap();
        let squares = DiscreteLaplace::for_sensitivity(squares_l1, share).unwrap();
        move |side, rng| {
            // Centred grid steps of the kept rows.
            let mut rows = vec![0i128; EDGE_UNITS];
            if side == Side::DPrime {
                rows.extend([800; 2]);
            }
            let n = rows.len() as i128 + i128::from(count.sample(rng)?);
            let s1 = rows.iter().sum::<i128>() + i128::from(centred.sample(rng)?);
            let s2 = rows.iter().map(|c| c * c).sum::<i128>() + i128::from(squares.sample(rng)?);
            let var = if n < 1 {
                0.0
            } else {
                let (n, m) = (n as f64, s1 as f64 / n as f64);
                (s2 as f64 / n - m * m).clamp(0.0, 800.0 * 800.0)
            };
            Ok(vec![var / 256.0])
        }
    }

    /// Squares' noise for g·r·Δ·H instead of g·r·Δ·H² (800 times too little). The
    /// mimic with H² must pass as the real mechanism does, and see about what it sees.
    #[test]
    fn the_variance_case_flags_squares_noise_scaled_to_h_not_h_squared() {
        let faithful = edge_case(edge_mimic(2 * 800 * 800), "mimic with g·r·Δ·H²");
        let twin = edge_case(edge_mimic(2 * 800), "mimic with g·r·Δ·H");
        let (real, _) = check(
            "aggregate-variance-edge",
            &aggregate_variance_edge(true).unwrap(),
            &twin,
        );
        let faithful = audit(&faithful, test_runs("aggregate-variance-edge"), 7, &|_| {}).unwrap();
        eprintln!(
            "aggregate-variance-edge: faithful mimic {:.3}",
            faithful.empirical_epsilon
        );
        assert!(faithful.passed());
        assert!(
            (faithful.empirical_epsilon - real.empirical_epsilon).abs() < 0.15,
            "{faithful:?} vs {real:?}"
        );
    }
}
