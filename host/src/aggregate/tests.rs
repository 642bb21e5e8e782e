//! The plan end to end: charges, bounding, public and private groups, accuracy.

use super::*;
use crate::{Epsilon, seeded_rng};

fn eps(n: u64, d: u64) -> Epsilon {
    Epsilon::new(n, d).unwrap()
}

/// `units` devices in `regions` regions, `rows` readings each at `temp = unit % 30`.
fn readings(units: usize, rows: usize, regions: usize) -> String {
    let mut csv = String::from("device,region,temp\n");
    for u in 0..units {
        for _ in 0..rows {
            csv.push_str(&format!("d{u},r{},{}\n", u % regions, u % 30));
        }
    }
    csv
}

fn plan(groups: Groups) -> Plan {
    let query = Query::new(
        ["region"],
        [
            ("n", Aggregate::Count),
            ("total", Aggregate::Sum("temp".into())),
            ("mean", Aggregate::Mean("temp".into())),
            ("median", Aggregate::quantile("temp", 0.5).unwrap()),
        ],
    );
    Plan::builder(query)
        .privacy_unit("device", Contribution::new(1, 2).unwrap())
        .bounds("temp", "0:40".parse().unwrap())
        .groups(groups)
        .build(eps(4, 1))
        .unwrap()
}

#[test]
fn charges_every_measurement_before_sampling_and_spends_exactly_epsilon() {
    let p = plan(Groups::public([["r0"], ["r1"], ["nowhere"]]));
    // Count, sum, centred sum, quantile: four shares of 1.
    assert_eq!(p.epsilon_share(), eps(1, 1));
    let table = Table::from_csv(readings(400, 5, 2).as_bytes(), &p.columns(), 1 << 20).unwrap();
    let (release, acct) = p.release(&table, &mut seeded_rng(1)).unwrap();
    assert_eq!(acct.spent_epsilon(), Some(eps(4, 1)));
    assert_eq!(acct.ledger().len(), 4);
    assert_eq!(acct.neighbours(), Some(Neighbours::AddRemove));
    let keys: Vec<&str> = release.rows().iter().map(|r| r.key()[0].as_str()).collect();
    assert_eq!(keys, ["r0", "r1", "nowhere"]);
    // 200 devices per region, 2 rows each after bounding (5 → 2).
    let n = release.rows()[0].estimates()[0];
    let (lo, hi) = n.interval().unwrap();
    assert!((n.value() - 400.0).abs() < 20.0 && lo < n.value() && n.value() < hi);
    let mean = release.rows()[0].estimates()[2].value();
    assert!((mean - 14.0).abs() < 1.5, "{mean}"); // even devices: temp 0, 2, …, 28
    let median = release.rows()[0].estimates()[3].value();
    assert!((median - 14.0).abs() < 3.0, "{median}");
    // The key nobody holds: noisy zeros, a mean somewhere in the bounds.
    let nowhere = &release.rows()[2].estimates();
    assert!(nowhere[0].value().abs() < 30.0);
    assert!((0.0..=40.0).contains(&nowhere[2].value()));
    // A refused charge samples nothing.
    let mut small = crate::accountant::Accountant::pure(eps(1, 1));
    assert!(matches!(
        p.release_charged(&table, &mut small, &mut seeded_rng(1)),
        Err(AggregateError::Budget(_))
    ));
}

#[test]
fn private_groups_keep_the_big_ones_and_drop_a_rare_key() {
    let p = plan(Groups::Private { delta: 1e-6 });
    assert_eq!(
        p.cost(),
        crate::accountant::Cost::Approximate {
            epsilon: eps(4, 1),
            delta: 1e-6
        }
    );
    let mut csv = readings(400, 3, 2);
    csv.push_str("lonely,r-rare,5\n");
    let table = Table::from_csv(csv.as_bytes(), &p.columns(), 1 << 20).unwrap();
    for seed in 0..20 {
        let (release, acct) = p.release(&table, &mut seeded_rng(seed)).unwrap();
        let keys: Vec<&str> = release.rows().iter().map(|r| r.key()[0].as_str()).collect();
        assert_eq!(keys, ["r0", "r1"], "seed {seed}");
        assert_eq!(acct.spent_delta(), 1e-6);
        assert!(release.threshold().unwrap() > 10);
    }
}

#[test]
fn plans_that_do_not_fit_are_refused_before_any_charge() {
    let q = || Query::new(["region"], [("s", Aggregate::Sum("temp".into()))]);
    let e = eps(1, 1);
    let unbounded = Plan::builder(q())
        .groups(Groups::Private { delta: 1e-6 })
        .build(e);
    assert!(matches!(unbounded, Err(AggregateError::Unbounded(c)) if c == "temp"));
    let no_groups = Plan::builder(q())
        .bounds("temp", "0:1".parse().unwrap())
        .build(e);
    assert!(
        no_groups
            .unwrap_err()
            .to_string()
            .contains("needs its groups")
    );
    for delta in [0.0, 1.0, f64::NAN] {
        let p = Plan::builder(q())
            .bounds("temp", "0:1".parse().unwrap())
            .groups(Groups::Private { delta })
            .build(e);
        assert!(p.is_err(), "{delta}");
    }
    // Public keys without a GROUP BY (a forged plan could carry them).
    let count = || Query::new(Vec::<String>::new(), [("n", Aggregate::Count)]);
    let keys_ungrouped = Plan::builder(count())
        .groups(Groups::public([["a"]]))
        .build(e);
    assert!(
        keys_ungrouped
            .unwrap_err()
            .to_string()
            .contains("without GROUP BY")
    );
    let one_empty_key = Plan::builder(count())
        .groups(Groups::Public(vec![Vec::new()]))
        .build(e);
    assert!(one_empty_key.is_ok(), "the query's single group");
    let wrong_arity = Plan::builder(q())
        .bounds("temp", "0:1".parse().unwrap())
        .groups(Groups::public([["a", "b"]]))
        .build(e);
    assert!(wrong_arity.is_err());
    let twice = Plan::builder(Query::new(
        Vec::<String>::new(),
        [("n", Aggregate::Count), ("n", Aggregate::Count)],
    ))
    .build(e);
    assert!(twice.is_err());
    // An empty table is refused before the charge.
    let p = Plan::builder(Query::new(Vec::<String>::new(), [("n", Aggregate::Count)]))
        .build(e)
        .unwrap();
    let empty = Table::from_csv("a\n".as_bytes(), &p.columns(), 10).unwrap();
    let mut acct = p.accountant().unwrap();
    assert!(matches!(
        p.release_charged(&empty, &mut acct, &mut seeded_rng(0)),
        Err(AggregateError::EmptyTable)
    ));
    assert_eq!(acct.ledger().len(), 0);
}

#[test]
fn count_and_sum_intervals_cover_at_their_level() {
    // 1 000 seeded releases of one group: the exact intervals cover the bounded
    // count and sum about 95 % of the time (discreteness makes it at least 95 %).
    let query = Query::new(
        Vec::<String>::new(),
        [
            ("n", Aggregate::Count),
            ("s", Aggregate::Sum("temp".into())),
            ("m", Aggregate::Mean("temp".into())),
        ],
    );
    let p = Plan::builder(query)
        .privacy_unit("device", Contribution::new(1, 1).unwrap())
        .bounds("temp", "0:40".parse().unwrap())
        .build(eps(1, 2))
        .unwrap();
    let table = Table::from_csv(readings(300, 1, 1).as_bytes(), &p.columns(), 1 << 20).unwrap();
    let (true_n, true_s) = (300.0, (0..300).map(|u| (u % 30) as f64).sum::<f64>());
    let true_m = true_s / true_n;
    let mut covered = [0u32; 3];
    let runs = 1000;
    let mut rng = seeded_rng(11);
    for _ in 0..runs {
        let (r, _) = p.release(&table, &mut rng).unwrap();
        for (i, truth) in [true_n, true_s, true_m].into_iter().enumerate() {
            let (lo, hi) = r.rows()[0].estimates()[i].interval().unwrap();
            covered[i] += u32::from(lo <= truth && truth <= hi);
        }
    }
    for (i, c) in covered.iter().enumerate() {
        let rate = f64::from(*c) / f64::from(runs);
        assert!(
            (0.93..=0.975).contains(&rate),
            "estimate {i}: coverage {rate}"
        );
    }
}

