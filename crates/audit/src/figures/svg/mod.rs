//! The one SVG writer behind every figure of the workspace: document,
//! value → pixel axes, frames with grid and ticks, polylines, markers,
//! legends, text escaping and number formatting.
//!
//! The SVG is written by hand, not with a plotting crate: the figures carry
//! CSS classes (`legend`, `chosen`, `warning`, `bar-*`), hatch patterns and
//! text halos that the tests check, and the crate stays free of plotting and
//! font dependencies. Every function appends to a `String`; a figure is
//! [`open`], its parts, then [`close`].
//!
//! Every number written is finite: [`Axis::px`] maps non-finite values to
//! the start of the axis, and the value formatters print `n/a` for them.

use std::fmt::Write as _;

mod format;

pub use format::{decade_ticks, fmt_round, fmt_tick, fmt_value, nice_ceil, pow10_label, ticks};

/// Series colours, in order (matplotlib's first four).
pub const COLORS: [&str; 4] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"];
/// Colour of a statement that is not valid as stated.
pub const WARNING_COLOR: &str = "#c00000";
/// Colour of error points and of the accountant's ε line.
pub const POINT_COLOR: &str = "#d62728";

/// `<svg>` opening, white background and centred title at `y = 24`.
pub fn open(s: &mut String, w: f64, h: f64, title: &str) {
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

/// `</svg>`: the end of a figure.
pub fn close(s: &mut String) {
    s.push_str("</svg>\n");
}

/// A grey centred line (a subtitle or a note); nothing when `text` is empty.
pub fn subtitle(s: &mut String, w: f64, y: f64, text: &str) {
    if !text.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{y}" text-anchor="middle" fill="#555">{}</text>"##,
            w / 2.0,
            escape(text)
        );
    }
}

/// The lines under the title: `subtitle` (grey, at `y = 42`) and, if any,
/// the `warning` (red, at `y = 60`). Returns the `y` where the plot area
/// can start.
pub fn heading(s: &mut String, w: f64, subtitle_text: &str, warning: Option<&str>) -> f64 {
    subtitle(s, w, 42.0, subtitle_text);
    match warning {
        Some(text) => {
            warning_line(s, w, 60.0, text);
            82.0
        }
        None => 64.0,
    }
}

/// A red bold centred line of class `warning`: the figure's statement is
/// not valid as stated.
pub fn warning_line(s: &mut String, w: f64, y: f64, text: &str) {
    let _ = writeln!(
        s,
        r#"<text class="warning" x="{}" y="{y}" text-anchor="middle" font-weight="bold" fill="{WARNING_COLOR}">{}</text>"#,
        w / 2.0,
        escape(text)
    );
}

/// A line of text centred at (`x`, `y`): e.g. the message in place of a plot
/// that has nothing to show.
pub fn centered_text(s: &mut String, x: f64, y: f64, text: &str) {
    let _ = writeln!(
        s,
        r#"<text x="{x}" y="{y}" text-anchor="middle">{}</text>"#,
        escape(text)
    );
}

/// A line of text at (`x`, `y`), anchored `start`, `middle` or `end`.
pub fn text(s: &mut String, x: f64, y: f64, anchor: &str, text: &str) {
    let _ = writeln!(
        s,
        r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}">{}</text>"#,
        escape(text)
    );
}

/// A black-edged filled circle (a marked point) of radius `r`.
pub fn dot(s: &mut String, cx: f64, cy: f64, r: f64, fill: &str) {
    let _ = writeln!(
        s,
        r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r}" fill="{fill}" stroke="black"/>"#
    );
}

/// Escapes `&`, `<`, `>` and `"` for SVG/XML text content and attribute
/// values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A value → pixel map, linear or base-10 logarithmic (values clamped to
/// the axis; non-finite values go to its start). `p1 < p0` for a y axis
/// (pixels grow downwards).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    /// Value at the start of the axis (> 0 when `log`).
    pub lo: f64,
    /// Value at its end.
    pub hi: f64,
    /// Base-10 logarithmic.
    pub log: bool,
    /// Pixel of `lo`.
    pub p0: f64,
    /// Pixel of `hi`.
    pub p1: f64,
}

