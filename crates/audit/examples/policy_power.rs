//! Power of the selection policies (not a test; run in release):
//!
//! `cargo run --release -p dpaudit-audit --example policy_power -- threshold [TRIALS]`
//! `cargo run --release -p dpaudit-audit --example policy_power -- one-run [TRIALS]`
//!
//! Gaussian scores: members N(μ, 1), non-members N(0, 1) (a μ-GDP
//! mechanism), δ = 1e-5, confidence 0.95. For each (n, μ) cell and each
//! policy, the mean ε lower bound over TRIALS independent data sets (the
//! same data sets for every policy) and its standard error. `threshold`
//! bounds the eps-delta and GDP audits on n scores per class; `one-run`
//! bounds the one-run audits of Steinke et al. and of Mahloujifar et al.
//! ((ε, δ) family, the default) on m = 2n canaries, each included with
//! probability ½, with the default symmetric guess counts,
//! score = μ·included + N(0, 1). `same-data` is shown for reference: it is
//! not valid. Output: one Markdown table per method.

use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::one_run::{one_run_lower_bound, OneRunConfig};
use dpaudit_audit::one_run_fdp::{one_run_fdp_lower_bound, TradeoffFamily};
use dpaudit_audit::policy::DEFAULT_SPLITS;
use dpaudit_audit::region::{eps_delta_lower_bound, gdp_lower_bound, RegionConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const DELTA: f64 = 1e-5;
const CONFIDENCE: f64 = 0.95;

fn policies(seed: u64) -> [Selection; 4] {
    [
        Selection::Split { seed },
        Selection::MultiSplit {
            seed,
            splits: DEFAULT_SPLITS,
        },
        Selection::Bonferroni,
        Selection::SameData,
    ]
}

fn threshold_data(rng: &mut ChaCha8Rng, n: usize, mu: f64) -> Observations<'static> {
    let mut scores = Vec::with_capacity(2 * n);
    let mut members = Vec::with_capacity(2 * n);
    for i in 0..2 * n {
        let z: f64 = rng.sample(StandardNormal);
        let m = i % 2 == 0;
        scores.push(if m { z + mu } else { z });
        members.push(m);
    }
    Observations::new(scores, members).unwrap()
}

fn canary_data(rng: &mut ChaCha8Rng, m: usize, mu: f64) -> Observations<'static> {
    loop {
        let mut scores = Vec::with_capacity(m);
        let mut members = Vec::with_capacity(m);
        for _ in 0..m {
            let inc: bool = rng.gen();
            let z: f64 = rng.sample(StandardNormal);
            scores.push(if inc { z + mu } else { z });
            members.push(inc);
        }
        if let Ok(o) = Observations::new(scores, members) {
            return o;
        }
    }
}

/// Mean and standard error over the data sets that gave a bound (a one-run
/// audit refuses about one data set in 1000 for its inclusion count).
fn mean_se(v: &[f64]) -> (f64, f64) {
    let v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

type Bound<'a> = dyn Fn(&Observations, Selection) -> f64 + 'a;

fn table(
    title: &str,
    ns: &[usize],
    mus: &[f64],
    trials: usize,
    data: &dyn Fn(&mut ChaCha8Rng, usize, f64) -> Observations<'static>,
    bound: &Bound<'_>,
) {
    println!("\n### {title}\n");
    println!("| n | μ | split | multi-split | bonferroni | same-data (not valid) | best valid |");
    println!("|---|---|---|---|---|---|---|");
    for &n in ns {
        for &mu in mus {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 * n as u64 + (mu * 10.0) as u64);
            let mut results = vec![Vec::new(); 4];
            for t in 0..trials {
                let obs = data(&mut rng, n, mu);
                for (k, sel) in policies(t as u64).into_iter().enumerate() {
                    results[k].push(bound(&obs, sel));
                }
            }
            let stats: Vec<(f64, f64)> = results.iter().map(|r| mean_se(r)).collect();
            let names = ["split", "multi-split", "bonferroni"];
            let best = (0..3)
                .max_by(|&a, &b| stats[a].0.total_cmp(&stats[b].0))
                .unwrap_or(0);
            let cell = |(m, se): (f64, f64)| format!("{m:.3} ± {se:.3}");
            println!(
                "| {n} | {mu} | {} | {} | {} | {} | {} |",
                cell(stats[0]),
                cell(stats[1]),
                cell(stats[2]),
                cell(stats[3]),
                names[best]
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map(String::as_str).unwrap_or("threshold");
    let trials: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(50);
    let mus = [0.5, 1.0, 2.0, 3.0, 4.0];
    match what {
        "threshold" => {
            let ns = [50, 100, 250, 500, 1000, 2500, 5000, 10_000, 50_000];
            let data = |rng: &mut ChaCha8Rng, n: usize, mu: f64| threshold_data(rng, n, mu);
            let cfg = |selection| RegionConfig {
                confidence: CONFIDENCE,
                delta: DELTA,
                selection,
            };
            table(
                "eps-delta (n scores per class)",
                &ns,
                &mus,
                trials,
                &data,
                &|o, s| eps_delta_lower_bound(o, &cfg(s)).map_or(f64::NAN, |b| b.epsilon),
            );
            table(
                "gdp (n scores per class)",
                &ns,
                &mus,
                trials,
                &data,
                &|o, s| gdp_lower_bound(o, &cfg(s)).map_or(f64::NAN, |b| b.epsilon),
            );
        }
        "one-run" => {
            let ns = [50, 100, 250, 500, 1000, 2500, 5000];
            let data = |rng: &mut ChaCha8Rng, n: usize, mu: f64| canary_data(rng, 2 * n, mu);
            let cfg = |selection| OneRunConfig::new(CONFIDENCE, DELTA, selection);
            table(
                "one-run, Steinke et al. (m = 2n canaries)",
                &ns,
                &mus,
                trials,
                &data,
                &|o, s| one_run_lower_bound(o, &cfg(s)).map_or(f64::NAN, |b| b.epsilon),
            );
            table(
                "one-run f-DP, (ε, δ) family, the default (m = 2n canaries)",
                &ns,
                &mus,
                trials,
                &data,
                &|o, s| {
                    one_run_fdp_lower_bound(o, &cfg(s), TradeoffFamily::EpsDelta)
                        .map_or(f64::NAN, |b| b.epsilon)
                },
            );
        }
        other => eprintln!("unknown study `{other}`; expected `threshold` or `one-run`"),
    }
}
