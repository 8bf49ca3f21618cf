//! The randomness of experiments: concurrent experiments in one process do
//! not disturb each other, and a run's scores do not depend on how many runs
//! are trained at once.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml, shared by this crate) is for library code.
#![allow(clippy::disallowed_methods)]

mod common;

use common::canary_config;
use common::fixtures::{with, TINY_CANARY};

use dpaudit_experiment::canary::chunk::Prepared;
use dpaudit_experiment::canary::settings::ExperimentConfig;
use dpaudit_train::trainer::Silent;

/// `tests/fixtures/tiny-canary.toml` with 12 runs of `seed`, `replicas` at
/// a time, on all 100 classes, batches of a shuffle (random, unlike the
/// fixture's fixed sequence) and one method.
fn experiment(seed: u64, replicas: usize) -> ExperimentConfig {
    let seed = format!("seed = {seed}");
    let replicas = format!("replicas = {replicas}");
    let text = with(
        TINY_CANARY,
        &[
            ("runs = 40", "runs = 12"),
            ("seed = 5", &seed),
            ("replicas = 10", &replicas),
            ("classes = [0, 1]\n", ""),
            ("kind = \"fixed_sequence\"", "kind = \"shuffle\""),
            ("batch_size = 20", "batch_size = 20\nlast_batch = \"drop\""),
            (
                "methods = [\"eps_delta\", \"gdp\"]",
                "methods = [\"eps_delta\"]",
            ),
        ],
    );
    canary_config(&text, "randomness test")
}

/// `scores[kind][run]` of all runs of an experiment, chunk by chunk.
fn all_scores(p: &Prepared) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = vec![Vec::new(); p.config.audit.scores.len()];
    for chunk in 0..p.config.chunks() {
        let c = p.run_chunk(chunk, &mut Silent).unwrap();
        for (k, per_kind) in c.scores.iter().enumerate() {
            out[k].extend(per_kind.iter().map(|canaries| canaries[0]));
        }
    }
    out
}

#[test]
fn two_experiments_on_two_threads_score_as_each_does_alone() {
    let scores = |seed, replicas| {
        let p = Prepared::new(&experiment(seed, replicas), None).unwrap();
        all_scores(&p)
    };
    let alone = (scores(21, 4), scores(22, 6));
    let together = std::thread::scope(|s| {
        let ta = s.spawn(|| scores(21, 4));
        let tb = s.spawn(|| scores(22, 6));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    assert_eq!(alone, together);
    assert_ne!(alone.0, alone.1);
}

#[test]
fn an_experiments_scores_do_not_depend_on_its_replica_stack() {
    let by = |replicas| all_scores(&Prepared::new(&experiment(23, replicas), None).unwrap());
    let twelve = by(12);
    assert_eq!(by(3), twelve);
    assert_eq!(by(5), twelve);
}
