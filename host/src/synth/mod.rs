//! Marginal-based synthetic data: estimating a distribution from noisy marginals
//! without materialising the universe (Private-PGM: McKenna, Sheldon, Miklau,
//! "Graphical-model based estimation and inference for differential privacy",
//! ICML 2019).
//!
//! Everything here is **post-processing** of already released noisy
//! measurements: it never reads private data, so floating point is fine (floats
//! never decide released noise, `docs/src/design.md`, and nothing here draws
//! noise).
//!
//! - [`Clique`]: a sorted set of attribute indices; its cells are ordered
//!   row-major, the first (smallest) attribute most significant.
//! - `factor` (internal): dense tables over a clique with strided marginalisation
//!   and broadcasting (no per-cell allocation).
//! - [`JunctionTree`]: greedy triangulation + maximum-weight spanning tree;
//!   [`model_cells`] prices a set of cliques without building any table.
//! - `infer` (internal): two-pass sum-product belief propagation in log space and
//!   exact marginals of any clique ([`Model::marginal`] is its public face).
//! - [`fit`]: mirror descent on the junction-tree potentials minimising
//!   `Σ_i ‖N·μ_{C_i} − y_i‖² / σ_i²` over the marginal polytope, with an Armijo
//!   line search; [`fit_dense`] minimises the same loss over the full histogram.
//! - [`sample`]: synthetic rows by forward sampling or by randomized rounding of
//!   the model's counts along the junction tree.
//! - [`refine`]: rows drawn from a model moved closer to its workload marginals
//!   by local search (single-value changes that lower the summed L1 distance).
//! - [`adaptive`]: the adaptive-marginals mechanism (privq's default for
//!   `privq synth`), which chooses and measures marginals privately and fits them
//!   with this engine.
//! - The entry points that own every release decision: [`release::synthesize`]
//!   (adaptive marginals) and [`mwem::MwemRequest`] (MWEM, thesis Ch. 5).
//!
//! ```
//! use privq_host::synth::{Clique, FitOptions, Measurement, MarginalModel, Total, fit};
//! // Three binary attributes; exact counts of the (0,1) and (1,2) marginals of 100 rows.
//! let sizes = [2, 2, 2];
//! let m01 = Measurement::new(Clique::new([0, 1])?, vec![40.0, 10.0, 10.0, 40.0], 1.0)?;
//! let m12 = Measurement::new(Clique::new([1, 2])?, vec![25.0, 25.0, 5.0, 45.0], 1.0)?;
//! let model = fit(&sizes, &[m01, m12], Total::Estimated, &FitOptions::default())?;
//! let m1 = model.marginal(&Clique::new([1])?)?;
//! assert!((m1[0] - 50.0).abs() < 1e-3 && (model.total() - 100.0).abs() < 1e-9);
//! # Ok::<(), privq_host::synth::SynthError>(())
//! ```

pub mod adaptive;
pub mod bins;
mod clique;
pub mod compress;
mod dense;
mod error;
mod estimate;
pub(crate) mod factor;
pub(crate) mod infer;
mod junction;
pub mod mwem;
mod optimise;
pub mod refine;
pub mod release;
pub mod sample;

#[cfg(test)]
mod tests;

pub use clique::Clique;
pub use compress::Compression;
pub use dense::{DenseModel, fit_dense};
pub use error::SynthError;
pub use estimate::{FitOptions, Measurement, Model, Total, fit};
pub use junction::{JunctionTree, model_cells};

/// The errors of [`fit`] (an alias of [`SynthError`]).
pub type FitError = SynthError;

/// A fitted distribution that answers marginal queries: the junction-tree
/// [`Model`] and the full-histogram [`DenseModel`] implement it, so the two can be
/// compared.
pub trait MarginalModel {
    /// The counts of the marginal on `clique` (cells in [`Clique`] order), summing
    /// to [`MarginalModel::total`].
    fn marginal(&self, clique: &Clique) -> Result<Vec<f64>, SynthError>;
    /// The model's number of records N (known or estimated).
    fn total(&self) -> f64;
}
