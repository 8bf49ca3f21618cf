//! Power of the default selection on tied and binary scores (not a test; run
//! in release):
//!
//! `cargo run --release -p dpaudit-audit --example ties_power -- [TRIALS]`
//!
//! The mean default bound (confidence 0.95, δ = 1e-5) and its standard
//! error over TRIALS data sets (default 50), per setting:
//! - randomized response at ε₀ (score = membership bit with probability
//!   e^ε₀/(1 + e^ε₀)), n = 1000 scores per class, eps-delta and gdp;
//! - Gaussian scores N(μ, 1) against N(0, 1), n = 1000 per class, as they
//!   are and rounded to the nearest integer, eps-delta and gdp;
//! - one-run (Steinke et al.) and one-run-fdp on m = 1000 canaries, each
//!   included with probability ½, score = μ·included + N(0, 1), as it is and
//!   rounded, and randomized-response canaries.

use dpaudit_audit::estimate::{lower_bound, BoundSettings};
use dpaudit_audit::observations::{Method, Observations, SelectionChoice};
use dpaudit_audit::one_run::{GuessFamily, TieBreak};
use dpaudit_audit::one_run_fdp::TradeoffFamily;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const DELTA: f64 = 1e-5;
const CONFIDENCE: f64 = 0.95;

#[derive(Clone, Copy)]
enum Scores {
    Rr(f64),
    Gaussian(f64),
    Rounded(f64),
}

impl Scores {
    fn draw(self, rng: &mut ChaCha8Rng, member: bool) -> f64 {
        match self {
            Scores::Rr(eps) => {
                let truthful = rng.gen::<f64>() < 1.0 / (1.0 + (-eps).exp());
                f64::from(member == truthful)
            }
            Scores::Gaussian(mu) | Scores::Rounded(mu) => {
                let z: f64 = rng.sample(StandardNormal);
                let s = z + if member { mu } else { 0.0 };
                if matches!(self, Scores::Rounded(_)) {
                    s.round()
                } else {
                    s
                }
            }
        }
    }

    fn name(self) -> String {
        match self {
            Scores::Rr(e) => format!("randomized response ε₀ = {e}"),
            Scores::Gaussian(m) => format!("Gaussian μ = {m}"),
            Scores::Rounded(m) => format!("integer-rounded Gaussian μ = {m}"),
        }
    }
}

fn runs(rng: &mut ChaCha8Rng, s: Scores, n: usize) -> Observations<'static> {
    let (mut scores, mut members) = (Vec::new(), Vec::new());
    for i in 0..2 * n {
        let m = i % 2 == 0;
        scores.push(s.draw(rng, m));
        members.push(m);
    }
    Observations::new(scores, members).unwrap()
}

fn canaries(rng: &mut ChaCha8Rng, s: Scores, m: usize) -> Observations<'static> {
    let (mut scores, mut members) = (Vec::new(), Vec::new());
    for _ in 0..m {
        let inc: bool = rng.gen();
        scores.push(s.draw(rng, inc));
        members.push(inc);
    }
    Observations::new(scores, members).unwrap()
}

fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

fn main() {
    let trials: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("TRIALS: a positive integer"))
        .unwrap_or(50);
    let default = |method: Method, obs: &Observations| {
        let sel = SelectionChoice::Auto.resolve(method, obs.len(), 7, 10);
        let settings = BoundSettings {
            confidence: CONFIDENCE,
            delta: DELTA,
            selection: sel,
            family: TradeoffFamily::EpsDelta,
            guesses: GuessFamily::Symmetric,
            fixed_guesses: None,
            tie_break: TieBreak::Quantile,
        };
        lower_bound(method, obs, &settings)
            .map(|b| b.epsilon)
            .unwrap_or(f64::NAN)
    };
    println!("| data | method | mean ε⁻ | s.e. |");
    println!("|---|---|---|---|");
    let threshold = [
        Scores::Rr(0.5),
        Scores::Rr(1.0),
        Scores::Rr(2.0),
        Scores::Gaussian(1.0),
        Scores::Gaussian(2.0),
        Scores::Rounded(1.0),
        Scores::Rounded(2.0),
    ];
    for (k, s) in threshold.into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(100 + k as u64);
        let data: Vec<_> = (0..trials).map(|_| runs(&mut rng, s, 1000)).collect();
        for method in [Method::EpsDelta, Method::Gdp] {
            let v: Vec<f64> = data.iter().map(|o| default(method, o)).collect();
            let (mean, se) = mean_se(&v);
            println!(
                "| {} (2×1000 runs) | {method} | {mean:.3} | {se:.3} |",
                s.name()
            );
        }
    }
    let one_run = [
        Scores::Rr(1.0),
        Scores::Gaussian(1.0),
        Scores::Gaussian(2.0),
        Scores::Rounded(1.0),
        Scores::Rounded(2.0),
    ];
    for (k, s) in one_run.into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(200 + k as u64);
        let data: Vec<_> = (0..trials).map(|_| canaries(&mut rng, s, 1000)).collect();
        for method in [Method::OneRun, Method::OneRunFdp] {
            let v: Vec<f64> = data.iter().map(|o| default(method, o)).collect();
            let (mean, se) = mean_se(&v);
            println!(
                "| {} (1000 canaries) | {method} | {mean:.3} | {se:.3} |",
                s.name()
            );
        }
    }
}
