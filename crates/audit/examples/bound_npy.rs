//! Every method's bound, with its default selection policy, for NPY score
//! files (`(N, 2)` float64, `[score, member]`), one JSON object per line;
//! the dpaudit side of `benches/compare_jax_privacy.py` (not a test):
//!
//! `cargo run --release -p dpaudit-audit --example bound_npy -- DELTA FILE.npy...`
//!
//! Confidence 0.95. The one-run methods treat the rows as the canaries of
//! one run (`member` = included).

use std::path::Path;

use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::io::read_scores;
use dpaudit_audit::observations::Method;
use dpaudit_audit::one_run::{one_run_lower_bound, OneRunConfig};
use dpaudit_audit::one_run_fdp::{one_run_fdp_lower_bound, TradeoffFamily};
use dpaudit_audit::policy::default_selection;
use dpaudit_audit::region::{eps_delta_lower_bound, gdp_lower_bound, RegionConfig};

const CONFIDENCE: f64 = 0.95;

fn summary(b: &EpsilonLowerBound) -> serde_json::Value {
    let mu = match &b.evidence {
        Evidence::Threshold(ev) => ev.mu_lower,
        Evidence::OneRun(ev) => ev.mu_lower,
        Evidence::GaussianScores(ev) => Some(ev.mu_lower),
    };
    serde_json::json!({
        "epsilon": b.epsilon,
        "mu": mu,
        "selection": b.selection.name(),
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((delta, files)) = args.split_first() else {
        return Err("usage: bound_npy DELTA FILE.npy...".into());
    };
    let delta: f64 = delta.parse()?;
    for file in files {
        let obs = read_scores(Path::new(file))?;
        let n = obs.len();
        let region = |m| RegionConfig {
            confidence: CONFIDENCE,
            delta,
            selection: default_selection(m, n, 0),
        };
        let eps_delta = eps_delta_lower_bound(&obs, &region(Method::EpsDelta))?;
        let gdp = gdp_lower_bound(&obs, &region(Method::Gdp))?;
        let design = |m| OneRunConfig::new(CONFIDENCE, delta, default_selection(m, n, 0));
        let one_run = one_run_lower_bound(&obs, &design(Method::OneRun))?;
        let fdp = design(Method::OneRunFdp);
        let fdp_gauss = one_run_fdp_lower_bound(&obs, &fdp, TradeoffFamily::Gaussian)?;
        let fdp_eps = one_run_fdp_lower_bound(&obs, &fdp, TradeoffFamily::EpsDelta)?;
        println!(
            "{}",
            serde_json::json!({
                "file": file,
                "n": n,
                "eps_delta": summary(&eps_delta),
                "gdp": summary(&gdp),
                "one_run": summary(&one_run),
                "one_run_fdp_gaussian": summary(&fdp_gauss),
                "one_run_fdp_eps_delta": summary(&fdp_eps),
            })
        );
    }
    Ok(())
}