impl Axis {
    /// A linear axis mapping `[lo, hi]` onto pixels `[p0, p1]`.
    pub fn linear(lo: f64, hi: f64, p0: f64, p1: f64) -> Self {
        Self {
            lo,
            hi,
            log: false,
            p0,
            p1,
        }
    }

    /// A base-10 logarithmic axis mapping `[lo, hi]` (`lo > 0`) onto `[p0, p1]`.
    pub fn log(lo: f64, hi: f64, p0: f64, p1: f64) -> Self {
        Self {
            lo,
            hi,
            log: true,
            p0,
            p1,
        }
    }

    /// The pixel of value `v`.
    pub fn px(&self, v: f64) -> f64 {
        let t = if self.log {
            let v = v.max(self.lo);
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            // Halves: `hi − lo` may overflow, `hi/2 − lo/2` cannot.
            (v * 0.5 - self.lo * 0.5) / (self.hi * 0.5 - self.lo * 0.5)
        };
        let t = if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.p0 + t * (self.p1 - self.p0)
    }
}

/// The frame of a plot area (`x.p0..x.p1` × `y.p1..y.p0`).
pub fn plot_frame(s: &mut String, x: &Axis, y: &Axis) {
    let (left, right, top, bottom) = (x.p0, x.p1, y.p1, y.p0);
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        right - left,
        bottom - top
    );
}

/// A vertical grid line at pixel `px` from `y.p0` to `y.p1` with its label
/// under the plot area.
pub fn x_tick(s: &mut String, px: f64, y: &Axis, label: &str) {
    let (top, bottom) = (y.p1, y.p0);
    let _ = writeln!(
        s,
        r##"<line x1="{px:.1}" y1="{bottom:.1}" x2="{px:.1}" y2="{top:.1}" stroke="#ddd"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
        bottom + 16.0
    );
}

/// A horizontal grid line at pixel `py` across `x` with its label left of
/// the plot area.
pub fn y_tick(s: &mut String, x: &Axis, py: f64, label: &str) {
    let (left, right) = (x.p0, x.p1);
    let _ = writeln!(
        s,
        r##"<line x1="{left:.1}" y1="{py:.1}" x2="{right:.1}" y2="{py:.1}" stroke="#ddd"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"#,
        left - 6.0,
        py + 4.0
    );
}

/// Frame, grid and tick labels of a plot area: `(value, label)` ticks.
pub fn frame(
    s: &mut String,
    x: &Axis,
    y: &Axis,
    xticks: &[(f64, String)],
    yticks: &[(f64, String)],
) {
    plot_frame(s, x, y);
    for (v, label) in xticks {
        x_tick(s, x.px(*v), y, label);
    }
    for (v, label) in yticks {
        y_tick(s, x, y.px(*v), label);
    }
}

/// Axis titles: `xt` centred under the x axis (at `h − 12`), `yt` rotated
/// left of the y axis.
pub fn axis_titles(s: &mut String, h: f64, x: &Axis, y: &Axis, xt: &str, yt: &str) {
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
}

/// A straight line in pixels, dashed when `dash` is given (e.g. `"4 4"`).
pub fn line(
    s: &mut String,
    (x0, y0): (f64, f64),
    (x1, y1): (f64, f64),
    color: &str,
    dash: Option<&str>,
) {
    let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
    let _ = writeln!(
        s,
        r#"<line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" stroke="{color}"{dash}/>"#
    );
}

/// A polyline of width 2 through pixel points; nothing for fewer than two.
pub fn polyline(s: &mut String, color: &str, pts: impl Iterator<Item = (f64, f64)>) {
    let pts: Vec<String> = pts.map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
    if pts.len() >= 2 {
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
    }
}

/// A marker of class `chosen` (the point a bound was computed at): a
/// black-edged gold diamond of half-width `r`.
pub fn diamond(s: &mut String, cx: f64, cy: f64, r: f64) {
    let _ = writeln!(
        s,
        r#"<path class="chosen" d="M {cx:.2} {:.2} L {:.2} {cy:.2} L {cx:.2} {:.2} L {:.2} {cy:.2} Z" fill="gold" stroke="black" stroke-width="1.2"/>"#,
        cy - r,
        cx + r,
        cy + r,
        cx - r
    );
}

