//! Release by agnostic learning and MW (thesis Fig. 6.7), private variant; the
//! conjunction release (Fig. 6.6), central and local; the cut-function oracle and
//! release (§6.4.1); and the broken twins each must catch.

use privq_core::Epsilon;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::conjunctions::{AgnosticRelease, ReleaseError, release_by_agnostic_learning_private};
use crate::data::{CountHistogram, MemoryCap};
use crate::query::Query;
use rand_chacha::ChaCha12Rng;

/// β of the Fig. 6.7 case.
const AGNOSTIC_BETA: f64 = 0.1;
/// n of the Fig. 6.7 case, the smallest round n whose tolerance
/// `scale·(ln(|C|/β) + 1)` stays under β/4 with a margin (scale = 1/(εn)).
const AGNOSTIC_N: u64 = 150;

/// The class of the Fig. 6.7 case: the one conjunction "attribute 0" over a single
/// binary attribute, so the whole ε sits on one noisy answer.
fn agnostic_class() -> Vec<Query> {
    vec![Query::BitPattern {
        mask: 1,
        pattern: 1,
    }]
}

/// Fig. 6.7 (private: `STAT` from one central SQ oracle, ε = 1, β = 0.1, so
/// η = β/4) over one binary attribute with the class {x₀} (|C| = 1: the whole ε on
/// one answer, the most fragile class), n = 150: 96 of the records have x₀ = 1 on
/// `D`, 97 on `D′` (replace-one). MW starts from uniform (½) and updates while the
/// noisy answer is more than `β − τ` above the hypothesis, so the **number of
/// rounds** reveals the noisy answer in bins of `η·p(1 − p) ≤ 0.00625`, finer than
/// the neighbours' gap 1/n ≈ 0.0067: without noise, the two neighbours stop after
/// different numbers of rounds (a deterministic difference), and a tail event
/// "rounds ≥ r" beyond both has the full ratio `e^ε` of the Laplace tail.
/// Outputs: the released answer and the rounds; events: the rounds' tails.
pub fn agnostic_mw(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let class = agnostic_class();
    agnostic_case(
        small,
        "Fig. 6.7 (agnostic learning + MW, central STAT)",
        move |data, rng| {
            release_by_agnostic_learning_private(
                data,
                &class,
                AGNOSTIC_BETA,
                eps,
                &mut Accountant::pure(eps),
                rng,
            )
        },
    )
}

/// The Fig. 6.7 case for a release function (the real one, or a twin).
pub(crate) fn agnostic_case(
    small: bool,
    label: &str,
    release: impl Fn(&CountHistogram, &mut ChaCha12Rng) -> Result<AgnosticRelease, ReleaseError>
    + Send
    + Sync
    + 'static,
) -> Result<AuditCase, AuditError> {
    let make = |ones: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![AGNOSTIC_N - ones, ones], MemoryCap::default())
            .map_err(setup)
    };
    let (d, d_prime) = (make(96)?, make(97)?);
    let top = if small { 16 } else { 20 };
    let events = (4..=top).flat_map(|r| {
        [
            Event::at_least(1, f64::from(r)),
            Event::at_most(1, f64::from(r)),
        ]
    });
    Ok(AuditCase::new(
        "agnostic-mw",
        "replace-one, n = 150 over {0,1}, class {x0}: 96 vs 97 records with x0 = 1",
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let r = release(data, rng).map_err(|e| AuditError::InvalidCase(e.to_string()))?;
        Ok(vec![r.answers[0], r.rounds as f64])
    })
    .events(events))
}

/// n of the Fig. 6.6 case (the tolerance's n for α = 0.3, β = 0.1 and 4 pieces).
const CONJ_N: u64 = 1_000_000;

