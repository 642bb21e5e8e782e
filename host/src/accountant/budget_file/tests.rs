use super::*;
use privq_core::Rho;

fn eps(n: u64, d: u64) -> Epsilon {
    Epsilon::new(n, d).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privq-budget-file-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir.join("ledger.json")
}

fn pure(n: u64, d: u64) -> RunCost {
    RunCost::new(Cost::Pure(eps(n, d))).unwrap()
}

#[test]
fn a_deleted_budget_file_is_not_started_afresh() {
    let path = scratch("deleted");
    let cap = Cap::new(eps(2, 1), 0.0).unwrap();
    // A first charge refused at creation leaves no budget behind to protect.
    assert!(BudgetFile::charge(&path, Some(cap), &pure(3, 1), "too big", None).is_err());
    BudgetFile::charge(&path, Some(cap), &pure(1, 1), "first", None).unwrap();
    fs::remove_file(&path).unwrap();
    let e = BudgetFile::charge(&path, Some(cap), &pure(1, 1), "again", None).unwrap_err();
    assert!(matches!(e, BudgetFileError::Missing(_)), "{e}");
    assert!(!path.exists());
}

#[test]
fn budget_charges_for_another_privacy_unit_are_refused() {
    let path = scratch("unit");
    let cap = Cap::new(eps(3, 1), 0.0).unwrap();
    let run = pure(1, 1);
    BudgetFile::charge_unit(&path, Some(cap), &run, "sql", None, Some("device")).unwrap();
    BudgetFile::charge_unit(&path, None, &run, "sql", None, Some("device")).unwrap();
    // Rows and devices do not add up: a device with k rows costs k·ε per row run.
    let e = BudgetFile::charge(&path, None, &run, "noise", None).unwrap_err();
    assert!(matches!(e, BudgetFileError::UnitMismatch { .. }), "{e}");
    assert!(e.to_string().contains("privacy unit \"device\""), "{e}");
    let file = BudgetFile::read(&path).unwrap();
    assert_eq!(file.charges().len(), 2);
    assert_eq!(file.charges()[0].unit.as_deref(), Some("device"));
}

#[test]
fn budget_charges_that_fit_are_summed_exactly() {
    let path = scratch("fits");
    let cap = Cap::new(eps(1, 1), 1e-6).unwrap();
    let third = pure(1, 3);
    for i in 0..3 {
        let status =
            BudgetFile::charge(&path, (i == 0).then_some(cap), &third, "a third", None).unwrap();
        assert_eq!(status.charges, i + 1);
    }
    let file = BudgetFile::read(&path).unwrap();
    let status = file.status().unwrap();
    // 1/3 three times is exactly 1: no rounding lets a fourth charge in.
    assert_eq!(status.spent_epsilon, Some(eps(1, 1)));
    assert_eq!(status.remaining_epsilon(), None);
    assert!(matches!(
        BudgetFile::charge(&path, None, &pure(1, 1_000_000), "tiny", None),
        Err(BudgetFileError::Exceeded(_))
    ));
    // The δ side: (ε, δ) charges add δ.
    let path = scratch("delta");
    let cap = Cap::new(eps(10, 1), 1e-6).unwrap();
    let approx = RunCost::new(Cost::Approximate {
        epsilon: eps(1, 1),
        delta: 5e-7,
    })
    .unwrap();
    BudgetFile::charge(&path, Some(cap), &approx, "a", None).unwrap();
    BudgetFile::charge(&path, Some(cap), &approx, "b", None).unwrap();
    let e = BudgetFile::charge(&path, None, &approx, "c", None).unwrap_err();
    assert!(matches!(e, BudgetFileError::Exceeded(_)), "{e}");
    assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 2);
}

#[test]
fn budget_refusal_names_spent_cap_and_request_and_writes_nothing() {
    let path = scratch("refuse");
    let cap = Cap::new(eps(1, 1), 0.0).unwrap();
    BudgetFile::charge(&path, Some(cap), &pure(3, 4), "first", None).unwrap();
    let before = fs::read(&path).unwrap();
    let e = BudgetFile::charge(&path, None, &pure(1, 2), "second", None).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("second needs ε = 1/2"), "{text}");
    assert!(text.contains("ε = 3/4"), "{text}");
    assert!(text.contains("cap ε = 1, δ = 0"), "{text}");
    assert_eq!(fs::read(&path).unwrap(), before, "nothing written");
    // No temporary file is left behind.
    let names: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

