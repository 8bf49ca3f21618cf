//! Trade-off curves (type I error α = FPR on x, type II error β = FNR on y):
//! the (ε, δ) curve `f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}`
//! (Wasserman & Zhou 2010 Prop. 2.5, as on the f-DP slide of Karimireddy
//! 2025), the μ-GDP curve `G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)` (Cebere et al. 2024
//! Eq. (7)), and empirical error points with their Clopper–Pearson upper
//! bounds; as data and as SVG: the trade-off view on linear axes and the ROC
//! view (TPR = 1 − β against FPR) on log–log axes, the convention of Carlini
//! et al. 2022 ("Membership Inference Attacks From First Principles", §III-C),
//! where strong audits, which live at FPR ≪ 1, are not squashed into a
//! corner.
//!
//! The SVG is written by hand (as in [`crate::plots`]): the plots need
//! classes, hatching and text halos that the tests check, and the crate stays
//! free of plotting and font dependencies.

use std::fmt::Write as _;

use serde::Serialize;

use crate::gaussian::gdp_tradeoff;
use crate::region::ErrorPoint;

/// `f_{ε,δ}(α)`.
pub fn eps_delta_tradeoff(epsilon: f64, delta: f64, alpha: f64) -> f64 {
    let e = epsilon.exp();
    (1.0 - delta - e * alpha)
        .max((1.0 - delta - alpha) / e)
        .max(0.0)
}

/// A named curve sampled at `(α, β)` points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve {
    /// Legend label.
    pub label: String,
    /// Points `(α, β)`, α increasing.
    pub points: Vec<(f64, f64)>,
}

/// α grid: uniform on [0, 1] and logarithmic on [1e-9, 1e-1] (where strong
/// audits live; the ROC view needs it).
fn alpha_grid(n: usize) -> Vec<f64> {
    let n = n.max(4);
    let mut a: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64).collect();
    a.extend((1..2 * n).map(|i| 10f64.powf(-9.0 + 8.0 * i as f64 / (2 * n) as f64)));
    a.sort_by(f64::total_cmp);
    a.dedup();
    a
}

/// The (ε, δ) trade-off curve sampled on about `3n` points.
pub fn eps_delta_curve(epsilon: f64, delta: f64, n: usize, label: &str) -> Curve {
    let points = alpha_grid(n)
        .into_iter()
        .map(|a| (a, eps_delta_tradeoff(epsilon, delta, a)))
        .collect();
    Curve {
        label: label.to_string(),
        points,
    }
}

/// The μ-GDP trade-off curve sampled on about `3n` points.
pub fn gdp_curve(mu: f64, n: usize, label: &str) -> Curve {
    let points = alpha_grid(n)
        .into_iter()
        .map(|a| (a, gdp_tradeoff(mu, a)))
        .collect();
    Curve {
        label: label.to_string(),
        points,
    }
}

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

pub(crate) const COLORS: [&str; 4] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"];
pub(crate) const WARNING_COLOR: &str = "#c00000";
const POINT_COLOR: &str = "#d62728";

/// `<svg>` opening, white background and centred title.
pub(crate) fn open_svg(s: &mut String, w: f64, h: f64, title: &str) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="14">{}</text>"#,
        w / 2.0,
        escape(title)
    );
}

/// A grey centred line under the title.
pub(crate) fn subtitle(s: &mut String, w: f64, y: f64, text: &str) {
    if !text.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{y}" text-anchor="middle" fill="#555">{}</text>"##,
            w / 2.0,
            escape(text)
        );
    }
}

/// A red bold centred line: the plot's statement is not valid as stated.
pub(crate) fn warning_line(s: &mut String, w: f64, y: f64, text: &str) {
    let _ = writeln!(
        s,
        r#"<text class="warning" x="{}" y="{y}" text-anchor="middle" font-weight="bold" fill="{WARNING_COLOR}">{}</text>"#,
        w / 2.0,
        escape(text)
    );
}