/// The Fig. 6.6 case's configuration: α = 0.3, β = 0.1 (so ρ = α²/(6 ln(2/β)) and
/// the include threshold ρ/3 is 1 669.04 records at n = 10⁶), all conjunctions
/// (p = ½), cap 4, so k = 16 queries at ε/16.
fn conj_config() -> crate::conjunctions::ReleaseConfig {
    crate::conjunctions::ReleaseConfig {
        alpha: 0.3,
        beta: 0.1,
        p: vec![0.5; 2],
        cap: 4,
        rho: None,
        require_n: true,
    }
}

/// The Fig. 6.6 case's neighbours over cells (00, x₀ only, x₁ only, 11): `D` has
/// 1 669 records with x₀ alone, `D′` has one record of cell 11 moved there (1 670),
/// so the marginal `∂₁f({0}) = P(x₀ = 1, x₁ = 0)` that decides the piece {0, 1}
/// straddles the include threshold ρ/3 (1 669.04 records): without noise `D` has
/// 3 pieces and `D′` 4.
fn conj_data(side: Side) -> Result<CountHistogram, AuditError> {
    let b = if side == Side::D { 1_669 } else { 1_670 };
    let (a, c) = (300_000, 200_000);
    CountHistogram::from_counts(vec![a, b, c, CONJ_N - a - b - c], MemoryCap::default())
        .map_err(setup)
}

/// Fig. 6.6 (the decomposition-based conjunction release, central SQ oracle, k = 16
/// queries at ε/16, ε = 1) over two attributes, n = 10⁶, on the pair of
/// `conj_data`: the piece count is decided by a marginal at the include
/// threshold (it varies from run to run), and the move 11 → x₀-only lowers the
/// answers of {1} and {0, 1} by 1/n and of ∅ and {0} by 1/(2n). Outputs: the four
/// conjunction answers and the number of pieces. Events, against the exact answers
/// of `D′` (a release at ε = 2³⁰): the piece count; each answer's tails beyond both
/// neighbours; and joint events "4 pieces and the answers of {1} and {0, 1} (or
/// all four) low", where the losses of several queries add up — a release that
/// charges each query at ε instead of ε/k (TYPO-18) shows there.
pub fn conjunction_release(small: bool) -> Result<AuditCase, AuditError> {
    conjunction_release_at(
        small,
        Epsilon::new(1, 1).map_err(setup)?,
        "Fig. 6.6 (decomposition, central SQ oracle)",
    )
}

/// [`conjunction_release`] run at `run_eps` (a twin runs at k·ε) and judged against
/// ε = 1.
pub(crate) fn conjunction_release_at(
    small: bool,
    run_eps: Epsilon,
    label: &str,
) -> Result<AuditCase, AuditError> {
    use crate::conjunctions::release_conjunctions;
    let (d, d_prime) = (conj_data(Side::D)?, conj_data(Side::DPrime)?);
    let config = conj_config();
    let exact_eps = Epsilon::new(1 << 30, 1).map_err(setup)?;
    let reference = release_conjunctions(
        &d_prime,
        &config,
        exact_eps,
        &mut Accountant::pure(exact_eps),
        &mut crate::seeded_rng(0),
    )
    .map_err(setup)?;
    if reference.decomposition().len() != 4 {
        return Err(AuditError::InvalidCase(
            "the reference release of D' should have 4 pieces".into(),
        ));
    }
    let truth: Vec<f64> = (0..4u64).map(|s| reference.conjunction(s)).collect();
    let unit = 1.0 / CONJ_N as f64;
    let offsets: &[f64] = if small { &[0.5, 1.5] } else { &[0.5, 1.5, 2.5] };
    let mut events = vec![Event::at_least(4, 3.5), Event::at_most(4, 3.5)];
    for &t in offsets {
        // Below both neighbours (D′ is lower by up to 1/n), and above both.
        let low: Vec<f64> = truth.iter().map(|v| v - t * unit).collect();
        let high: Vec<f64> = truth.iter().map(|v| v + (1.0 + t) * unit).collect();
        for j in 0..4 {
            events.push(Event::at_most(j, low[j]));
            events.push(Event::at_least(j, high[j]));
        }
        for (name, cells) in [
            ("{1} and {0,1}", vec![2usize, 3]),
            ("all", vec![0, 1, 2, 3]),
        ] {
            for pieces in [false, true] {
                let (lo, c) = (low.clone(), cells.clone());
                events.push(Event::new(
                    format!(
                        "answers {name} below truth - {t}/n{}",
                        if pieces { " and 4 pieces" } else { "" }
                    ),
                    move |o: &[f64]| (!pieces || o[4] == 4.0) && c.iter().all(|&j| o[j] <= lo[j]),
                ));
                let (hi, c) = (high.clone(), cells.clone());
                events.push(Event::new(
                    format!(
                        "answers {name} above truth + {}/n{}",
                        1.0 + t,
                        if pieces { " and 3 pieces" } else { "" }
                    ),
                    move |o: &[f64]| (!pieces || o[4] == 3.0) && c.iter().all(|&j| o[j] >= hi[j]),
                ));
            }
        }
    }
    Ok(AuditCase::new(
        "conjunction-release",
        "replace-one, n = 10^6 over {0,1}²: a record moves from cell 11 to x0-only, whose count 1669 vs 1670 straddles the include threshold rho/3",
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let r = release_conjunctions(data, &config, run_eps, &mut Accountant::pure(run_eps), rng)
            .map_err(|e| AuditError::InvalidCase(e.to_string()))?;
        let mut out: Vec<f64> = (0..4u64).map(|s| r.conjunction(s)).collect();
        out.push(r.decomposition().len() as f64);
        Ok(out)
    })
    .events(events))
}

