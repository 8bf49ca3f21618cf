//! Plots for the experiment reports, as hand-written SVG in the look of
//! [`crate::curves`] (no plotting dependency):
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

use std::fmt::Write as _;

use crate::curves::{escape, open_svg};
use crate::error::{AuditError, Result};

/// Largest bin count [`histogram`] accepts (a plot wider than this has
/// bars narrower than a pixel).
pub const MAX_BINS: usize = 10_000;

/// Legend label of the member series.
const MEMBERS_LABEL: &str = "members (canary in)";
/// Legend label of the non-member series.
const NONMEMBERS_LABEL: &str = "non-members (canary out)";
/// Label of the accountant's ε line.
const UPPER_LABEL: &str = "ε upper (accountant)";
/// Suffix of the label of a bar whose bound is not valid at its confidence.
const INVALID_SUFFIX: &str = " (not valid at stated confidence)";

const MEMBER_COLOR: &str = "#1f77b4";
const NONMEMBER_COLOR: &str = "#ff7f0e";
const UPPER_COLOR: &str = "#d62728";

/// How [`Histogram`] bins are spaced: equal-width in a display coordinate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BinScale {
    /// Equal-width bins in score units.
    Linear,
    /// Equal-width bins in `ln(score)` (all scores positive).
    Log,
    /// Equal-width bins in `−ln(−score)` (all scores negative, e.g. −loss).
    NegLog,
    /// Equal-width bins in `u = asinh((score − center)/width)`.
    Asinh {
        /// The pooled median.
        center: f64,
        /// Half the pooled interquartile range (> 0).
        width: f64,
    },
}

impl BinScale {
    /// The display coordinate of a score (NaN outside the scale's domain).
    pub fn forward(&self, x: f64) -> f64 {
        match *self {
            BinScale::Linear => x,
            BinScale::Log => x.ln(),
            BinScale::NegLog => -(-x).ln(),
            BinScale::Asinh { center, width } => ((x - center) / width).asinh(),
        }
    }

    /// The score of a display coordinate.
    pub fn inverse(&self, u: f64) -> f64 {
        match *self {
            BinScale::Linear => u,
            BinScale::Log => u.exp(),
            BinScale::NegLog => -(-u).exp(),
            BinScale::Asinh { center, width } => center + width * u.sinh(),
        }
    }

    /// In words, for the plot.
    fn describe(&self) -> Option<&'static str> {
        match self {
            BinScale::Linear => None,
            BinScale::Log => Some("bins equal in ln(score)"),
            BinScale::NegLog => Some("bins equal in ln(−score)"),
            BinScale::Asinh { .. } => Some("bins equal in asinh(score)"),
        }
    }
}

/// Member and non-member score counts on common bins.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Bin edges in score units, increasing, `bins + 1` of them. Bin `i` is
    /// `[edges[i], edges[i + 1])`; the last bin also holds its right edge.
    /// The bins are equal-width in [`Histogram::scale`]'s coordinate.
    pub edges: Vec<f64>,
    /// Member counts per bin.
    pub members: Vec<u64>,
    /// Non-member counts per bin.
    pub nonmembers: Vec<u64>,
    /// Scores (of both classes) that were NaN or ±∞ and are in no bin.
    pub skipped_non_finite: u64,
    /// How the bins are spaced.
    pub scale: BinScale,
    /// Finite scores below the first edge (not drawn; [`histogram_auto`] only).
    pub below: u64,
    /// Finite scores above the last edge (not drawn; [`histogram_auto`] only).
    pub above: u64,
}

/// Bins both score classes on `bins` common equal-width bins spanning the
/// smallest to the largest finite score of either class.
///
/// When every finite score equals one value `v`, there is one bin,
/// `[v − 0.5, v + 0.5]`, whatever `bins` is. Non-finite scores are counted
/// in [`Histogram::skipped_non_finite`] and binned nowhere.
///
/// # Errors
/// [`AuditError::InvalidParameter`] when `bins` is 0 or above [`MAX_BINS`],
/// or when neither class has a finite score.
pub fn histogram(members: &[f64], nonmembers: &[f64], bins: usize) -> Result<Histogram> {
    if bins == 0 || bins > MAX_BINS {
        return Err(AuditError::InvalidParameter {
            name: "bins",
            value: bins.to_string(),
            expected: "a bin count from 1 to 10000",
        });
    }
    let (lo, hi) = finite_range(members, nonmembers)?;
    let edges: Vec<f64> = if lo == hi {
        vec![lo - 0.5, lo + 0.5]
    } else {
        // Interpolate instead of `lo + i·(hi − lo)/bins`: `hi − lo` can
        // overflow for scores near ±f64::MAX; this cannot, and the end
        // edges are exactly `lo` and `hi`. The running max keeps the edges
        // sorted whatever the rounding.
        let mut prev = lo;
        (0..=bins)
            .map(|i| {
                let f = i as f64 / bins as f64;
                let e = (lo * (1.0 - f) + hi * f).max(prev);
                prev = e;
                e
            })
            .collect()
    };
    Ok(count_into(members, nonmembers, edges, BinScale::Linear))
}

/// Smallest and largest finite score of either class.
fn finite_range(members: &[f64], nonmembers: &[f64]) -> Result<(f64, f64)> {
    let finite = || {
        members
            .iter()
            .chain(nonmembers)
            .copied()
            .filter(|v| v.is_finite())
    };
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(AuditError::InvalidParameter {
            name: "scores",
            value: format!(
                "{} member and {} non-member scores, none finite",
                members.len(),
                nonmembers.len()
            ),
            expected: "at least one finite score in either class",
        });
    }
    Ok((lo, hi))
}

