//! The local SQ oracle's batched aggregation against the report-at-a-time
//! loop (identical answers and rejection counts on mixed inputs), and the
//! SQ-Laplace tolerance τ: answers within τ in at least a 1 − β fraction of many
//! simulated runs, and τ not vacuous.

use privq_host::Epsilon;
use privq_host::device::local::sq::BinRange;
use privq_host::histogram::Histogram;
use privq_host::ldp::decode::RejectReason;
use privq_host::ldp::fleet::{Fleet, MechanismSpec, default_distribution};
use privq_host::ldp::sq::{LocalSqOracle, Responder, SqAnswer, Strategy, laplace_mean_bound};
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

fn eps(num: u64, den: u64) -> Epsilon {
    Epsilon::new(num, den).unwrap()
}

/// Reports of `mechanism` over `d` items from `n` simulated devices.
fn fleet_reports(mechanism: &str, e: Epsilon, d: u32, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let spec = MechanismSpec::parse(mechanism, e, d).unwrap();
    Fleet::from_weights(&default_distribution(d), n)
        .unwrap()
        .privatize(&spec, seed)
        .unwrap()
        .iter()
        .map(<[u8]>::to_vec)
        .collect()
}

/// One corrupted copy of `r` per kind of damage, chosen by `which`.
fn corrupt(r: &[u8], which: u32) -> Vec<u8> {
    let mut c = r.to_vec();
    match which % 9 {
        0 => c.truncate(5),                    // shorter than a header
        1 => c[0] = 9,                         // wrong version
        2 => c[1] = 200,                       // unknown mechanism
        3 => c.push(0),                        // wrong length
        4 => c.truncate(c.len() - 1),          // wrong length
        5 => c[4..8].copy_from_slice(&[0; 4]), // ε = 0/0: bad parameter
        6 => {
            // Highest byte of a unary payload / SQ value: padding bits or out of range.
            if let Some(last) = c.last_mut() {
                *last = 0xff;
            }
        }
        7 => c[2] ^= 0x40, // another query: a valid report of another kind
        _ => c.clear(),    // empty frame
    }
    c
}

/// Devices with 8-reading histograms over 8 bins, skewed toward low bins.
fn sq_records(n: usize, seed: u64) -> Vec<Histogram<8>> {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut h = Histogram::<8>::categorical().unwrap();
            for _ in 0..8 {
                let a = rng.next_u32() % 8;
                let b = rng.next_u32() % 8;
                h.record_index(a.min(b) as usize).unwrap();
            }
            h
        })
        .collect()
}

fn answer_bits(a: &[SqAnswer]) -> Vec<(u16, u64, u64, u64)> {
    a.iter()
        .map(|a| (a.query, a.estimate.to_bits(), a.tau.to_bits(), a.reports))
        .collect()
}

#[test]
fn sq_batch_equals_one_by_one_on_mixed_reports() {
    let queries = [
        BinRange::new(0, 1).unwrap(),
        BinRange::new(0, 3).unwrap(),
        BinRange::new(2, 6).unwrap(),
    ];
    let records = sq_records(3000, 11);
    let foreign = fleet_reports("oue", eps(1, 1), 16, 50, 8);
    for responder in [Responder::Bit, Responder::LAPLACE] {
        for strategy in [Strategy::Partition, Strategy::Split] {
            let oracle = LocalSqOracle::new(eps(1, 1), 4, 0.05, strategy)
                .unwrap()
                .with_responder(responder)
                .unwrap();
            let run = oracle.simulate(&records, &queries, 5).unwrap();
            let mut rng = ChaCha12Rng::seed_from_u64(6);
            let mut reports: Vec<Vec<u8>> = Vec::new();
            for (i, r) in run.reports.iter().enumerate() {
                match rng.next_u32() % 10 {
                    0 => reports.push(corrupt(r, rng.next_u32())),
                    1 => {
                        // Query 3 (in the oracle's budget, unused) and query 300.
                        let mut c = r.clone();
                        c[2] = if i % 2 == 0 { 3 } else { 44 };
                        c[3] = u8::from(i % 2 == 1);
                        reports.push(c);
                    }
                    2 => reports.push(foreign[i % foreign.len()].clone()),
                    _ => reports.push(r.clone()),
                }
            }
            let n = records.len() as u64;
            let slow = oracle
                .aggregate_one_by_one(reports.iter().map(Vec::as_slice), 3, n)
                .unwrap();
            let fast = oracle
                .aggregate(reports.iter().map(Vec::as_slice), 3, n)
                .unwrap();
            assert_eq!(answer_bits(&fast.0), answer_bits(&slow.0));
            assert_eq!(fast.1, slow.1);
            assert!(slow.1.get(RejectReason::Mismatch) > 0);
            assert!(slow.1.total() > 0);
            // Unchanged input: the run's own answers.
            let clean = oracle
                .aggregate(run.reports.iter().map(Vec::as_slice), 3, n)
                .unwrap();
            assert_eq!(answer_bits(&clean.0), answer_bits(&run.answers));
            assert_eq!(clean.1.total(), 0);
        }
    }
}

