//! The trade-off view (FPR against FNR, linear) and the ROC view (log–log)
//! of a threshold audit.

use serde::Serialize;

use super::Curve;
use crate::figures::svg::{self, Axis, Mark, COLORS};
use crate::region::ErrorPoint;

/// Everything a trade-off plot shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TradeoffPlot {
    /// Title line.
    pub title: String,
    /// Second line: which data the points are (e.g. "evaluation half, seed
    /// 3: 512 members, 488 non-members").
    pub subtitle: String,
    /// Drawn in red under the title when the bound is not valid as stated.
    pub warning: Option<String>,
    /// Curves (claimed (ε,δ), the lower bound, ...).
    pub curves: Vec<Curve>,
    /// Empirical error points with upper bounds.
    pub points: Vec<ErrorPoint>,
    /// The threshold the bound was computed at, with its bounds.
    pub chosen: Option<ErrorPoint>,
    /// Member scores behind the points (sets the ROC view's TPR axis).
    pub members: u64,
    /// Non-member scores behind the points (sets the ROC view's FPR axis).
    pub nonmembers: u64,
}

impl TradeoffPlot {
    fn legend_entries(&self) -> Vec<(Mark<'static>, String)> {
        let mut entries: Vec<(Mark<'static>, String)> = self
            .curves
            .iter()
            .enumerate()
            .map(|(i, c)| (Mark::Line(COLORS[i % COLORS.len()]), c.label.clone()))
            .collect();
        entries.push((Mark::Dot, "empirical error rates".into()));
        entries.push((Mark::Hollow, "their Clopper–Pearson upper bounds".into()));
        if self.chosen.is_some() {
            entries.push((Mark::Diamond, "threshold of the bound".into()));
        }
        entries
    }

    /// Renders the trade-off view: FPR (α) against FNR (β) on `[0, 1]²`,
    /// one polyline per curve, empirical points as black dots joined to
    /// their upper-bound corner (hollow red), the threshold of the bound as a
    /// diamond at its bound corner, and the warning (if any) in red.
    pub fn to_svg(&self) -> String {
        let (w, h) = (660.0, 620.0);
        let mut s = String::new();
        svg::open(&mut s, w, h, &self.title);
        let top = svg::heading(&mut s, w, &self.subtitle, self.warning.as_deref());
        let x = Axis::linear(0.0, 1.0, 70.0, w - 30.0);
        let y = Axis::linear(0.0, 1.0, h - 50.0, top);
        let ticks: Vec<(f64, String)> = (0..=10)
            .map(|i| (i as f64 / 10.0, format!("{:.1}", i as f64 / 10.0)))
            .collect();
        svg::frame(&mut s, &x, &y, &ticks, &ticks);
        svg::axis_titles(
            &mut s,
            h,
            &x,
            &y,
            "false-positive rate α (type I)",
            "false-negative rate β (type II)",
        );
        for (i, c) in self.curves.iter().enumerate() {
            svg::polyline(
                &mut s,
                COLORS[i % COLORS.len()],
                c.points.iter().map(|&(a, b)| (x.px(a), y.px(b))),
            );
        }
        for p in &self.points {
            svg::point_pair(
                &mut s,
                (x.px(p.fpr), y.px(p.fnr)),
                (x.px(p.fpr_upper), y.px(p.fnr_upper)),
            );
        }
        if let Some(c) = &self.chosen {
            svg::chosen_marker(
                &mut s,
                (x.px(c.fpr), y.px(c.fnr)),
                (x.px(c.fpr_upper), y.px(c.fnr_upper)),
            );
        }
        // The region above the anti-diagonal is empty: the legend goes there.
        svg::legend(&mut s, x.p1 - 8.0, top + 10.0, &self.legend_entries());
        svg::close(&mut s);
        s
    }

    /// Renders the ROC view on log–log axes: TPR = 1 − β against FPR = α,
    /// each from the power of ten below half an observation (`0.5/n₀`,
    /// `0.5/n₁`) to 1. Rates of 0 are drawn on the axis. The chance line
    /// TPR = FPR is dashed; the threshold of the bound is a diamond at its
    /// bounded corner (FPR̄, 1 − FNR̄).
    ///
    /// When the bound's threshold is on the low-FNR side (FNR̄ < FPR̄: the
    /// (ε, δ) branch `ln((1 − FPR̄ − δ)/FNR̄)`), which the ROC would put in
    /// its top-right corner, the view is mirrored: the ROC of the test
    /// "non-member iff score ≤ τ", TNR = 1 − α against FNR = β, the same
    /// convention for the other class (the curves are symmetric).
    pub fn to_roc_svg(&self) -> String {
        let mirror = self.chosen.is_some_and(|c| c.fnr_upper < c.fpr_upper);
        // (x, y) of an (α, β) pair in this view.
        let view = |a: f64, b: f64| if mirror { (b, 1.0 - a) } else { (a, 1.0 - b) };
        let (nx, ny) = if mirror {
            (self.members, self.nonmembers)
        } else {
            (self.nonmembers, self.members)
        };
        let min_fpr = 0.5 / nx.max(1) as f64;
        let min_tpr = 0.5 / ny.max(1) as f64;
        let (w, h) = (660.0, 620.0);
        let mut s = String::new();
        let what = if mirror {
            "mirrored ROC, log–log"
        } else {
            "ROC, log–log"
        };
        svg::open(&mut s, w, h, &format!("{} ({what})", self.title));
        let top = svg::heading(&mut s, w, &self.subtitle, self.warning.as_deref());
        let floor_pow = |v: f64| {
            if v.is_finite() && v > 0.0 {
                v.log10().floor().clamp(-12.0, -1.0) as i32
            } else {
                -6
            }
        };
        let (kx, ky) = (floor_pow(min_fpr), floor_pow(min_tpr));
        let x = Axis::log(10f64.powi(kx), 1.0, 70.0, w - 30.0);
        let y = Axis::log(10f64.powi(ky), 1.0, h - 50.0, top);
        svg::frame(
            &mut s,
            &x,
            &y,
            &svg::decade_ticks(kx, 0),
            &svg::decade_ticks(ky, 0),
        );
        let (xt, yt) = if mirror {
            (
                "false-negative rate (FNR) of the test “non-member iff score ≤ τ”",
                "true-negative rate (TNR)",
            )
        } else {
            ("false-positive rate (FPR)", "true-positive rate (TPR)")
        };
        svg::axis_titles(&mut s, h, &x, &y, xt, yt);
        let chance = x.lo.max(y.lo);
        svg::line(
            &mut s,
            (x.px(chance), y.px(chance)),
            (x.px(1.0), y.px(1.0)),
            "#888",
            Some("4 4"),
        );
        for (i, c) in self.curves.iter().enumerate() {
            svg::polyline(
                &mut s,
                COLORS[i % COLORS.len()],
                c.points
                    .iter()
                    .map(|&(a, b)| view(a, b))
                    .filter(|&(vx, vy)| vx >= x.lo && vy >= y.lo)
                    .map(|(vx, vy)| (x.px(vx), y.px(vy))),
            );
        }
        let at = |(vx, vy): (f64, f64)| (x.px(vx), y.px(vy));
        for p in &self.points {
            svg::point_pair(
                &mut s,
                at(view(p.fpr, p.fnr)),
                at(view(p.fpr_upper, p.fnr_upper)),
            );
        }
        if let Some(c) = &self.chosen {
            svg::chosen_marker(
                &mut s,
                at(view(c.fpr, c.fnr)),
                at(view(c.fpr_upper, c.fnr_upper)),
            );
        }
        let mut entries = self.legend_entries();
        entries.push((Mark::Line("#888"), "chance, dashed".into()));
        // Below the chance line (high FPR, low TPR) is empty: legend there.
        svg::legend_bottom_right(&mut s, &x, &y, &entries);
        svg::close(&mut s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::{eps_delta_curve, gdp_curve};
    use super::*;

    fn plot(warning: Option<String>) -> TradeoffPlot {
        let p = ErrorPoint {
            threshold: 0.0,
            fpr: 0.1,
            fnr: 0.5,
            fpr_upper: 0.12,
            fnr_upper: 0.55,
        };
        TradeoffPlot {
            title: "a < b & c".into(),
            subtitle: "evaluation half".into(),
            warning,
            curves: vec![
                eps_delta_curve(1.0, 1e-5, 50, "(1, 1e-5)-DP"),
                gdp_curve(1.0, 50, "1-GDP"),
            ],
            points: vec![
                p,
                ErrorPoint {
                    fpr: 0.0,
                    fpr_upper: 0.01,
                    ..p
                },
            ],
            chosen: Some(p),
            members: 100,
            nonmembers: 2000,
        }
    }

    #[test]
    fn tradeoff_svg_marks_the_threshold_and_the_warning() {
        let svg = plot(None).to_svg();
        crate::figures::svg::assert_well_formed(&svg);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a &lt; b &amp; c") && svg.contains("evaluation half"));
        // One diamond on the plot, one in the legend.
        assert_eq!(svg.matches(r#"class="chosen""#).count(), 2);
        assert!(svg.contains("threshold of the bound"));
        assert!(!svg.contains(r#"class="warning""#));
        let svg = plot(Some("NOT VALID at the stated confidence".into())).to_svg();
        assert!(svg.contains(r#"class="warning""#) && svg.contains("NOT VALID"));
    }

    #[test]
    fn roc_svg_is_log_log_down_to_half_an_observation() {
        let svg = plot(None).to_roc_svg();
        crate::figures::svg::assert_well_formed(&svg);
        assert!(svg.contains("(ROC, log–log)"));
        // FPR axis: 0.5/2000 = 2.5e-4 → from 10⁻⁴; TPR axis: 0.5/100 → 10⁻³.
        assert!(svg.contains(">10⁻⁴</text>") && !svg.contains(">10⁻⁵</text>"));
        assert!(svg.contains(">10⁻³</text>") && svg.contains(">1</text>"));
        assert!(svg.contains("chance, dashed") && svg.contains("true-positive rate"));
        // The point at FPR 0 is drawn on the axis (x = 70), not dropped.
        assert!(svg.contains(r#"cx="70.00""#), "{svg}");
        assert_eq!(svg::pow10_label(-12), "10⁻¹²");
        // A threshold on the low-FNR side: the mirrored ROC (TNR against FNR),
        // its FNR axis set by the 100 members: from 10⁻³.
        let mut p = plot(None);
        p.chosen = Some(ErrorPoint {
            threshold: -1.0,
            fpr: 0.8,
            fnr: 0.0,
            fpr_upper: 0.82,
            fnr_upper: 0.03,
        });
        let svg = p.to_roc_svg();
        crate::figures::svg::assert_well_formed(&svg);
        assert!(svg.contains("true-negative rate") && svg.contains("non-member iff score ≤ τ"));
        assert!(svg.contains("mirrored ROC"));
        assert!(svg.contains(">10⁻³</text>") && svg.contains(">10⁻⁴</text>"));
    }
}