/// Counts both classes on `edges` (finite, non-decreasing, ≥ 2 of them).
fn count_into(members: &[f64], nonmembers: &[f64], edges: Vec<f64>, scale: BinScale) -> Histogram {
    let n = edges.len() - 1;
    let (first, last) = (edges[0], edges[n]);
    let inner = &edges[1..n];
    let (mut below, mut above) = (0_u64, 0_u64);
    // Bin = number of inner edges ≤ v, so a score on an inner edge goes to
    // the bin that edge opens, and `hi` lands in the last bin.
    let mut count = |scores: &[f64]| {
        let mut c = vec![0u64; n];
        for &v in scores.iter().filter(|v| v.is_finite()) {
            if v < first {
                below += 1;
            } else if v > last {
                above += 1;
            } else {
                c[inner.partition_point(|&e| e <= v)] += 1;
            }
        }
        c
    };
    let m = count(members);
    let nm = count(nonmembers);
    let skipped = members
        .iter()
        .chain(nonmembers)
        .filter(|v| !v.is_finite())
        .count() as u64;
    Histogram {
        members: m,
        nonmembers: nm,
        edges,
        skipped_non_finite: skipped,
        scale,
        below,
        above,
    }
}

/// Most bins [`histogram_auto`] uses.
pub const AUTO_MAX_BINS: usize = 100;
/// Fewest bins [`histogram_auto`] uses (unless all scores are equal).
pub const AUTO_MIN_BINS: usize = 5;

/// Bins that follow the data (see the module docs): Freedman–Diaconis width
/// in a linear or `asinh` coordinate chosen from the pooled quantiles, over
/// the pooled 0.1 %–99.9 % quantile range.
///
/// # Errors
/// [`AuditError::InvalidParameter`] when neither class has a finite score.
pub fn histogram_auto(members: &[f64], nonmembers: &[f64]) -> Result<Histogram> {
    let (min, max) = finite_range(members, nonmembers)?;
    if min == max {
        return histogram(members, nonmembers, 1);
    }
    let mut pooled: Vec<f64> = members
        .iter()
        .chain(nonmembers)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    pooled.sort_unstable_by(f64::total_cmp);
    let q = |p: f64| {
        let pos = p * (pooled.len() - 1) as f64;
        let (i, f) = (pos.floor() as usize, pos.fract());
        let a = pooled[i];
        let b = pooled[(i + 1).min(pooled.len() - 1)];
        // a + f·(b − a) without overflow for scores near ±f64::MAX.
        a * (1.0 - f) + b * f
    };
    let (q25, q50, q75) = (q(0.25), q(0.5), q(0.75));
    let (q_lo, q_hi) = (q(0.005), q(0.995));
    let iqr = q75 / 2.0 - q25 / 2.0;
    let scale = if min > 0.0 && q_hi / q_lo > 100.0 {
        BinScale::Log
    } else if max < 0.0 && q_lo / q_hi > 100.0 {
        BinScale::NegLog
    } else if iqr > 0.0 && (q_hi / 2.0 - q_lo / 2.0) / iqr > 10.0 {
        BinScale::Asinh {
            center: q50,
            width: iqr,
        }
    } else {
        BinScale::Linear
    };
    let (mut lo, mut hi) = (q(0.001), q(0.999));
    if lo >= hi {
        (lo, hi) = (min, max);
    }
    let (u_lo, u_hi) = (scale.forward(lo), scale.forward(hi));
    let iqr_u = scale.forward(q75) - scale.forward(q25);
    let n = pooled.len() as f64;
    let width = 2.0 * iqr_u * n.powf(-1.0 / 3.0);
    let span = u_hi - u_lo;
    let bins = if width > 0.0 && width.is_finite() && span.is_finite() {
        (span / width).ceil()
    } else {
        // Sturges, when the middle half is a single value.
        n.log2().ceil() + 1.0
    };
    let bins = (bins as usize).clamp(AUTO_MIN_BINS, AUTO_MAX_BINS);
    let mut prev = lo;
    let edges: Vec<f64> = (0..=bins)
        .map(|i| {
            let e = if i == 0 {
                lo
            } else if i == bins {
                hi
            } else {
                let f = i as f64 / bins as f64;
                scale.inverse(u_lo * (1.0 - f) + u_hi * f)
            };
            let e = if e.is_finite() { e.max(prev) } else { prev };
            prev = e;
            e
        })
        .collect();
    Ok(count_into(members, nonmembers, edges, scale))
}

/// Vertical grid lines and tick labels of an x axis over `[lo, hi]`.
fn x_grid(s: &mut String, x: &Scale, lo: f64, hi: f64, bottom: f64, top: f64) {
    let (xt, xstep) = ticks(lo, hi, 6);
    for t in xt {
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#ddd"/>"##,
            x.px(t),
            bottom,
            top
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x.px(t),
            bottom + 16.0,
            fmt_tick(t, xstep)
        );
    }
}