#[test]
fn a_released_quantile_is_within_its_rank_bound() {
    // 400 seeded medians of 1 200 distinct values at a small ε: the released
    // value's rank is within the plan's bound (plus the candidates' spacing) at
    // least at the confidence; the bound is far below the group's size.
    let query = Query::new(
        Vec::<String>::new(),
        [("m", Aggregate::quantile("temp", 0.5).unwrap())],
    );
    let p = Plan::builder(query)
        .bounds("temp", "0:1200".parse().unwrap())
        .quantile_candidates(1200)
        .build(eps(1, 10))
        .unwrap();
    let [(name, bound)] = &p.quantile_rank_errors()[..] else {
        panic!("one quantile")
    };
    assert_eq!(name, "m");
    assert!(*bound > 50.0 && *bound < 600.0, "{bound}");
    let mut csv = String::from("temp\n");
    for x in 0..1200 {
        csv.push_str(&format!("{}\n", x as f64 + 0.5));
    }
    let table = Table::from_csv(csv.as_bytes(), &p.columns(), 1 << 20).unwrap();
    let (runs, mut within, mut worst) = (400, 0, 0.0f64);
    let mut rng = seeded_rng(5);
    for _ in 0..runs {
        let (r, _) = p.release(&table, &mut rng).unwrap();
        // Rank of the released value: the values at or below it.
        let v = r.rows()[0].estimates()[0].value();
        let rank = (v.floor() + 1.0).clamp(0.0, 1200.0);
        let error = (rank - 600.0).abs();
        worst = worst.max(error);
        within += u32::from(error <= bound + 1.0);
    }
    assert!(
        f64::from(within) / f64::from(runs) >= 0.95,
        "{within} of {runs}"
    );
    // Not vacuous: some releases are off by more than a tenth of the bound.
    assert!(worst > bound / 10.0, "worst {worst}, bound {bound}");
}

#[test]
fn where_keeps_only_matching_rows_and_an_empty_match_still_releases() {
    let sql = super::parse_sql(
        "SELECT region, COUNT(*) AS n FROM t WHERE temp >= 10 AND region <> 'r1' GROUP BY region",
    )
    .unwrap();
    let p = Plan::builder(sql.query)
        .privacy_unit("device", Contribution::new(1, 1).unwrap())
        .groups(Groups::public([["r0"], ["r1"]]))
        .build(eps(2, 1))
        .unwrap();
    // Devices u: temp u % 30; region r(u % 2). r0 with temp ≥ 10: 40 % of 300 = 120 devices.
    let table = Table::from_csv(readings(600, 1, 2).as_bytes(), &p.columns(), 1 << 20).unwrap();
    assert_eq!(table.rows(), 200);
    let (r, _) = p.release(&table, &mut seeded_rng(2)).unwrap();
    assert!((r.rows()[0].estimates()[0].value() - 200.0).abs() < 10.0);
    assert!(r.rows()[1].estimates()[0].value().abs() < 10.0);
    // No row matches: noisy zeros, not a refusal (the input is not empty).
    let none = super::parse_sql("SELECT COUNT(*) FROM t WHERE temp > 1000").unwrap();
    let p = Plan::builder(none.query)
        .privacy_unit("device", Contribution::new(1, 1).unwrap())
        .build(eps(1, 1))
        .unwrap();
    let table = Table::from_csv(readings(50, 1, 2).as_bytes(), &p.columns(), 1 << 20).unwrap();
    assert_eq!(table.rows(), 0);
    assert!(p.release(&table, &mut seeded_rng(3)).is_ok());
    // A number compared with text is unknown: no row matches, nothing is refused.
    let text = super::parse_sql("SELECT COUNT(*) FROM t WHERE region > 3").unwrap();
    let p = Plan::builder(text.query).build(eps(1, 1)).unwrap();
    let t = Table::from_csv(readings(5, 1, 2).as_bytes(), &p.columns(), 10).unwrap();
    assert_eq!(t.rows(), 0);
    // A bad value is refused whatever WHERE keeps, or dropped on request.
    let mut csv = readings(5, 1, 2);
    csv.push_str("d9,r0,oops\n");
    let q = || {
        super::parse_sql("SELECT AVG(temp) FROM t WHERE region = 'nowhere'")
            .unwrap()
            .query
    };
    let p = Plan::builder(q())
        .bounds("temp", "0:40".parse().unwrap())
        .build(eps(1, 1))
        .unwrap();
    let e = Table::from_csv(csv.as_bytes(), &p.columns(), 10)
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 7") && !e.contains("oops"), "{e}");
    let p = Plan::builder(q())
        .bounds("temp", "0:40".parse().unwrap())
        .drop_invalid(true)
        .build(eps(1, 1))
        .unwrap();
    assert_eq!(
        Table::from_csv(csv.as_bytes(), &p.columns(), 10)
            .unwrap()
            .rows(),
        0
    );
}

#[test]
fn variance_and_standard_deviation_come_from_three_noisy_totals() {
    // temp = u % 30 over 3 000 devices: population variance (30² − 1)/12 = 74.92.
    let query = Query::new(
        Vec::<String>::new(),
        [
            ("v", Aggregate::Variance("temp".into())),
            ("sd", Aggregate::StdDev("temp".into())),
        ],
    );
    let p = Plan::builder(query)
        .privacy_unit("device", Contribution::new(1, 1).unwrap())
        .bounds("temp", "0:40".parse().unwrap())
        .build(eps(3, 1))
        .unwrap();
    // Count, centred sum, centred sum of squares.
    assert_eq!(p.epsilon_share(), eps(1, 1));
    let table = Table::from_csv(readings(3000, 1, 1).as_bytes(), &p.columns(), 1 << 20).unwrap();
    let (r, acct) = p.release(&table, &mut seeded_rng(4)).unwrap();
    assert_eq!(acct.ledger().len(), 3);
    let (v, sd) = (
        r.rows()[0].estimates()[0].value(),
        r.rows()[0].estimates()[1].value(),
    );
    assert!((v - 74.92).abs() < 5.0, "{v}");
    assert!((sd - v.sqrt()).abs() < 1e-9);
    let (lo, hi) = r.rows()[0].estimates()[0].interval().unwrap();
    assert!(lo < v && v < hi && lo > 60.0 && hi < 90.0, "{lo} {v} {hi}");
    let (a, b) = r.rows()[0].estimates()[1].interval().unwrap();
    assert_eq!((a, b), (lo.sqrt(), hi.sqrt()));
    assert!(r.has_interval().iter().all(|&x| x));
}

#[test]
fn variance_intervals_cover_the_bounded_variance_at_their_confidence() {
    // 200 devices, temp = u % 30 (variance (30² − 1)/12 = 74.9167), bounds 0:40,
    // ε = 3: the centred sum's and the count's terms both matter. Over 400 seeded
    // releases the 95 % interval should hold the truth about 380 times (a binomial
    // sd of 4.4; these seeds give 376).
    let query = Query::new(
        Vec::<String>::new(),
        [("v", Aggregate::Variance("temp".into()))],
    );
    let p = Plan::builder(query)
        .privacy_unit("device", Contribution::new(1, 1).unwrap())
        .bounds("temp", "0:40".parse().unwrap())
        .build(eps(3, 1))
        .unwrap();
    let table = Table::from_csv(readings(200, 1, 1).as_bytes(), &p.columns(), 1 << 20).unwrap();
    let truth = (30.0f64 * 30.0 - 1.0) / 12.0;
    let mut covered = 0;
    for seed in 0..400 {
        let (r, _) = p.release(&table, &mut seeded_rng(seed)).unwrap();
        let (lo, hi) = r.rows()[0].estimates()[0].interval().unwrap();
        covered += u32::from(lo <= truth && truth <= hi);
    }
    assert!((366..=394).contains(&covered), "{covered} of 400");
}

#[test]
fn the_centred_squares_noise_is_g_r_delta_h_squared_over_the_share() {
    use super::measure::Measure;
    // -20:50: grid 1/16, steps -320..800, midpoint 240, H = max(800 − 240, 240 + 320).
    let b: Bounds = "-20:50".parse().unwrap();
    assert_eq!((b.mid_steps(), b.half_width_steps()), (240, 560));
    let h2: u128 = 560 * 560;
    let query = || {
        Query::new(
            ["region"],
            [
                ("v", Aggregate::Variance("temp".into())),
                ("sd", Aggregate::StdDev("temp".into())),
            ],
        )
    };
    for (neighbours, delta) in [(Neighbours::AddRemove, 1u128), (Neighbours::Replace, 2)] {
        // Count, centred sum, centred sum of squares: ε split in three.
        for (total, share) in [(eps(3, 2), eps(1, 2)), (eps(10, 1), eps(10, 3))] {
            let p = Plan::builder(query())
                .privacy_unit("device", Contribution::new(2, 3).unwrap())
                .neighbours(neighbours)
                .bounds("temp", b)
                .groups(Groups::public([["r0"], ["r1"]]))
                .build(total)
                .unwrap();
            assert_eq!(p.epsilon_share(), share);
            // Sensitivity g·r·Δ·H² grid steps², scale sensitivity/share: compare the
            // fractions num/den = l1·share.den/share.num crosswise, exactly.
            let l1 = 2 * 3 * delta * h2;
            let noise = p.noise_of(Measure::CentredSquares(0)).unwrap();
            assert_eq!(
                u128::from(noise.scale_num()) * u128::from(share.num()),
                l1 * u128::from(share.den()) * u128::from(noise.scale_den()),
                "{neighbours:?} at {total}: {}/{}",
                noise.scale_num(),
                noise.scale_den()
            );
            // Its neighbours in the plan: count g·r·Δ, centred sum g·r·Δ·H.
            let scale = |m| {
                let n = p.noise_of(m).unwrap();
                (n.scale_num(), n.scale_den())
            };
            let expect = |l1: u128| {
                let num = l1 * u128::from(share.den());
                let den = u128::from(share.num());
                let g = (1..=den)
                    .rev()
                    .find(|g| num.is_multiple_of(*g) && den.is_multiple_of(*g))
                    .unwrap();
                ((num / g) as u64, (den / g) as u64)
            };
            assert_eq!(scale(Measure::Count), expect(6 * delta));
            assert_eq!(scale(Measure::CentredSum(0)), expect(6 * delta * 560));
            assert_eq!(scale(Measure::CentredSquares(0)), expect(l1));
        }
    }
}

