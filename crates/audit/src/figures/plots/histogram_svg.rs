//! [`Histogram::to_svg`]: the two classes overlaid on common bins.

use std::fmt::Write as _;

use super::histogram::{BinScale, Histogram};
use super::MEMBER_COLOR;
use crate::figures::svg::{self, Axis};

/// Legend label of the member series.
const MEMBERS_LABEL: &str = "members (canary in)";
/// Legend label of the non-member series.
const NONMEMBERS_LABEL: &str = "non-members (canary out)";
const NONMEMBER_COLOR: &str = "#ff7f0e";

/// Tick values for a non-linear axis over `[lo, hi]` (score units): 0 and
/// ±10^k first, then ±2·10^k and ±5·10^k, each kept when the scale maps it
/// and it is at least 40 pixels from every tick already kept.
fn scaled_ticks(x: &Axis, scale: BinScale, lo: f64, hi: f64) -> Vec<f64> {
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

/// Grid lines and labels of a non-linear x axis.
fn scaled_grid(s: &mut String, x: &Axis, y: &Axis, scale: BinScale, lo: f64, hi: f64) {
    for t in scaled_ticks(x, scale, lo, hi) {
        svg::x_tick(s, x.px(scale.forward(t)), y, &svg::fmt_round(t));
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
        let ph = h - 2.0 * m - 20.0;
        let (top, bottom) = (m + 20.0, m + 20.0 + ph);
        let mut s = String::new();
        svg::open(&mut s, w, h, title);
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
        svg::subtitle(&mut s, w, 42.0, &notes.join("; "));
        // The plot area in pixels; the value ranges come from the bins.
        let area = |lo: f64, hi: f64| {
            (
                Axis::linear(lo, hi, m, w - m),
                Axis::linear(0.0, 1.0, bottom, top),
            )
        };
        let (frame_x, frame_y) = area(0.0, 1.0);
        svg::plot_frame(&mut s, &frame_x, &frame_y);
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
        let scale = self.scale;
        let (u_lo, u_hi) = (scale.forward(lo), scale.forward(hi));
        if bins.is_empty() || lo >= hi || !(u_lo.is_finite() && u_hi.is_finite() && u_lo < u_hi) {
            svg::centered_text(
                &mut s,
                w / 2.0,
                (top + bottom) / 2.0,
                "no finite scores to show",
            );
            svg::close(&mut s);
            return s;
        }
        let (x, _) = area(u_lo, u_hi);
        let max_count = bins
            .iter()
            .map(|&i| self.members[i].max(self.nonmembers[i]))
            .max()
            .unwrap_or(0)
            .max(1);
        // Counts are integers: a step below 1 would repeat tick labels.
        let y_hi = svg::nice_ceil(max_count as f64).max(1.0);
        let y = Axis::linear(0.0, y_hi, bottom, top);
        match scale {
            BinScale::Linear => svg::x_grid(&mut s, &x, &y, lo, hi),
            _ => scaled_grid(&mut s, &x, &y, scale, lo, hi),
        }
        let (yt, ystep) = svg::ticks(0.0, y_hi, 5);
        for t in yt.into_iter().filter(|t| t.fract() == 0.0) {
            svg::y_tick(&mut s, &x, y.px(t), &svg::fmt_tick(t, ystep.max(1.0)));
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
        svg::axis_titles(&mut s, h, &x, &y, x_label, "count");
        svg::close(&mut s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::histogram::histogram;
    use super::*;

    #[test]
    fn histogram_extreme_scores_do_not_overflow() {
        let h = histogram(&[-f64::MAX], &[f64::MAX], 2).unwrap();
        assert_eq!(h.edges, vec![-f64::MAX, 0.0, f64::MAX]);
        assert_eq!((h.members, h.nonmembers), (vec![1, 0], vec![0, 1]));
        crate::figures::svg::assert_well_formed(&h_svg(&Histogram {
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
    fn histogram_svg_structure() {
        // Same data as `histogram_hand_computed_counts`: non-empty bins are
        // 3 for members ([2, 1, 0, 2]) and 2 for non-members ([0, 1, 2, 0]).
        let h = histogram(&[0.0, 0.5, 1.0, 3.99, 4.0], &[2.0, 2.5, f64::NAN, 1.5], 4).unwrap();
        let svg = h.to_svg("scores <&> canary", "score (−loss)");
        crate::figures::svg::assert_well_formed(&svg);
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
            crate::figures::svg::assert_well_formed(&h_svg(&h));
        }
        // Degenerate-range histogram renders its single bin per class.
        let svg = h_svg(&histogram(&[7.0], &[7.0], 4).unwrap());
        crate::figures::svg::assert_well_formed(&svg);
        assert_eq!(svg.matches(r#"class="bar-members""#).count(), 1);
        assert_eq!(svg.matches(r#"class="bar-nonmembers""#).count(), 1);
    }
}
