//! Binning member and non-member scores on common bins.

use crate::error::{AuditError, Result};

/// Largest bin count [`histogram`] accepts (a plot wider than this has
/// bars narrower than a pixel).
pub const MAX_BINS: usize = 10_000;

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
    pub(super) fn describe(&self) -> Option<&'static str> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        crate::figures::svg::assert_well_formed(&svg);
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
        crate::figures::svg::assert_well_formed(&h.to_svg("t", "score"));
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
}