/// Every row its own unit, `VARIANCE` and `STDDEV` of temp in `[0, 8]` by region, at
/// an ε so large that no noise is drawn in practice (the centred squares' scale is
/// 3·512²/2⁴⁰ < 10⁻⁶ grid steps²).
fn variance_by_region(epsilon: Epsilon) -> Plan {
    let query = Query::new(
        ["region"],
        [
            ("v", Aggregate::Variance("temp".into())),
            ("sd", Aggregate::StdDev("temp".into())),
        ],
    );
    Plan::builder(query)
        .bounds("temp", "0:8".parse().unwrap())
        .groups(Groups::public([["a"], ["one"], ["same"], ["none"]]))
        .build(epsilon)
        .unwrap()
}

/// `a`: −3, 2.001, 4, 4, 5, 7, 100, 6.999, clamped to `[0, 8]` and snapped to the grid
/// 1/128: 0, 2, 4, 4, 5, 7, 8, 7. `one`: a single row. `same`: three rows at 100,
/// all 8 after clamping. `none`: no row.
const VARIANCE_CSV: &str = "region,temp\n\
    a,-3\na,2.001\na,4\na,4\na,5\na,7\na,100\na,6.999\n\
    one,3\n\
    same,100\nsame,100\nsame,100\n";

#[test]
fn variance_without_noise_is_the_population_variance_after_clamping_and_snapping() {
    let p = variance_by_region(eps(1 << 40, 1));
    let table = Table::from_csv(VARIANCE_CSV.as_bytes(), &p.columns(), 100).unwrap();
    let (r, _) = p.release(&table, &mut seeded_rng(5)).unwrap();
    let got: Vec<(f64, f64)> = r
        .rows()
        .iter()
        .map(|row| (row.estimates()[0].value(), row.estimates()[1].value()))
        .collect();
    // a: mean 37/8 = 4.625, mean square 223/8 = 27.875: 27.875 − 4.625² = 415/64.
    // In grid steps: s1 = 640, s2 = 901 120, (s2/8 − 80²)/128² = 6.484375, exactly.
    let var_a: f64 = 415.0 / 64.0;
    assert_eq!(got[0], (var_a, var_a.sqrt()));
    // One row, all values equal, no row: 0 (never negative, never NaN).
    for (i, &(v, sd)) in got.iter().enumerate().skip(1) {
        assert!(v == 0.0 && v.is_sign_positive(), "group {i}: {v}");
        assert!(sd == 0.0 && sd.is_sign_positive(), "group {i}: {sd}");
    }
}

#[test]
fn noisy_variance_is_never_negative_nor_nan_and_stddev_is_its_root() {
    // ε = 3/10 (a tenth per measurement): the noise swamps every group of one to
    // eight rows, so the clamps at 0 and at (width/2)² = 16 both bite.
    let p = variance_by_region(eps(3, 10));
    let table = Table::from_csv(VARIANCE_CSV.as_bytes(), &p.columns(), 100).unwrap();
    let mut rng = seeded_rng(6);
    let (mut zeros, mut tops) = (0, 0);
    for _ in 0..500 {
        let (r, _) = p.release(&table, &mut rng).unwrap();
        for row in r.rows() {
            let (v, sd) = (row.estimates()[0].value(), row.estimates()[1].value());
            assert!((0.0..=16.0).contains(&v) && v.is_sign_positive(), "{v}");
            assert_eq!(sd, v.sqrt(), "{v}");
            zeros += u32::from(v == 0.0);
            tops += u32::from(v == 16.0);
        }
    }
    // Both clamps were exercised.
    assert!(zeros > 100 && tops > 100, "{zeros} {tops}");
}

// --- Histograms: a bin of a numeric column as a group key. -----------------------

fn bands() -> Binning {
    Binning::new("temp", &[-20.0, 0.0, 20.0, 50.0]).unwrap()
}

/// Counts (and, to check the bin is only a key, sums) by region and band.
fn histogram(groups: Option<Groups>, unit: Option<Contribution>, epsilon: Epsilon) -> Plan {
    let query = Query::new(
        ["region"],
        [
            ("n", Aggregate::Count),
            ("total", Aggregate::Sum("temp".into())),
        ],
    )
    .bin("band", bands());
    let mut b = Plan::builder(query).bounds("temp", "-100:100".parse().unwrap());
    if let Some(g) = groups {
        b = b.groups(g);
    }
    if let Some(c) = unit {
        b = b.privacy_unit("device", c);
    }
    b.build(epsilon).unwrap()
}

/// Without noise (ε = 2⁴⁰: the count's scale is 2⁻³⁹, the sum's 2⁻³¹ of a grid step,
/// so every draw is 0 but with probability below 10⁻⁸): every bin of every public
/// key in edge order, outliers clamped into the end bins, empty bins at 0.
#[test]
fn a_histogram_without_noise_counts_every_bin_and_clamps_outliers_into_the_end_bins() {
    let p = histogram(
        Some(Groups::public([["north"], ["south"], ["east"]])),
        None,
        eps(1 << 40, 1),
    );
    // One output group per region and bin: nine, listed without naming a bin.
    assert_eq!(p.columns().group_by, ["region", "band"]);
    let csv = "device,region,temp\n\
        a,north,-30\nb,north,-5\nc,north,0\nd,north,19.5\ne,north,50\nf,north,1e6\n\
        g,south,20\nh,west,5\n";
    let table = Table::from_csv(csv.as_bytes(), &p.columns(), 100).unwrap();
    let (r, acct) = p.release(&table, &mut seeded_rng(3)).unwrap();
    assert_eq!(acct.spent_epsilon(), Some(eps(1 << 40, 1)));
    let got: Vec<(String, String, f64, f64)> = r
        .rows()
        .iter()
        .map(|row| {
            (
                row.key()[0].clone(),
                row.key()[1].clone(),
                row.estimates()[0].value(),
                row.estimates()[1].value(),
            )
        })
        .collect();
    let want = [
        // -30 is clamped into the first bin (its value into the bounds: -30 stays).
        ("north", "[-20, 0)", 2.0, -35.0),
        // 0 opens the second bin; 19.5 is in it.
        ("north", "[0, 20)", 2.0, 19.5),
        // 50 closes the last bin; 10⁶ is clamped into it (and its value to 100).
        ("north", "[20, 50]", 2.0, 150.0),
        ("south", "[-20, 0)", 0.0, 0.0),
        ("south", "[0, 20)", 0.0, 0.0),
        ("south", "[20, 50]", 1.0, 20.0),
        ("east", "[-20, 0)", 0.0, 0.0),
        ("east", "[0, 20)", 0.0, 0.0),
        ("east", "[20, 50]", 0.0, 0.0),
    ];
    let want: Vec<(String, String, f64, f64)> = want
        .iter()
        .map(|&(a, b, n, s)| (a.into(), b.into(), n, s))
        .collect();
    assert_eq!(got, want);
    assert_eq!(r.group_by(), ["region", "band"]);
}

#[test]
fn a_histogram_alone_needs_no_groups_and_every_bin_is_released_with_noise() {
    let query = Query::new(Vec::<String>::new(), [("n", Aggregate::Count)]).bin("band", bands());
    let p = Plan::builder(query).build(eps(1, 1)).unwrap();
    assert_eq!(p.cost(), crate::accountant::Cost::Pure(eps(1, 1)));
    let mut csv = String::from("temp\n");
    for i in 0..300 {
        csv.push_str(&format!("{}\n", i % 30)); // 0..29: 200 in [0, 20), 100 in [20, 50]
    }
    let table = Table::from_csv(csv.as_bytes(), &p.columns(), 1000).unwrap();
    let (r, _) = p.release(&table, &mut seeded_rng(4)).unwrap();
    let keys: Vec<&str> = r.rows().iter().map(|row| row.key()[0].as_str()).collect();
    assert_eq!(keys, ["[-20, 0)", "[0, 20)", "[20, 50]"]);
    let n: Vec<f64> = r
        .rows()
        .iter()
        .map(|row| row.estimates()[0].value())
        .collect();
    // One row per unit, ε = 1: scale 1, |noise| ≤ 15 but with probability e⁻¹⁵.
    for (got, want) in n.iter().zip([0.0, 200.0, 100.0]) {
        assert!((got - want).abs() < 15.0, "{n:?}");
    }
}