/// Escapes `&`, `<` and `>` for SVG/XML text content.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A value → pixel map, linear or base-10 logarithmic (values clamped to
/// the axis; non-finite values go to its start).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub p0: f64,
    pub p1: f64,
}

impl Axis {
    pub fn px(&self, v: f64) -> f64 {
        let t = if self.log {
            let v = v.max(self.lo);
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        let t = if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.p0 + t * (self.p1 - self.p0)
    }
}

/// `10^k` as `1`, `10`, `0.1` for |k| ≤ 1, else `10⁻³`-style.
pub(crate) fn pow10_label(k: i32) -> String {
    match k {
        0 => "1".into(),
        1 => "10".into(),
        -1 => "0.1".into(),
        _ => {
            let sup: String = k
                .to_string()
                .chars()
                .map(|c| match c {
                    '-' => '⁻',
                    '0' => '⁰',
                    '1' => '¹',
                    '2' => '²',
                    '3' => '³',
                    '4' => '⁴',
                    '5' => '⁵',
                    '6' => '⁶',
                    '7' => '⁷',
                    '8' => '⁸',
                    _ => '⁹',
                })
                .collect();
            format!("10{sup}")
        }
    }
}

/// Frame, grid and tick labels of a plot area.
fn frame(s: &mut String, x: &Axis, y: &Axis, xticks: &[(f64, String)], yticks: &[(f64, String)]) {
    let (left, right, top, bottom) = (x.p0, x.p1, y.p1, y.p0);
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        right - left,
        bottom - top
    );
    for (v, label) in xticks {
        let px = x.px(*v);
        let _ = writeln!(
            s,
            r##"<line x1="{px:.1}" y1="{top:.1}" x2="{px:.1}" y2="{bottom:.1}" stroke="#ddd"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            bottom + 16.0
        );
    }
    for (v, label) in yticks {
        let py = y.px(*v);
        let _ = writeln!(
            s,
            r##"<line x1="{left:.1}" y1="{py:.1}" x2="{right:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"##,
            left - 6.0,
            py + 4.0
        );
    }
}

/// Axis titles.
fn axis_titles(s: &mut String, w: f64, h: f64, x: &Axis, y: &Axis, xt: &str, yt: &str) {
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
        (x.p0 + x.p1) / 2.0,
        h - 12.0,
        escape(xt)
    );
    let my = (y.p0 + y.p1) / 2.0;
    let _ = writeln!(
        s,
        r#"<text x="16" y="{my:.1}" text-anchor="middle" transform="rotate(-90 16 {my:.1})">{}</text>"#,
        escape(yt)
    );
    let _ = w;
}

/// One legend entry: a line, a dot, a hollow circle or a diamond.
#[derive(Debug, Clone, Copy)]
enum Mark<'a> {
    Line(&'a str),
    Dot,
    Hollow,
    Diamond,
}

