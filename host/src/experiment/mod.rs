//! Reproducible experiments from the papers: the thesis' Chapter 5 MWEM protocol
//! (`privq experiment mwem`), with tables, acceptance checks and SVG figures.

pub mod conjunctions;
pub mod distance;
pub mod knorm;
pub mod mwem;
pub mod pmw;
pub mod privlearn;
mod svg;

pub use svg::{Series, line_chart};
pub mod dx;
pub mod sql_accuracy;
