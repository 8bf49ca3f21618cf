//! The figures: SVG drawings of what the statistics computed. Nothing in
//! the statistics calls into this folder; the figures read the statistics
//! (a bound's evidence, its error points, the one-run test) and draw them.
//!
//! - [`svg`]: the one SVG writer all of them, and other crates' figures,
//!   draw with;
//! - [`curves`]: trade-off curves and their ROC view, the one-run plot;
//! - [`plots`]: score histograms and ε lower-vs-upper bar plots;
//! - [`bound_plots`]: the plots of a bound, from the data it was computed on.

pub mod bound_plots;
pub mod curves;
pub mod plots;
pub mod svg;