/// A charge whose ε fits but whose δ does not names δ; one that exceeds ε (alone
/// or with δ) keeps the message that shows both.
#[test]
fn budget_refusal_names_delta_when_delta_alone_is_exceeded() {
    let approx = |n, d, delta| {
        RunCost::new(Cost::Approximate {
            epsilon: eps(n, d),
            delta,
        })
        .unwrap()
    };
    let path = scratch("refuse-delta");
    let cap = Cap::new(eps(1, 1), 0.0).unwrap();
    let e = BudgetFile::charge(
        &path,
        Some(cap),
        &approx(1, 2, 1e-6),
        "private groups",
        None,
    )
    .unwrap_err();
    assert!(matches!(e, BudgetFileError::Exceeded(_)), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "privacy budget of {} exceeded in δ: private groups needs δ = 1e-6, but the cap \
             ε = 1, δ = 0 allows no δ (its ε = 1/2 would fit); nothing was charged",
            path.display()
        )
    );
    assert!(!path.exists(), "nothing written");
    // A cap with a δ, partly spent.
    let cap = Cap::new(eps(2, 1), 1e-6).unwrap();
    BudgetFile::charge(&path, Some(cap), &approx(1, 2, 6e-7), "first", None).unwrap();
    let e = BudgetFile::charge(&path, None, &approx(1, 2, 6e-7), "second", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "privacy budget of {} exceeded in δ: second needs δ = 6e-7, but δ = 6e-7 of the \
             cap ε = 2, δ = 1e-6 is spent (its ε = 1/2 would fit); nothing was charged",
            path.display()
        )
    );
    // ε exceeded, with δ or without: the message as before.
    for (delta, what) in [(6e-7, "6e-7"), (0.0, "0")] {
        let e = BudgetFile::charge(&path, None, &approx(2, 1, delta), "third", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "privacy budget of {} exceeded: third needs ε = 2, δ = {what}, but ε = 1/2 \
                 and δ = 6e-7 of the cap ε = 2, δ = 1e-6 are spent; nothing was charged",
                path.display()
            )
        );
    }
    assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 1);
}

#[test]
fn budget_cap_is_fixed_at_creation() {
    let path = scratch("cap");
    assert!(matches!(
        BudgetFile::charge(&path, None, &pure(1, 2), "no cap", None),
        Err(BudgetFileError::NoCap(_))
    ));
    assert!(!path.exists());
    let cap = Cap::new(eps(2, 1), 0.0).unwrap();
    BudgetFile::charge(&path, Some(cap), &pure(1, 2), "create", None).unwrap();
    let other = Cap::new(eps(3, 1), 0.0).unwrap();
    let e = BudgetFile::charge(&path, Some(other), &pure(1, 2), "bigger", None).unwrap_err();
    assert!(matches!(e, BudgetFileError::CapMismatch { .. }), "{e}");
    assert!(e.to_string().contains("created with cap ε = 2"), "{e}");
    let other_delta = Cap::new(eps(2, 1), 1e-9).unwrap();
    assert!(matches!(
        BudgetFile::charge(&path, Some(other_delta), &pure(1, 2), "δ", None),
        Err(BudgetFileError::CapMismatch { .. })
    ));
    // The same cap again, or none, is fine.
    BudgetFile::charge(&path, Some(cap), &pure(1, 2), "same", None).unwrap();
    BudgetFile::charge(&path, None, &pure(1, 2), "none", None).unwrap();
    assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 3);
    assert!(Cap::new(eps(1, 1), 1.0).is_err());
    assert!(Cap::new(eps(1, 1), f64::NAN).is_err());
}

#[test]
fn budget_charges_share_one_neighbour_relation() {
    let path = scratch("relation");
    let cap = Cap::new(eps(5, 1), 0.0).unwrap();
    BudgetFile::charge(
        &path,
        Some(cap),
        &pure(1, 1),
        "a",
        Some(Neighbours::Replace),
    )
    .unwrap();
    for other in [Some(Neighbours::AddRemove), None] {
        let e = BudgetFile::charge(&path, None, &pure(1, 1), "b", other).unwrap_err();
        assert!(matches!(e, BudgetFileError::RelationMismatch { .. }), "{e}");
    }
    BudgetFile::charge(&path, None, &pure(1, 1), "c", Some(Neighbours::Replace)).unwrap();
    let file = BudgetFile::read(&path).unwrap();
    assert_eq!(file.charges()[1].neighbours, Some(Neighbours::Replace));
}

