//! Release by agnostic learning and MW (thesis Fig. 6.7), private variant.

use privq_core::Epsilon;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::conjunctions::release_by_agnostic_learning_private;
use crate::data::{CountHistogram, MemoryCap};
use crate::query::Query;

/// Fig. 6.7 over two attributes with the four monotone conjunctions as the class
/// (β = 0.1, ε = 1, n = 1 000, most records in cell 11, so MW must move): one
/// record moves from cell 00 to 11 (replace-one), which shifts three of the four
/// answers. The outputs are the released answers of all four conjunctions.
pub fn agnostic_mw(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let make = |c00: u64, c11: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![c00, 100, 100, c11], MemoryCap::default()).map_err(setup)
    };
    let (d, d_prime) = (make(100, 700)?, make(99, 701)?);
    let class: Vec<Query> = (0..4)
        .map(|m| Query::BitPattern {
            mask: m,
            pattern: m,
        })
        .collect();
    let step = if small { 20.0 } else { 80.0 };
    let events = (0..4).flat_map(move |j| {
        (0..=step as u32).flat_map(move |k| {
            let v = f64::from(k) / step;
            [Event::at_least(j, v), Event::at_most(j, v)]
        })
    });
    Ok(AuditCase::new(
        "agnostic-mw",
        "replace-one, n = 1000 over {0,1}²: a record moves from cell 00 to 11; class = the 4 conjunctions",
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism("Fig. 6.7 (agnostic learning + MW, central STAT)")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let r = release_by_agnostic_learning_private(
            data,
            &class,
            0.1,
            eps,
            &mut Accountant::pure(eps),
            rng,
        )
        .map_err(|e| AuditError::InvalidCase(e.to_string()))?;
        Ok(r.answers)
    })
    .events(events))
}

/// Fig. 6.6 (the decomposition-based conjunction release) over two attributes,
/// n = 10⁶ (the tolerance's n for α = 0.3, β = 0.1 and 4 pieces), ε = 1: one record
/// moves from cell 00 to 11. The outputs are the released answers of the four
/// conjunctions (each the noisy mean of its piece); events sit on a grid of steps of
/// 2·10⁻⁶ around the answers of one reference run on `D` (the noise scale is about
/// 1.6·10⁻⁵).
pub fn conjunction_release(small: bool) -> Result<AuditCase, AuditError> {
    use crate::conjunctions::{ReleaseConfig, release_conjunctions};
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let make = |c00: u64, c11: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![c00, 200_000, 200_000, c11], MemoryCap::default())
            .map_err(setup)
    };
    let (d, d_prime) = (make(300_000, 300_000)?, make(299_999, 300_001)?);
    let half = if small { 5 } else { 12 };
    let config = ReleaseConfig {
        alpha: 0.3,
        beta: 0.1,
        p: vec![0.5; 2],
        cap: 4,
        rho: None,
        require_n: true,
    };
    let reference = release_conjunctions(
        &d,
        &config,
        eps,
        &mut Accountant::pure(eps),
        &mut crate::seeded_rng(0),
    )
    .map_err(setup)?;
    let truth: Vec<f64> = (0..4u64).map(|s| reference.conjunction(s)).collect();
    // Output 4 is the number of pieces: the data-dependent branching itself.
    let events = (0..4)
        .flat_map(move |j| {
            let centre = truth[j];
            (-half..=half).flat_map(move |k| {
                let v = centre + f64::from(k) * 2e-6;
                [Event::at_least(j, v), Event::at_most(j, v)]
            })
        })
        .chain([1.5, 2.5, 3.5].map(|v| Event::at_least(4, v)));
    Ok(AuditCase::new(
        "conjunction-release",
        "replace-one, n = 10^6 over {0,1}²: a record moves from cell 00 to 11",
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism("Fig. 6.6 (decomposition, central SQ oracle)")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let r = release_conjunctions(data, &config, eps, &mut Accountant::pure(eps), rng)
            .map_err(|e| AuditError::InvalidCase(e.to_string()))?;
        let mut out: Vec<f64> = (0..4u64).map(|s| r.conjunction(s)).collect();
        out.push(r.decomposition().len() as f64);
        Ok(out)
    })
    .events(events))
}

/// Fig. 6.6 in the local model: 16 simulated devices over two attributes, ε = 1
/// per device (partition: each answers one of the k = 8 queries once), ρ = 0.3 so
/// that the noisy marginals decide the pieces. One device's record moves from cell
/// 00 to 11; the outputs are the four conjunction answers (on a 0.05 grid of
/// events) and the number of pieces.
pub fn conjunction_release_local(small: bool) -> Result<AuditCase, AuditError> {
    use crate::conjunctions::{ReleaseConfig, release_conjunctions_local};
    use crate::ldp::sq::{LocalSqOracle, Strategy};
    use privq_core::rand_core::Rng;
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let make = |c00: u64, c11: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![c00, 2, 2, c11], MemoryCap::default()).map_err(setup)
    };
    let (d, d_prime) = (make(4, 8)?, make(3, 9)?);
    let config = ReleaseConfig {
        alpha: 0.3,
        beta: 0.1,
        p: vec![0.5; 2],
        cap: 2,
        rho: Some(0.3),
        require_n: false,
    };
    let k = config.query_budget(4).map_err(setup)?;
    let oracle = LocalSqOracle::new(eps, k, 0.1, Strategy::Partition).map_err(setup)?;
    let step = if small { 10 } else { 20 };
    let events = (0..4)
        .flat_map(move |j| {
            (0..=step).flat_map(move |i| {
                let v = f64::from(i) / f64::from(step);
                [Event::at_least(j, v), Event::at_most(j, v)]
            })
        })
        .chain([Event::at_least(4, 1.5)]);
    Ok(AuditCase::new(
        "conjunction-release-local",
        "replace-one, 16 devices over {0,1}²: one device's record moves from cell 00 to 11",
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism("Fig. 6.6 (decomposition, local SQ oracle, partition)")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let r = release_conjunctions_local(data, &config, &oracle, rng.next_u64())
            .map_err(|e| AuditError::InvalidCase(e.to_string()))?;
        let mut out: Vec<f64> = (0..4u64).map(|s| r.conjunction(s)).collect();
        out.push(r.decomposition().len() as f64);
        Ok(out)
    })
    .events(events))
}

