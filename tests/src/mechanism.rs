//! The Laplace mechanism on a grid: released values lie on the lattice γ·ℤ fixed by the
//! public sensitivity, for every input (so the lattice itself leaks nothing).

use privq_core::sample::BoundedDiscreteLaplace;
use privq_core::{Epsilon, Fixed, GridLaplace};

use crate::check::{Outcome, expect_eq, expect_ok};
use crate::rng::chacha;

/// Releases of neighbouring inputs (distance ≤ Δ, values off the grid included) with the
/// exact and the bounded-work noise all lie on the mechanism's grid.
pub fn grid_lattice() -> Outcome {
    let eps = expect_ok("Epsilon::new(1, 2)", Epsilon::new(1, 2))?;
    let sensitivity = Fixed::from_bits(3 << 30); // Δ = 0.75
    let exact = expect_ok("GridLaplace::new", GridLaplace::new(sensitivity, eps))?;
    let bounded = expect_ok(
        "with_noise(Bounded)",
        exact.with_noise(BoundedDiscreteLaplace::new),
    )?;
    let step = exact.grid().to_bits();
    expect_eq(
        "grid of the bounded variant",
        bounded.grid().to_bits(),
        step,
    )?;
    let mut rng = chacha(0x01a7_71ce);
    // Neighbours: x and x + Δ, for inputs on and off the grid.
    let inputs = [
        Fixed::from_bits(102_005_473_280),     // 23.75
        Fixed::from_bits(102_005_473_280 + 7), // just off the grid
        Fixed::from_int(-5),
    ];
    for x in inputs {
        let neighbour = expect_ok("x + Δ", x.checked_add(sensitivity))?;
        for input in [x, neighbour] {
            for _ in 0..100 {
                let a = expect_ok("exact release", exact.release(input, &mut rng))?;
                let b = expect_ok("bounded release", bounded.release(input, &mut rng))?;
                expect_eq(
                    "exact release off the grid (remainder)",
                    a.to_bits() % step,
                    0,
                )?;
                expect_eq(
                    "bounded release off the grid (remainder)",
                    b.to_bits() % step,
                    0,
                )?;
            }
        }
    }
    Ok(())
}