#[test]
fn budget_files_that_are_not_ours_are_refused_and_kept() {
    let path = scratch("hostile");
    let cap = Some(Cap::new(eps(5, 1), 0.0).unwrap());
    let cases: &[(&[u8], &str)] = &[
        (b"", "not"),
        (b"name,age\nann,30\n", "not"),
        (b"\xff\xfe\x00garbage", "not"),
        (br#"{"composition": "basic", "charges": []}"#, "not"),
        (br#"{"format": "privq-budget", "version": 99}"#, "version 99"),
        (br#"{"format": "privq-budget", "version": 1}"#, "corrupt"),
        (
            br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":0},"delta":0.0},"charges":[]}"#,
            "corrupt",
        ),
        (
            br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":2.0},"charges":[]}"#,
            "corrupt",
        ),
        (
            br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":0.0},"charges":[{"label":"x","time":"t","neighbours":"sideways","cost":"c","epsilon":{"num":1,"den":2},"delta":0.0,"certified":true}]}"#,
            "corrupt",
        ),
        (
            br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":0.0},"charges":[{"label":"x","time":"t","neighbours":null,"cost":"c","epsilon":{"num":18446744073709551615,"den":1},"delta":0.0,"certified":true},{"label":"x","time":"t","neighbours":null,"cost":"c","epsilon":{"num":18446744073709551615,"den":1},"delta":0.0,"certified":true}]}"#,
            "overflow",
        ),
        (
            br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":0.0},"charges":[],"extra":1}"#,
            "corrupt",
        ),
    ];
    for (bytes, what) in cases {
        fs::write(&path, bytes).unwrap();
        let e = BudgetFile::charge(&path, cap, &pure(1, 1), "x", None).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(what), "{what}: {text}");
        assert_eq!(&fs::read(&path).unwrap()[..], *bytes, "file kept");
        assert!(BudgetFile::read(&path).is_err());
    }
    // A directory (or a link) where the file belongs is left alone.
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    assert!(matches!(
        BudgetFile::charge(&path, cap, &pure(1, 1), "x", None),
        Err(BudgetFileError::NotARegularFile(_))
    ));
    #[cfg(unix)]
    {
        let link = path.with_file_name("link.json");
        let target = path.with_file_name("target.json");
        fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            BudgetFile::charge(&link, cap, &pure(1, 1), "x", None),
            Err(BudgetFileError::NotARegularFile(_))
        ));
        assert_eq!(fs::read(&target).unwrap(), b"keep");
    }
}

#[test]
fn budget_file_round_trips_and_is_versioned() {
    let path = scratch("roundtrip");
    let cap = Cap::new(eps(3, 1), 1e-5).unwrap();
    BudgetFile::charge(&path, Some(cap), &pure(1, 7), "privq noise", None).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["format"], "privq-budget");
    assert_eq!(json["version"], 1);
    assert_eq!(json["cap"]["epsilon"]["num"], 3);
    assert_eq!(json["cap"]["delta"], 1e-5);
    let charge = &json["charges"][0];
    assert_eq!(charge["label"], "privq noise");
    assert_eq!(charge["cost"], "ε = 1/7");
    assert_eq!(charge["epsilon"]["den"], 7);
    assert!(charge["time"].as_str().unwrap().ends_with('Z'));
    let file = BudgetFile::read(&path).unwrap();
    assert_eq!(file.to_json(), json);
    assert_eq!(file.cap(), cap);
}

