//! [`epsilon_bars_svg`]: ε lower bounds against the accountant's upper bound.

use std::fmt::Write as _;

use super::MEMBER_COLOR;
use crate::figures::svg::{self, Axis};

/// Label of the accountant's ε line.
const UPPER_LABEL: &str = "ε upper (accountant)";
/// Suffix of the label of a bar whose bound is not valid at its confidence.
const INVALID_SUFFIX: &str = " (not valid at stated confidence)";
/// Colour of the accountant's ε line.
const UPPER_COLOR: &str = "#d62728";

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
fn bar_end(x: &Axis, lower: f64) -> f64 {
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
        svg::nice_ceil(largest * 1.15)
    } else {
        1.0
    };
    let x = Axis::linear(0.0, x_hi, left, right);
    let y = Axis::linear(0.0, 1.0, bottom, top);
    let mut s = String::new();
    svg::open(&mut s, w, h, title);
    let _ = writeln!(
        s,
        r##"<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#deebf7"/><line x1="0" y1="0" x2="0" y2="6" stroke="{MEMBER_COLOR}" stroke-width="1.5" stroke-opacity="0.6"/></pattern></defs>"##
    );
    svg::plot_frame(&mut s, &x, &y);
    svg::x_grid(&mut s, &x, &y, 0.0, x_hi);
    if bars.is_empty() {
        svg::centered_text(
            &mut s,
            w / 2.0,
            (top + bottom) / 2.0 + 4.0,
            "no ε lower bounds to show",
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
            svg::escape(&b.label),
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
                svg::fmt_value(u)
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
            svg::fmt_value(b.lower)
        );
    }
    // Under the middle of the figure (not of the plot area).
    svg::centered_text(&mut s, w / 2.0, h - 12.0, "ε");
    svg::close(&mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

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
        crate::figures::svg::assert_well_formed(&svg);
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
        crate::figures::svg::assert_well_formed(&svg);
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
        crate::figures::svg::assert_well_formed(&svg);
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
        crate::figures::svg::assert_well_formed(&svg);
        assert!(svg.contains("no ε lower bounds to show"));
        assert!(svg.contains("ε upper (accountant) = 1.000"));
    }
}