/// A unit with 1 000 rows in each of three bins and limits of 2 groups, 3 rows:
/// it adds 3 rows to each of 2 bins chosen at random, never more.
#[test]
fn a_heavy_unit_adds_at_most_max_rows_to_at_most_max_groups_bins() {
    let p = histogram(
        Some(Groups::public([["north"]])),
        Some(Contribution::new(2, 3).unwrap()),
        eps(1 << 40, 1),
    );
    let mut csv = String::from("device,region,temp\n");
    for i in 0..10 {
        csv.push_str(&format!("light{i},north,{}\n", [-10, 10, 30][i % 3]));
    }
    for t in [-10, 10, 30] {
        csv.push_str(&format!("heavy,north,{t}\n").repeat(1000));
    }
    let table = Table::from_csv(csv.as_bytes(), &p.columns(), 1 << 20).unwrap();
    let light = [4.0, 3.0, 3.0];
    let mut hit = [0u32; 3];
    for seed in 0..60 {
        let (r, _) = p.release(&table, &mut seeded_rng(seed)).unwrap();
        let n: Vec<f64> = r
            .rows()
            .iter()
            .map(|row| row.estimates()[0].value())
            .collect();
        let extra: Vec<f64> = n.iter().zip(light).map(|(n, l)| n - l).collect();
        // Each bin gets 0 or 3 of the heavy unit's rows; two bins get 3.
        assert!(extra.iter().all(|&e| e == 0.0 || e == 3.0), "{n:?}");
        assert_eq!(extra.iter().sum::<f64>(), 6.0, "{n:?}");
        for (h, e) in hit.iter_mut().zip(&extra) {
            *h += u32::from(*e == 3.0);
        }
    }
    // The bins kept are chosen at random: each of the three is kept sometimes.
    assert!(hit.iter().all(|&h| h > 10), "{hit:?}");
}

/// Private groups: each (region, bin) pair is a key of the partition selection; a
/// pair held by one unit is dropped, and bins come in edge order, not text order.
#[test]
fn private_groups_select_region_and_bin_pairs_in_edge_order() {
    let query = Query::new(["region"], [("n", Aggregate::Count)]).bin(
        "band",
        Binning::new("temp", &[0.0, 5.0, 10.0, 100.0]).unwrap(),
    );
    let p = Plan::builder(query)
        .privacy_unit("device", Contribution::new(1, 1).unwrap())
        .groups(Groups::Private { delta: 1e-6 })
        .build(eps(2, 1))
        .unwrap();
    let mut csv = String::from("device,region,temp\n");
    for i in 0..300 {
        let t = [50, 7, 1][i % 3]; // text order of the labels: [0, 5), [10, 100], [5, 10)
        csv.push_str(&format!("d{i},r{},{t}\n", i % 2));
    }
    // 50 units in each (region, bin) pair, and one unit alone in (r9, [0, 5)).
    csv.push_str("rare,r9,3\n");
    let table = Table::from_csv(csv.as_bytes(), &p.columns(), 1 << 20).unwrap();
    for seed in 0..10 {
        let (r, _) = p.release(&table, &mut seeded_rng(seed)).unwrap();
        let keys: Vec<String> = r.rows().iter().map(|row| row.key().join(" ")).collect();
        assert_eq!(
            keys,
            [
                "r0 [0, 5)",
                "r0 [5, 10)",
                "r0 [10, 100]",
                "r1 [0, 5)",
                "r1 [5, 10)",
                "r1 [10, 100]"
            ],
            "seed {seed}"
        );
    }
}

#[test]
fn histograms_that_do_not_fit_are_refused_by_name() {
    let q = || Query::new(["region"], [("n", Aggregate::Count)]).bin("band", bands());
    let e = eps(1, 1);
    // Public keys list the plain columns only.
    let full = Plan::builder(q())
        .groups(Groups::public([["north", "[-20, 0)"]]))
        .build(e)
        .unwrap_err()
        .to_string();
    assert!(full.contains("come from its edges"), "{full}");
    // No groups for the plain column.
    let none = Plan::builder(q()).build(e).unwrap_err().to_string();
    assert!(none.contains("grouping by region needs"), "{none}");
    // 10⁴ bins times 200 keys: refused before the keys are built.
    let edges: Vec<f64> = (0..=Binning::MAX_BINS).map(|i| i as f64).collect();
    let wide = Query::new(["region"], [("n", Aggregate::Count)])
        .bin("band", Binning::new("temp", &edges).unwrap());
    let keys: Vec<[String; 1]> = (0..200).map(|i| [format!("r{i}")]).collect();
    assert!(matches!(
        Plan::builder(wide).groups(Groups::public(keys)).build(e),
        Err(AggregateError::TooManyGroups {
            groups: 2_000_000,
            max: 1_000_000
        })
    ));
    // Private selection over bins only: the bins are public, nothing to select.
    let only_bins =
        || Query::new(Vec::<String>::new(), [("n", Aggregate::Count)]).bin("band", bands());
    let private = Plan::builder(only_bins())
        .privacy_unit("device", Contribution::new(2, 2).unwrap())
        .groups(Groups::Private { delta: 1e-6 })
        .build(e);
    match private {
        Err(AggregateError::PrivateBins { keys }) => assert_eq!(keys, ["band"]),
        other => panic!("{other:?}"),
    }
    let msg = Plan::builder(only_bins())
        .groups(Groups::Private { delta: 1e-6 })
        .build(e)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("every bin is released") && msg.contains("drop the δ"),
        "{msg}"
    );
    // With a plain key as well, the (key, bin) pairs are selected as before.
    assert!(
        Plan::builder(q())
            .groups(Groups::Private { delta: 1e-6 })
            .build(e)
            .is_ok()
    );
    // A key named twice.
    let twice = Query::new(["band"], [("n", Aggregate::Count)]).bin("band", bands());
    let twice = Plan::builder(twice).build(e).unwrap_err().to_string();
    assert!(twice.contains("named twice"), "{twice}");
}

/// A binned value that is empty, text or not finite: refused with its line and
/// column, like an aggregated value, whatever WHERE keeps; dropped with
/// `drop_invalid`.
#[test]
fn a_binned_value_that_is_not_a_number_is_refused_or_dropped() {
    let p = histogram(Some(Groups::public([["north"]])), None, eps(1 << 40, 1));
    for (csv, needle) in [
        (
            "device,region,temp\na,north,\n",
            "line 2: column \"temp\" is not a number",
        ),
        ("device,region,temp\na,north,1\nb,north,warm\n", "line 3"),
        ("device,region,temp\na,north,inf\n", "not finite"),
    ] {
        let e = Table::from_csv(csv.as_bytes(), &p.columns(), 10).unwrap_err();
        assert!(e.to_string().contains(needle), "{csv:?}: {e}");
    }
    // The binned column alone (no aggregate reads it) is checked just the same.
    let only_bins = Query::new(["region"], [("n", Aggregate::Count)]).bin("band", bands());
    let mut b = Plan::builder(only_bins).groups(Groups::public([["north"]]));
    let strict = b.clone().build(eps(1, 1)).unwrap();
    let csv = "region,temp\nnorth,5\nnorth,\nnorth,NaN\nnorth,25\n";
    assert!(Table::from_csv(csv.as_bytes(), &strict.columns(), 10).is_err());
    b = b.drop_invalid(true);
    let lenient = b.build(eps(1 << 40, 1)).unwrap();
    let table = Table::from_csv(csv.as_bytes(), &lenient.columns(), 10).unwrap();
    let (r, _) = lenient.release(&table, &mut seeded_rng(1)).unwrap();
    let n: Vec<f64> = r
        .rows()
        .iter()
        .map(|row| row.estimates()[0].value())
        .collect();
    assert_eq!(n, [0.0, 1.0, 1.0]);
}

