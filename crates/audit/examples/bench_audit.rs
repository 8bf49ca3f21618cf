//! Speed benchmark of the audit statistics (not a test; run in release):
//!
//! `cargo run --release -p dpaudit-audit --example bench_audit -- [N_SCORES] [N_GUESSES]`
//!
//! - the (ε, δ) sweep (Annamalai et al. 2024 Alg. 5) on `N_SCORES` scores (default 10⁸),
//!   half members, Gaussian scores N(1, 1) vs N(0, 1), both selection policies;
//! - the one-run bound (Steinke, Nasr & Jagielski 2023 Thm 3.1) for `N_GUESSES` guesses (default 10⁵).
//!
//! Single-threaded; data generation is not timed. Each line gives wall time
//! and the process CPU time (user + system, from `/proc/self/stat`), which is
//! what to compare on a loaded machine.

use std::time::Instant;

/// Process CPU seconds (user + system) from /proc/self/stat, if readable.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i)
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    // Fields 14 and 15 of stat (utime, stime) are at 11 and 12 after the ")".
    (ticks(11) + ticks(12)) / 100.0
}

/// Wall and CPU seconds since (`t`, `c`).
fn took(t: Instant, c: f64) -> String {
    format!(
        "{:.3} s wall, {:.3} s CPU",
        t.elapsed().as_secs_f64(),
        cpu_seconds() - c
    )
}

use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::one_run::{epsilon_lower_bound, one_run_lower_bound, OneRunConfig};
use dpaudit_audit::region::{eps_delta_lower_bound, gdp_lower_bound, RegionConfig};
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(100_000_000);
    let guesses: u64 = args
        .get(2)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(100_000);

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let (t, c) = (Instant::now(), cpu_seconds());
    let mut scores = Vec::with_capacity(n);
    let mut members = Vec::with_capacity(n);
    for i in 0..n {
        let member = i % 2 == 0;
        let z: f64 = rng.sample(StandardNormal);
        scores.push(if member { z + 1.0 } else { z });
        members.push(member);
    }
    println!("generated {n} scores in {} (not timed below)", took(t, c));

    let (t, c) = (Instant::now(), cpu_seconds());
    let obs = Observations::new(scores, members)?;
    println!("validate: {}", took(t, c));
    for selection in [Selection::Split { seed: 0 }, Selection::SameData] {
        let cfg = RegionConfig {
            confidence: 0.95,
            delta: 1e-5,
            selection,
        };
        let (t, c) = (Instant::now(), cpu_seconds());
        let b = eps_delta_lower_bound(&obs, &cfg)?;
        println!(
            "eps-delta sweep, {n} scores, {}: {}, epsilon >= {:.4}",
            selection.name(),
            took(t, c),
            b.epsilon
        );
    }
    let cfg = RegionConfig {
        confidence: 0.95,
        delta: 1e-5,
        selection: Selection::SameData,
    };
    let (t, c) = (Instant::now(), cpu_seconds());
    let b = gdp_lower_bound(&obs, &cfg)?;
    println!(
        "gdp sweep, {n} scores, same-data: {}, epsilon >= {:.4}",
        took(t, c),
        b.epsilon
    );
    drop(obs);

    // One-run: r = m = guesses, 95% correct, δ = 1e-5.
    let v = guesses * 95 / 100;
    let (t, c) = (Instant::now(), cpu_seconds());
    let eps = epsilon_lower_bound(guesses, guesses, v, 1e-5, 0.05)?;
    println!(
        "one-run bound, {guesses} guesses ({v} correct): {}, epsilon >= {eps:.4}",
        took(t, c)
    );
    // Full path from scores: m canaries, all guessed (k+ = k- = m/2).
    let m = guesses as usize;
    let mut s = Vec::with_capacity(m);
    let mut inc = Vec::with_capacity(m);
    for _ in 0..m {
        let included: bool = rng.gen();
        let z: f64 = rng.sample(StandardNormal);
        s.push(if included { z + 2.0 } else { z });
        inc.push(included);
    }
    let obs = Observations::new(s, inc)?;
    let cfg = OneRunConfig::new(0.95, 1e-5, Selection::Fixed)
        .with_fixed_guesses(guesses / 2, guesses / 2);
    let (t, c) = (Instant::now(), cpu_seconds());
    let b = one_run_lower_bound(&obs, &cfg)?;
    println!(
        "one-run from scores, {m} canaries, {guesses} guesses: {}, epsilon >= {:.4}",
        took(t, c),
        b.epsilon
    );
    let cfg = OneRunConfig::new(0.95, 1e-5, Selection::Split { seed: 0 });
    let (t, c) = (Instant::now(), cpu_seconds());
    let b = one_run_lower_bound(&obs, &cfg)?;
    println!(
        "one-run from scores with (k+,k-) search on a split, {m} canaries: {}, epsilon >= {:.4}",
        took(t, c),
        b.epsilon
    );
    Ok(())
}
