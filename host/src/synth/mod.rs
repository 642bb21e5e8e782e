//! Private synthetic data from measured marginals.

pub mod adaptive;
