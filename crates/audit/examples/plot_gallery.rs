//! Renders every report plot on simulated scores, for looking at them
//! (not a test):
//!
//! `cargo run --release -p dpaudit-audit --example plot_gallery -- OUT_DIR`
//!
//! Writes `tradeoff-*.svg`, `roc-*.svg` (threshold audits under each
//! selection policy), `one-run-*.svg` (both one-run methods) and `hist-*.svg`
//! (normal, log-normal, −loss-like and heavy-tailed scores) and `bars.svg`
//! (ε lower bounds against an accountant's upper bound).

use std::path::PathBuf;

use dpaudit_audit::figures::bound_plots::{one_run_plot, tradeoff_plot};
use dpaudit_audit::figures::plots::{epsilon_bars_svg, histogram_auto, EpsilonBar};
use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::one_run::{one_run_lower_bound, OneRunConfig};
use dpaudit_audit::one_run_fdp::{one_run_fdp_lower_bound, TradeoffFamily};
use dpaudit_audit::region::{eps_delta_lower_bound, gdp_lower_bound, RegionConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "gallery".into()));
    std::fs::create_dir_all(&out)?;
    let write = |name: &str, svg: String| std::fs::write(out.join(name), svg);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let normal = |rng: &mut ChaCha8Rng| -> f64 { rng.sample(StandardNormal) };
    // Threshold audits: 5000 runs per class, μ = 2.
    let (pos, neg): (Vec<f64>, Vec<f64>) = (0..5000)
        .map(|_| (normal(&mut rng) + 2.0, normal(&mut rng)))
        .unzip();
    let obs = Observations::from_classes(&pos, &neg)?;
    for (name, selection) in [
        ("bonferroni", Selection::Bonferroni),
        ("split", Selection::Split { seed: 3 }),
        ("same-data", Selection::SameData),
    ] {
        let cfg = RegionConfig {
            confidence: 0.95,
            delta: 1e-5,
            selection,
        };
        let b = eps_delta_lower_bound(&obs, &cfg)?;
        let p = tradeoff_plot(&obs, &b, Some(9.9), None)?;
        write(&format!("tradeoff-eps-delta-{name}.svg"), p.to_svg())?;
        write(&format!("roc-eps-delta-{name}.svg"), p.to_roc_svg())?;
        let b = gdp_lower_bound(&obs, &cfg)?;
        let p = tradeoff_plot(&obs, &b, Some(9.9), None)?;
        write(&format!("tradeoff-gdp-{name}.svg"), p.to_svg())?;
        write(&format!("roc-gdp-{name}.svg"), p.to_roc_svg())?;
    }
    // One-run: 2000 canaries, μ = 2.
    let canaries: Vec<(f64, bool)> = (0..2000)
        .map(|_| {
            let inc: bool = rng.gen();
            (normal(&mut rng) + if inc { 2.0 } else { 0.0 }, inc)
        })
        .collect();
    let c = Observations::new(
        canaries.iter().map(|c| c.0).collect(),
        canaries.iter().map(|c| c.1).collect(),
    )?;
    let design = OneRunConfig::new(0.95, 1e-5, Selection::Split { seed: 2 });
    let b = one_run_lower_bound(&c, &design)?;
    write("one-run-steinke.svg", one_run_plot(&c, &b, None)?.to_svg())?;
    let b = one_run_fdp_lower_bound(&c, &design, TradeoffFamily::Gaussian)?;
    write("one-run-fdp.svg", one_run_plot(&c, &b, None)?.to_svg())?;
    // Histograms.
    let lognormal = |rng: &mut ChaCha8Rng, shift: f64| (2.0 * normal(rng) + shift).exp();
    let cases: [(&str, Vec<f64>, Vec<f64>); 4] = [
        ("normal", pos.clone(), neg.clone()),
        (
            "lognormal",
            (0..4000).map(|_| lognormal(&mut rng, 1.0)).collect(),
            (0..4000).map(|_| lognormal(&mut rng, 0.0)).collect(),
        ),
        (
            "neg-loss",
            (0..4000).map(|_| -lognormal(&mut rng, -3.0)).collect(),
            (0..4000).map(|_| -lognormal(&mut rng, 0.0)).collect(),
        ),
        (
            "heavy",
            (0..4000)
                .map(|_| normal(&mut rng) / normal(&mut rng).abs().max(1e-3) + 1.0)
                .collect(),
            (0..4000)
                .map(|_| normal(&mut rng) / normal(&mut rng).abs().max(1e-3))
                .collect(),
        ),
    ];
    for (name, m, n) in cases {
        let h = histogram_auto(&m, &n)?;
        write(
            &format!("hist-{name}.svg"),
            h.to_svg(&format!("{name} scores"), "score"),
        )?;
    }
    let bar = |label: &str, lower: f64, valid: bool| EpsilonBar {
        label: label.into(),
        lower,
        valid,
    };
    let bars = [
        bar("eps-delta, bonferroni", 1.2, true),
        bar("gdp, split", 2.5, true),
        bar("eps-delta, same-data", 3.1, false),
        bar("one-run, no data", f64::NAN, true),
    ];
    write(
        "bars.svg",
        epsilon_bars_svg("ε lower vs upper", &bars, Some(2.8)),
    )?;
    Ok(())
}