/// Width of a legend box for `entries` (about 7 px per character at 12 px).
fn legend_width(entries: &[(Mark<'_>, String)]) -> f64 {
    44.0 + 7.0
        * entries
            .iter()
            .map(|(_, l)| l.chars().count())
            .max()
            .unwrap_or(0) as f64
}

/// A legend box with `entries`, its top-right corner at (`right`, `y`).
fn legend(s: &mut String, right: f64, y: f64, entries: &[(Mark<'_>, String)]) {
    let width = legend_width(entries);
    let x = right - width;
    let _ = writeln!(
        s,
        r##"<rect class="legend" x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{:.1}" fill="white" fill-opacity="0.85" stroke="#999"/>"##,
        8.0 + 18.0 * entries.len() as f64
    );
    for (i, (mark, label)) in entries.iter().enumerate() {
        let ly = y + 16.0 + 18.0 * i as f64;
        let mx = x + 18.0;
        match mark {
            Mark::Line(color) => {
                let _ = writeln!(
                    s,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"/>"#,
                    mx - 10.0,
                    ly - 4.0,
                    mx + 10.0,
                    ly - 4.0
                );
            }
            Mark::Dot => {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{mx:.1}" cy="{:.1}" r="2.5" fill="black"/>"#,
                    ly - 4.0
                );
            }
            Mark::Hollow => {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{mx:.1}" cy="{:.1}" r="3" fill="none" stroke="{POINT_COLOR}"/>"#,
                    ly - 4.0
                );
            }
            Mark::Diamond => diamond(s, mx, ly - 4.0, 6.0),
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{ly:.1}">{}</text>"#,
            x + 34.0,
            escape(label)
        );
    }
}

/// The chosen-threshold marker: a black-edged gold diamond.
fn diamond(s: &mut String, cx: f64, cy: f64, r: f64) {
    let _ = writeln!(
        s,
        r#"<path class="chosen" d="M {cx:.2} {:.2} L {:.2} {cy:.2} L {cx:.2} {:.2} L {:.2} {cy:.2} Z" fill="gold" stroke="black" stroke-width="1.2"/>"#,
        cy - r,
        cx + r,
        cy + r,
        cx - r
    );
}

fn polyline(s: &mut String, color: &str, pts: impl Iterator<Item = (f64, f64)>) {
    let pts: Vec<String> = pts.map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
    if pts.len() >= 2 {
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
    }
}

impl TradeoffPlot {
    fn header(&self, s: &mut String, w: f64) -> f64 {
        subtitle(s, w, 42.0, &self.subtitle);
        match &self.warning {
            Some(text) => {
                warning_line(s, w, 60.0, text);
                82.0
            }
            None => 64.0,
        }
    }

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
        open_svg(&mut s, w, h, &self.title);
        let top = self.header(&mut s, w);
        let x = Axis {
            lo: 0.0,
            hi: 1.0,
            log: false,
            p0: 70.0,
            p1: w - 30.0,
        };
        let y = Axis {
            lo: 0.0,
            hi: 1.0,
            log: false,
            p0: h - 50.0,
            p1: top,
        };
        let ticks: Vec<(f64, String)> = (0..=10)
            .map(|i| (i as f64 / 10.0, format!("{:.1}", i as f64 / 10.0)))
            .collect();
        frame(&mut s, &x, &y, &ticks, &ticks);
        axis_titles(
            &mut s,
            w,
            h,
            &x,
            &y,
            "false-positive rate α (type I)",
            "false-negative rate β (type II)",
        );
        for (i, c) in self.curves.iter().enumerate() {
            polyline(
                &mut s,
                COLORS[i % COLORS.len()],
                c.points.iter().map(|&(a, b)| (x.px(a), y.px(b))),
            );
        }
        for p in &self.points {
            point_pair(
                &mut s,
                (x.px(p.fpr), y.px(p.fnr)),
                (x.px(p.fpr_upper), y.px(p.fnr_upper)),
            );
        }
        if let Some(c) = &self.chosen {
            let _ = writeln!(
                s,
                r#"<line x1="{:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}" stroke="black" stroke-width="1.2"/>"#,
                x.px(c.fpr),
                y.px(c.fnr),
                x.px(c.fpr_upper),
                y.px(c.fnr_upper)
            );
            diamond(&mut s, x.px(c.fpr_upper), y.px(c.fnr_upper), 7.0);
        }
        // The region above the anti-diagonal is empty: the legend goes there.
        legend(&mut s, x.p1 - 8.0, top + 10.0, &self.legend_entries());
        s.push_str("</svg>\n");
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
        open_svg(&mut s, w, h, &format!("{} ({what})", self.title));
        let top = self.header(&mut s, w);
        let floor_pow = |v: f64| {
            if v.is_finite() && v > 0.0 {
                v.log10().floor().clamp(-12.0, -1.0) as i32
            } else {
                -6
            }
        };
        let (kx, ky) = (floor_pow(min_fpr), floor_pow(min_tpr));
        let x = Axis {
            lo: 10f64.powi(kx),
            hi: 1.0,
            log: true,
            p0: 70.0,
            p1: w - 30.0,
        };
        let y = Axis {
            lo: 10f64.powi(ky),
            hi: 1.0,
            log: true,
            p0: h - 50.0,
            p1: top,
        };
        let ticks = |k0: i32| -> Vec<(f64, String)> {
            (k0..=0).map(|k| (10f64.powi(k), pow10_label(k))).collect()
        };
        frame(&mut s, &x, &y, &ticks(kx), &ticks(ky));
        let (xt, yt) = if mirror {
            (
                "false-negative rate (FNR) of the test “non-member iff score ≤ τ”",
                "true-negative rate (TNR)",
            )
        } else {
            ("false-positive rate (FPR)", "true-positive rate (TPR)")
        };
        axis_titles(&mut s, w, h, &x, &y, xt, yt);
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#888" stroke-dasharray="4 4"/>"##,
            x.px(x.lo.max(y.lo)),
            y.px(x.lo.max(y.lo)),
            x.px(1.0),
            y.px(1.0)
        );
        for (i, c) in self.curves.iter().enumerate() {
            polyline(
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
            point_pair(
                &mut s,
                at(view(p.fpr, p.fnr)),
                at(view(p.fpr_upper, p.fnr_upper)),
            );
        }
        if let Some(c) = &self.chosen {
            let (x0, y0) = at(view(c.fpr, c.fnr));
            let (x1, y1) = at(view(c.fpr_upper, c.fnr_upper));
            let _ = writeln!(
                s,
                r#"<line x1="{x0:.2}" y1="{y0:.2}" x2="{x1:.2}" y2="{y1:.2}" stroke="black" stroke-width="1.2"/>"#
            );
            diamond(&mut s, x1, y1, 7.0);
        }
        let mut entries = self.legend_entries();
        entries.push((Mark::Line("#888"), "chance, dashed".into()));
        // Below the chance line (high FPR, low TPR) is empty: legend there.
        let lh = 8.0 + 18.0 * entries.len() as f64;
        legend(&mut s, x.p1 - 8.0, y.p0 - lh - 10.0, &entries);
        s.push_str("</svg>\n");
        s
    }
}

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
        open_svg(&mut s, w, h, &self.title);
        subtitle(&mut s, w, 42.0, &self.subtitle);
        let top = match &self.warning {
            Some(text) => {
                warning_line(&mut s, w, 60.0, text);
                82.0
            }
            None => 64.0,
        };
        let m = self.canaries.max(2) as f64;
        let x = Axis {
            lo: 1.0,
            hi: m,
            log: true,
            p0: 70.0,
            p1: w - 30.0,
        };
        let frac = |(r, v): (u64, u64)| if r == 0 { 0.5 } else { v as f64 / r as f64 };
        let low = self
            .observed
            .iter()
            .map(|&p| frac(p))
            .fold(0.45_f64, f64::min)
            .max(0.0);
        let y_lo = (low * 10.0).floor() / 10.0;
        let y = Axis {
            lo: y_lo,
            hi: 1.0,
            log: false,
            p0: h - 50.0,
            p1: top,
        };
        let xt: Vec<(f64, String)> = (0..=x.hi.log10().floor() as i32)
            .map(|k| (10f64.powi(k), pow10_label(k)))
            .collect();
        let steps = ((1.0 - y_lo) * 10.0).round() as i32;
        let yt: Vec<(f64, String)> = (0..=steps)
            .map(|i| {
                let v = y_lo + i as f64 / 10.0;
                (v, format!("{v:.1}"))
            })
            .collect();
        frame(&mut s, &x, &y, &xt, &yt);
        axis_titles(
            &mut s,
            w,
            h,
            &x,
            &y,
            "guesses r (most confident first)",
            "fraction of guesses correct, v/r",
        );
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#888" stroke-dasharray="4 4"/>"##,
            x.p0,
            y.px(0.5),
            x.p1,
            y.px(0.5)
        );
        polyline(
            &mut s,
            POINT_COLOR,
            self.needed
                .iter()
                .filter(|p| p.0 > 0)
                .map(|&p| (x.px(p.0 as f64), y.px(frac(p)))),
        );
        polyline(
            &mut s,
            "black",
            self.observed
                .iter()
                .filter(|p| p.0 > 0)
                .map(|&p| (x.px(p.0 as f64), y.px(frac(p)))),
        );
        diamond(
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
        let lh = 8.0 + 18.0 * entries.len() as f64;
        legend(&mut s, x.p1 - 8.0, y.p0 - lh - 10.0, &entries);
        s.push_str("</svg>\n");
        s
    }
}

