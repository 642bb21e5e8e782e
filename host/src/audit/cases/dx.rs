//! The d_X-private Laplace mechanism (seed 002).

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::dx::{DxLaplace, FiniteMetric, Queries};
use privq_core::Epsilon;

/// d_X Laplace over three points on a line (d = |u_i − u_j|): one record moves
/// from point 0 to point 1, so the claim is ε = d(0, 1) = 1; the query is the sum
/// of positions, which moves by exactly the distance.
pub fn dx_laplace(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let metric = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).map_err(setup)?;
    let queries = Queries::new(vec![vec![0.0, 1.0, 3.0]]).map_err(setup)?;
    let mech = DxLaplace::new(&metric, queries, vec![1.0]).map_err(setup)?;
    let events = (9..=14).flat_map(|t| [Event::at_least(0, t as f64), Event::at_most(0, t as f64)]);
    Ok(AuditCase::new(
        "dx-laplace",
        "counts [5, 2, 3] vs [4, 3, 3] on points 0, 1, 3; d(0, 1) = 1",
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism("DxLaplace")
    .run(move |side, rng| {
        let counts: [u64; 3] = if side == Side::D {
            [5, 2, 3]
        } else {
            [4, 3, 3]
        };
        // Each run is a fresh release with its own budget: the spend's ε (max d = 3).
        let mut accountant = Accountant::pure(Epsilon::new(3, 1)?);
        Ok(mech.release(&counts, &mut accountant, rng)?)
    })
    .events(events))
}
