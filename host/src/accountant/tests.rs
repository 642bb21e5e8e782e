use super::short::short_f64;
use super::*;

#[test]
fn a_bound_accountant_refuses_other_and_unstated_relations() {
    let one = Epsilon::new(1, 1).unwrap();
    let mut acct = Accountant::pure(Epsilon::new(3, 1).unwrap());
    acct.bind(Neighbours::Replace);
    assert_eq!(acct.neighbours(), Some(Neighbours::Replace));
    // A cost computed for add/remove does not add up with replace-one costs.
    let e = acct
        .charge_as(Neighbours::AddRemove, "add/remove histogram", one.into())
        .unwrap_err();
    assert!(matches!(
        e,
        AccountantError::RelationMismatch {
            stated: Some(_),
            ..
        }
    ));
    assert!(e.to_string().contains("add/remove"), "{e}");
    // A charge that states no relation is refused too (fail closed).
    assert!(matches!(
        acct.charge("unstated", one.into()),
        Err(AccountantError::RelationMismatch { stated: None, .. })
    ));
    assert_eq!(acct.spent_epsilon(), None, "nothing recorded");
    acct.charge_as(Neighbours::Replace, "replace-one", one.into())
        .unwrap();
    assert_eq!(acct.spent_epsilon(), Some(one));
    // An unbound accountant takes any relation (the caller vouches for them).
    let mut free = Accountant::pure(one);
    free.charge_as(Neighbours::AddRemove, "any", one.into())
        .unwrap();
}

#[test]
fn a_mechanism_declaring_another_relation_is_refused_before_it_samples() {
    use crate::contract::Mechanism;
    let one = Epsilon::new(1, 1).unwrap();
    let geo = crate::central::Geometric::histogram(Neighbours::AddRemove, one).unwrap();
    let mut acct = Accountant::pure(Epsilon::new(2, 1).unwrap());
    acct.bind(Neighbours::Replace);
    let refused = geo.release(&[3u64, 4][..], &mut acct, &mut crate::seeded_rng(1));
    assert!(refused.is_err());
    assert_eq!(acct.spent_epsilon(), None);
}

#[test]
fn worked_value_of_spec_section_10() {
    let l = advanced(100, 0.01, 0.0, 1e-6).unwrap();
    let expected = (200.0 * 1e6f64.ln()).sqrt() * 0.01 + 100.0 * 0.01 * 0.01f64.exp_m1();
    assert!((l.epsilon - expected).abs() < 1e-15);
    assert!((l.epsilon - 0.5357).abs() < 5e-5, "{}", l.epsilon);
    // The thesis' printed formula (ln(1/δ) with δ = 0) would be infinite: the
    // corrected one uses the slack δ'.
    let with_delta = advanced(100, 0.01, 1e-8, 1e-6).unwrap();
    assert!((with_delta.delta - (100.0 * 1e-8 + 1e-6)).abs() < 1e-20);
}

#[test]
fn inverse_round_trips() {
    for &(k, eps) in &[
        (1u64, 0.5),
        (10, 0.1),
        (100, 0.01),
        (1000, 0.003),
        (40, 1.0),
    ] {
        let target = advanced(k, eps, 0.0, 1e-6).unwrap().epsilon;
        let back = invert_advanced(k, target, 1e-6).unwrap();
        assert!((back - eps).abs() < 1e-9 * eps.max(1.0), "{k} {eps} {back}");
        assert!(advanced(k, back, 0.0, 1e-6).unwrap().epsilon <= target);
    }
    assert!(invert_advanced(0, 1.0, 1e-6).is_err());
    assert!(invert_advanced(10, -1.0, 1e-6).is_err());
    assert!(advanced(10, 0.0, 0.0, 1e-6).is_err());
    assert!(advanced(10, 0.1, 0.0, 0.0).is_err());
}

