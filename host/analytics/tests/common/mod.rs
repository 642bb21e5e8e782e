//! Report generators and checks shared by the Parquet aggregation tests
//! (`ldp_analytics`, `ldp_ballista`).

use std::path::{Path, PathBuf};

use privq_analytics::table;
use privq_core::local::{LocalRandomizer, QueryId, SqLaplace, UnitValue};
use privq_host::Epsilon;
use privq_host::ldp::campaign::{Campaign, CampaignPlan, Limits};
use privq_host::ldp::fleet::{MechanismSpec, default_distribution, device_rng};
use privq_host::ldp::intake::Intake;
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

/// A scratch directory removed on drop.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("privq-analytics-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn eps(num: u64, den: u64) -> Epsilon {
    Epsilon::new(num, den).unwrap()
}

/// `n` reports of a simulated mechanism for query `query`, items Zipf-distributed.
pub fn simulated(mechanism: &str, d: u32, query: u16, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let spec = MechanismSpec::parse(mechanism, eps(1, 1), d).unwrap();
    let w = default_distribution(d);
    let total: f64 = w.iter().sum();
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            // Inverse-CDF item draw (test data only).
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
            let mut acc = 0.0;
            let item = w.iter().position(|x| {
                acc += x;
                acc > u
            });
            let item = item.unwrap_or(d as usize - 1) as u32;
            let mut buf = vec![0u8; spec.report_len()];
            let mut dev = device_rng(seed, i as u64);
            spec.privatize_into(item, QueryId(query), &mut dev, &mut buf)
                .unwrap();
            buf
        })
        .collect()
}

pub fn sq_laplace(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let m = SqLaplace::new(eps(1, 1)).unwrap();
    (0..n)
        .map(|i| {
            let unit = UnitValue::from_fraction(i as u64 % 5, 4).unwrap();
            let mut buf = vec![0u8; 64];
            let len = m
                .privatize_into(&unit, QueryId(0), &mut rng, &mut buf)
                .unwrap();
            buf.truncate(len);
            buf
        })
        .collect()
}

/// About 4 300 reports of five mechanisms (OUE on three queries) and ~300
/// malformed ones, shuffled.
pub fn mixed_reports() -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for q in 0..3 {
        all.extend(simulated("oue", 64, q, 600, 10 + u64::from(q)));
    }
    all.extend(simulated("oue", 64, 7, 50, 13)); // a query no campaign collects
    all.extend(simulated("grr", 16, 0, 500, 20));
    all.extend(simulated("olh", 32, 0, 400, 30));
    all.extend(simulated("hr", 32, 0, 400, 40));
    all.extend(sq_laplace(500, 50));
    let mut rng = ChaCha12Rng::seed_from_u64(99);
    let valid = all.len();
    for i in 0..300 {
        let mut r = all[(rng.next_u64() as usize) % valid].clone();
        match i % 6 {
            0 => r.truncate((rng.next_u64() % 12) as usize), // truncated
            1 => r[0] ^= 0x40,                               // version
            2 => r[1] = 0xee,                                // unknown mechanism
            3 => r.push(0),                                  // length
            4 => rng.fill_bytes(&mut r),                     // garbage
            _ => r[4] = r[4].wrapping_add(1),                // another epsilon
        }
        all.push(r);
    }
    // Fisher–Yates.
    for i in (1..all.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        all.swap(i, j);
    }
    all
}

pub fn plan(json: &str) -> CampaignPlan {
    Campaign::from_json(json)
        .unwrap()
        .validate(&Limits::default())
        .unwrap()
}

pub fn campaigns() -> Vec<CampaignPlan> {
    vec![
        plan(r#"{"mechanism":"oue","epsilon":"1","domain":64,"queries":["0-2"]}"#),
        plan(r#"{"mechanism":"grr","epsilon":"1","domain":16}"#),
        plan(r#"{"mechanism":"olh","epsilon":"1","domain":32}"#),
        plan(r#"{"mechanism":"hr","epsilon":"1","domain":32}"#),
        plan(r#"{"mechanism":"sq-laplace","epsilon":"1","grid_exponent":-10}"#),
    ]
}

pub fn write_table(dir: &Path, reports: &[Vec<u8>], rows_per_file: u64) {
    let mut w = table::ReportTableWriter::create(dir, rows_per_file).unwrap();
    for r in reports {
        w.push(r).unwrap();
    }
    assert_eq!(w.commit().unwrap(), reports.len() as u64);
}

/// Groups, accepted, rejected and frames equal; estimates equal.
pub fn assert_same(got: &Intake, want: &Intake, what: &str) {
    let (g, w) = (got.to_state(), want.to_state());
    assert_eq!(g.groups, w.groups, "{what}: aggregator states");
    assert_eq!(g.stats.accepted, w.stats.accepted, "{what}: accepted");
    assert_eq!(g.stats.rejected, w.stats.rejected, "{what}: rejections");
    assert_eq!(g.stats.frames, w.stats.frames, "{what}: rows");
    for (a, b) in got.groups().zip(want.groups()) {
        assert_eq!(a.frequencies(0.95).ok(), b.frequencies(0.95).ok(), "{what}");
        assert_eq!(a.mean(0.95).ok(), b.mean(0.95).ok(), "{what}");
    }
}