/// `Plan::totals` against the pieces an engine merges (`UnitRows`, `RowTotals`,
/// written separately): the same totals for units within and over both limits,
/// several groups per unit, identical rows, a quantile, and keys set aside.
#[test]
fn the_totals_are_those_of_the_merged_pieces() {
    use rand_core::Rng;
    fn by_key(mut t: Vec<GroupTotals>) -> Vec<GroupTotals> {
        t.sort_by(|a, b| a.key.cmp(&b.key));
        t
    }
    let mut rng = seeded_rng(31);
    for case in 0..24u64 {
        let units = 1 + rng.next_u64() % 40;
        let mut csv = String::from("device,region,zone,temp\n");
        for _ in 0..(rng.next_u64() % 600) {
            let u = rng.next_u64() % units;
            // Light units stay in one region; heavy ones spread out.
            let region = if u.is_multiple_of(3) {
                u % 5
            } else {
                rng.next_u64() % 5
            };
            let zone = rng.next_u64() % 2;
            // Few distinct values: identical rows are common; some outside 0:40.
            let temp = (rng.next_u64() % 12) as f64 * 4.5 - 3.0;
            csv.push_str(&format!("d{u},r{region},z{zone},{temp}\n"));
        }
        let query = Query::new(
            ["region", "zone"],
            [
                ("n", Aggregate::Count),
                ("mean", Aggregate::Mean("temp".into())),
                ("sd", Aggregate::StdDev("temp".into())),
                ("median", Aggregate::quantile("temp", 0.5).unwrap()),
            ],
        );
        let groups = if case % 2 == 0 {
            Groups::Private { delta: 1e-6 }
        } else {
            Groups::public([["r1", "z0"], ["r2", "z1"], ["r4", "z0"], ["r9", "z1"]])
        };
        let limits = Contribution::new(1 + (case % 3) as u32, 1 + (case % 4) as u32).unwrap();
        let with_units = case % 5 != 4;
        let mut builder = Plan::builder(query)
            .bounds("temp", "0:40".parse().unwrap())
            .groups(groups);
        if with_units {
            builder = builder.privacy_unit("device", limits);
        }
        let p = builder.build(eps(1, 1)).unwrap();
        let columns = p.columns();
        let Ok(table) = Table::from_csv(csv.as_bytes(), &columns, 1 << 20) else {
            continue;
        };
        let key = BoundingKey::draw(&mut rng);
        let partial = p.partial(key);
        let header: Vec<String> = ["device", "region", "zone", "temp"]
            .map(String::from)
            .into();
        let reader = RowReader::new(&header, &columns).unwrap();
        let public = p.public_keys().map(|k| k.to_vec());
        let mut per_unit: std::collections::BTreeMap<String, UnitRows> = Default::default();
        let mut rows = RowTotals::default();
        let (mut values, mut encoded) = (Vec::new(), String::new());
        for (i, line) in csv.lines().skip(1).enumerate() {
            let fields: Vec<&str> = line.split(',').collect();
            let field = |i: usize| fields[i];
            if !reader
                .read_encoded(&field, &|_| None, i + 2, &mut values, &mut encoded)
                .unwrap()
            {
                continue;
            }
            let fields_of_key = decode_key(&encoded).unwrap();
            if public
                .as_ref()
                .is_some_and(|list| !list.contains(&fields_of_key))
            {
                continue;
            }
            let bits: Vec<u64> = values.iter().map(|x| x.to_bits()).collect();
            let unit = reader.unit_of(&field);
            match unit {
                Some(u) => {
                    per_unit
                        .entry(u.to_string())
                        .or_default()
                        .keep(&partial, unit, &encoded, &bits);
                }
                None => {
                    rows.keep(&partial, None, &encoded, &bits);
                }
            }
        }
        let mut merged = rows.finish(&partial);
        for (_, u) in per_unit {
            merged.add(u.finish(&partial));
        }
        let totals = by_key(p.totals(&table, &key));
        assert_eq!(totals, by_key(merged.into_totals().unwrap()), "case {case}");
        // The units bounded in ranges, each on its own thread, as large tables are.
        for ranges in [2, 3, 7] {
            let got = by_key(p.totals_in(&table, &key, Some(ranges)));
            assert_eq!(got, totals, "case {case}, {ranges} ranges");
        }
    }
}

/// A table past `PARALLEL_ROWS` (2¹⁸ rows) with few keys is bounded in ranges of
/// units when rayon has two threads or more, and a table with a key per few rows
/// is not: either way the totals are those of one range.
#[test]
fn large_tables_total_as_one_range_does() {
    use rand_core::Rng;
    use std::fmt::Write as _;
    let mut rng = seeded_rng(41);
    let query = Query::new(
        ["region"],
        [
            ("n", Aggregate::Count),
            ("sd", Aggregate::StdDev("temp".into())),
            ("median", Aggregate::quantile("temp", 0.5).unwrap()),
        ],
    );
    for keys in [50u64, 100_000] {
        let mut csv = String::from("device,region,temp\n");
        for _ in 0..300_000 {
            let u = rng.next_u64() % 40_000;
            let region = (u + rng.next_u64() % 2) % keys;
            let _ = writeln!(csv, "d{u},r{region},{}", rng.next_u64() % 50);
        }
        let p = Plan::builder(query.clone())
            .bounds("temp", "0:40".parse().unwrap())
            .groups(Groups::Private { delta: 1e-6 })
            .privacy_unit("device", Contribution::new(1, 6).unwrap())
            .build(eps(1, 1))
            .unwrap();
        let table = Table::from_csv(csv.as_bytes(), &p.columns(), 1 << 20).unwrap();
        let key = BoundingKey::draw(&mut rng);
        let sorted = |mut t: Vec<GroupTotals>| {
            t.sort_by(|a, b| a.key.cmp(&b.key));
            t
        };
        let one = sorted(p.totals_in(&table, &key, Some(1)));
        assert!(
            one.len() as u64 >= keys.min(40_000) / 2,
            "{} groups",
            one.len()
        );
        assert_eq!(sorted(p.totals(&table, &key)), one, "{keys} keys");
    }
}

/// Bytes of a piece as `PartialTotals::encode` writes them (for forging).
fn forge(seen: u64, invalid: u64, groups: &[GroupTotals]) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, x: u64| out.extend_from_slice(&x.to_le_bytes());
    put(&mut out, seen);
    put(&mut out, invalid);
    put(&mut out, groups.len() as u64);
    for g in groups {
        let k = encode_key(&g.key);
        put(&mut out, k.len() as u64);
        out.extend_from_slice(k.as_bytes());
        put(&mut out, g.units);
        put(&mut out, g.rows);
        put(&mut out, g.columns.len() as u64);
        for c in &g.columns {
            for x in [c.sum, c.centred, c.squares] {
                out.extend_from_slice(&x.to_le_bytes());
            }
            put(&mut out, c.at_candidate.len() as u64);
            for &n in &c.at_candidate {
                put(&mut out, n);
            }
        }
    }
    out
}

/// One unit's piece as an engine computes it: rows `(region, temp)`.
fn unit_piece(p: &Plan, rows: &[(&str, f64)]) -> (u64, Vec<GroupTotals>) {
    let partial = p.partial(BoundingKey::draw(&mut seeded_rng(5)));
    let mut u = UnitRows::default();
    for &(region, temp) in rows {
        u.count(false);
        u.keep(
            &partial,
            Some("d1"),
            &encode_key(&[region]),
            &[temp.to_bits()],
        );
    }
    let t = u.finish(&partial);
    (t.seen(), t.into_totals().unwrap())
}