/// Tick values for a non-linear axis over `[lo, hi]` (score units): 0 and
/// ±10^k first, then ±2·10^k and ±5·10^k, each kept when the scale maps it
/// and it is at least 40 pixels from every tick already kept.
fn scaled_ticks(x: &Scale, scale: BinScale, lo: f64, hi: f64) -> Vec<f64> {
    let mut kept: Vec<(f64, f64)> = Vec::new();
    let mut consider = |v: f64| {
        if v < lo || v > hi || !scale.forward(v).is_finite() {
            return;
        }
        let px = x.px(scale.forward(v));
        if kept.iter().all(|&(_, p)| (p - px).abs() >= 40.0) {
            kept.push((v, px));
        }
    };
    consider(0.0);
    for d in [1.0, 2.0, 5.0] {
        for k in -12..=15 {
            let v = d * 10f64.powi(k);
            consider(v);
            consider(-v);
        }
    }
    let mut out: Vec<f64> = kept.into_iter().map(|(v, _)| v).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// A round tick value in few characters: `0`, `20`, `0.5`, `2e-4`, `1e6`.
fn fmt_round(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-2..1e5).contains(&a) {
        format!("{v:e}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Grid lines and labels of a non-linear x axis.
fn scaled_grid(
    s: &mut String,
    x: &Scale,
    scale: BinScale,
    lo: f64,
    hi: f64,
    bottom: f64,
    top: f64,
) {
    for t in scaled_ticks(x, scale, lo, hi) {
        let px = x.px(scale.forward(t));
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{bottom:.1}" x2="{px:.1}" y2="{top:.1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            bottom + 16.0,
            fmt_round(t)
        );
    }
}

/// Maps `[lo, hi]` (finite, `lo < hi`) onto pixels `[p0, p1]`, clamping.
#[derive(Debug, Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn px(&self, v: f64) -> f64 {
        // Halves: `hi − lo` may overflow, `hi/2 − lo/2` cannot.
        let t = (v * 0.5 - self.lo * 0.5) / (self.hi * 0.5 - self.lo * 0.5);
        let t = if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.p0 + t * (self.p1 - self.p0)
    }
}

/// Multiples of a 1-2-5 step that lie in `[lo, hi]` (about `target` of
/// them), and the step. Falls back to the two ends when no step fits.
fn ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let raw = hi / target as f64 - lo / target as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return (vec![lo, hi], 0.0);
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let step = mag
        * if norm < 1.5 {
            1.0
        } else if norm < 3.5 {
            2.0
        } else if norm < 7.5 {
            5.0
        } else {
            10.0
        };
    let (k0, k1) = ((lo / step).ceil(), (hi / step).floor());
    if !(step > 0.0 && k0.is_finite() && k1.is_finite() && k1 >= k0 && k1 - k0 <= 50.0) {
        return (vec![lo, hi], 0.0);
    }
    let ticks = (0..=(k1 - k0) as usize)
        // `+ 0.0` turns −0 into 0.
        .map(|i| (k0 + i as f64) * step + 0.0)
        .collect();
    (ticks, step)
}

/// The smallest multiple of a 1-2-5 step at or above `hi` (finite, > 0),
/// so that an axis `[0, nice_ceil(hi)]` ends on a tick.
fn nice_ceil(hi: f64) -> f64 {
    let (t, step) = ticks(0.0, hi, 5);
    let last = t.last().copied().unwrap_or(hi);
    if step > 0.0 && last < hi {
        last + step
    } else {
        last.max(hi)
    }
}

/// A tick label with as many decimals as the tick step needs.
fn fmt_tick(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let decimals = if step > 0.0 && step < 1.0 {
        (-step.log10().floor()).max(0.0) as usize
    } else {
        0
    };
    if v.abs() >= 1e6 || decimals > 6 || step == 0.0 && v.abs() < 1e-3 {
        format!("{v:.3e}")
    } else if step == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.decimals$}")
    }
}

/// A value label: three decimals, scientific when very large or small.
fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        "n/a".to_string()
    } else if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:.3e}")
    } else {
        format!("{v:.3}")
    }
}