/// The cut-function oracle (thesis §6.4.1) alone: k = 2 answers on a graph
/// normalised by E_max = 10, ε = 1, add/remove-one-edge: the edge 0 → 1 three
/// times vs four times; both queries ask the cut of {0}. Events on both answers
/// together, so the auditor can see most of ε (each answer carries ε/2).
pub fn cut_oracle(small: bool) -> Result<AuditCase, AuditError> {
    use crate::conjunctions::{CutOracle, Graph};
    use crate::contract::Mechanism;
    let _ = small;
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let d = Graph::with_multiplicities(2, &[(0, 1, 3)]).map_err(setup)?;
    let d_prime = Graph::with_multiplicities(2, &[(0, 1, 4)]).map_err(setup)?;
    let events = [0.3, 0.4, 0.5, 0.6, 0.7].into_iter().flat_map(|t| {
        [
            Event::new(format!("both answers >= {t}"), move |o: &[f64]| {
                o.iter().all(|&v| v >= t)
            }),
            Event::new(format!("both answers <= {t}"), move |o: &[f64]| {
                o.iter().all(|&v| v <= t)
            }),
        ]
    });
    Ok(AuditCase::new(
        "cut-oracle",
        "add/remove-one-edge, E_max = 10: edge 0 -> 1 three vs four times; k = 2 queries on the cut of {0}",
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism("cut-function oracle (§6.4.1)")
    .run(move |side, rng| {
        let graph = if side == Side::D { &d } else { &d_prime };
        let oracle = CutOracle::new(2, eps, 10)?;
        let mut session = oracle.release(graph, &mut Accountant::pure(eps), rng)?;
        Ok(vec![session.cut(0b01, rng)?, session.cut(0b01, rng)?])
    })
    .events(events))
}

/// The private cut-function release (thesis §6.4.1, Cor. 6.4.7) across the clamp:
/// two vertices, E_max = 20, ε = 1, cap 1 (k = 7), ρ = 6 and p = (1, 0), so the
/// piece mean is the count of edges 0 → 1 itself. `D` is 0 → 1 nineteen times and
/// 1 → 0 once (|E| = E_max); `D′` adds one more 0 → 1 (|E| = 21 > E_max: answered,
/// where a refusal would separate the two completely). Outputs: the released f of
/// the four vertex sets, the number of first-level pieces and of final pieces.
/// Only the mean (ε/7) and the pieces are observable, so little of ε can show.
pub fn cut_release(small: bool) -> Result<AuditCase, AuditError> {
    use crate::conjunctions::{CutConfig, Graph, release_cut_function};
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let d = Graph::with_multiplicities(2, &[(0, 1, 19), (1, 0, 1)]).map_err(setup)?;
    let d_prime = Graph::with_multiplicities(2, &[(0, 1, 20), (1, 0, 1)]).map_err(setup)?;
    let config = CutConfig {
        alpha: 0.5,
        beta: 0.1,
        p: vec![1.0, 0.0],
        cap: 1,
        rho: Some(6.0),
        e_max: 20,
        require_tolerance: false,
    };
    let step = if small { 20 } else { 40 };
    let events = (0..4)
        .flat_map(move |j| {
            (0..=step).flat_map(move |i| {
                let v = f64::from(i) / f64::from(step);
                [Event::at_least(j, v), Event::at_most(j, v)]
            })
        })
        .chain([Event::at_least(4, 1.5), Event::at_least(5, 1.5)]);
    Ok(AuditCase::new(
        "cut-release",
        "add/remove-one-edge, E_max = 20: 0 -> 1 x19 and 1 -> 0 vs one more 0 -> 1 (|E| = 21 > E_max: answered, not refused; cut({0}) reaches E_max, the clamp's edge); k = 7",
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism("cut-function release (§6.4.1, Alg. 6.4, cut oracle)")
    .run(move |side, rng| {
        let graph = if side == Side::D { &d } else { &d_prime };
        let r = release_cut_function(graph, &config, eps, &mut Accountant::pure(eps), rng)
            .map_err(|e| AuditError::InvalidCase(e.to_string()))?;
        let mut out: Vec<f64> = (0..4u64).map(|s| r.cut(s)).collect();
        out.push(r.decomposition().first().len() as f64);
        out.push(r.decomposition().len() as f64);
        Ok(out)
    })
    .events(events))
}