/// Each rule of `Plan::check_piece`: the honest piece passes, a forged piece that
/// breaks one rule is refused with `InconsistentTotals` (before any charge: the
/// check takes no accountant).
#[test]
fn a_piece_inconsistent_with_the_plan_is_refused() {
    let private = plan(Groups::Private { delta: 1e-6 });
    let public = plan(Groups::public([["r1"], ["r2"]]));
    let (seen, honest) = unit_piece(&private, &[("r1", 10.0), ("r1", 20.0), ("r2", 5.0)]);
    // Contribution::new(1, 2): one key, two rows kept.
    assert_eq!(honest.len(), 1);
    assert_eq!(honest[0].rows, 2);
    let check = |p: &Plan, seen: u64, invalid: u64, g: &[GroupTotals]| {
        p.check_piece(&PartialTotals::decode(&forge(seen, invalid, g)).unwrap())
    };
    check(&private, seen, 0, &honest).unwrap();
    check(&public, seen, 0, &honest).unwrap();
    let refused = |p: &Plan, seen: u64, invalid: u64, g: Vec<GroupTotals>, what: &str| match check(
        p, seen, invalid, &g,
    ) {
        Err(AggregateError::InconsistentTotals(_)) => {}
        other => panic!("{what}: {other:?}"),
    };
    let with = |f: &dyn Fn(&mut GroupTotals)| {
        let mut g = honest.clone();
        f(&mut g[0]);
        g
    };
    // More keys than max_groups.
    let mut two = honest.clone();
    two.push(GroupTotals {
        key: vec!["r2".into()],
        ..honest[0].clone()
    });
    refused(&private, seen, 0, two, "max_groups");
    refused(&private, seen, 0, with(&|g| g.units = 2), "units");
    refused(&private, seen, 0, with(&|g| g.units = 0), "no unit");
    let over = with(&|g| {
        g.rows = 3;
        g.columns[0].at_candidate[0] += 1;
    });
    refused(&private, seen, 0, over, "max_rows");
    refused(&private, 1, 0, honest.clone(), "kept > read");
    refused(&private, seen, seen + 1, honest.clone(), "invalid > read");
    refused(
        &private,
        seen,
        0,
        with(&|g| g.key.push("x".into())),
        "key shape",
    );
    refused(
        &public,
        seen,
        0,
        with(&|g| g.key = vec!["r9".into()]),
        "public key",
    );
    refused(
        &private,
        seen,
        0,
        with(&|g| {
            g.columns[0].sum += 1 << 40;
            g.columns[0].centred += 1 << 40;
        }),
        "sum",
    );
    refused(
        &private,
        seen,
        0,
        with(&|g| g.columns[0].sum -= 1),
        "centred",
    );
    refused(
        &private,
        seen,
        0,
        with(&|g| g.columns[0].squares = -1),
        "squares < 0",
    );
    refused(
        &private,
        seen,
        0,
        with(&|g| g.columns[0].squares = i128::MAX),
        "squares",
    );
    refused(
        &private,
        seen,
        0,
        with(&|g| g.columns[0].at_candidate[0] += 1),
        "quantile counts",
    );
    refused(&private, seen, 0, with(&|g| g.columns.clear()), "columns");
    // A key spelled otherwise than `encode_key` writes it ("02:r1" decodes as
    // "r1" too): two spellings would add up as two groups of one key.
    let canonical = forge(seen, 0, &honest);
    assert_eq!(&canonical[32..36], b"2:r1");
    let mut respelled = canonical[..24].to_vec();
    respelled.extend_from_slice(&5u64.to_le_bytes());
    respelled.extend_from_slice(b"02:r1");
    respelled.extend_from_slice(&canonical[36..]);
    let piece = PartialTotals::decode(&respelled).unwrap();
    for p in [&private, &public] {
        match p.piece_check().check(&piece) {
            Err(AggregateError::InconsistentTotals(_)) => {}
            other => panic!("respelled key: {other:?}"),
        }
    }
    // Without a unit column every row is its own unit.
    let rows_plan = Plan::builder(Query::new(["region"], [("n", Aggregate::Count)]))
        .groups(Groups::Private { delta: 1e-6 })
        .build(eps(1, 1))
        .unwrap();
    let g = GroupTotals {
        key: vec!["r1".into()],
        units: 3,
        rows: 3,
        columns: Vec::new(),
    };
    check(&rows_plan, 3, 0, std::slice::from_ref(&g)).unwrap();
    refused(
        &rows_plan,
        3,
        0,
        vec![GroupTotals { units: 2, ..g }],
        "units != rows",
    );
}

/// A unit's state in `UnitRows`' format, as a forger writes it: `seen` and
/// `invalid` rows read, the unit flag (1: `unit` named), one key `r1` of `rows`
/// rows claiming `n` patterns, of which `bits` are present (each 10.0).
fn unit_state(
    seen: u64,
    invalid: u64,
    flag: u64,
    unit: &str,
    rows: u64,
    n: u64,
    bits: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, x: u64| out.extend_from_slice(&x.to_le_bytes());
    let put_str = |out: &mut Vec<u8>, s: &str| {
        put(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    };
    put(&mut out, seen);
    put(&mut out, invalid);
    put(&mut out, flag);
    if flag == 1 {
        put_str(&mut out, unit);
    }
    put(&mut out, 1);
    put_str(&mut out, &encode_key(&["r1"]));
    put(&mut out, rows);
    put(&mut out, n);
    for _ in 0..bits {
        put(&mut out, 10f64.to_bits());
    }
    out
}

/// `UnitRows::merge_state` on forged states: a count of patterns larger than the
/// bytes present, a row count that overflows, another unit's state — refused
/// (`None`), never a panic or an abort; nothing merged under the wrong unit.
#[test]
fn forged_unit_states_are_refused_without_panic() {
    let p = plan(Groups::Private { delta: 1e-6 });
    let partial = p.partial(BoundingKey::draw(&mut seeded_rng(6)));
    let state =
        |unit: &str, rows: u64, n: u64, bits: usize| unit_state(rows, 0, 1, unit, rows, n, bits);
    let mut u = UnitRows::default();
    assert!(u.merge_state(&partial, &state("d1", 2, 2, 2)).is_some());
    // Another unit's state.
    assert!(u.merge_state(&partial, &state("d2", 1, 1, 1)).is_none());
    // A reserve of 2^61 patterns with one present.
    let mut v = UnitRows::default();
    assert!(
        v.merge_state(&partial, &state("d1", 1 << 61, 1 << 61, 1))
            .is_none()
    );
    // rows × values overflowing.
    assert!(
        v.merge_state(&partial, &state("d1", u64::MAX, 0, 0))
            .is_none()
    );
    // Rows read adding past u64::MAX.
    let mut w = UnitRows::default();
    assert!(
        w.merge_state(&partial, &state("d1", u64::MAX, 0, 0))
            .is_none()
    );
    let t = u.finish(&partial);
    assert_eq!(t.seen(), 2);
}

/// Sizes a caller or a decoded plan chooses are bounded before anything is
/// allocated or evaluated: quantile candidates (each holds a count per group) and
/// the depth of the `WHERE` filter (every engine evaluates it, and a plan carrying
/// it must decode on a Ballista executor). The SQL front end reaches the same
/// refusal for a `WHERE` of many `AND`-ed terms.
#[test]
fn quantile_candidates_and_filter_depth_are_bounded() {
    let q = || {
        Query::new(
            Vec::<String>::new(),
            [("m", Aggregate::quantile("t", 0.5).unwrap())],
        )
    };
    let build = |steps: u32| {
        Plan::builder(q())
            .bounds("t", "0:1".parse().unwrap())
            .quantile_candidates(steps)
            .build(eps(1, 1))
    };
    assert!(build(MAX_QUANTILE_CANDIDATES).is_ok());
    for steps in [0, MAX_QUANTILE_CANDIDATES + 1, u32::MAX] {
        let e = build(steps).unwrap_err();
        assert!(e.to_string().contains("between 1 and 1000000"), "{e}");
    }
    let leaf = || Filter::IsEmpty("t".into());
    let mut filter = leaf();
    for _ in 1..MAX_FILTER_DEPTH {
        filter = Filter::And(Box::new(filter), Box::new(leaf()));
    }
    assert_eq!(filter.depth(), MAX_FILTER_DEPTH);
    let with = |f: Filter| {
        Plan::builder(q().with_filter(f))
            .bounds("t", "0:1".parse().unwrap())
            .build(eps(1, 1))
    };
    assert!(with(filter.clone()).is_ok());
    let e = with(Filter::Not(Box::new(filter))).unwrap_err();
    assert!(e.to_string().contains("at most 48"), "{e}");
    let terms: Vec<String> = (0..100).map(|i| format!("t <> {i}")).collect();
    let sql = format!("SELECT SUM(t) FROM r WHERE {}", terms.join(" AND "));
    let request = SqlRequest::new(&sql)
        .unwrap()
        .tables(["r"])
        .bounds("t", "0:1".parse().unwrap());
    let e = request.build(eps(1, 1)).unwrap_err();
    assert!(e.to_string().contains("nests 100 levels"), "{e}");
}

/// Totals of pieces, by key (`PartialTotals` bytes decoded and added).
fn totals_of(pieces: &[Vec<u8>]) -> Vec<GroupTotals> {
    let mut all = PartialTotals::default();
    for b in pieces {
        all.add(PartialTotals::decode(b).unwrap());
    }
    let mut t = all.into_totals().unwrap();
    t.sort_by(|a, b| a.key.cmp(&b.key));
    t
}

/// The rows read and the invalid ones of a piece (`PartialTotals` bytes).
fn counts_of(piece: &[u8]) -> (u64, u64) {
    let t = PartialTotals::decode(piece).unwrap();
    (t.seen(), t.invalid())
}

/// `UnitColumns` (every unit's rows in shared columns) against one `UnitRows` per
/// unit: the same totals per unit (within and over both limits, several keys,
/// identical rows), the same rows read and invalid rows per unit (as counted
/// while the rows were fed, unit by unit), the same encoded states (read back by
/// `UnitRows::merge_state` and by `UnitColumns::merge_state`, states split in
/// pieces), and `take_first` renumbering the groups left.
#[test]
fn unit_columns_bound_and_encode_as_unit_rows() {
    use rand_core::Rng;
    let mut rng = seeded_rng(47);
    for case in 0..30u64 {
        let query = Query::new(
            ["region"],
            [
                ("n", Aggregate::Count),
                ("mean", Aggregate::Mean("temp".into())),
                ("median", Aggregate::quantile("temp", 0.5).unwrap()),
            ],
        );
        let limits = Contribution::new(1 + (case % 3) as u32, 1 + (case % 4) as u32).unwrap();
        let p = Plan::builder(query)
            .privacy_unit("device", limits)
            .bounds("temp", "0:40".parse().unwrap())
            .groups(Groups::Private { delta: 1e-6 })
            .build(eps(1, 1))
            .unwrap();
        let partial = p.partial(BoundingKey::draw(&mut rng));
        let units = 1 + (rng.next_u64() % 30) as usize;
        let mut rows_of: Vec<UnitRows> = (0..units).map(|_| UnitRows::default()).collect();
        let mut cols = UnitColumns::default();
        // The same rows in two halves, merged from their states.
        let mut halves = [UnitColumns::default(), UnitColumns::default()];
        // Each unit's rows read and invalid rows, counted here.
        let mut counted = vec![(0u64, 0u64); units];
        assert!(cols.resize(units));
        for h in &mut halves {
            assert!(h.resize(units));
        }
        for _ in 0..(rng.next_u64() % 500) {
            let u = (rng.next_u64() % units as u64) as usize;
            let region = if u.is_multiple_of(3) {
                u as u64 % 5
            } else {
                rng.next_u64() % 5
            };
            let key = encode_key(&[format!("r{region}")]);
            let bits = [((rng.next_u64() % 12) as f64 * 4.5 - 3.0).to_bits()];
            let name = format!("d{u}");
            let invalid = rng.next_u64().is_multiple_of(17);
            counted[u].0 += 1;
            counted[u].1 += u64::from(invalid);
            rows_of[u].count(invalid);
            cols.count(u, invalid);
            let half = &mut halves[(rng.next_u64() % 2) as usize];
            half.count(u, invalid);
            if invalid {
                continue;
            }
            rows_of[u].keep(&partial, Some(&name), &key, &bits);
            assert!(cols.keep(&partial, u, Some(&name), &key, &bits).is_some());
            assert!(half.keep(&partial, u, Some(&name), &key, &bits).is_some());
        }
        let mut want = Vec::new();
        for r in rows_of {
            let mut out = Vec::new();
            r.finish(&partial).encode(&mut out);
            want.push(out);
        }
        // Finished: the same totals, unit by unit.
        let mut got = Vec::new();
        cols_clone(&partial, &cols).finish_each(&partial, &mut |b| got.push(b.to_vec()));
        assert_eq!(got.len(), units);
        for (u, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                totals_of(std::slice::from_ref(g)),
                totals_of(std::slice::from_ref(w))
            );
            assert_eq!(counts_of(w), counted[u], "case {case}, unit {u}");
            assert_eq!(counts_of(g), counted[u], "case {case}, unit {u}");
        }
        // States: read back by UnitRows, and two halves merged by UnitColumns.
        let mut states = Vec::new();
        cols.encode_states(&partial, &mut |b| states.push(b.to_vec()));
        let mut merged = UnitColumns::default();
        assert!(merged.resize(units));
        for h in &halves {
            let mut g = 0;
            h.encode_states(&partial, &mut |b| {
                assert!(merged.merge_state(&partial, g, b).is_some());
                g += 1;
            });
        }
        for (u, (s, w)) in states.iter().zip(&want).enumerate() {
            let mut r = UnitRows::default();
            assert!(
                r.merge_state(&partial, s).is_some(),
                "case {case}, unit {u}"
            );
            let mut out = Vec::new();
            r.finish(&partial).encode(&mut out);
            assert_eq!(counts_of(&out), counted[u], "case {case}, unit {u}");
            assert_eq!(totals_of(&[out]), totals_of(std::slice::from_ref(w)));
        }
        let mut got = Vec::new();
        merged.finish_each(&partial, &mut |b| got.push(b.to_vec()));
        assert_eq!(got.len(), units);
        for (u, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                totals_of(std::slice::from_ref(g)),
                totals_of(std::slice::from_ref(w)),
                "case {case}, unit {u}"
            );
            assert_eq!(counts_of(g), counted[u], "case {case}, unit {u}");
        }
        // The first n groups, then the rest renumbered.
        let n = (rng.next_u64() % (units as u64 + 1)) as usize;
        let first = cols.take_first(&partial, n);
        assert_eq!((first.groups(), cols.groups()), (n, units - n));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        first.finish_each(&partial, &mut |x| a.push(x.to_vec()));
        cols.finish_each(&partial, &mut |x| b.push(x.to_vec()));
        assert_eq!((a.len(), b.len()), (n, units - n));
        for (u, (g, w)) in a.iter().chain(&b).zip(&want).enumerate() {
            assert_eq!(
                totals_of(std::slice::from_ref(g)),
                totals_of(std::slice::from_ref(w)),
                "case {case}, unit {u}"
            );
            assert_eq!(counts_of(g), counted[u], "case {case}, unit {u}");
        }
    }
}