#[test]
fn filter_is_exact_and_refuses_overspending() {
    let third = Epsilon::new(1, 3).unwrap();
    let mut f = Accountant::pure(Epsilon::new(1, 1).unwrap());
    for i in 0..3 {
        let _ = f.charge(&format!("q{i}"), third.into()).unwrap();
    }
    assert_eq!(f.remaining(), None);
    assert_eq!(f.spent_epsilon(), Some(Epsilon::new(1, 1).unwrap()));
    let err = f.charge("q3", third.into()).unwrap_err();
    assert!(matches!(err, AccountantError::BudgetExceeded { .. }));
    assert_eq!(f.ledger().len(), 3);
    let mut g = Accountant::approximate(Epsilon::new(1, 1).unwrap(), 1e-6).unwrap();
    let approx = |delta| Cost::Approximate {
        epsilon: third,
        delta,
    };
    let receipt = g.charge_as(Neighbours::Replace, "a", approx(1e-6)).unwrap();
    assert!(
        receipt
            .check_covers(&Cost::Pure(third), Neighbours::Replace)
            .is_ok()
    );
    assert!(
        receipt
            .check_covers(&approx(2e-6), Neighbours::Replace)
            .is_err()
    );
    assert_eq!(
        g.charge("b", approx(1e-7)).unwrap_err(),
        AccountantError::DeltaExceeded
    );
    assert!(g.ledger_text().contains("total: ε = 1/3 of 1"));
    assert_eq!(g.ledger_json()["charges"][0]["epsilon"]["exact"], "1/3");
    let b = basic(&[
        PrivacyLoss {
            epsilon: 0.1,
            delta: 0.0,
        },
        PrivacyLoss {
            epsilon: 0.2,
            delta: 1e-6,
        },
    ]);
    assert!((b.epsilon - 0.3).abs() < 1e-15 && b.delta == 1e-6);
}

/// Reference values of the tight conversion (CKS20 Cor. 13) and the simple one
/// (Bun–Steinke 2016 Prop. 1.3), computed independently with mpmath 1.3 at 50
/// digits: a scan of α = 1 + 10^x, then `findroot` on dε/dα = 0.
const REFERENCE: [(f64, f64, f64, f64); 6] = [
    // (ρ, δ, ε tight, ε simple)
    (0.5, 1e-5, 4.728_386_984_943_314, 5.298_525_912_188_081),
    (0.1, 1e-6, 2.141_938_928_385_474, 2.450_788_000_476_8),
    (1.0, 1e-6, 7.766_216_625_311_721, 8.433_844_377_699_677),
    (0.01, 1e-9, 0.810_174_467_867_534, 0.920_456_277_631_088),
    (2.0, 1e-3, 8.416_064_294_321_277, 9.433_844_377_699_677),
    (0.005, 1e-6, 0.429_941_468_836_949, 0.530_652_176_975_693),
];

#[test]
fn zcdp_conversions_match_reference_values_and_round_up() {
    for (rho, delta, tight, simple) in REFERENCE {
        let ours = zcdp_epsilon(rho, delta).unwrap();
        // Never below the exact infimum, and within 10⁻¹⁰ of it.
        assert!(ours >= tight, "{rho} {delta}: {ours} < {tight}");
        assert!(
            ours - tight < 1e-10 * tight,
            "{rho} {delta}: {ours} vs {tight}"
        );
        let s = zcdp_epsilon_simple(rho, delta).unwrap();
        assert!(
            s >= simple && s - simple < 1e-12 * simple,
            "{s} vs {simple}"
        );
        assert!(ours < s);
    }
}

#[test]
fn zcdp_conversion_is_no_worse_than_a_brute_force_minimum() {
    // Any α gives a valid ε; a dense grid of α must not beat our infimum.
    for rho in [0.001, 0.02, 0.3, 1.0, 5.0, 40.0] {
        for delta in [1e-12, 1e-6, 1e-3, 0.1] {
            let brute = (1..200_000)
                .map(|i| 1.0 + f64::from(i) * 1e-3 * (1.0 + f64::from(i) * 1e-3))
                .map(|a: f64| a * rho + (1.0 / (a * delta)).ln() / (a - 1.0) + (1.0 - 1.0 / a).ln())
                .fold(f64::INFINITY, f64::min)
                .max(0.0);
            let ours = zcdp_epsilon(rho, delta).unwrap();
            assert!(
                ours <= brute + 1e-9 * brute,
                "{rho} {delta}: {ours} > {brute}"
            );
            assert!(ours >= 0.98 * brute, "{rho} {delta}: {ours} ≪ {brute}");
        }
    }
}

