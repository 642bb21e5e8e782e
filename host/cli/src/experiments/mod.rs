//! The papers' experiments behind `privq experiment`, each a fixed-seed protocol that
//! prints tables, runs acceptance checks and writes SVG figures: the thesis' Chapter 5
//! MWEM protocol and the experiments of the other seed papers and of private statistics.

pub mod conjunctions;
pub mod distance;
pub mod dx;
pub mod knorm;
pub mod mwem;
pub mod pmw;
pub mod privlearn;
pub mod sql_accuracy;
mod svg;
