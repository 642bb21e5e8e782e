//! The Huang–Roth distance-query mechanisms (`docs/src/distance.md`): the offline
//! synopsis and the interactive session.

use privq_core::Epsilon;

use super::setup;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::distance::interactive::{InteractiveConfig, Session, Step};
use crate::distance::offline::{OfflineConfig, Synopsis};
use crate::distance::privacy::Privacy;
use crate::distance::{BoxDomain, Columns};

/// The offline synopsis on the unit interval: n points at 1/2 and one point that
/// sits at 0 on `D` and at 1 on `D′` (the largest move a record can make, changing
/// every answer by up to 1/n). The output is the synopsis' answers at 0, 1/2, 1.
pub fn distance_offline(small: bool) -> Result<AuditCase, AuditError> {
    offline_at(
        small,
        Epsilon::new(1, 1).map_err(setup)?,
        "Huang–Roth synopsis",
    )
}

/// [`distance_offline`] with the synopsis run at `eps` (claim ε = 1).
fn offline_at(small: bool, eps: Epsilon, label: &str) -> Result<AuditCase, AuditError> {
    let n = if small { 100 } else { 200 };
    let domain = BoxDomain::unit_cube(1).map_err(setup)?;
    let config = OfflineConfig::new(Privacy::pure(eps));
    let points = |far: f64| -> Vec<[f64; 1]> {
        std::iter::once([far])
            .chain(std::iter::repeat_n([0.5], n - 1))
            .collect()
    };
    let (d, d_prime) = (points(0.0), points(1.0));
    // The noise is wide at this n: thresholds across the range, on the answer at 0
    // and on F(0) − F(1), which the move shifts by 2/n.
    let events = (1..10).flat_map(|i| {
        let t = i as f64 / 10.0;
        let u = 2.0 * t - 1.0;
        [
            Event::at_least(0, t),
            Event::at_most(0, t),
            Event::new(format!("F(0) - F(1) >= {u:.1}"), move |o: &[f64]| {
                o[0] - o[2] >= u
            }),
            Event::new(format!("F(0) - F(1) <= {u:.1}"), move |o: &[f64]| {
                o[0] - o[2] <= u
            }),
        ]
    });
    Ok(AuditCase::new(
        "distance-offline",
        format!("n = {n} points at 1/2; one record at 0 vs at 1"),
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let pts = if side == Side::D { &d } else { &d_prime };
        let mut accountant = crate::accountant::Accountant::exactly(config.privacy.cost())?;
        let s = Synopsis::release(&domain, pts, &config, &mut accountant, rng)?;
        Ok(vec![
            s.answer(&[0.0])?,
            s.answer(&[0.5])?,
            s.answer(&[1.0])?,
        ])
    })
    .events(events))
}

/// The interactive session (Theorem 3.1's ℓ1 mechanism) on the unit interval:
/// n − 1 points at 0 and one record at 0 on `D`, at 1 on `D′`. The analyst asks
/// the queries 0, 1, 0, 1/2, 1: each answer and whether it triggered an update
/// round are released, so the events cover both what the sparse-vector test
/// reveals (which queries updated) and the noisy values and slopes behind the
/// updated answers. α is fixed at 1/4; the starting hypothesis is far from the
/// data, so update rounds happen.
pub fn distance_session(small: bool) -> Result<AuditCase, AuditError> {
    session_at(
        small,
        Epsilon::new(1, 1).map_err(setup)?,
        "Huang–Roth interactive session",
    )
}

/// [`distance_session`] with the session run at `eps` (claim ε = 1).
fn session_at(small: bool, eps: Epsilon, label: &str) -> Result<AuditCase, AuditError> {
    let n = if small { 100 } else { 200 };
    let domain = BoxDomain::unit_cube(1).map_err(setup)?;
    let config = InteractiveConfig::new(Privacy::pure(eps)).with_alpha(0.25);
    let points = |far: f64| -> Vec<[f64; 1]> {
        std::iter::once([far])
            .chain(std::iter::repeat_n([0.0], n - 1))
            .collect()
    };
    let (d, d_prime) = (
        Columns::new(&domain, &points(0.0)).map_err(setup)?,
        Columns::new(&domain, &points(1.0)).map_err(setup)?,
    );
    const QUERIES: [f64; 5] = [0.0, 1.0, 0.0, 0.5, 1.0];
    let k = QUERIES.len();
    // Coarse thresholds for the noisy answers, and fine ones at half the records'
    // separation 1/n, where an answer computed without noise would be caught.
    let half_step = 0.5 / n as f64;
    let events = (0..k).flat_map(move |j| {
        let answers = (1..10).flat_map(move |i| {
            let t = i as f64 / 10.0;
            [Event::at_least(j, t), Event::at_most(j, t)]
        });
        [
            Event::at_least(k + j, 0.5),
            Event::at_most(j, half_step),
            Event::at_least(j, 1.0 - half_step),
        ]
        .into_iter()
        .chain(answers)
    });
    Ok(AuditCase::new(
        "distance-session",
        format!("n = {n}: n − 1 points at 0; one record at 0 vs at 1; queries 0, 1, 0, 1/2, 1"),
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism(label)
    .run(move |side, rng| {
        let cols = if side == Side::D { &d } else { &d_prime };
        let mut accountant = crate::accountant::Accountant::exactly(config.privacy.cost())?;
        let mut session = Session::new(cols, &config, &mut accountant, rng)?;
        let mut out = vec![f64::NAN; 2 * k];
        for (j, &q) in QUERIES.iter().enumerate() {
            let y = session.prepare(&[q])?;
            match session.answer(&y, rng) {
                Ok(a) => out[j] = a,
                Err(_) => break, // exhausted: the remaining answers stay NaN
            }
        }
        for (j, e) in session.transcript().iter().enumerate() {
            out[k + j] = f64::from(u8::from(e.step == Step::Update));
        }
        Ok(out)
    })
    .events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::cases::twins::check;

    /// The only twins these cases catch so far: no noise to speak of (run at
    /// ε = 1000, judged against 1). Runs at 2ε and 4ε read below the claim: see the
    /// auditor chapter.
    #[test]
    fn the_auditor_flags_the_noiseless_twins_of_the_distance_mechanisms() {
        let loud = Epsilon::new(1000, 1).unwrap();
        let twin = offline_at(true, loud, "twin: no noise").unwrap();
        check(
            "distance-offline",
            &distance_offline(true).unwrap(),
            &[("no noise (run at ε = 1000)", &twin)],
        );
        let twin = session_at(true, loud, "twin: no noise").unwrap();
        check(
            "distance-session",
            &distance_session(true).unwrap(),
            &[("no noise (run at ε = 1000)", &twin)],
        );
    }
}
