//! The privacy auditor on every registered case at its test size (the registry in
//! `privq_host::audit::cases` gives each one): the empirical lower bound on ε (95 %
//! confidence, Clopper–Pearson with Bonferroni) must not exceed the claimed ε, and
//! where the registry says so the auditor must see at least part of the claim.
//!
//! They assert the privacy contract, not a particular implementation: three of them
//! failed on the code before the contract (see the book, "Privacy auditor").

use privq_host::audit::{audit, cases};

#[test]
fn every_registered_case_holds_its_claim_at_test_size() {
    let mut failures = Vec::new();
    for entry in cases::REGISTRY {
        let case = (entry.make)(true).expect("the case builds");
        let r = audit(&case, entry.test_runs, 2026, &|_| {}).expect("the audit runs");
        eprintln!(
            "{}: empirical epsilon {:.3} vs claimed {:.3} over {} runs ({:?})",
            entry.name, r.empirical_epsilon, r.claimed_epsilon, r.runs, r.witness
        );
        if !r.passed() {
            failures.push(format!(
                "{}: empirical epsilon {:.3} > claimed {:.3} ({})",
                entry.name,
                r.empirical_epsilon,
                r.claimed_epsilon,
                r.witness.as_deref().unwrap_or("")
            ));
        }
        if let Some(min) = entry.test_sees
            && r.empirical_epsilon <= min
        {
            failures.push(format!(
                "{}: the auditor saw only epsilon {:.3}, not above {min}: too weak to test the claim",
                entry.name, r.empirical_epsilon
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