/// The point a bound was computed at: a black line from the empirical point
/// `from` to its bounded corner `to`, and a [`diamond`] there.
pub fn chosen_marker(s: &mut String, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) {
    let _ = writeln!(
        s,
        r#"<line x1="{x0:.2}" y1="{y0:.2}" x2="{x1:.2}" y2="{y1:.2}" stroke="black" stroke-width="1.2"/>"#
    );
    diamond(s, x1, y1, 7.0);
}

/// An empirical point (black dot) joined to its upper-bound corner (hollow
/// red circle).
pub fn point_pair(s: &mut String, (x0, y0): (f64, f64), (x1, y1): (f64, f64)) {
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

/// The symbol of one legend entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mark<'a> {
    /// A line of this colour.
    Line(&'a str),
    /// A black dot (empirical points).
    Dot,
    /// A hollow red circle (their upper bounds).
    Hollow,
    /// The gold diamond of [`diamond`].
    Diamond,
}

/// Height of a legend box of `entries` rows.
pub fn legend_height(entries: usize) -> f64 {
    8.0 + 18.0 * entries as f64
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

/// A legend box of class `legend` with `entries`, its top-right corner at
/// (`right`, `y`).
pub fn legend(s: &mut String, right: f64, y: f64, entries: &[(Mark<'_>, String)]) {
    let width = legend_width(entries);
    let x = right - width;
    let _ = writeln!(
        s,
        r##"<rect class="legend" x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{:.1}" fill="white" fill-opacity="0.85" stroke="#999"/>"##,
        legend_height(entries.len())
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

/// A [`legend`] in the bottom-right corner of the plot area of `x`, `y`.
pub fn legend_bottom_right(s: &mut String, x: &Axis, y: &Axis, entries: &[(Mark<'_>, String)]) {
    let lh = legend_height(entries.len());
    legend(s, x.p1 - 8.0, y.p0 - lh - 10.0, entries);
}

/// Grid lines and labels of the ticks of [`ticks`] over `[lo, hi]` on a
/// linear x axis.
pub fn x_grid(s: &mut String, x: &Axis, y: &Axis, lo: f64, hi: f64) {
    let (xt, xstep) = ticks(lo, hi, 6);
    for t in xt {
        x_tick(s, x.px(t), y, &fmt_tick(t, xstep));
    }
}

/// Test helper: `svg` is one complete SVG document with no non-finite
/// number written into it.
#[cfg(test)]
pub(crate) fn assert_well_formed(svg: &str) {
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.ends_with("</svg>\n"), "{svg}");
    assert_eq!(svg.matches("<svg").count(), 1);
    for bad in ["NaN", "inf", "Inf"] {
        assert!(!svg.contains(bad), "`{bad}` in {svg}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_text_and_attributes() {
        assert_eq!(
            escape(r#"a < b & "c" > d"#),
            "a &lt; b &amp; &quot;c&quot; &gt; d"
        );
    }

    #[test]
    fn axes_clamp_and_map_non_finite_values_to_their_start() {
        let x = Axis::linear(0.0, 1.0, 70.0, 170.0);
        assert_eq!((x.px(0.5), x.px(2.0), x.px(f64::NAN)), (120.0, 170.0, 70.0));
        // Halves: no overflow across the whole f64 range.
        let wide = Axis::linear(-f64::MAX, f64::MAX, 0.0, 100.0);
        assert_eq!(wide.px(0.0), 50.0);
        let y = Axis::log(1e-3, 1.0, 500.0, 100.0);
        assert!((y.px(1e-2) - (500.0 - 400.0 / 3.0)).abs() < 1e-9);
        assert_eq!(y.px(0.0), 500.0);
        assert_eq!(pow10_label(-12), "10⁻¹²");
        assert_eq!(decade_ticks(-1, 1)[2], (10.0, "10".to_string()));
    }
}
