//! Plots for the experiment reports, drawn through [`crate::figures::svg`] in the look
//! of [`crate::figures::curves`]:
//!
//! - [`histogram_auto`] (bins that follow the data) and [`histogram`] (a
//!   fixed number of equal-width bins), drawn by [`Histogram::to_svg`]:
//!   member and non-member score distributions on common bins, overlaid. A
//!   visual check of the distinguishing test behind every bound (the
//!   threshold audits separate exactly these two samples).
//! - [`epsilon_bars_svg`]: empirical ε lower bounds against the accountant's
//!   ε upper bound, one bar per audit or threat model: the gap plots of
//!   Annamalai et al. 2024 (Fig. 1) and Cebere et al. 2024 (Fig. 6). A bound
//!   that is not valid at its stated confidence (see
//!   [`crate::observations::Selection`]) has a hatched bar, and its label says so.
//!
//! Every number printed into the SVG is finite: non-finite inputs are
//! skipped or shown as `n/a`, never formatted.
//!
//! **Bins that follow the data** ([`histogram_auto`]). Membership scores are
//! often skewed or heavy-tailed (losses, likelihood ratios): equal-width
//! bins over the full range then put almost all scores in one or two bars.
//! The bins are equal-width in a display coordinate `u` chosen from the
//! pooled quantiles (never from the labels):
//! - `u = ln(score)` when all scores are positive and the 0.5 %–99.5 %
//!   quantiles span more than a factor 100 (`u = −ln(−score)` for negative
//!   scores such as −loss), so each order of magnitude gets its share;
//! - else `u = asinh((score − median)/s)`, `s` half the interquartile
//!   range, when the 0.5 %–99.5 % range exceeds 10 interquartile ranges (a
//!   normal sample: 3.8): linear near the median, logarithmic in both tails;
//! - else `u = score`.
//!
//! The bin width is the Freedman–Diaconis rule `2·IQR_u·N^{−1/3}` on the
//! pooled `u` (Freedman & Diaconis 1981: it minimises the integrated squared
//! error for smooth densities and, through the IQR, ignores outliers), with
//! 5 to 100 bins over the 0.1 %–99.9 % quantile range; the scores outside it
//! are counted in a note instead of stretching the axis.

mod epsilon_bars;
mod histogram;
mod histogram_svg;

pub use epsilon_bars::{epsilon_bars_svg, EpsilonBar};
pub use histogram::{
    histogram, histogram_auto, BinScale, Histogram, AUTO_MAX_BINS, AUTO_MIN_BINS, MAX_BINS,
};

/// Colour of the member series (and of the ε bars).
const MEMBER_COLOR: &str = "#1f77b4";
