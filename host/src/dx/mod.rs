//! d_X-privacy (metric privacy) for linear queries — Kamalaruban, Perrier, Asghar
//! and Kaafar, "Not All Attributes are Created Equal: d_X-Private Mechanisms for
//! Linear Queries". Section, theorem, algorithm and equation numbers in this module
//! are the paper's; privq's conventions and corrections are in the book
//! (`docs/src/dx.md`, "How privq reads the paper").
//!
//! Every pair of universe elements gets its own budget `d_X(i, j)`
//! ([`FiniteMetric`]); a mechanism is d_X-private when moving one record from `i` to `j`
//! changes output probabilities by at most `e^{d_X(i,j)}`. The building blocks:
//!
//! * [`metric`]: metrics (Euclidean, Blowfish/smooth thresholds, eq. 3 attribute
//!   budgets, weighted Hamming, per-element, graph shortest paths), validation and
//!   closure;
//! * [`check`]: query matrices, pairwise sensitivities and the Theorem 1/3/5/7/10
//!   constraint checkers;
//! * [`DxLaplace`] (eq. 5, exact grid noise; also the ε-DP baseline),
//!   [`DxExponential`] (Definition 9), [`SmallDb`] (Algorithm 1) and [`DxMwem`]
//!   (Algorithm 2 on the shared MW engine);
//! * [`psa`]: parameter selection (single-query closed form, Strategies 1–3 with
//!   PSA, the exact relaxed optimum) and [`lipschitz`]: the exact 1-D reduction of
//!   problem (8);
//! * [`sq`]: Appendix C's statistical-query mechanism and separable solver;
//! * [`bounds`]: the error/utility bounds (Theorems 2, 4 sign-corrected, 6, 8, 11,
//!   Proposition 1) and [`DxSpend`]: what a release spends (a metric, with its
//!   implied ε = max d_X for the ε accountant).
//!
//! ```
//! use privq_host::dx::{DxLaplace, FiniteMetric, Queries, psa};
//! use privq_host::accountant::Accountant;
//! use privq_host::{Epsilon, seeded_rng};
//! let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0)?;
//! let q = Queries::new(vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0]])?;
//! let sel = psa::psa(&d, &q)?;
//! assert!((sel.scales[0] - 1.0).abs() < 1e-12 && (sel.scales[1] - 0.5).abs() < 1e-12);
//! let mech = DxLaplace::new(&d, q, sel.scales)?; // c ⊙ Q' = Q
//! let mut accountant = Accountant::pure(Epsilon::new(3, 1)?); // ε-DP charge: max d = 3
//! let noisy = mech.release(&[10, 20, 30], &mut accountant, &mut seeded_rng(5))?; // fixed seed: tests only
//! assert_eq!(noisy.len(), 2);
//! # Ok::<(), privq_host::dx::DxError>(())
//! ```

// Numerical kernels walk parallel arrays (pairs × queries) by index.
#![allow(clippy::needless_range_loop)]

pub mod bounds;
pub mod check;
mod error;
mod exact;
mod exponential;
mod laplace;
pub mod lipschitz;
pub mod metric;
mod mwem;
pub mod optimum;
pub mod psa;
pub mod release;
mod smalldb;
mod spend;
pub mod sq;
pub mod universe;

pub use check::{ConstraintRatio, Queries};
pub use error::DxError;
pub use exponential::DxExponential;
pub use laplace::{DxLaplace, baseline_scale};
pub use metric::{Combine, FiniteMetric};
pub use mwem::{Averaging, DxMwem, DxMwemOutput};
pub use smalldb::{SmallDb, SmallDbOutput};
pub use spend::DxSpend;