#[test]
fn laplace_mean_bound_solves_the_bernstein_equation() {
    for (b, m, delta) in [(1.0, 1000.0, 0.01), (4.0, 50.0, 0.2), (0.5, 1e6, 1e-6)] {
        let u = laplace_mean_bound(b, (2.0f64 / delta).ln() / m);
        let tail = 2.0 * (-m * u * u / (2.0 * (2.0 * b * b + b * u))).exp();
        assert!((tail - delta).abs() <= 1e-9 * delta, "{tail} vs {delta}");
    }
}

#[test]
fn sq_laplace_answers_fall_within_tau() {
    let queries = [
        BinRange::new(0, 1).unwrap(),
        BinRange::new(0, 3).unwrap(),
        BinRange::new(2, 6).unwrap(),
    ];
    let beta = 0.2;
    let trials = 100u64;
    for (strategy, n) in [(Strategy::Partition, 1500), (Strategy::Split, 500)] {
        let oracle = LocalSqOracle::new(eps(1, 1), queries.len(), beta, strategy)
            .unwrap()
            .with_responder(Responder::LAPLACE)
            .unwrap();
        let records = sq_records(n, 77);
        // All answers within τ, and within τ/loose (τ must not be vacuous):
        // partition's sampling term is Hoeffding's for [0, 1] values, looser than
        // the noise term.
        let loose = if strategy == Strategy::Split {
            2.0
        } else {
            3.0
        };
        let (mut within, mut within_tight, mut worst) = (0u64, 0u64, 0f64);
        for t in 0..trials {
            let run = oracle.simulate(&records, &queries, 5000 + t).unwrap();
            assert_eq!(run.rejected.total(), 0);
            let ratio = run
                .answers
                .iter()
                .zip(&run.truth)
                .map(|(a, &truth)| (a.estimate - truth).abs() / a.tau)
                .fold(0f64, f64::max);
            worst = worst.max(ratio);
            within += u64::from(ratio <= 1.0);
            within_tight += u64::from(ratio <= 1.0 / loose);
        }
        eprintln!(
            "{strategy:?}: {within}/{trials} runs within tau, {within_tight}/{trials} within tau/{loose}, worst |error|/tau {worst:.3}"
        );
        assert!(within as f64 >= (1.0 - beta) * trials as f64);
        assert!(
            (within_tight as f64) < (1.0 - beta) * trials as f64,
            "tau is loose by more than a factor {loose}"
        );
    }
}

/// "Is bit `.0` of the record set?"
struct Bit(u32);

impl privq_host::device::local::sq::StatQuery<u64> for Bit {
    fn evaluate(&self, x: &u64) -> Result<privq_host::device::local::UnitValue, privq_host::Error> {
        Ok(if x >> self.0 & 1 == 1 {
            privq_host::device::local::UnitValue::ONE
        } else {
            privq_host::device::local::UnitValue::ZERO
        })
    }
}

/// The adaptive session: every device reports once (partition) or k times at ε/k
/// (split), spending exactly ε, a (k+1)-th query is refused, and the answers
/// are within τ in at least a 1 − β fraction of runs.
#[test]
fn adaptive_session_budget_and_coverage() {
    let records: Vec<u64> = (0..6_000u64).map(|i| i % 8).collect();
    let truth = [0.5, 0.5, 0.5];
    for strategy in [Strategy::Partition, Strategy::Split] {
        let oracle = LocalSqOracle::new(eps(1, 1), 3, 0.2, strategy).unwrap();
        let (mut covered, runs) = (0, 60);
        for seed in 0..runs {
            let mut s = oracle.session(&records, seed).unwrap();
            let mut all = true;
            for (j, t) in truth.iter().enumerate() {
                let a = s.answer(&Bit(j as u32)).unwrap();
                assert_eq!(usize::from(a.query), j);
                all &= (a.estimate - t).abs() <= a.tau;
            }
            covered += usize::from(all);
            let expected = match strategy {
                Strategy::Partition => records.len() as u64,
                Strategy::Split => 3 * records.len() as u64,
            };
            assert_eq!(s.reports(), expected);
            assert!(
                (s.max_device_spent() - 1.0).abs() < 1e-12,
                "{}",
                s.max_device_spent()
            );
            assert_eq!(s.rejected().total(), 0);
            assert!(s.answer(&Bit(0)).is_err(), "a fourth query must be refused");
        }
        assert!(
            covered as f64 >= 0.8 * runs as f64,
            "{strategy:?}: {covered}"
        );
    }
    // Fewer devices than groups.
    let oracle = LocalSqOracle::new(eps(1, 1), 10, 0.1, Strategy::Partition).unwrap();
    assert!(oracle.session(&records[..5], 1).is_err());
    // required_devices inverts worst_tau.
    let n = oracle.required_devices(0.05).unwrap();
    assert!((oracle.worst_tau(n.ceil() as u64) - 0.05).abs() < 1e-3);
}
