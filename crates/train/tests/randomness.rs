//! The randomness a run owns: secure runs cannot be reproduced from anything
//! they write, and replayable runs reproduce exactly. (Concurrent experiments
//! are tested in `crates/experiment/tests/chunk_randomness.rs`.)

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use dpaudit_data::seed::{Mode, Randomness};
use dpaudit_train::checkpoint;
use dpaudit_train::config::TrainConfig;
use dpaudit_train::trainer::{train, Silent};
use dpaudit_train::Model;
use tch::Tensor;

#[path = "../../../tests/fixtures/mod.rs"]
mod fixtures;

use fixtures::{with, TINY_TRAIN};

/// `tests/fixtures/tiny-train.toml` (a small MLP on synthetic Purchase-100
/// records, Poisson sampling), one replica of seed `seed`, 3 steps on 300
/// records.
fn config(seed: u64) -> TrainConfig {
    let text = with(
        TINY_TRAIN,
        &[
            ("seed = 3", &format!("seed = {seed}")),
            ("replicas = 2\n", ""),
            ("steps = 4", "steps = 3"),
            ("train_size = 500", "train_size = 300"),
            ("learning_rate = 0.1", "learning_rate = 0.5"),
        ],
    );
    TrainConfig::from_toml(&text, "randomness test").unwrap()
}

fn parameters(model: &dyn Model) -> Vec<Tensor> {
    model
        .named_parameters()
        .into_iter()
        .map(|(_, t)| t.detach().copy())
        .collect()
}

fn same(a: &[Tensor], b: &[Tensor]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.equal(y))
}

fn trained(config: &TrainConfig, randomness: &Randomness) -> Vec<Tensor> {
    parameters(
        train(config, randomness, &mut Silent)
            .unwrap()
            .model
            .as_ref(),
    )
}

#[test]
fn replayable_runs_repeat_and_secure_runs_do_not() {
    let cfg = config(4);
    let r1 = trained(&cfg, &Randomness::replayable(4));
    let r2 = trained(&cfg, &Randomness::replayable(4));
    assert!(same(&r1, &r2), "two replayable runs of one config differ");
    let s1 = trained(&cfg, &Randomness::secure(4).unwrap());
    let s2 = trained(&cfg, &Randomness::secure(4).unwrap());
    assert!(!same(&s1, &s2), "two secure runs gave the same model");
    assert!(!same(&s1, &r1));
}

/// Every decimal integer in the bytes of `path` that fits in a u64.
fn integers_in(path: &Path) -> Vec<u64> {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse::<u64>().ok())
        .collect()
}

/// Whoever holds everything a secure run writes (its checkpoint with the full
/// config in its metadata) and tries every number in it as the seed of a
/// replay, including the config's own seed, does not get the run's model:
/// the sampling and noise were keyed by entropy that was never written.
#[test]
fn nothing_a_secure_run_writes_determines_its_noise() {
    let cfg = config(123_456_789);
    let out = train(&cfg, &Randomness::secure(cfg.seed).unwrap(), &mut Silent).unwrap();
    assert_eq!(out.mode, Mode::Secure);
    let dir = tempfile::tempdir().unwrap();
    let files = checkpoint::save(
        out.model.as_ref(),
        &dir.path().join("model.safetensors"),
        &out.checkpoint_meta(&cfg),
    )
    .unwrap();
    let secure = parameters(out.model.as_ref());
    let mut candidates: Vec<u64> = files.iter().flat_map(|f| integers_in(f)).collect();
    candidates.sort_unstable();
    candidates.dedup();
    assert!(
        candidates.contains(&cfg.seed),
        "the seed is in the metadata"
    );
    assert!(candidates.len() >= 5, "{candidates:?}");
    for seed in candidates {
        let mut replay = cfg.clone();
        replay.seed = seed;
        let replayed = trained(&replay, &Randomness::replayable(seed));
        assert!(
            !same(&secure, &replayed),
            "seed {seed} reproduced the secure run"
        );
    }
}