impl Histogram {
    /// Renders an SVG: the two classes as overlaid semi-transparent bars
    /// (members blue, non-members orange; one `<rect>` per non-empty bin per
    /// class, classes `bar-members` / `bar-nonmembers`), a legend above the
    /// plot area, ticks on both axes, the score axis labelled `x_label` and
    /// the count axis `count`. A note under the title gives the number of
    /// skipped non-finite scores when there are any.
    ///
    /// Robust to hand-built values: bins whose edges are not finite and
    /// increasing are left out, and only as many bins as all three vectors
    /// describe are drawn.
    pub fn to_svg(&self, title: &str, x_label: &str) -> String {
        let (w, h, m) = (640.0, 480.0, 60.0);
        let (pw, ph) = (w - 2.0 * m, h - 2.0 * m - 20.0);
        let (top, bottom) = (m + 20.0, m + 20.0 + ph);
        let mut s = String::new();
        open_svg(&mut s, w, h, title);
        let mut notes: Vec<String> = self
            .scale
            .describe()
            .map(String::from)
            .into_iter()
            .collect();
        if self.below + self.above > 0 {
            notes.push(format!(
                "not shown, outside 0.1–99.9 %: {} below, {} above",
                self.below, self.above
            ));
        }
        if self.skipped_non_finite > 0 {
            notes.push(format!(
                "non-finite scores not shown: {}",
                self.skipped_non_finite
            ));
        }
        if !notes.is_empty() {
            let _ = writeln!(
                s,
                r##"<text x="{}" y="42" text-anchor="middle" fill="#555">{}</text>"##,
                w / 2.0,
                escape(&notes.join("; "))
            );
        }
        let _ = writeln!(
            s,
            r#"<rect x="{m}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
        );
        let n = self
            .edges
            .len()
            .saturating_sub(1)
            .min(self.members.len())
            .min(self.nonmembers.len());
        let bins: Vec<usize> = (0..n)
            .filter(|&i| {
                let (a, b) = (self.edges[i], self.edges[i + 1]);
                a.is_finite() && b.is_finite() && a <= b
            })
            .collect();
        let lo = bins
            .iter()
            .map(|&i| self.edges[i])
            .fold(f64::INFINITY, f64::min);
        let hi = bins
            .iter()
            .map(|&i| self.edges[i + 1])
            .fold(f64::NEG_INFINITY, f64::max);
        if bins.is_empty() || lo >= hi {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">no finite scores to show</text>"#,
                w / 2.0,
                (top + bottom) / 2.0
            );
            s.push_str("</svg>\n");
            return s;
        }
        let scale = self.scale;
        let (u_lo, u_hi) = (scale.forward(lo), scale.forward(hi));
        if !(u_lo.is_finite() && u_hi.is_finite() && u_lo < u_hi) {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">no finite scores to show</text>"#,
                w / 2.0,
                (top + bottom) / 2.0
            );
            s.push_str("</svg>\n");
            return s;
        }
        let x = Scale {
            lo: u_lo,
            hi: u_hi,
            p0: m,
            p1: w - m,
        };
        let max_count = bins
            .iter()
            .map(|&i| self.members[i].max(self.nonmembers[i]))
            .max()
            .unwrap_or(0)
            .max(1);
        // Counts are integers: a step below 1 would repeat tick labels.
        let y_hi = nice_ceil(max_count as f64).max(1.0);
        let y = Scale {
            lo: 0.0,
            hi: y_hi,
            p0: bottom,
            p1: top,
        };
        match scale {
            BinScale::Linear => x_grid(&mut s, &x, lo, hi, bottom, top),
            _ => scaled_grid(&mut s, &x, scale, lo, hi, bottom, top),
        }
        let (yt, ystep) = ticks(0.0, y_hi, 5);
        for t in yt.into_iter().filter(|t| t.fract() == 0.0) {
            let _ = writeln!(
                s,
                r##"<line x1="{1:.1}" y1="{0:.1}" x2="{2:.1}" y2="{0:.1}" stroke="#ddd"/>"##,
                y.px(t),
                m,
                w - m
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                m - 6.0,
                y.px(t) + 4.0,
                fmt_tick(t, ystep.max(1.0))
            );
        }
        for (counts, color, class) in [
            (&self.members, MEMBER_COLOR, "bar-members"),
            (&self.nonmembers, NONMEMBER_COLOR, "bar-nonmembers"),
        ] {
            for &i in bins.iter().filter(|&&i| counts[i] > 0) {
                let (x0, x1) = (
                    x.px(scale.forward(self.edges[i])),
                    x.px(scale.forward(self.edges[i + 1])),
                );
                let y1 = y.px(counts[i] as f64);
                let _ = writeln!(
                    s,
                    r#"<rect class="{class}" x="{x0:.2}" y="{y1:.2}" width="{:.2}" height="{:.2}" fill="{color}" fill-opacity="0.45" stroke="{color}" stroke-width="0.8"/>"#,
                    x1 - x0,
                    bottom - y1
                );
            }
        }
        for (k, (color, label)) in [
            (MEMBER_COLOR, MEMBERS_LABEL),
            (NONMEMBER_COLOR, NONMEMBERS_LABEL),
        ]
        .into_iter()
        .enumerate()
        {
            // One row between title and plot, so no bar can hide it.
            let (lx, ly) = (m + 220.0 * k as f64, top - 14.0);
            let _ = writeln!(
                s,
                r#"<rect class="legend" x="{lx}" y="{}" width="14" height="10" fill="{color}" fill-opacity="0.45" stroke="{color}"/><text x="{}" y="{}">{label}</text>"#,
                ly - 5.0,
                lx + 20.0,
                ly + 4.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            w / 2.0,
            h - 12.0,
            escape(x_label)
        );
        let _ = writeln!(
            s,
            r#"<text x="16" y="{0}" text-anchor="middle" transform="rotate(-90 16 {0})">count</text>"#,
            (top + bottom) / 2.0
        );
        s.push_str("</svg>\n");
        s
    }
}

/// One bar of [`epsilon_bars_svg`]: an empirical ε lower bound.
#[derive(Debug, Clone, PartialEq)]
pub struct EpsilonBar {
    /// What produced it (audit method, threat model, ...).
    pub label: String,
    /// The ε lower bound.
    pub lower: f64,
    /// Whether the bound is valid at its stated confidence (false for
    /// `same-data` selection, see [`crate::observations::Selection`]).
    pub valid: bool,
}

/// Where a bar of value `lower` ends: at the axis origin for 0, negative or
/// non-finite values.
fn bar_end(x: &Scale, lower: f64) -> f64 {
    if lower.is_finite() && lower > 0.0 {
        x.px(lower)
    } else {
        x.p0
    }
}

