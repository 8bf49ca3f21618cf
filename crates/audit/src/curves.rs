//! Trade-off curves (type I error α = FPR on x, type II error β = FNR on y):
//! the (ε, δ) curve `f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}`
//! (Wasserman & Zhou via lecture 004 D.3 Prop 2.5), the μ-GDP curve
//! `G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)` (lecture 004 D.4), and empirical error points
//! with their Clopper–Pearson upper bounds; as data and as a hand-written SVG.

use std::fmt::Write as _;

use serde::Serialize;

use crate::normal::gdp_tradeoff;
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

/// α grid: dense near 0 (where audits live) and uniform elsewhere.
fn alpha_grid(n: usize) -> Vec<f64> {
    let n = n.max(4);
    let mut a: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64).collect();
    a.extend((1..n).map(|i| 10f64.powf(-6.0 + 5.0 * i as f64 / n as f64)));
    a.sort_by(f64::total_cmp);
    a.dedup();
    a
}

/// The (ε, δ) trade-off curve sampled on `n` points.
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

/// The μ-GDP trade-off curve sampled on `n` points.
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
    /// Curves (claimed (ε,δ), GDP, ...).
    pub curves: Vec<Curve>,
    /// Empirical error points with upper bounds.
    pub points: Vec<ErrorPoint>,
}

const COLORS: [&str; 4] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"];

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

/// Escapes `&`, `<` and `>` for SVG/XML text content.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl TradeoffPlot {
    /// Renders an SVG: axes `[0, 1]²`, one polyline per curve, empirical points
    /// as black dots, each joined to its upper-bound corner (hollow red).
    pub fn to_svg(&self) -> String {
        let (w, h, m) = (640.0, 560.0, 60.0);
        let (pw, ph) = (w - 2.0 * m, h - 2.0 * m - 20.0);
        let x = |a: f64| m + a.clamp(0.0, 1.0) * pw;
        let y = |b: f64| m + 20.0 + (1.0 - b.clamp(0.0, 1.0)) * ph;
        let mut s = String::new();
        open_svg(&mut s, w, h, &self.title);
        let _ = writeln!(
            s,
            r#"<rect x="{m}" y="{}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#,
            m + 20.0
        );
        for i in 0..=10 {
            let t = i as f64 / 10.0;
            let _ = writeln!(
                s,
                r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#ddd"/>"##,
                x(t),
                y(0.0),
                y(1.0)
            );
            let _ = writeln!(
                s,
                r##"<line x1="{1:.1}" y1="{0:.1}" x2="{2:.1}" y2="{0:.1}" stroke="#ddd"/>"##,
                y(t),
                x(0.0),
                x(1.0)
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t:.1}</text>"#,
                x(t),
                y(0.0) + 16.0
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{t:.1}</text>"#,
                x(0.0) - 6.0,
                y(t) + 4.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">false-positive rate α (type I)</text>"#,
            w / 2.0,
            h - 12.0
        );
        let _ = writeln!(
            s,
            r#"<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">false-negative rate β (type II)</text>"#,
            h / 2.0,
            h / 2.0
        );
        for (i, c) in self.curves.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let pts: Vec<String> = c
                .points
                .iter()
                .map(|&(a, b)| format!("{:.2},{:.2}", x(a), y(b)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                pts.join(" ")
            );
            let ly = m + 40.0 + 18.0 * i as f64;
            let _ = writeln!(
                s,
                r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"/>"#,
                w - m - 230.0,
                w - m - 205.0
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}">{}</text>"#,
                w - m - 200.0,
                ly + 4.0,
                escape(&c.label)
            );
        }
        for p in &self.points {
            let _ = writeln!(
                s,
                r##"<line x1="{:.2}" y1="{:.2}" x2="{:.2}" y2="{:.2}" stroke="#d62728" stroke-width="0.8"/>"##,
                x(p.fpr),
                y(p.fnr),
                x(p.fpr_upper),
                y(p.fnr_upper)
            );
            let _ = writeln!(
                s,
                r##"<circle cx="{:.2}" cy="{:.2}" r="2.5" fill="none" stroke="#d62728"/>"##,
                x(p.fpr_upper),
                y(p.fnr_upper)
            );
            let _ = writeln!(
                s,
                r#"<circle cx="{:.2}" cy="{:.2}" r="2" fill="black"/>"#,
                x(p.fpr),
                y(p.fnr)
            );
        }
        let ly = m + 40.0 + 18.0 * self.curves.len() as f64;
        let _ = writeln!(
            s,
            r#"<circle cx="{}" cy="{ly}" r="2" fill="black"/><text x="{}" y="{}">empirical (FPR, FNR)</text>"#,
            w - m - 218.0,
            w - m - 200.0,
            ly + 4.0
        );
        let ly = ly + 18.0;
        let _ = writeln!(
            s,
            r##"<circle cx="{}" cy="{ly}" r="2.5" fill="none" stroke="#d62728"/><text x="{}" y="{}">upper confidence bounds</text>"##,
            w - m - 218.0,
            w - m - 200.0,
            ly + 4.0
        );
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eps_delta_curve_values() {
        // Lecture 004 D.5 / spec D.6: f_{0.21, 1e-5}(0.95078) = 0.03988885074.
        assert!((eps_delta_tradeoff(0.21, 1e-5, 0.95078) - 0.039_888_850_74).abs() < 1e-10);
        // and f_{0.21,1e-5}(0.95509) = 0.036395.
        assert!((eps_delta_tradeoff(0.21, 1e-5, 0.95509) - 0.036_395).abs() < 5e-7);
        // f(0) = 1 − δ, f(1) = 0.
        assert!((eps_delta_tradeoff(1.0, 1e-5, 0.0) - (1.0 - 1e-5)).abs() < 1e-15);
        assert_eq!(eps_delta_tradeoff(1.0, 1e-5, 1.0), 0.0);
    }

    #[test]
    fn svg_is_well_formed() {
        let plot = TradeoffPlot {
            title: "a < b & c".into(),
            curves: vec![
                eps_delta_curve(1.0, 1e-5, 50, "(1, 1e-5)-DP"),
                gdp_curve(1.0, 50, "1-GDP"),
            ],
            points: vec![ErrorPoint {
                threshold: 0.0,
                fpr: 0.1,
                fnr: 0.5,
                fpr_upper: 0.12,
                fnr_upper: 0.55,
            }],
        };
        let svg = plot.to_svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a &lt; b &amp; c"));
        assert!(!svg.contains("NaN"));
    }
}