/// Fig. 6.6 in the local model: 16 simulated devices over two attributes, ε = 1
/// per device (partition: each answers one of the k = 8 queries once, two devices
/// per query), ρ = 0.3 so that the noisy marginals decide the pieces. One device's
/// record moves from cell 00 to 11 (counts [6, 0, 0, 10] vs [5, 0, 0, 11], so it is
/// the only device whose record differs). The partition is public and drawn from
/// the fleet seed alone, so every run is conditioned on a partition that puts the
/// moving device in the group of the sixth query asked (the group its record
/// moves the outputs most through; with a random partition its report is diluted
/// over 8 groups and the case read 0). The outputs are the four conjunction
/// answers (on a grid of events), the number of pieces, and a hash of the whole
/// output in 32 buckets.
pub fn conjunction_release_local(small: bool) -> Result<AuditCase, AuditError> {
    local_case(small, LocalSetup::default())
}

/// What a local conjunction-release case runs.
pub(crate) struct LocalSetup {
    /// The device budget the oracle runs at (ε = 1 for the real release).
    pub(crate) device_epsilon: Epsilon,
    /// Condition every run on the (data-independent: it depends on the fleet seed
    /// and the public n only) partition putting the moving device in this query
    /// group; `None`: a random partition.
    pub(crate) group: Option<usize>,
    /// Counts of cells 00 and 11 on `D` (`D′` moves one record from 00 to 11);
    /// cells 01 and 10 hold `middle` each.
    pub(crate) c00: u64,
    pub(crate) c11: u64,
    pub(crate) middle: u64,
    pub(crate) label: &'static str,
}

impl Default for LocalSetup {
    fn default() -> Self {
        LocalSetup {
            device_epsilon: Epsilon::new(1, 1).expect("ε = 1"),
            group: Some(5),
            c00: 6,
            c11: 10,
            middle: 0,
            label: "Fig. 6.6 (decomposition, local SQ oracle, partition)",
        }
    }
}

