//! Throughput of the CPU Batched Gaussian Mechanism simulator (Annamalai et al. 2024 §4, Algorithm 4):
//! BGM observations (full runs, both hypotheses counted) per second at T = 100,
//! E = 1, σ = 1, full shuffling, Λ^WC scores.
//!
//! Run: `cargo run --release -p dpaudit-attacks --example bgm_bench -- [RUNS_PER_HYPOTHESIS] [THREADS] [SAMPLER]`
//! (defaults 1000000, all cores, and both `shuffle` and `poisson`).

use dpaudit_attacks::{BgmConfig, BgmDataset, BgmSimulator, LikelihoodRatio};
use dpaudit_data::sampler::GameSampler;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().map_or(1_000_000, |a| {
        a.parse().expect("RUNS_PER_HYPOTHESIS must be an integer")
    });
    let threads: usize = args
        .next()
        .map_or(0, |a| a.parse().expect("THREADS must be an integer"));
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    let only: Option<String> = args.next();
    let steps = 100;
    for (name, sampler, dataset, score) in [
        (
            "shuffle",
            GameSampler::new("shuffle"),
            BgmDataset::ShuffleWorstCase,
            LikelihoodRatio::WorstCase { batch_size: 1 },
        ),
        (
            "poisson",
            GameSampler::new("poisson"),
            BgmDataset::PoissonWorstCase,
            LikelihoodRatio::Poisson { sample_rate: 0.01 },
        ),
    ] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let sim = BgmSimulator::new(BgmConfig {
            steps,
            expected_batch_size: 1,
            epochs: 1,
            noise_multiplier: 1.0,
            sampler,
            dataset,
            score,
            score_columns: steps,
            seed: 1,
        })
        .expect("valid benchmark configuration");
        let start = Instant::now();
        let scores = sim.simulate(runs, threads);
        let secs = start.elapsed().as_secs_f64();
        let observations = 2 * runs;
        let mean_with = scores.with_target.iter().sum::<f64>() / runs as f64;
        println!(
            "{name}: T={steps} E=1 σ=1 threads={threads}: {observations} observations in {secs:.2} s = {:.3e} observations/s ({:.3e} Gaussian draws/s); mean log Λ with target {mean_with:.4}",
            observations as f64 / secs,
            (observations * steps) as f64 / secs,
        );
    }
}
