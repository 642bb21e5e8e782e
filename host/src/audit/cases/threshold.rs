//! The threshold oracle TO of thesis Fig. 7.1 (Lemma 7.3.1), and the broken twins
//! it must catch.

use privq_core::Epsilon;
use rand_chacha::ChaCha12Rng;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::central::MechanismError;
use crate::contract::Mechanism;
use crate::data::{CountHistogram, MemoryCap};
use crate::threshold::{CountingQuery, Label, ThresholdOracle, ThresholdSession};

/// The labels are encoded as numbers for the auditor's events.
fn code(label: Label) -> f64 {
    match label {
        Label::Below => 0.0,
        Label::Close => 0.5,
        Label::Above => 1.0,
    }
}

/// n of the case's datasets.
const N: u64 = 100;
/// The band α of the oracle.
const ALPHA: f64 = 0.3;
/// How many times each `(q, t)` is asked (every answer is an output).
const REPEATS: usize = 2;

/// The two queries and their counts on `D` (one more on `D′`): attribute 0
/// (cells 01 and 11) and the conjunction of attributes 0 and 1 (cell 11).
fn queries() -> [(CountingQuery, u64); 2] {
    [
        (CountingQuery::conjunction(0b01), 50),
        (CountingQuery::conjunction(0b11), 30),
    ]
}

/// The thresholds asked of a query whose count on `D` is `c`, `levels` upper and
/// `levels` lower: level j's band edge `n·(t ± 2α/3)` sits at `c + 1.5 + j`
/// ("above" on the upper side) or at `c − 0.5 − j` ("below" on the lower side),
/// half-way between integers so that float rounding of the edge decides nothing.
/// Every upper edge is above both neighbours' counts and every lower edge below
/// both, where the ratio of the tails of the noise is the full `e^{ε/b}`.
fn thresholds(c: u64, levels: usize) -> Vec<f64> {
    let (n, band) = (N as f64, 2.0 * ALPHA / 3.0);
    let up = (0..levels).map(move |j| (c as f64 + 1.5 + j as f64) / n - band);
    let down = (0..levels).map(move |j| (c as f64 - 0.5 - j as f64) / n + band);
    up.chain(down).collect()
}

/// How a run asks the oracle: the real session answers every repeat itself; a
/// broken twin (tests) may open a fresh session per answer.
pub(crate) type Asker = fn(
    &ThresholdOracle,
    &CountHistogram,
    &mut ThresholdSession,
    &CountingQuery,
    f64,
    &mut ChaCha12Rng,
) -> Result<Label, MechanismError>;

/// The real mechanism: every ask goes to the run's one session, which reuses the
/// noisy count of a query it has answered (Fig. 7.1).
fn ask_session(
    _: &ThresholdOracle,
    _: &CountHistogram,
    s: &mut ThresholdSession,
    q: &CountingQuery,
    t: f64,
    rng: &mut ChaCha12Rng,
) -> Result<Label, MechanismError> {
    s.ask(q, t, rng)
}

/// TO with b = 2 distinct queries, ε = 1, α = 0.3 (noise of scale b/ε = 2 counts
/// per query): one record moves from cell 00 to 11 (replace-one, n = 100), so both
/// queries' counts (attribute 0; attributes 0 and 1) grow by one (50 → 51 and
/// 30 → 31). Each query is asked at `levels` thresholds whose upper band edge lies
/// above both counts and at `levels` whose lower edge lies below both (see
/// `thresholds`), every one twice, and **every answer is an output**: a session
/// that drew fresh noise per ask (or per threshold) would show up as repeats
/// agreeing more often in the tails on one side. Events: each query's tail alone,
/// both queries' tails jointly (their losses add up to ε), and all repeats
/// jointly.
pub fn threshold_oracle(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let oracle = ThresholdOracle::new(2, eps, ALPHA).map_err(setup)?;
    threshold_case(oracle, eps, small, ask_session, "ThresholdOracle")
}