pub(crate) fn local_case(small: bool, setup_: LocalSetup) -> Result<AuditCase, AuditError> {
    use crate::conjunctions::{ReleaseConfig, release_conjunctions_local};
    use crate::ldp::fleet::{FleetSeed, device_rng_from};
    use crate::ldp::sq::{LocalSqOracle, Strategy};
    use privq_core::rand_core::Rng;
    let LocalSetup {
        device_epsilon,
        group,
        c00,
        c11,
        middle,
        label,
    } = setup_;
    let make = |c00: u64, c11: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![c00, middle, middle, c11], MemoryCap::default())
            .map_err(setup)
    };
    // Conditioning on a partition audits one moving device only when the middle
    // cells are empty (otherwise several devices' records shift position, and the
    // pair is not a device-level neighbour).
    if group.is_some() && middle != 0 {
        return Err(AuditError::InvalidCase(
            "a case conditioned on a partition needs empty middle cells".into(),
        ));
    }
    let (d, d_prime) = (make(c00, c11)?, make(c00 - 1, c11 + 1)?);
    // The device at position c00 − 1 (records listed by cell) holds 00 on D and
    // 11 on D′ when the middle cells are empty; otherwise several positions shift.
    let moving = (c00 - 1) as usize;
    let n = (c00 + c11 + 2 * middle) as usize;
    let config = ReleaseConfig {
        alpha: 0.3,
        beta: 0.1,
        p: vec![0.5; 2],
        cap: 2,
        rho: Some(0.3),
        require_n: false,
    };
    let k = config.query_budget(4).map_err(setup)?;
    let oracle = LocalSqOracle::new(device_epsilon, k, 0.1, Strategy::Partition).map_err(setup)?;
    let step = if small { 10 } else { 20 };
    let events: Vec<Event> = (0..4)
        .flat_map(move |j| {
            (0..=step).flat_map(move |i| {
                let v = f64::from(i) / f64::from(step);
                [Event::at_least(j, v), Event::at_most(j, v)]
            })
        })
        .chain([Event::at_least(4, 1.5)])
        .chain((0..32).map(|b| Event::hashed(b, 32)))
        .collect();
    Ok(AuditCase::new(
        "conjunction-release-local",
        format!(
            "replace-one, {n} devices over {{0,1}}²: one device's record moves from cell 00 to 11{}",
            group.map_or(String::new(), |g| format!(", partition with it in group {g}"))
        ),
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let seed = loop {
            let seed = rng.next_u64();
            let Some(g) = group else { break seed };
            let mut planner = device_rng_from(&FleetSeed::from(seed), u64::MAX);
            let groups = oracle
                .assignment(n, &mut planner)
                .map_err(|e| AuditError::InvalidCase(e.to_string()))?;
            if usize::from(groups[moving]) == g {
                break seed;
            }
        };
        let r = release_conjunctions_local(data, &config, &oracle, seed)
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

/// The cut-release case's configuration: three vertices, cap c = 1 (so
/// k = c(c + 1)(|V| + 1) + c² = 9 queries at ε/9), E_max = 20, ρ = 1.125 so that the include threshold
/// ρ/3 is 7.5 edges (and V's 2ρ/3 is 15), p = (1, 0, 1).
fn cut_config() -> crate::conjunctions::CutConfig {
    crate::conjunctions::CutConfig {
        alpha: 0.5,
        beta: 0.1,
        p: vec![1.0, 0.0, 1.0],
        cap: 1,
        rho: Some(1.125),
        e_max: 20,
        require_tolerance: false,
    }
}

/// The private cut-function release (thesis §6.4.1, Cor. 6.4.7, Algorithm 6.4)
/// where its branching decides: three vertices, E_max = 20, ε = 1, k = 9. `D` has
/// the edge 0 → 1 eight times and twelve self-loops at vertex 2 (never cut), so
/// |E| = E_max; `D′` adds one more 0 → 1 (|E| = 21 > E_max: answered, never
/// refused). The added edge moves cut({0}) and cut({0, 2}) (8 → 9 edges), which
/// are exactly the marginals that decide the first level (vertex 0 at ∅) and the
/// second (vertex 1 of the complement, `f({0, 2}) − f(V)`); both sit just above the
/// include threshold ρ/3 = 7.5 edges, so each decision goes either way. When
/// neither includes, the one final piece has vertices 0 and 2 free (p = 1) and 1
/// free (p = 0), so its mean is cut({0, 2}) itself: a third query that moves.
/// Outputs: the released f (every set has the same piece), whether each level
/// included (truncated at the cap), the first-level V bits. Events: each decision,
/// the mean's tails, and the three jointly — a release that charges each query at
/// ε instead of ε/k shows only there.
pub fn cut_release(small: bool) -> Result<AuditCase, AuditError> {
    cut_release_at(
        small,
        Epsilon::new(1, 1).map_err(setup)?,
        "cut-function release (§6.4.1, Alg. 6.4, cut oracle)",
    )
}

/// [`cut_release`] run at `run_eps` (a twin runs at k·ε) and judged against ε = 1.
pub(crate) fn cut_release_at(
    small: bool,
    run_eps: Epsilon,
    label: &str,
) -> Result<AuditCase, AuditError> {
    use crate::conjunctions::{Graph, release_cut_function};
    let d = Graph::with_multiplicities(3, &[(0, 1, 8), (2, 2, 12)]).map_err(setup)?;
    let d_prime = Graph::with_multiplicities(3, &[(0, 1, 9), (2, 2, 12)]).map_err(setup)?;
    let config = cut_config();
    let e_max = config.e_max as f64;
    // Edges, below D's 8 (and D′'s 9) and above both.
    let offsets: &[f64] = if small { &[0.5, 1.5] } else { &[0.5, 1.5, 2.5] };
    let mut events = vec![
        Event::equals(1, 1.0),
        Event::equals(1, 0.0),
        Event::equals(2, 1.0),
        Event::equals(2, 0.0),
        Event::new("neither level includes", |o: &[f64]| {
            o[1] == 0.0 && o[2] == 0.0
        }),
        Event::new("both levels include", |o: &[f64]| {
            o[1] == 1.0 && o[2] == 1.0
        }),
    ];
    for &t in offsets {
        let (lo, hi) = ((8.0 - t) / e_max, (9.0 + t) / e_max);
        events.push(Event::at_most(0, lo));
        events.push(Event::at_least(0, hi));
        events.push(Event::new(
            format!("neither level includes and f <= {lo}"),
            move |o: &[f64]| o[1] == 0.0 && o[2] == 0.0 && o[0] <= lo,
        ));
        events.push(Event::new(
            format!("neither level includes and f >= {hi}"),
            move |o: &[f64]| o[1] == 0.0 && o[2] == 0.0 && o[0] >= hi,
        ));
    }
    Ok(AuditCase::new(
        "cut-release",
        "add/remove-one-edge, 3 vertices, E_max = 20: 0 -> 1 x8 and 12 self-loops (|E| = E_max) vs one more 0 -> 1 (|E| = 21 > E_max, answered); cut({0}) and cut({0,2}) at the include threshold rho/3 = 7.5 edges; k = 9",
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let graph = if side == Side::D { &d } else { &d_prime };
        let r = release_cut_function(graph, &config, run_eps, &mut Accountant::pure(run_eps), rng)
            .map_err(|e| AuditError::InvalidCase(e.to_string()))?;
        let two = r.decomposition();
        let first = two.first().pieces()[0];
        let second = two.second()[0].pieces()[0];
        Ok(vec![
            r.cut(0),
            f64::from(u8::from(first.v_path & 0b001 == 0)),
            f64::from(u8::from(second.v_path & 0b010 == 0)),
            first.v as f64,
        ])
    })
    .events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditReport;
    use crate::central::VectorLaplace;
    use crate::conjunctions::{StatOracle, release_by_agnostic_learning};
    use crate::contract::Neighbours;

    fn check(name: &str, real: AuditCase, twins: Vec<(&str, AuditCase)>) -> Vec<AuditReport> {
        let twins: Vec<(&str, &AuditCase)> = twins.iter().map(|(n, c)| (*n, c)).collect();
        super::super::twins::check(name, &real, &twins)
    }

    /// `STAT` without noise, with the tolerance the real oracle reports (so the
    /// stopping rule is the real one): Fig. 6.7 with the noise removed.
    struct Noiseless {
        answer: f64,
        tolerance: f64,
    }

    impl StatOracle for Noiseless {
        fn stat(&mut self, _: usize, _: &Query) -> Result<f64, ReleaseError> {
            Ok(self.answer)
        }

        fn tolerance(&self) -> f64 {
            self.tolerance
        }
    }

    /// The local release's twin whose devices answer at 2ε (the oracle built for a
    /// budget twice the claim) is flagged; the real release passes.
    #[test]
    fn the_auditor_flags_the_double_budget_twin_of_the_local_release() {
        let twin = local_case(
            true,
            LocalSetup {
                device_epsilon: Epsilon::new(2, 1).unwrap(),
                label: "twin: each device at 2ε",
                ..LocalSetup::default()
            },
        )
        .unwrap();
        check(
            "conjunction-release-local",
            conjunction_release_local(true).unwrap(),
            vec![("each device at 2ε", twin)],
        );
    }

    /// Fig. 6.7's twins: no noise at all (the exact answers, same stopping rule),
    /// and half the noise (the private release at 2ε, audited against ε).
    #[test]
    fn the_auditor_flags_each_twin_of_agnostic_mw() {
        let eps = Epsilon::new(1, 1).unwrap();
        let tolerance = VectorLaplace::fractions(Neighbours::Replace, AGNOSTIC_N, 1, eps)
            .unwrap()
            .scale()
            * ((1.0 / AGNOSTIC_BETA).ln() + 1.0);
        assert!(tolerance < AGNOSTIC_BETA / 4.0);
        let noiseless = agnostic_case(true, "twin: no noise", move |data, _| {
            let answer = data.counts()[1] as f64 / data.total() as f64;
            let mut oracle = Noiseless { answer, tolerance };
            release_by_agnostic_learning(&agnostic_class(), &mut oracle, 2, AGNOSTIC_BETA)
        })
        .unwrap();
        let double = eps.checked_mul_int(2).unwrap();
        let half_noise = agnostic_case(true, "twin: half the noise", move |data, rng| {
            release_by_agnostic_learning_private(
                data,
                &agnostic_class(),
                AGNOSTIC_BETA,
                double,
                &mut Accountant::pure(double),
                rng,
            )
        })
        .unwrap();
        check(
            "agnostic-mw",
            agnostic_mw(true).unwrap(),
            vec![("no noise", noiseless), ("half the noise", half_noise)],
        );
    }

    /// Fig. 6.6's twin with the thesis' TYPO-18: every query at ε instead of ε/k
    /// (the release run at 16ε, judged against ε).
    #[test]
    fn the_auditor_flags_each_twin_of_the_conjunction_release() {
        let k = conj_config().query_budget(4).unwrap() as u64;
        assert_eq!(k, 16);
        let typo18 = Epsilon::new(k, 1).unwrap();
        let twin = conjunction_release_at(true, typo18, "twin: TYPO-18").unwrap();
        check(
            "conjunction-release",
            conjunction_release(true).unwrap(),
            vec![("each query at ε (TYPO-18)", twin)],
        );
    }

    /// The cut release's twin charging each query at ε instead of ε/k (k = 9: run
    /// at 9ε, judged against ε).
    #[test]
    fn the_auditor_flags_each_twin_of_the_cut_release() {
        let k = cut_config().query_budget(3).unwrap() as u64;
        assert_eq!(k, 9);
        let twin = cut_release_at(true, Epsilon::new(k, 1).unwrap(), "twin: ε per query").unwrap();
        check(
            "cut-release",
            cut_release(true).unwrap(),
            vec![("each query at ε", twin)],
        );
    }
}