/// A copy of `c` through its states (`UnitColumns` is not `Clone`).
fn cols_clone(p: &Partial, c: &UnitColumns) -> UnitColumns {
    let mut out = UnitColumns::default();
    assert!(out.resize(c.groups()));
    let mut g = 0;
    c.encode_states(p, &mut |b| {
        assert!(out.merge_state(p, g, b).is_some());
        g += 1;
    });
    out
}

/// `UnitColumns::merge_state` on forged states: a pattern count larger than the
/// bytes present, a row count that overflows, more kept rows than valid rows
/// read, a key of no rows, an unknown unit flag, another unit's state, trailing
/// bytes, a group out of range — refused (`None`), never a panic or an abort,
/// and nothing of a refused state kept.
#[test]
fn forged_unit_column_states_are_refused_without_panic() {
    let p = plan(Groups::Private { delta: 1e-6 });
    let partial = p.partial(BoundingKey::draw(&mut seeded_rng(6)));
    let state = unit_state;
    let mut u = UnitColumns::default();
    assert!(u.resize(2));
    let honest = state(2, 0, 1, "d1", 2, 2, 2);
    assert!(u.merge_state(&partial, 0, &honest).is_some());
    let before = {
        let mut s = Vec::new();
        u.encode_states(&partial, &mut |b| s.push(b.to_vec()));
        s
    };
    let forged = [
        state(1, 0, 1, "d2", 1, 1, 1),                   // another unit
        state(1 << 61, 0, 1, "d1", 1 << 61, 1 << 61, 1), // 2^61 patterns, one present
        state(u64::MAX, 0, 1, "d1", u64::MAX, 0, 0),     // rows × values overflowing
        state(u64::MAX, 0, 1, "d1", 1, 1, 1),            // rows read past u64::MAX
        state(1, 0, 1, "d1", 2, 2, 2),                   // more rows kept than read
        state(2, 1, 1, "d1", 2, 2, 2),                   // more rows kept than valid
        state(1, 2, 1, "d1", 0, 0, 0),                   // more invalid than read
        state(1, 0, 1, "d1", 0, 0, 0),                   // a key of no rows
        state(1, 0, 2, "d1", 1, 1, 1),                   // an unknown unit flag
        {
            let mut s = state(1, 0, 1, "d1", 1, 1, 1);
            s.push(0);
            s
        },
        honest[..honest.len() - 1].to_vec(),
    ];
    for (i, f) in forged.iter().enumerate() {
        assert!(u.merge_state(&partial, 0, f).is_none(), "forged state {i}");
    }
    assert!(
        u.merge_state(&partial, 2, &honest).is_none(),
        "out of range"
    );
    let mut after = Vec::new();
    u.encode_states(&partial, &mut |b| after.push(b.to_vec()));
    assert_eq!(after, before);
    // The second group takes a state of any unit, once.
    assert!(
        u.merge_state(&partial, 1, &state(1, 0, 1, "d2", 1, 1, 1))
            .is_some()
    );
    // Rows without a unit's name: forged (every kept row names its unit).
    assert!(
        u.merge_state(&partial, 1, &state(1, 0, 0, "", 1, 1, 1))
            .is_none()
    );
    assert!(
        u.merge_state(&partial, 1, &state(2, 0, 1, "d2", 1, 1, 1))
            .is_some()
    );
    let mut got = Vec::new();
    u.finish_each(&partial, &mut |b| got.push(b.to_vec()));
    let t = totals_of(&got);
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].units, t[0].rows), (2, 4));
}

/// The bounding rule written again from `BoundingKey`'s documentation alone, as
/// plainly as possible (no shortcut for a unit within the limits, no shared
/// code with `bound_unit`, `kept_rows` or `bound_into`), checked against
/// `UnitRows` and `UnitColumns` on random small units.
mod naive_rule {
    use super::*;
    use proptest::prelude::*;

