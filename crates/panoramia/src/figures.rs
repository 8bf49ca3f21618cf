//! What a person looks at: precision–recall curves of the baseline and the
//! MIA with the points that give `c_lb` and `{c+ε}_lb` (SVG), a grid of
//! generated images (PNG), and `summary.md`.

use dpaudit_audit::figures::svg::{self, Axis, Mark};
use dpaudit_audit::panoramia::EpsilonTilde;

use crate::error::{out_err, Result};

/// One point of a precision–recall curve.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PrPoint {
    /// Recall `tp / members`.
    pub recall: f64,
    /// Precision `tp / r`.
    pub precision: f64,
}

/// The precision–recall curve of guessing "member" iff `score ≥ τ`, one
/// point per distinct score (highest first).
pub fn precision_recall(scores: &[f64], members: &[bool]) -> Vec<PrPoint> {
    let total = members.iter().filter(|&&m| m).count().max(1) as f64;
    let mut rows: Vec<(f64, bool)> = scores
        .iter()
        .copied()
        .zip(members.iter().copied())
        .collect();
    rows.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = Vec::new();
    let (mut r, mut tp) = (0usize, 0usize);
    let mut i = 0;
    while i < rows.len() {
        let t = rows[i].0;
        while i < rows.len() && rows[i].0 == t {
            r += 1;
            tp += usize::from(rows[i].1);
            i += 1;
        }
        out.push(PrPoint {
            recall: tp as f64 / total,
            precision: tp as f64 / r as f64,
        });
    }
    out
}

/// The point of the curve that gave a bound: `tp` true positives among `r`
/// predictions, `members` members in the audit set (`None` without a true
/// positive).
pub fn marked_point(tp: u64, r: u64, members: u64) -> Option<PrPoint> {
    if tp == 0 || members == 0 || r == 0 {
        return None;
    }
    Some(PrPoint {
        recall: tp as f64 / members as f64,
        precision: tp as f64 / r as f64,
    })
}

/// One curve of a plot.
#[derive(Debug)]
pub struct PrSeries<'a> {
    /// Legend.
    pub label: String,
    /// Colour (SVG).
    pub color: &'a str,
    /// The curve.
    pub points: &'a [PrPoint],
    /// The point that gave the bound, with its label.
    pub mark: Option<(PrPoint, String)>,
}