/// Renders ε lower bounds as horizontal bars against the accountant's ε
/// upper bound, drawn as a dashed vertical line labelled
/// `ε upper (accountant)`: the gap plot of Annamalai et al. 2024 Fig. 1 / Cebere et al. 2024 Fig. 6
/// (one bar per audit), also used to compare threat models side by side.
///
/// Each bar is one `<rect>` of class `bar-valid` or `bar-invalid`, with its
/// label above it and its value at its end (drawn last, on a white halo, so it
/// stays legible where it crosses the dashed line). A bar with `valid == false` is
/// hatched and lighter, and its label ends in
/// ` (not valid at stated confidence)`. The ε axis starts at 0 and reaches
/// past both the largest finite bar and the upper bound. A bar whose value
/// is not finite has zero length and the value `n/a`; a negative value has
/// zero length and shows its value. An upper bound that is `None` draws no
/// line; one that is not finite or is negative draws no line but a note.
pub fn epsilon_bars_svg(title: &str, bars: &[EpsilonBar], epsilon_upper: Option<f64>) -> String {
    let (w, m, row) = (640.0, 60.0, 44.0);
    let top = m + 20.0;
    let ph = row * bars.len().max(1) as f64;
    let bottom = top + ph;
    let h = bottom + 60.0;
    let (left, right) = (30.0, w - 40.0);
    let upper = epsilon_upper.filter(|u| u.is_finite() && *u >= 0.0);
    let largest = bars
        .iter()
        .map(|b| b.lower)
        .filter(|v| v.is_finite())
        .chain(upper)
        .fold(0.0, f64::max);
    // 15% headroom for the value labels at the bar ends.
    let x_hi = if largest > 0.0 {
        nice_ceil(largest * 1.15)
    } else {
        1.0
    };
    let x = Scale {
        lo: 0.0,
        hi: x_hi,
        p0: left,
        p1: right,
    };
    let mut s = String::new();
    open_svg(&mut s, w, h, title);
    let _ = writeln!(
        s,
        r##"<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#deebf7"/><line x1="0" y1="0" x2="0" y2="6" stroke="{MEMBER_COLOR}" stroke-width="1.5" stroke-opacity="0.6"/></pattern></defs>"##
    );
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{}" height="{ph}" fill="none" stroke="black"/>"#,
        right - left
    );
    x_grid(&mut s, &x, 0.0, x_hi, bottom, top);
    if bars.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">no ε lower bounds to show</text>"#,
            w / 2.0,
            (top + bottom) / 2.0 + 4.0
        );
    }
    for (k, b) in bars.iter().enumerate() {
        let ry = top + row * k as f64;
        let x1 = bar_end(&x, b.lower);
        let (class, fill) = if b.valid {
            (
                "bar-valid",
                format!(r#"fill="{MEMBER_COLOR}" fill-opacity="0.8""#),
            )
        } else {
            ("bar-invalid", r#"fill="url(#hatch)""#.to_string())
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}{}</text>"#,
            left + 4.0,
            ry + 14.0,
            escape(&b.label),
            if b.valid { "" } else { INVALID_SUFFIX }
        );
        let _ = writeln!(
            s,
            r#"<rect class="{class}" x="{left}" y="{:.1}" width="{:.2}" height="20" {fill} stroke="{MEMBER_COLOR}"/>"#,
            ry + 19.0,
            x1 - left
        );
    }
    match (epsilon_upper, upper) {
        (_, Some(u)) => {
            let ux = x.px(u);
            // Over the bars, so a bound past the claim shows the line crossing it.
            let _ = writeln!(
                s,
                r#"<line x1="{ux:.1}" y1="{:.1}" x2="{ux:.1}" y2="{bottom:.1}" stroke="{UPPER_COLOR}" stroke-width="2" stroke-dasharray="6 4"/>"#,
                top - 10.0
            );
            let anchor = if ux > w / 2.0 { "end" } else { "start" };
            let _ = writeln!(
                s,
                r#"<text x="{ux:.1}" y="{:.1}" text-anchor="{anchor}" fill="{UPPER_COLOR}">{UPPER_LABEL} = {}</text>"#,
                top - 14.0,
                fmt_value(u)
            );
        }
        (Some(_), None) => {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{:.1}" text-anchor="middle" fill="{UPPER_COLOR}">{UPPER_LABEL} not finite or negative: not drawn</text>"#,
                w / 2.0,
                top - 14.0
            );
        }
        (None, None) => {}
    }
    // Value labels last, on a white halo: legible where they cross the line.
    for (k, b) in bars.iter().enumerate() {
        let x1 = bar_end(&x, b.lower);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" stroke="white" stroke-width="4" stroke-linejoin="round" paint-order="stroke">ε ≥ {}</text>"#,
            x1 + 4.0,
            top + row * k as f64 + 33.0,
            fmt_value(b.lower)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">ε</text>"#,
        w / 2.0,
        h - 12.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn well_formed(svg: &str) {
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>\n"), "{svg}");
        assert_eq!(svg.matches("<svg").count(), 1);
        for bad in ["NaN", "inf", "Inf"] {
            assert!(!svg.contains(bad), "`{bad}` in {svg}");
        }
    }

    #[test]
    fn histogram_hand_computed_counts() {
        // Finite range [0, 4], 4 bins of width (4 − 0)/4 = 1: edges 0,1,2,3,4.
        // members 0 → bin 0; 0.5 → bin 0; 1 → bin 1 (an inner edge opens its
        //   bin); 3.99 → bin 3; 4 → bin 3 (the max is in the last bin)
        //   ⇒ [2, 1, 0, 2].
        // non-members 2 → bin 2; 2.5 → bin 2; 1.5 → bin 1; NaN, +∞, −∞
        //   skipped ⇒ [0, 1, 2, 0], skipped = 3.
        let h = histogram(
            &[0.0, 0.5, 1.0, 3.99, 4.0],
            &[2.0, 2.5, f64::NAN, 1.5, f64::INFINITY, f64::NEG_INFINITY],
            4,
        )
        .unwrap();
        assert_eq!(h.edges, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(h.members, vec![2, 1, 0, 2]);
        assert_eq!(h.nonmembers, vec![0, 1, 2, 0]);
        assert_eq!(h.skipped_non_finite, 3);
    }

    #[test]
    fn histogram_counts_sum_to_finite_inputs() {
        // 1000 scores spread over [−3.7, 5.2] by a fixed LCG (no RNG crate
        // needed), every 97th made non-finite; 13 bins.
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 53) as f64 * 8.9 - 3.7
        };
        let mut m: Vec<f64> = (0..600).map(|_| next()).collect();
        let n: Vec<f64> = (0..400).map(|_| next()).collect();
        for i in (0..m.len()).step_by(97) {
            m[i] = f64::NAN;
        }
        let bad = m.iter().filter(|v| !v.is_finite()).count() as u64;
        assert_eq!(bad, 7); // indices 0, 97, …, 582
        let h = histogram(&m, &n, 13).unwrap();
        assert_eq!(h.edges.len(), 14);
        assert_eq!(h.members.len(), 13);
        assert_eq!(h.members.iter().sum::<u64>(), 600 - bad);
        assert_eq!(h.nonmembers.iter().sum::<u64>(), 400);
        assert_eq!(h.skipped_non_finite, bad);
        let lo = m.iter().chain(&n).copied().filter(|v| v.is_finite());
        assert_eq!(h.edges[0], lo.clone().fold(f64::INFINITY, f64::min));
        assert_eq!(h.edges[13], lo.fold(f64::NEG_INFINITY, f64::max));
        assert!(h.edges.windows(2).all(|e| e[0] < e[1]));
    }

    #[test]
    fn histogram_degenerate_range_is_one_unit_bin() {
        let h = histogram(&[2.5, 2.5], &[2.5, f64::NAN], 10).unwrap();
        assert_eq!(h.edges, vec![2.0, 3.0]);
        assert_eq!(h.members, vec![2]);
        assert_eq!(h.nonmembers, vec![1]);
        assert_eq!(h.skipped_non_finite, 1);
        // One class empty is fine.
        let h = histogram(&[], &[-1.0], 3).unwrap();
        assert_eq!(h.edges, vec![-1.5, -0.5]);
        assert_eq!((h.members, h.nonmembers), (vec![0], vec![1]));
    }

    #[test]
    fn histogram_extreme_scores_do_not_overflow() {
        let h = histogram(&[-f64::MAX], &[f64::MAX], 2).unwrap();
        assert_eq!(h.edges, vec![-f64::MAX, 0.0, f64::MAX]);
        assert_eq!((h.members, h.nonmembers), (vec![1, 0], vec![0, 1]));
        well_formed(&h_svg(&Histogram {
            edges: vec![-f64::MAX, 0.0, f64::MAX],
            members: vec![1, 0],
            nonmembers: vec![0, 1],
            skipped_non_finite: 0,
            scale: BinScale::Linear,
            below: 0,
            above: 0,
        }));
    }

    fn h_svg(h: &Histogram) -> String {
        h.to_svg("t", "score")
    }

    #[test]
    fn histogram_errors() {
        for bins in [0, MAX_BINS + 1] {
            match histogram(&[1.0], &[2.0], bins) {
                Err(AuditError::InvalidParameter { name: "bins", .. }) => {}
                other => panic!("bins = {bins}: {other:?}"),
            }
        }
        for (m, n) in [
            (&[][..], &[][..]),
            (&[f64::NAN][..], &[f64::INFINITY, f64::NEG_INFINITY][..]),
        ] {
            match histogram(m, n, 5) {
                Err(AuditError::InvalidParameter { name: "scores", .. }) => {}
                other => panic!("{m:?} {n:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn histogram_svg_structure() {
        // Same data as `histogram_hand_computed_counts`: non-empty bins are
        // 3 for members ([2, 1, 0, 2]) and 2 for non-members ([0, 1, 2, 0]).
        let h = histogram(&[0.0, 0.5, 1.0, 3.99, 4.0], &[2.0, 2.5, f64::NAN, 1.5], 4).unwrap();
        let svg = h.to_svg("scores <&> canary", "score (−loss)");
        well_formed(&svg);
        assert!(svg.contains("scores &lt;&amp;&gt; canary"));
        assert!(!svg.contains("<&>"));
        assert_eq!(svg.matches(r#"class="bar-members""#).count(), 3);
        assert_eq!(svg.matches(r#"class="bar-nonmembers""#).count(), 2);
        // background + frame + 2 legend swatches + 5 bars.
        assert_eq!(svg.matches("<rect").count(), 9);
        assert!(svg.contains(MEMBERS_LABEL) && svg.contains(NONMEMBERS_LABEL));
        assert!(svg.contains("score (−loss)"));
        assert!(svg.contains("non-finite scores not shown: 1"));
        // x ticks: [0, 4] in ~6 → raw step 0.667 → 1-2-5 step 0.5, one
        // decimal: 0, 0.5, …, 4.0 (9 ticks). y ticks: max count 2 → step
        // 0.5, integer ticks only: 0, 1, 2.
        for t in ["0", "0.5", "1.0", "2.5", "4.0"] {
            assert!(
                svg.contains(&format!(r#"text-anchor="middle">{t}</text>"#)),
                "x {t}"
            );
        }
        for t in ["0", "1", "2"] {
            assert!(
                svg.contains(&format!(r#"text-anchor="end">{t}</text>"#)),
                "y {t}"
            );
        }
        // The tallest bar (count 2) reaches the top of the plot area,
        // y = 60 + 20 = 80, as the count axis ends at 2.
        assert!(svg.contains(r#"y="80.00" width="#));
    }

    #[test]
    fn histogram_svg_survives_hand_built_values() {
        for h in [
            Histogram {
                edges: vec![],
                members: vec![],
                nonmembers: vec![],
                skipped_non_finite: 0,
                scale: BinScale::Linear,
                below: 0,
                above: 0,
            },
            Histogram {
                edges: vec![f64::NAN, 1.0, f64::INFINITY],
                members: vec![1, 2],
                nonmembers: vec![3],
                skipped_non_finite: 2,
                scale: BinScale::Linear,
                below: 0,
                above: 0,
            },
            Histogram {
                edges: vec![0.0, 1.0],
                members: vec![0],
                nonmembers: vec![0],
                skipped_non_finite: 0,
                scale: BinScale::Linear,
                below: 0,
                above: 0,
            },
        ] {
            well_formed(&h_svg(&h));
        }
        // Degenerate-range histogram renders its single bin per class.
        let svg = h_svg(&histogram(&[7.0], &[7.0], 4).unwrap());
        well_formed(&svg);
        assert_eq!(svg.matches(r#"class="bar-members""#).count(), 1);
        assert_eq!(svg.matches(r#"class="bar-nonmembers""#).count(), 1);
    }

    fn bar(label: &str, lower: f64, valid: bool) -> EpsilonBar {
        EpsilonBar {
            label: label.to_string(),
            lower,
            valid,
        }
    }

    #[test]
    fn epsilon_bars_structure() {
        let bars = [
            bar("white-box <gradient>", 2.0, true),
            bar("black-box & loss", 0.5, false),
            bar("one-run", 1.25, true),
        ];
        let svg = epsilon_bars_svg("ε_lb <&> ε_ub", &bars, Some(8.0));
        well_formed(&svg);
        assert!(svg.contains("ε_lb &lt;&amp;&gt; ε_ub"));
        assert!(svg.contains("white-box &lt;gradient&gt;"));
        assert!(svg.contains("black-box &amp; loss (not valid at stated confidence)"));
        assert_eq!(
            svg.matches("(not valid at stated confidence)").count(),
            1,
            "only the invalid bar is flagged"
        );
        assert_eq!(svg.matches(r#"class="bar-valid""#).count(), 2);
        assert_eq!(svg.matches(r#"class="bar-invalid""#).count(), 1);
        assert_eq!(svg.matches(r#"fill="url(#hatch)""#).count(), 1);
        assert!(svg.contains("ε upper (accountant) = 8.000"));
        assert_eq!(svg.matches(r#"stroke-dasharray="6 4""#).count(), 1);
        for v in ["ε ≥ 2.000", "ε ≥ 0.500", "ε ≥ 1.250"] {
            assert!(svg.contains(v), "{v}");
        }
        // Axis: 8 · 1.15 = 9.2 rounds up to the 2-step tick 10, so the plot
        // [30, 600] maps ε = 8 to 30 + 0.8 · 570 = 486 and ε = 2 to 144
        // (bar width 114).
        assert!(svg.contains(r#"x1="486.0""#));
        assert!(svg.contains(r#"width="114.00""#));
        assert!(svg.contains(r#"text-anchor="middle">10</text>"#));
    }

    #[test]
    fn epsilon_axis_covers_largest_bar() {
        // A bar above the upper bound (an audit bug, or a same-data bound):
        // the axis must reach it: 12 · 1.15 = 13.8 → tick 14 (step 2),
        // so ε = 12 is at 30 + 12/14 · 570 = 518.57 and ε_ub = 3 at 152.14.
        let svg = epsilon_bars_svg("t", &[bar("a", 12.0, false)], Some(3.0));
        well_formed(&svg);
        assert!(svg.contains(r#"width="488.57""#), "{svg}");
        assert!(svg.contains(r#"x1="152.1""#));
        assert!(svg.contains(r#"text-anchor="middle">14</text>"#));
        // Painter's order: bar, then the dashed line over it, then the value
        // label on its halo.
        let at = |needle: &str| {
            svg.find(needle)
                .unwrap_or_else(|| panic!("{needle}: {svg}"))
        };
        assert!(at("<rect class=\"bar-invalid\"") < at("stroke-dasharray"));
        assert!(at("stroke-dasharray") < at("ε ≥ 12"));
        assert!(svg.contains(r#"paint-order="stroke">ε ≥ 12"#), "{svg}");
    }

    #[test]
    fn epsilon_bars_without_finite_numbers() {
        // No upper bound and all bars 0: axis [0, 1], zero-length bars.
        let zeros = [bar("a", 0.0, true), bar("b", 0.0, false)];
        let svg = epsilon_bars_svg("zeros", &zeros, None);
        well_formed(&svg);
        assert!(!svg.contains(UPPER_LABEL));
        assert_eq!(svg.matches(r#"width="0.00""#).count(), 2);
        assert!(svg.contains(r#"text-anchor="middle">1.0</text>"#));
        // Non-finite bars and upper bounds are never formatted.
        let odd = [
            bar("nan", f64::NAN, true),
            bar("inf", f64::INFINITY, true),
            bar("neg", -0.25, true),
        ];
        for up in [None, Some(f64::NAN), Some(f64::INFINITY), Some(-1.0)] {
            let svg = epsilon_bars_svg("odd", &odd, up);
            assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
            assert!(!svg.contains("NaN") && !svg.contains("∞"));
            // Labels "inf" are user text; values never print as inf.
            assert_eq!(svg.matches("inf").count(), 1, "{svg}");
            assert_eq!(svg.matches("ε ≥ n/a").count(), 2);
            assert!(svg.contains("ε ≥ -0.250"));
            assert_eq!(svg.matches(r#"width="0.00""#).count(), 3);
            assert_eq!(svg.contains("not finite or negative"), up.is_some());
        }
        // No bars at all.
        let svg = epsilon_bars_svg("none", &[], Some(1.0));
        well_formed(&svg);
        assert!(svg.contains("no ε lower bounds to show"));
        assert!(svg.contains("ε upper (accountant) = 1.000"));
    }

    #[test]
    fn auto_bins_follow_heavy_tails() {
        // Log-normal scores (σ = 2): positive over about five orders of
        // magnitude, so the bins are equal-width in ln(score); the bulk near
        // the median gets many bins instead of one, and the few extreme
        // scores are counted apart.
        let mut state = 7u64;
        let mut normal = || {
            // Box–Muller from a fixed LCG: no RNG crate needed.
            let mut u = || {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
            };
            let (a, b) = (u(), u());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        };
        let m: Vec<f64> = (0..4000).map(|_| (2.0 * normal() + 0.5).exp()).collect();
        let n: Vec<f64> = (0..4000).map(|_| (2.0 * normal()).exp()).collect();
        let h = histogram_auto(&m, &n).unwrap();
        assert_eq!(h.scale, BinScale::Log);
        let bins = h.edges.len() - 1;
        assert!((AUTO_MIN_BINS..=AUTO_MAX_BINS).contains(&bins), "{bins}");
        // Every score is counted once: in a bin, below or above.
        let counted: u64 = h.members.iter().chain(&h.nonmembers).sum::<u64>() + h.below + h.above;
        assert_eq!(counted, 8000);
        // 0.1 % at each end lie outside (quantiles of 8000 pooled scores).
        assert!(h.below <= 8 && h.above <= 8, "{} {}", h.below, h.above);
        // Half of all scores lie below the pooled median e^0.25: with
        // equal-width linear bins over [min, max] they would all be in the
        // first bin; here about half of the bins hold them.
        let median_bin = h.edges.partition_point(|&e| e <= 0.25_f64.exp());
        assert!(median_bin >= bins / 3, "{median_bin} of {bins}");
        let svg = h.to_svg("heavy", "score");
        well_formed(&svg);
        assert!(svg.contains("ln(score)") && svg.contains("not shown, outside"));
        // The same scores negated (a −loss score): ln(−score).
        let neg = |v: &[f64]| v.iter().map(|x| -x).collect::<Vec<f64>>();
        let h = histogram_auto(&neg(&n), &neg(&m)).unwrap();
        assert_eq!(h.scale, BinScale::NegLog);
        // Symmetric heavy tails (a Cauchy-like t): asinh.
        let t: Vec<f64> = m
            .iter()
            .zip(&n)
            .map(|(a, b)| a.ln() / (b.ln().abs() + 0.01))
            .collect();
        let h = histogram_auto(&t, &t).unwrap();
        assert!(matches!(h.scale, BinScale::Asinh { .. }), "{:?}", h.scale);
        well_formed(&h.to_svg("t", "score"));
    }

    #[test]
    fn auto_bins_stay_linear_for_normal_scores() {
        // 1000 evenly spread scores: uniform, not heavy-tailed. FD width
        // 2·IQR·N^(−1/3) = 2·(0.5)·1000^(−1/3)·range = 0.1·range → 10 bins.
        let m: Vec<f64> = (0..500).map(|i| f64::from(i) / 999.0).collect();
        let n: Vec<f64> = (500..1000).map(|i| f64::from(i) / 999.0).collect();
        let h = histogram_auto(&m, &n).unwrap();
        assert_eq!(h.scale, BinScale::Linear);
        assert_eq!(h.edges.len() - 1, 10);
        // All equal: one unit bin, as `histogram` does.
        let h = histogram_auto(&[3.0], &[3.0]).unwrap();
        assert_eq!(h.edges, vec![2.5, 3.5]);
        assert!(histogram_auto(&[f64::NAN], &[]).is_err());
    }

    #[test]
    fn tick_helpers() {
        // 1-2-5 steps: [0, 10] in ~5 → step 2; [0, 1] in ~6 → raw 0.1667 → 0.2.
        assert_eq!(
            ticks(0.0, 10.0, 5),
            (vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0], 2.0)
        );
        let (t, step) = ticks(0.0, 1.0, 6);
        assert_eq!(step, 0.2);
        assert_eq!(t.len(), 6);
        assert_eq!(fmt_tick(t[3], step), "0.6");
        assert_eq!(nice_ceil(9.2), 10.0);
        assert_eq!(nice_ceil(13.8), 14.0);
        assert_eq!(nice_ceil(2.0), 2.0);
        assert_eq!(fmt_value(f64::NAN), "n/a");
        assert_eq!(fmt_value(2.0e7), "2.000e7");
    }
}