#[test]
fn budget_zcdp_runs_are_charged_the_epsilon_their_accountant_reports() {
    // Built for (ε, δ) = (1, 1e-6): charged exactly that.
    let acct = Accountant::zcdp_for(eps(1, 1), 1e-6).unwrap();
    let run = RunCost::of(&acct).unwrap();
    assert_eq!(run.epsilon(), eps(1, 1));
    assert_eq!(run.delta(), 1e-6);
    assert!(matches!(run.cost(), Cost::Zcdp(_)));
    // From ρ: the conversion, never below it.
    let rho = Rho::new(1, 8).unwrap();
    let run = RunCost::zcdp(rho, 1e-6).unwrap();
    assert!(run.epsilon().to_f64() >= zcdp_epsilon(0.125, 1e-6).unwrap());
    let acct = Accountant::zcdp(rho, 1e-6).unwrap();
    assert!(RunCost::of(&acct).unwrap().epsilon().to_f64() >= zcdp_epsilon(0.125, 1e-6).unwrap());
    // A ρ cost cannot be charged without its δ.
    assert!(RunCost::new(Cost::Zcdp(rho)).is_err());
    // A zCDP run needs δ room in the cap.
    let path = scratch("zcdp");
    let pure_cap = Cap::new(eps(5, 1), 0.0).unwrap();
    assert!(matches!(
        BudgetFile::charge(&path, Some(pure_cap), &run, "zcdp", None),
        Err(BudgetFileError::Exceeded(_))
    ));
    // Other accountants: their budget as a cost.
    let approx = Accountant::approximate(eps(1, 2), 1e-7).unwrap();
    let run = RunCost::of(&approx).unwrap();
    assert_eq!((run.epsilon(), run.delta()), (eps(1, 2), 1e-7));
    let mut unc = Accountant::pure(eps(1, 2));
    unc.allow_uncertified();
    assert!(matches!(unc.budget_cost(), Cost::Uncertified(_)));
    let path = scratch("uncertified");
    BudgetFile::charge_accountant(&path, Some(pure_cap), &unc, "knorm").unwrap();
    let file = BudgetFile::read(&path).unwrap();
    assert!(file.has_uncertified());
}

#[test]
fn budget_concurrent_charges_never_exceed_the_cap() {
    let path = scratch("threads");
    let cap = Cap::new(eps(5, 1), 0.0).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                BudgetFile::charge(&path, Some(cap), &pure(1, 1), &format!("run {i}"), None).is_ok()
            })
        })
        .collect();
    let ok = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|&ok| ok)
        .count();
    assert_eq!(ok, 5);
    assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 5);
}

#[test]
fn budget_times_are_utc() {
    assert_eq!(utc_text(0), "1970-01-01T00:00:00Z");
    assert_eq!(utc_text(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(utc_text(1_767_225_599), "2025-12-31T23:59:59Z");
}

/// The file's δ total rounds up: two δ's whose float sum rounds below their exact
/// sum do not both fit a cap of that float sum.
#[test]
fn a_budget_file_adds_deltas_rounding_up() {
    let path = scratch("delta-sum");
    let (a, b) = (2.128856032350055e-09, 1.4275534950129973e-09);
    let cap = Cap::new(eps(10, 1), a + b).unwrap();
    let run = |d| {
        RunCost::new(Cost::Approximate {
            epsilon: eps(1, 1),
            delta: d,
        })
        .unwrap()
    };
    BudgetFile::charge(&path, Some(cap), &run(a), "first", None).unwrap();
    let e = BudgetFile::charge(&path, None, &run(b), "second", None).unwrap_err();
    assert!(matches!(e, BudgetFileError::Exceeded(_)), "{e}");
}

#[cfg(unix)]
#[test]
fn a_hard_linked_budget_file_is_refused() {
    let path = scratch("hardlink");
    let cap = Cap::new(eps(1, 1), 0.0).unwrap();
    BudgetFile::open(&path, Some(cap)).unwrap();
    let other = path.with_file_name("other.json");
    fs::hard_link(&path, &other).unwrap();
    // Each name would have its own lock, and the first charge (a rename) would
    // split them into two budgets: both names are refused while both exist.
    for p in [&path, &other] {
        let e = BudgetFile::charge(p, None, &pure(1, 2), "run", None).unwrap_err();
        assert!(
            matches!(e, BudgetFileError::HardLinked { links: 2, .. }),
            "{e}"
        );
        assert!(matches!(
            BudgetFile::open(p, None),
            Err(BudgetFileError::HardLinked { .. })
        ));
    }
    fs::remove_file(&other).unwrap();
    BudgetFile::charge(&path, None, &pure(1, 2), "run", None).unwrap();
}

#[test]
fn a_refusal_for_want_of_a_cap_leaves_no_lock_file() {
    let path = scratch("nocap");
    let lock = path.with_file_name("ledger.json.lock");
    let e = BudgetFile::open(&path, None).unwrap_err();
    assert!(matches!(e, BudgetFileError::NoCap(_)), "{e}");
    let e = BudgetFile::charge(&path, None, &pure(1, 2), "run", None).unwrap_err();
    assert!(matches!(e, BudgetFileError::NoCap(_)), "{e}");
    assert!(!path.exists() && !lock.exists());
}