/// An SVG of precision (y) against recall (x, log scale from 1/m to 1, where
/// the bounds usually live: Kazmi et al. 2024, §C.2, "the maximum … typically
/// occurs at low recall").
pub fn pr_svg(title: &str, series: &[PrSeries<'_>], min_recall: f64) -> String {
    let (w, h) = (640.0, 420.0);
    let (l, r, t, b) = (70.0, 20.0, 40.0, 60.0);
    let lo = min_recall.clamp(1e-6, 0.5).log10();
    let x = Axis::log(10f64.powf(lo), 1.0, l, w - r);
    let y = Axis::linear(0.0, 1.0, h - b, t);
    let mut s = String::new();
    svg::open(&mut s, w, h, title);
    let precision_ticks: Vec<(f64, String)> = (0..=10)
        .map(|k| {
            let p = f64::from(k) / 10.0;
            (p, format!("{p:.1}"))
        })
        .collect();
    svg::frame(
        &mut s,
        &x,
        &y,
        &svg::decade_ticks(lo.ceil() as i32, 0),
        &precision_ticks,
    );
    svg::axis_titles(&mut s, h, &x, &y, "recall (log scale)", "precision");
    for (i, se) in series.iter().enumerate() {
        svg::polyline(
            &mut s,
            se.color,
            se.points
                .iter()
                .map(|p| (x.px(p.recall), y.px(p.precision))),
        );
        if let Some((p, label)) = &se.mark {
            let (px, py) = (x.px(p.recall), y.px(p.precision));
            svg::dot(&mut s, px, py, 5.0, se.color);
            // Labels of points in the right third go to their left.
            let (tx, anchor) = if px > l + 2.0 * (w - l - r) / 3.0 {
                (px - 8.0, "end")
            } else {
                (px + 8.0, "start")
            };
            svg::text(&mut s, tx, py + 16.0 + 14.0 * i as f64, anchor, label);
        }
    }
    let legend: Vec<(Mark<'_>, String)> = series
        .iter()
        .map(|se| (Mark::Line(se.color), se.label.clone()))
        .collect();
    svg::legend(&mut s, w - r - 8.0, t + 8.0, &legend);
    svg::close(&mut s);
    s
}

/// A PNG grid of `n` images `[C, H, W]` in [0, 1] (flat), `cols` per row,
/// with a 2-pixel white border between images.
pub fn grid_png(images: &[f32], n: usize, shape: &[usize], cols: usize) -> Result<Vec<u8>> {
    let bad = |e: &dyn std::fmt::Display| out_err(std::path::Path::new("samples.png"), e);
    let (c, h, w) = match *shape {
        [c, h, w] => (c, h, w),
        _ => {
            return Err(bad(&format!(
                "images of shape {shape:?}: expected [C, H, W]"
            )))
        }
    };
    let cols = cols.max(1);
    let rows = n.div_ceil(cols).max(1);
    let (gw, gh) = (cols * (w + 2) + 2, rows * (h + 2) + 2);
    let mut img = image::RgbImage::from_pixel(gw as u32, gh as u32, image::Rgb([255, 255, 255]));
    let rec = c * h * w;
    for k in 0..n.min(images.len() / rec.max(1)) {
        let (ox, oy) = (2 + (k % cols) * (w + 2), 2 + (k / cols) * (h + 2));
        for yy in 0..h {
            for xx in 0..w {
                let px = |ch: usize| {
                    let v = images[k * rec + ch * h * w + yy * w + xx];
                    (v.clamp(0.0, 1.0) * 255.0).round() as u8
                };
                let rgb = if c >= 3 {
                    [px(0), px(1), px(2)]
                } else {
                    [px(0); 3]
                };
                img.put_pixel((ox + xx) as u32, (oy + yy) as u32, image::Rgb(rgb));
            }
        }
    }
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| bad(&e))?;
    Ok(out.into_inner())
}

/// The ε̃ sentence every output carries.
pub fn meaning() -> &'static str {
    EpsilonTilde::MEANING
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn precision_recall_counts_ties_together() {
        let pr = precision_recall(&[3.0, 2.0, 2.0, 1.0], &[true, true, false, false]);
        assert_eq!(
            pr,
            vec![
                PrPoint {
                    recall: 0.5,
                    precision: 1.0
                },
                PrPoint {
                    recall: 1.0,
                    precision: 2.0 / 3.0
                },
                PrPoint {
                    recall: 1.0,
                    precision: 0.5
                },
            ]
        );
    }

    #[test]
    fn pr_svg_draws_each_series_its_legend_and_its_marked_point() {
        let points = [
            PrPoint {
                recall: 0.01,
                precision: 1.0,
            },
            PrPoint {
                recall: 0.5,
                precision: 0.75,
            },
            PrPoint {
                recall: 1.0,
                precision: 0.5,
            },
        ];
        let series = [PrSeries {
            label: "MIA <f>".into(),
            color: "#1f77b4",
            points: &points,
            mark: Some((points[0], "c_lb = 1.2".into())),
        }];
        let svg = pr_svg("a & b", &series, 1e-3);
        assert!(
            svg.starts_with("<svg") && svg.ends_with("</svg>\n"),
            "{svg}"
        );
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("<circle").count(), 1);
        // Decades 1e-3 … 1 on the recall axis, 11 precision ticks.
        assert_eq!(svg.matches("text-anchor=\"end\">").count(), 11);
        assert!(
            svg.contains("MIA &lt;f&gt;") && svg.contains("a &amp; b"),
            "{svg}"
        );
        assert!(
            svg.contains("c_lb = 1.2") && svg.contains("class=\"legend\""),
            "{svg}"
        );
    }

    #[test]
    fn grid_is_a_png_of_the_right_size() {
        let imgs = vec![0.5f32; 3 * 28 * 28];
        let png = grid_png(&imgs, 3, &[1, 28, 28], 2).unwrap();
        let img = image::load_from_memory(&png).unwrap();
        assert_eq!((img.width(), img.height()), (2 * 30 + 2, 2 * 30 + 2));
    }
}