/// An empirical point (black dot) joined to its upper-bound corner (hollow red).
fn point_pair(s: &mut String, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) {
    let _ = writeln!(
        s,
        r#"<line x1="{x0:.2}" y1="{y0:.2}" x2="{x1:.2}" y2="{y1:.2}" stroke="{POINT_COLOR}" stroke-width="0.8"/>"#
    );
    let _ = writeln!(
        s,
        r#"<circle cx="{x1:.2}" cy="{y1:.2}" r="2.5" fill="none" stroke="{POINT_COLOR}"/>"#
    );
    let _ = writeln!(
        s,
        r#"<circle cx="{x0:.2}" cy="{y0:.2}" r="2" fill="black"/>"#
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eps_delta_curve_values() {
        // Karimireddy 2025 (privacy auditing slides): f_{0.21, 1e-5}(0.95078)
        // = 0.03988885074, by hand from Prop. 2.5.
        assert!((eps_delta_tradeoff(0.21, 1e-5, 0.95078) - 0.039_888_850_74).abs() < 1e-10);
        // and f_{0.21,1e-5}(0.95509) = (1 − 1e-5 − 0.95509)/e^0.21 = 0.036395.
        assert!((eps_delta_tradeoff(0.21, 1e-5, 0.95509) - 0.036_395).abs() < 5e-7);
        // f(0) = 1 − δ, f(1) = 0.
        assert!((eps_delta_tradeoff(1.0, 1e-5, 0.0) - (1.0 - 1e-5)).abs() < 1e-15);
        assert_eq!(eps_delta_tradeoff(1.0, 1e-5, 1.0), 0.0);
    }

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

    fn well_formed(svg: &str) {
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for bad in ["NaN", "inf"] {
            assert!(!svg.contains(bad), "`{bad}` in {svg}");
        }
    }

    #[test]
    fn tradeoff_svg_marks_the_threshold_and_the_warning() {
        let svg = plot(None).to_svg();
        well_formed(&svg);
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
        well_formed(&svg);
        assert!(svg.contains("(ROC, log–log)"));
        // FPR axis: 0.5/2000 = 2.5e-4 → from 10⁻⁴; TPR axis: 0.5/100 → 10⁻³.
        assert!(svg.contains(">10⁻⁴</text>") && !svg.contains(">10⁻⁵</text>"));
        assert!(svg.contains(">10⁻³</text>") && svg.contains(">1</text>"));
        assert!(svg.contains("chance, dashed") && svg.contains("true-positive rate"));
        // The point at FPR 0 is drawn on the axis (x = 70), not dropped.
        assert!(svg.contains(r#"cx="70.00""#), "{svg}");
        assert_eq!(pow10_label(-12), "10⁻¹²");
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
        well_formed(&svg);
        assert!(svg.contains("true-negative rate") && svg.contains("non-member iff score ≤ τ"));
        assert!(svg.contains("mirrored ROC"));
        assert!(svg.contains(">10⁻³</text>") && svg.contains(">10⁻⁴</text>"));
    }

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
        well_formed(&svg);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("90 of 100 correct") && svg.contains("needed to certify"));
        // Guesses on a log axis up to 10³.
        assert!(svg.contains(">10³</text>"));
    }
}
