//! The Gaussian-scores one-run audit (after Agrawal et al. 2026) beside the
//! other methods on scores where its assumption holds (not a test):
//!
//! `cargo run --release -p dpaudit-audit --example gaussian_scores_table -- [M...]`
//!
//! For each number of canaries `m` (default 1000 10000 1000000) and
//! μ ∈ {0.5, 1, 2, 3}: `m` canaries included with probability ½, scores
//! N(μ, 1) for members and N(0, 1) for non-members (one seeded draw per
//! cell, ChaCha8 seed 7), every method with its default selection,
//! confidence 0.95, δ = 1e-5. `gdp` treats the rows as independent runs,
//! which these scores are. Prints a Markdown table of ε lower bounds (μ⁻ in
//! brackets where the method has one) and the true ε_μ(δ).

use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::estimate::{lower_bound, BoundSettings};
use dpaudit_audit::gaussian::gdp_epsilon;
use dpaudit_audit::observations::{Method, Observations};
use dpaudit_audit::one_run::{GuessFamily, TieBreak};
use dpaudit_audit::one_run_fdp::TradeoffFamily;
use dpaudit_audit::policy::default_selection;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

const DELTA: f64 = 1e-5;
const METHODS: [Method; 5] = [
    Method::OneRunGaussianScores,
    Method::Gdp,
    Method::OneRun,
    Method::OneRunFdp,
    Method::OneRunFdpGaussian,
];

fn mu_of(b: &EpsilonLowerBound) -> Option<f64> {
    match &b.evidence {
        Evidence::Threshold(ev) => ev.mu_lower,
        Evidence::OneRun(ev) => ev.mu_lower,
        Evidence::GaussianScores(ev) => Some(ev.mu_lower),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ms: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let ms = if ms.is_empty() {
        vec![1000, 10_000, 1_000_000]
    } else {
        ms
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let names: Vec<&str> = METHODS.iter().map(|m| m.name()).collect();
    println!("| m | μ | true ε | {} |", names.join(" | "));
    println!("|---|---|---|{}", "---|".repeat(METHODS.len()));
    for &m in &ms {
        for mu in [0.5, 1.0, 2.0, 3.0] {
            let mut scores = Vec::with_capacity(m);
            let mut members = Vec::with_capacity(m);
            for _ in 0..m {
                let inc: bool = rng.gen();
                let z: f64 = rng.sample(StandardNormal);
                scores.push(z + if inc { mu } else { 0.0 });
                members.push(inc);
            }
            let obs = Observations::new(scores, members)?;
            let cells: Vec<String> = METHODS
                .iter()
                .map(|&method| {
                    let settings = BoundSettings {
                        confidence: 0.95,
                        delta: DELTA,
                        selection: default_selection(method, obs.len(), 0),
                        family: TradeoffFamily::EpsDelta,
                        guesses: GuessFamily::Symmetric,
                        fixed_guesses: None,
                        tie_break: TieBreak::Quantile,
                    };
                    match lower_bound(method, &obs, &settings) {
                        Ok(b) => match mu_of(&b) {
                            Some(mu) => format!("{:.3} (μ⁻ {mu:.3})", b.epsilon),
                            None => format!("{:.3}", b.epsilon),
                        },
                        Err(e) => format!("error: {e}"),
                    }
                })
                .collect();
            println!(
                "| {m} | {mu} | {:.3} | {} |",
                gdp_epsilon(mu, DELTA),
                cells.join(" | ")
            );
        }
    }
    Ok(())
}