#[test]
fn zcdp_conversion_is_monotone() {
    let rhos = [1e-4, 1e-3, 0.01, 0.1, 0.5, 1.0, 3.0, 10.0];
    let deltas = [1e-10, 1e-6, 1e-3, 0.05];
    for &delta in &deltas {
        let eps: Vec<f64> = rhos
            .iter()
            .map(|&r| zcdp_epsilon(r, delta).unwrap())
            .collect();
        // Strictly increasing once positive (0 is the floor for large δ).
        let up = eps.windows(2).all(|w| w[0] < w[1] || w[1] == 0.0);
        assert!(up, "δ = {delta}: {eps:?}");
    }
    for &rho in &rhos {
        let eps: Vec<f64> = deltas
            .iter()
            .map(|&d| zcdp_epsilon(rho, d).unwrap())
            .collect();
        let down = eps.windows(2).all(|w| w[0] > w[1] || w[0] == 0.0);
        assert!(down, "ρ = {rho}: {eps:?}");
        for &d in &deltas {
            let tight = zcdp_epsilon(rho, d).unwrap();
            assert!(tight <= zcdp_epsilon_simple(rho, d).unwrap());
            assert!(tight >= 0.0);
        }
    }
    assert!(zcdp_epsilon(0.0, 1e-6).is_err());
    assert!(zcdp_epsilon(f64::NAN, 1e-6).is_err());
    assert!(zcdp_epsilon(0.1, 0.0).is_err());
    assert!(zcdp_epsilon_simple(0.1, 1.0).is_err());
}

#[test]
fn largest_rho_for_a_target_meets_it() {
    for (eps, delta) in [(1.0, 1e-6), (0.5, 1e-9), (4.0, 1e-5), (10.0, 1e-3)] {
        let rho = zcdp_rho_for(eps, delta).unwrap();
        assert!(zcdp_epsilon(rho.to_f64(), delta).unwrap() <= eps);
        // And it is the largest, to 10⁻⁹.
        assert!(zcdp_epsilon(rho.to_f64() * (1.0 + 1e-9), delta).unwrap() > eps);
    }
    // Round trip through the reference table.
    let rho = zcdp_rho_for(4.728_386_985, 1e-5).unwrap().to_f64();
    assert!((rho - 0.5).abs() < 1e-8, "{rho}");
    assert!(zcdp_rho_for(0.0, 1e-6).is_err());
    assert!(zcdp_rho_for(1.0, 2.0).is_err());
}