    /// One row of a unit: its encoded key and its values.
    type Row = (String, Vec<f64>);

    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// The rows unit `unit` keeps under `key` and `limits`: its keys ordered by
    /// `group_rank` (ties by the key's bytes), the first `max_groups` kept; in
    /// each kept key its rows ordered by `row_rank` of (unit, key, values,
    /// occurrence) — the occurrence a row's index among the unit's rows of that
    /// key with the same values — then by the values as signed bit patterns,
    /// then by occurrence; the first `max_rows` kept.
    fn kept(key: &BoundingKey, limits: Contribution, unit: &str, rows: &[Row]) -> Vec<Row> {
        let mut keys: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.sort_by(|a, b| {
            key.group_rank(unit, a)
                .cmp(&key.group_rank(unit, b))
                .then(a.as_bytes().cmp(b.as_bytes()))
        });
        keys.truncate(limits.max_groups() as usize);
        let signed = |v: &[f64]| v.iter().map(|x| x.to_bits() as i64).collect::<Vec<i64>>();
        let mut out = Vec::new();
        for k in keys {
            let mut ranked: Vec<(u64, Vec<i64>, u64, &Row)> = Vec::new();
            for (i, row) in rows.iter().enumerate() {
                if row.0 != k {
                    continue;
                }
                let occurrence = rows[..i]
                    .iter()
                    .filter(|r| r.0 == k && same_bits(&r.1, &row.1))
                    .count() as u64;
                let rank = key.row_rank(unit, k, &row.1, occurrence);
                ranked.push((rank, signed(&row.1), occurrence, row));
            }
            ranked.sort_by(|a, b| (a.0, &a.1, a.2).cmp(&(b.0, &b.1, b.2)));
            out.extend(
                ranked
                    .into_iter()
                    .take(limits.max_rows() as usize)
                    .map(|r| r.3.clone()),
            );
        }
        out
    }

    /// The totals of kept rows, each added to its key's as `ColumnTotals::add`
    /// adds a value, sorted by key.
    fn totals(p: &Plan, kept: &[Row]) -> Vec<GroupTotals> {
        let columns = p.columns().values.len();
        let mut out: Vec<GroupTotals> = Vec::new();
        for (k, values) in kept {
            let key = decode_key(k).unwrap();
            let i = match out.iter().position(|g| g.key == key) {
                Some(i) => i,
                None => {
                    out.push(GroupTotals {
                        key,
                        units: 1,
                        rows: 0,
                        columns: (0..columns)
                            .map(|c| ColumnTotals {
                                at_candidate: vec![
                                    0;
                                    p.quantile_candidates(c).map_or(0, |c| c.len())
                                ],
                                ..ColumnTotals::default()
                            })
                            .collect(),
                    });
                    out.len() - 1
                }
            };
            let g = &mut out[i];
            g.rows += 1;
            for (c, (t, &x)) in g.columns.iter_mut().zip(values).enumerate() {
                let candidates = p.quantile_candidates(c);
                t.add(p.value_steps(c, x), p.mid_steps(c), candidates.as_deref());
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    /// A plan of `columns` value columns (0, 1 with a quantile, or 2) under `limits`.
    fn plan(columns: usize, limits: Contribution) -> Plan {
        let aggregates = match columns {
            0 => vec![("n", Aggregate::Count)],
            1 => vec![
                ("n", Aggregate::Count),
                ("median", Aggregate::quantile("x", 0.5).unwrap()),
            ],
            _ => vec![
                ("mean", Aggregate::Mean("x".into())),
                ("total", Aggregate::Sum("y".into())),
            ],
        };
        let mut b = Plan::builder(Query::new(["g"], aggregates))
            .privacy_unit("device", limits)
            .groups(Groups::Private { delta: 1e-6 });
        if columns >= 1 {
            b = b.bounds("x", "0:40".parse().unwrap());
        }
        if columns >= 2 {
            b = b.bounds("y", "-10:10".parse().unwrap());
        }
        b.build(eps(1, 1)).unwrap()
    }

    /// Few values (identical rows are common), 0.0 and -0.0 (two values for the
    /// rule), some outside the bounds.
    const VALUES: [f64; 8] = [-12.0, -3.0, -0.0, 0.0, 1.5, 4.0, 40.0, 45.0];

    /// Rows of a case: (unit, key, value indices).
    type Rows = Vec<(usize, usize, Vec<usize>)>;

    /// A case: the limits, the value columns, the key's seed, and its rows.
    fn case() -> impl Strategy<Value = (u32, u32, usize, u64, Rows)> {
        (1u32..=3, 1u32..=3, 0usize..=2, any::<u64>()).prop_flat_map(|(g, r, columns, seed)| {
            let row = (
                0usize..3,
                0usize..5,
                proptest::collection::vec(0usize..8, columns),
            );
            (
                Just(g),
                Just(r),
                Just(columns),
                Just(seed),
                proptest::collection::vec(row, 0..40),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// `UnitRows::finish` (one state per unit) and `UnitColumns::finish_each`
        /// (every unit in one state) keep what the rule as documented keeps.
        #[test]
        fn units_keep_what_the_documented_rule_keeps(
            (max_groups, max_rows, columns, seed, rows) in case()
        ) {
            let limits = Contribution::new(max_groups, max_rows).unwrap();
            let p = plan(columns, limits);
            let key = BoundingKey::draw(&mut seeded_rng(seed));
            let partial = p.partial(key);
            let mut per_unit: Vec<Vec<Row>> = vec![Vec::new(); 3];
            let mut states: Vec<UnitRows> = (0..3).map(|_| UnitRows::default()).collect();
            let mut cols = UnitColumns::default();
            prop_assert!(cols.resize(3));
            for (u, k, v) in &rows {
                let name = format!("d{u}");
                let k = encode_key(&[format!("r{k}")]);
                let values: Vec<f64> = v.iter().map(|&i| VALUES[i]).collect();
                let bits: Vec<u64> = values.iter().map(|x| x.to_bits()).collect();
                states[*u].count(false);
                states[*u].keep(&partial, Some(&name), &k, &bits);
                cols.count(*u, false);
                prop_assert!(cols.keep(&partial, *u, Some(&name), &k, &bits).is_some());
                per_unit[*u].push((k, values));
            }
            let mut finished = Vec::new();
            cols.finish_each(&partial, &mut |b| finished.push(b.to_vec()));
            prop_assert_eq!(finished.len(), 3);
            for (u, (state, unit_rows)) in states.into_iter().zip(&per_unit).enumerate() {
                let want = totals(&p, &kept(&key, limits, &format!("d{u}"), unit_rows));
                let mut got = state.finish(&partial).into_totals().unwrap();
                got.sort_by(|a, b| a.key.cmp(&b.key));
                prop_assert_eq!(&got, &want, "UnitRows, unit {}", u);
                prop_assert_eq!(
                    totals_of(std::slice::from_ref(&finished[u])),
                    want,
                    "UnitColumns, unit {}",
                    u
                );
            }
        }
    }

    /// The reference itself on a case worked by hand: one unit, two keys, one
    /// kept (the smaller group rank), and of its three identical rows two kept.
    #[test]
    fn the_reference_keeps_the_smallest_ranks() {
        let key = BoundingKey::draw(&mut seeded_rng(3));
        let (a, b) = (encode_key(&["a"]), encode_key(&["b"]));
        let rows: Vec<Row> = vec![
            (a.clone(), vec![1.0]),
            (b.clone(), vec![2.0]),
            (a.clone(), vec![1.0]),
            (a.clone(), vec![1.0]),
        ];
        let first = if key.group_rank("u", &a) < key.group_rank("u", &b) {
            &a
        } else {
            &b
        };
        let got = kept(&key, Contribution::new(1, 2).unwrap(), "u", &rows);
        let want_rows = if *first == a { 2 } else { 1 };
        assert_eq!(got.len(), want_rows);
        assert!(got.iter().all(|r| r.0 == *first));
    }
}

/// An interval's bounds are output columns (`NAME_lo`, `NAME_hi`): a name that
/// repeats one is refused, as a repeated aggregate name is.
#[test]
fn an_interval_bound_named_as_another_column_is_refused() {
    let plan = |sql: &str| {
        SqlRequest::new(sql)
            .and_then(|r| {
                let r = r.tables(["t"]);
                let r = if sql.contains("temp") {
                    r.bounds("temp", "0:40".parse().unwrap())
                } else {
                    r.keys("n_lo", ["a"])
                };
                r.build(Epsilon::new(1, 1).unwrap())
            })
            .map_err(|e| e.to_string())
    };
    for (sql, clash) in [
        ("SELECT COUNT(*) AS n, AVG(temp) AS n_lo FROM t", "\"n_lo\""),
        (
            "SELECT COUNT(*) AS n, MEDIAN(temp) AS n_hi FROM t",
            "\"n_hi\"",
        ),
        (
            "SELECT n_lo, COUNT(*) AS n FROM t GROUP BY n_lo",
            "\"n_lo\"",
        ),
        (
            "SELECT SUM(temp) AS s, AVG(temp) AS s_lo_hi, COUNT(*) AS s_lo FROM t",
            "\"s_lo\"",
        ),
    ] {
        let err = plan(sql).unwrap_err();
        assert!(
            err.contains(clash) && err.contains("named twice"),
            "{sql}: {err}"
        );
    }
    // A quantile has no interval: its name's `_lo` is free.
    plan("SELECT MEDIAN(temp) AS m, COUNT(*) AS m_lo FROM t").unwrap();
}
