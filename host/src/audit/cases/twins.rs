//! Test support for the broken twins: a case's tests audit the real mechanism and
//! each deliberately broken twin at the registry's test size, and require the real
//! one to pass and every twin to be flagged (its empirical ε above the claim).

use super::REGISTRY;
use crate::audit::{AuditCase, AuditReport, audit};

/// Runs per side of the registered case `name` at the test size.
pub(crate) fn test_runs(name: &str) -> u64 {
    REGISTRY
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{name} is not a registered audit case"))
        .test_runs
}

/// Audits `real` and each named twin at `name`'s test size (seed 7): the real
/// mechanism must pass, every twin must be flagged. Returns the real report, then
/// the twins' in order.
pub(crate) fn check(
    name: &str,
    real: &AuditCase,
    twins: &[(&str, &AuditCase)],
) -> Vec<AuditReport> {
    let runs = test_runs(name);
    let start = std::time::Instant::now();
    let real = audit(real, runs, 7, &|_| {}).unwrap();
    eprintln!(
        "{name} real: {:.3} vs claimed {:.3} ({:?}; {:.2?})",
        real.empirical_epsilon,
        real.claimed_epsilon,
        real.witness,
        start.elapsed()
    );
    assert!(real.passed(), "{name}: {real:?}");
    let mut out = vec![real];
    for (twin_name, twin) in twins {
        let r = audit(twin, runs, 7, &|_| {}).unwrap();
        eprintln!(
            "{name} twin ({twin_name}): {:.3} vs claimed {:.3} ({:?})",
            r.empirical_epsilon, r.claimed_epsilon, r.witness
        );
        assert!(
            !r.passed(),
            "{name}: the twin ({twin_name}) went unnoticed: {r:?}"
        );
        out.push(r);
    }
    out
}