#[test]
fn zcdp_accountant_adds_rho_exactly_and_converts_pure_costs() {
    let rho = |n, d| Rho::new(n, d).unwrap();
    let eps = |n, d| Epsilon::new(n, d).unwrap();
    let mut a = Accountant::zcdp(rho(1, 1), 1e-6).unwrap();
    assert!(a.is_zcdp() && a.composition() == "zCDP");
    let r1 = a
        .charge_as(Neighbours::Replace, "gauss", Cost::Zcdp(rho(1, 3)))
        .unwrap();
    let _ = a.charge("laplace", Cost::Pure(eps(1, 2))).unwrap(); // ρ = 1/8
    let _ = a.charge("exp mech", Cost::BoundedRange(eps(1, 1))).unwrap(); // ρ = 1/8
    let _ = a
        .charge(
            "δ = 0",
            Cost::Approximate {
                epsilon: eps(1, 2),
                delta: 0.0,
            },
        )
        .unwrap(); // ρ = 1/8
    assert_eq!(a.spent_rho(), Some(rho(17, 24)));
    assert_eq!(a.remaining_rho(), Some(rho(7, 24)));
    assert!(a.can_afford(&Cost::Zcdp(rho(7, 24))));
    assert!(!a.can_afford(&Cost::Zcdp(rho(8, 24))));
    // Refusals record nothing.
    let before = (a.ledger().len(), a.spent_rho());
    let err = a.charge("over", Cost::Zcdp(rho(1, 3))).unwrap_err();
    assert!(
        matches!(err, AccountantError::RhoBudgetExceeded { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("needs rho 1/3, only 7/24 remains"));
    let approx = Cost::Approximate {
        epsilon: eps(1, 10),
        delta: 1e-9,
    };
    assert!(matches!(
        a.charge("approx", approx).unwrap_err(),
        AccountantError::IncompatibleCost {
            composition: "zCDP",
            ..
        }
    ));
    assert!(!a.can_afford(&approx));
    assert_eq!((a.ledger().len(), a.spent_rho()), before);
    // Exactly the remainder is accepted.
    let _ = a.charge("rest", Cost::Zcdp(rho(7, 24))).unwrap();
    assert_eq!(a.remaining_rho(), None);
    assert_eq!(a.spent_epsilon(), None);
    assert_eq!(a.remaining(), None);
    // The guarantee of ρ = 1 at δ = 10⁻⁶ (reference table).
    let g = a.spent_guarantee().unwrap();
    assert!((g.epsilon - 7.766_216_625).abs() < 1e-8 && g.delta == 1e-6);
    assert!(
        r1.check_covers(&Cost::Zcdp(rho(1, 3)), Neighbours::Replace)
            .is_ok()
    );
}

#[test]
fn zcdp_for_targets_and_mixed_accountants_refuse() {
    let a = Accountant::zcdp_for(Epsilon::new(1, 1).unwrap(), 1e-6).unwrap();
    assert_eq!(a.budget(), Epsilon::new(1, 1).unwrap());
    let r = a.rho_budget().unwrap();
    assert!(zcdp_epsilon(r.to_f64(), 1e-6).unwrap() <= 1.0);
    // A pure accountant refuses ρ costs, records nothing.
    let mut p = Accountant::pure(Epsilon::new(1, 1).unwrap());
    let z = Cost::Zcdp(Rho::new(1, 100).unwrap());
    assert!(matches!(
        p.charge("z", z).unwrap_err(),
        AccountantError::IncompatibleCost {
            composition: "basic",
            ..
        }
    ));
    assert!(!p.can_afford(&z));
    assert!(p.ledger().is_empty() && p.spent_epsilon().is_none());
    // Bounded range is plain ε in a pure accountant.
    let _ = p
        .charge("em", Cost::BoundedRange(Epsilon::new(1, 2).unwrap()))
        .unwrap();
    assert_eq!(p.spent_epsilon(), Some(Epsilon::new(1, 2).unwrap()));
    let ex = Accountant::exactly(z).unwrap();
    assert_eq!(ex.rho_budget(), Some(Rho::new(1, 100).unwrap()));
    assert_eq!(
        Cost::pure_as_zcdp(Epsilon::new(1, 1).unwrap()).unwrap(),
        Cost::Zcdp(Rho::new(1, 2).unwrap())
    );
}

#[test]
fn receipts_never_cover_across_kinds_silently() {
    let e = |n, d| Epsilon::new(n, d).unwrap();
    let r = |n, d| Rho::new(n, d).unwrap();
    let zcdp = Cost::Zcdp(r(1, 4));
    assert!(zcdp.covers(&Cost::Zcdp(r(1, 5))));
    assert!(!zcdp.covers(&Cost::Zcdp(r(1, 3))));
    assert!(!zcdp.covers(&Cost::Pure(e(1, 100))));
    assert!(!zcdp.covers(&Cost::BoundedRange(e(1, 100))));
    assert!(!Cost::Pure(e(10, 1)).covers(&Cost::Zcdp(r(1, 100))));
    let br = Cost::BoundedRange(e(1, 1));
    assert!(br.covers(&Cost::BoundedRange(e(1, 2))));
    assert!(!br.covers(&Cost::Pure(e(1, 2))));
    assert!(Cost::Pure(e(1, 1)).covers(&Cost::BoundedRange(e(1, 1))));
    let receipt = Receipt {
        cost: zcdp,
        neighbours: Some(Neighbours::AddRemove),
        issuer: AccountantId::fresh(),
    };
    assert!(matches!(
        receipt.check_covers(&Cost::Pure(e(1, 100)), Neighbours::AddRemove),
        Err(AccountantError::ReceiptTooSmall { .. })
    ));
}

/// A receipt pays only under the relation it was charged under: an add/remove
/// receipt does not pay for a replace-one release, nor a receipt charged to an
/// unbound accountant without a relation — however large its cost.
#[test]
fn a_receipt_pays_only_under_its_relation() {
    let one = Epsilon::new(1, 1).unwrap();
    let mut big = Accountant::pure(Epsilon::new(100, 1).unwrap());
    let add_remove = big
        .charge_as(Neighbours::AddRemove, "a", Cost::Pure(one))
        .unwrap();
    assert_eq!(add_remove.neighbours(), Some(Neighbours::AddRemove));
    assert!(
        add_remove
            .check_covers(&Cost::Pure(one), Neighbours::AddRemove)
            .is_ok()
    );
    let err = add_remove
        .check_covers(&Cost::Pure(one), Neighbours::Replace)
        .unwrap_err();
    assert!(matches!(
        err,
        AccountantError::ReceiptRelation {
            paid: Some(Neighbours::AddRemove),
            needed: Neighbours::Replace
        }
    ));
    assert!(
        err.to_string().starts_with("a receipt charged under "),
        "{err}"
    );
    let unstated = big.charge("b", Cost::Pure(one)).unwrap();
    assert_eq!(unstated.neighbours(), None);
    assert!(matches!(
        unstated.check_covers(&Cost::Pure(one), Neighbours::AddRemove),
        Err(AccountantError::ReceiptRelation { paid: None, .. })
    ));
    // A bound accountant's receipts carry its relation.
    let mut bound = Accountant::exactly_for(Cost::Pure(one), Neighbours::Replace).unwrap();
    let r = bound
        .charge_as(Neighbours::Replace, "c", Cost::Pure(one))
        .unwrap();
    assert_eq!(r.neighbours(), Some(Neighbours::Replace));
}

/// An uncertified cost never opts an accountant in by itself.
#[test]
fn exactly_an_uncertified_cost_is_refused() {
    let one = Epsilon::new(1, 1).unwrap();
    assert!(matches!(
        Accountant::exactly(Cost::Uncertified(one)),
        Err(AccountantError::Uncertified { .. })
    ));
    assert!(matches!(
        Accountant::exactly_for(Cost::Uncertified(one), Neighbours::Replace),
        Err(AccountantError::Uncertified { .. })
    ));
}

#[test]
fn zcdp_ledger_shows_rho_and_the_converted_guarantee() {
    let mut a = Accountant::zcdp(Rho::new(1, 1).unwrap(), 1e-6).unwrap();
    let _ = a
        .charge("counts", Cost::Zcdp(Rho::new(1, 2).unwrap()))
        .unwrap();
    let _ = a
        .charge("laplace", Cost::Pure(Epsilon::new(1, 1).unwrap()))
        .unwrap();
    let text = a.ledger_text();
    assert!(text.contains("1. counts: ρ = 1/2 (zCDP)"), "{text}");
    assert!(text.contains("2. laplace: ε = 1 → ρ = 1/2"), "{text}");
    // The converted ε = 7.7662166… and 8.4338… read rounded up.
    assert!(
        text.contains("total: ρ = 1 of 1 ⇒ (ε, δ) = (7.767, 1e-6)"),
        "{text}"
    );
    assert!(text.contains("simple bound ε = 8.434]"), "{text}");
    let exact = a.ledger_text_exact();
    assert!(
        exact.contains("total: ρ = 1 of 1 ⇒ (ε, δ) = (7.766217, 1e-6)"),
        "{exact}"
    );
    assert!(exact.contains("simple bound ε = 8.433844"), "{exact}");
    let json = a.ledger_json();
    assert_eq!(json["composition"], "zCDP");
    assert_eq!(json["spent"]["rho"]["exact"], "1");
    assert_eq!(json["charges"][1]["rho"]["exact"], "1/2");
    let eps = json["spent"]["epsilon"].as_f64().unwrap();
    assert!((eps - 7.766_216_625).abs() < 1e-8);
    assert!(json["spent"]["epsilon_simple"].as_f64().unwrap() > eps);
    assert_eq!(json["budget"]["delta"], 1e-6);
}

#[test]
fn short_numbers_round_exactly_in_the_stated_direction() {
    // Short fractions stay exact.
    assert_eq!(short_ratio(1, 2, true), "1/2");
    assert_eq!(short_ratio(3, 1, true), "3");
    assert_eq!(short_ratio(0, 123_456_789, true), "0");
    assert_eq!(short_ratio(9999, 9998, true), "9999/9998");
    // 1/8 + 2⁻⁶³: the nearest f64 is 1/8, so float formatting would show 0.125.
    assert_eq!((((1u64 << 60) + 1) as f64 / (1u64 << 63) as f64), 0.125);
    assert_eq!(short_ratio((1 << 60) + 1, 1 << 63, true), "0.1251");
    assert_eq!(short_ratio((1 << 60) + 1, 1 << 63, false), "0.125");
    // 0.3333366…: `{:.4}` rounds to nearest, down here.
    assert_eq!(format!("{:.4}", 100_001.0 / 300_000.0), "0.3333");
    assert_eq!(short_ratio(100_001, 300_000, true), "0.3334");
    assert_eq!(short_ratio(100_001, 300_000, false), "0.3333");
    assert_eq!(short_ratio(12_500, 100_000, true), "0.125");
    assert_eq!(short_ratio(99_999, 100_000, true), "1");
    assert_eq!(short_ratio(99_999, 100_000, false), "0.9999");
    assert_eq!(short_ratio(12_345, 100_000_000_000, true), "1.235e-7");
    assert_eq!(short_ratio(12_345, 100_000_000_000, false), "1.234e-7");
    assert_eq!(short_ratio(1, u64::MAX, true), "5.422e-20");
    assert_eq!(short_ratio(u64::MAX, 3, true), "6148914691236517205");
    // σ² = 2⁵⁵/10114898543903 = 3561.98…: integer digits are kept.
    assert_eq!(short_ratio(1 << 55, 10_114_898_543_903, true), "3562");
    assert_eq!(short_ratio(1 << 55, 10_114_898_543_903, false), "3561");
    assert_eq!(short_ratio(123_456_789, 987_654_321, true), "0.125");
    // Floats: the shortest form when it is short, else four digits rounded up.
    assert_eq!(short_f64(0.0), "0");
    assert_eq!(short_f64(1e-9), "1e-9");
    assert_eq!(short_f64(1.5e-6), "1.5e-6");
    assert_eq!(short_f64(0.5), "0.5");
    assert_eq!(short_f64(1e-4), "0.0001");
    assert_eq!(short_f64(0.1 + 0.2), "0.3001");
    assert_eq!(format!("{:.3e}", 1.23449e-6), "1.234e-6");
    assert_eq!(short_f64(1.23449e-6), "1.235e-6");
    assert_eq!(short_f64(0.999_99), "1");
    assert_eq!(short_f64(1234.5), "1235");
}

#[test]
fn the_text_ledger_is_short_and_the_exact_one_keeps_fractions() {
    let e = |n, d| Epsilon::new(n, d).unwrap();
    let mut a = Accountant::approximate(e(1, 1), 1e-6).unwrap();
    let long = e(123_456_789, 987_654_321);
    let _ = a.charge("long", long.into()).unwrap();
    let _ = a
        .charge(
            "approx",
            Cost::Approximate {
                epsilon: e(1, 10),
                delta: 1.5e-7,
            },
        )
        .unwrap();
    let text = a.ledger_text();
    assert!(text.contains("1. long: ε = 0.125\n"), "{text}");
    assert!(text.contains("2. approx: ε = 1/10, δ = 1.5e-7\n"), "{text}");
    // 0.2249999988… + nothing lost: the total reads 0.225 ≥ the exact spend.
    assert!(
        text.contains("total: ε = 0.225 of 1, δ = 1.5e-7 of 1e-6 (2 charge(s)"),
        "{text}"
    );
    let exact = a.ledger_text_exact();
    assert!(
        exact.contains("1. long: ε = 13717421/109739369\n"),
        "{exact}"
    );
    assert!(exact.contains("δ = 1.5e-7 of 1e-6"), "{exact}");
    let spent = a.spent_epsilon().unwrap();
    assert!(
        exact.contains(&format!("total: ε = {spent} of 1,")),
        "{exact}"
    );
    assert_eq!(
        a.ledger_json()["spent"]["epsilon"]["exact"],
        spent.to_string()
    );
    let pure = Accountant::pure(e(1, 2));
    assert!(
        pure.ledger_text()
            .contains("total: ε = 0 of 1/2, δ = 0 of 0 (0 charge(s)"),
        "{}",
        pure.ledger_text()
    );
    assert!(pure.ledger_text_exact().contains("δ = 0 of 0"));
}

/// Two δ's whose float sum rounds below their exact sum: a budget of that float
/// sum must refuse the second (the exact spend would exceed it), and the spent δ
/// is never below the exact sum.
#[test]
fn delta_sums_round_up_never_down() {
    let (a, b) = (2.128856032350055e-09, 1.4275534950129973e-09);
    let nearest = a + b;
    // The exact sum is above the nearest double (the pair's error term is positive).
    assert!(((a - (nearest - (nearest - a))) + (b - (nearest - a))) > 0.0);
    assert_eq!(delta_sum(a, b), nearest.next_up());
    assert_eq!(delta_sum(0.5, 0.25), 0.75);
    let mut acc = Accountant::approximate(Epsilon::new(10, 1).unwrap(), nearest).unwrap();
    let cost = |d| Cost::Approximate {
        epsilon: Epsilon::new(1, 1).unwrap(),
        delta: d,
    };
    acc.charge("first", cost(a)).unwrap();
    assert!(!acc.can_afford(&cost(b)));
    assert!(matches!(
        acc.charge("second", cost(b)),
        Err(AccountantError::DeltaExceeded)
    ));
}

/// A receipt names the accountant that issued it: another accountant (however
/// large its budget, or a clone of this one) refuses it with a typed error, and
/// the issuer is read from the receipt, never supplied by its holder.
#[test]
fn a_receipt_from_another_accountant_is_refused() {
    let one = Epsilon::new(1, 1).unwrap();
    let mut ours = Accountant::exactly_for(Cost::Pure(one), Neighbours::Replace).unwrap();
    let mut big = Accountant::pure(Epsilon::new(1000, 1).unwrap());
    assert_ne!(ours.id(), big.id());
    let foreign = big
        .charge_as(Neighbours::Replace, "elsewhere", Cost::Pure(one))
        .unwrap();
    assert_eq!(foreign.issuer(), big.id());
    let err = ours.check_issued(&foreign).unwrap_err();
    assert_eq!(
        err,
        AccountantError::ForeignReceipt {
            issuer: big.id(),
            accountant: ours.id(),
        }
    );
    assert!(
        err.to_string()
            .starts_with("a receipt issued by accountant #"),
        "{err}"
    );
    // A clone is another accountant: its receipts are not the original's.
    let mut twin = ours.clone();
    assert_ne!(twin.id(), ours.id());
    let from_twin = twin
        .charge_as(Neighbours::Replace, "twin", Cost::Pure(one))
        .unwrap();
    assert!(matches!(
        ours.check_issued(&from_twin),
        Err(AccountantError::ForeignReceipt { .. })
    ));
    let own = ours
        .charge_as(Neighbours::Replace, "here", Cost::Pure(one))
        .unwrap();
    assert_eq!(ours.check_issued(&own), Ok(()));
    assert!(twin.check_issued(&own).is_err());
}

/// Printed costs round up: never below the cost, and at most one unit in the last
/// place above it (round-to-nearest would print 0.12344 as 0.1234).
#[test]
fn printed_costs_round_up() {
    assert_eq!(round_up(0.123_44, 4), "0.1235");
    assert_eq!(round_up(0.123_4, 4), "0.1234");
    assert_eq!(round_up(0.999_999_1, 6), "1.000000");
    assert_eq!(round_up(99.999_1, 2), "100.00");
    assert_eq!(round_up(0.0, 3), "0.000");
    assert_eq!(round_up(1e-9, 6), "0.000001");
    let mut x = 1e-7_f64;
    while x < 1e4 {
        for d in [0, 2, 4, 6] {
            let shown = round_up(x, d);
            let v: f64 = shown.parse().unwrap();
            assert!(v >= x, "{x} shown as {shown}");
            assert!(
                v - x <= 10f64.powi(-(d as i32)) * (1.0 + 1e-9),
                "{x} as {shown}"
            );
        }
        x *= 1.618_033_9;
    }
}