/// The case for an oracle (the real one, or a twin with other noise) charged
/// `eps` per run, and a way of asking (the real session, or a twin's); the claim
/// is ε = 1.
pub(crate) fn threshold_case(
    oracle: ThresholdOracle,
    eps: Epsilon,
    small: bool,
    asker: Asker,
    label: &str,
) -> Result<AuditCase, AuditError> {
    let make = |c00: u64, c11: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![c00, 20, 30, c11], MemoryCap::default()).map_err(setup)
    };
    // attribute 0 (cells 01, 11): 20 + c11; attributes 0 and 1 (cell 11): c11.
    let (d, d_prime) = (make(20, 30)?, make(19, 31)?);
    let levels = if small { 3 } else { 4 };
    let asks: Vec<(CountingQuery, Vec<f64>)> = queries()
        .into_iter()
        .map(|(q, c)| (q, thresholds(c, levels)))
        .collect();
    // Output layout: query, then threshold (levels upper, levels lower), then repeat.
    let per_query = 2 * levels * REPEATS;
    let slot = move |query: usize, threshold: usize, repeat: usize| {
        query * per_query + threshold * REPEATS + repeat
    };
    let mut events = Vec::new();
    for level in 0..levels {
        for (side, threshold, want, word) in [
            ("upper", level, 1.0, "above"),
            ("lower", levels + level, 0.0, "below"),
        ] {
            // One query, first answer; both queries' first answers; every answer of
            // both queries at this level.
            for (name, cells) in [
                ("query 0", vec![slot(0, threshold, 0)]),
                ("query 1", vec![slot(1, threshold, 0)]),
                (
                    "both queries",
                    vec![slot(0, threshold, 0), slot(1, threshold, 0)],
                ),
                (
                    "every repeat of both queries",
                    (0..2)
                        .flat_map(|q| (0..REPEATS).map(move |r| slot(q, threshold, r)))
                        .collect(),
                ),
            ] {
                events.push(Event::new(
                    format!("{name} {word} at {side} level {level}"),
                    move |o: &[f64]| cells.iter().all(|&i| o.get(i) == Some(&want)),
                ));
            }
        }
    }
    Ok(AuditCase::new(
        "threshold-oracle",
        "replace-one, n = 100: a record moves from cell 00 to 11; b = 2 queries, each asked twice at thresholds whose band edges lie beyond both counts; every answer an output",
        Claim::Pure(1.0),
        50_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let mut s = oracle.release(data, &mut Accountant::pure(eps), rng)?;
        let mut out = Vec::with_capacity(2 * per_query);
        for (q, ts) in &asks {
            for &t in ts {
                for _ in 0..REPEATS {
                    out.push(code(asker(&oracle, data, &mut s, q, t, rng)?));
                }
            }
        }
        Ok(out)
    })
    .events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::cases::twins::check;

    /// The broken twin of Lemma 7.3.1's noise reuse: every ask opens a fresh
    /// session (fresh noise per `(q, t)` and per repeat, as a session that forgot
    /// its noisy counts would).
    fn ask_fresh(
        oracle: &ThresholdOracle,
        data: &CountHistogram,
        _: &mut ThresholdSession,
        q: &CountingQuery,
        t: f64,
        rng: &mut ChaCha12Rng,
    ) -> Result<Label, MechanismError> {
        let eps = Epsilon::new(1, 1).unwrap();
        let mut fresh = oracle.release(data, &mut Accountant::pure(eps), rng)?;
        fresh.ask(q, t, rng)
    }

    /// The real oracle passes; two broken twins are flagged at the test size:
    /// fresh noise per ask (noise not reused), and each query charged at ε
    /// instead of ε/b (noise of scale 1/ε).
    #[test]
    fn the_auditor_flags_each_twin_of_the_threshold_oracle() {
        let eps = Epsilon::new(1, 1).unwrap();
        let real = threshold_oracle(true).unwrap();
        let oracle = ThresholdOracle::new(2, eps, ALPHA).unwrap();
        let fresh = threshold_case(oracle, eps, true, ask_fresh, "twin: fresh noise").unwrap();
        // Scale 1/ε: the oracle for b = 2 at 2ε, audited against ε.
        let double = eps.checked_mul_int(2).unwrap();
        let loud = ThresholdOracle::new(2, double, ALPHA).unwrap();
        let loud = threshold_case(loud, double, true, ask_session, "twin: ε per query").unwrap();
        check(
            "threshold-oracle",
            &real,
            &[("fresh noise per ask", &fresh), ("ε per query", &loud)],
        );
    }

    /// The real session answers every repeat of `(q, t)` alike.
    #[test]
    fn the_real_sessions_repeats_agree() {
        let case = threshold_oracle(true).unwrap();
        let mut rng = crate::seeded_rng(3);
        for side in [Side::D, Side::DPrime] {
            for _ in 0..50 {
                let out = case.sample(side, &mut rng).unwrap();
                assert!(out.chunks(REPEATS).all(|c| c.iter().all(|&v| v == c[0])));
            }
        }
    }
}
