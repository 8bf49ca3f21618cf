//! The one-run plot: correct guesses along the ranking of the canaries.

use serde::Serialize;

use crate::figures::svg::{self, Axis, Mark, POINT_COLOR};

/// The one-run plot: along the ranking of the canaries, the fraction of
/// correct guesses against the number of guesses, with the fraction needed
/// to certify the reported bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneRunPlot {
    /// Title line.
    pub title: String,
    /// Which canaries (e.g. "evaluation half, seed 3: m = 500 canaries").
    pub subtitle: String,
    /// Drawn in red under the title when the bound is not valid as stated.
    pub warning: Option<String>,
    /// Canaries `m` of the bounded set.
    pub canaries: u64,
    /// `(r, v)`: `v` correct of the first `r` guesses, guessing from both
    /// ends of the ranking in the chosen k+ : k− proportion.
    pub observed: Vec<(u64, u64)>,
    /// `(r, v)`: the fewest correct of `r` guesses that certify the reported
    /// bound at the level it was tested at (empty when the bound is 0).
    pub needed: Vec<(u64, u64)>,
    /// Label of the `needed` curve.
    pub needed_label: String,
    /// The guesses the bound was computed from: `(r, v)`.
    pub chosen: (u64, u64),
}

impl OneRunPlot {
    /// Renders the plot: guesses `r` on a logarithmic axis from 1 to `m`,
    /// the fraction `v/r` of correct guesses on a linear one; the chance
    /// level ½ dashed; the chosen guesses as a diamond.
    pub fn to_svg(&self) -> String {
        let (w, h) = (660.0, 560.0);
        let mut s = String::new();
        svg::open(&mut s, w, h, &self.title);
        let top = svg::heading(&mut s, w, &self.subtitle, self.warning.as_deref());
        let m = self.canaries.max(2) as f64;
        let x = Axis::log(1.0, m, 70.0, w - 30.0);
        let frac = |(r, v): (u64, u64)| if r == 0 { 0.5 } else { v as f64 / r as f64 };
        let low = self
            .observed
            .iter()
            .map(|&p| frac(p))
            .fold(0.45_f64, f64::min)
            .max(0.0);
        let y_lo = (low * 10.0).floor() / 10.0;
        let y = Axis::linear(y_lo, 1.0, h - 50.0, top);
        let xt = svg::decade_ticks(0, x.hi.log10().floor() as i32);
        let steps = ((1.0 - y_lo) * 10.0).round() as i32;
        let yt: Vec<(f64, String)> = (0..=steps)
            .map(|i| {
                let v = y_lo + i as f64 / 10.0;
                (v, format!("{v:.1}"))
            })
            .collect();
        svg::frame(&mut s, &x, &y, &xt, &yt);
        svg::axis_titles(
            &mut s,
            h,
            &x,
            &y,
            "guesses r (most confident first)",
            "fraction of guesses correct, v/r",
        );
        svg::line(
            &mut s,
            (x.p0, y.px(0.5)),
            (x.p1, y.px(0.5)),
            "#888",
            Some("4 4"),
        );
        svg::polyline(
            &mut s,
            POINT_COLOR,
            self.needed
                .iter()
                .filter(|p| p.0 > 0)
                .map(|&p| (x.px(p.0 as f64), y.px(frac(p)))),
        );
        svg::polyline(
            &mut s,
            "black",
            self.observed
                .iter()
                .filter(|p| p.0 > 0)
                .map(|&p| (x.px(p.0 as f64), y.px(frac(p)))),
        );
        svg::diamond(
            &mut s,
            x.px(self.chosen.0.max(1) as f64),
            y.px(frac(self.chosen)),
            7.0,
        );
        let mut entries = vec![(
            Mark::Line("black"),
            "observed: correct / guesses".to_string(),
        )];
        if !self.needed.is_empty() {
            entries.push((Mark::Line(POINT_COLOR), self.needed_label.clone()));
        }
        entries.push((
            Mark::Diamond,
            format!(
                "guesses of the bound: {} of {} correct",
                self.chosen.1, self.chosen.0
            ),
        ));
        entries.push((Mark::Line("#888"), "chance (½), dashed".into()));
        svg::legend_bottom_right(&mut s, &x, &y, &entries);
        svg::close(&mut s);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_svg_structure() {
        let p = OneRunPlot {
            title: "one-run".into(),
            subtitle: "m = 1000".into(),
            warning: None,
            canaries: 1000,
            observed: vec![(1, 1), (10, 10), (100, 90), (1000, 600)],
            needed: vec![(10, 10), (100, 80), (1000, 560)],
            needed_label: "needed to certify ε ≥ 1".into(),
            chosen: (100, 90),
        };
        let svg = p.to_svg();
        crate::figures::svg::assert_well_formed(&svg);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("90 of 100 correct") && svg.contains("needed to certify"));
        // Guesses on a log axis up to 10³.
        assert!(svg.contains(">10³</text>"));
    }
}
