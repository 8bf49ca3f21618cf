//! `trainer::train` end to end on the synthetic Purchase-100 stand-in (no
//! files needed): it runs, reports ε from the accountant with what it assumed,
//! and writes a checkpoint with PyTorch names and its metadata.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_data::seed::{Mode, Randomness};
use dpaudit_train::checkpoint;
use dpaudit_train::config::TrainConfig;
use dpaudit_train::trainer::{train, Silent};

#[path = "../../../tests/fixtures/mod.rs"]
mod fixtures;

use fixtures::{with, TINY_TRAIN};

/// `tests/fixtures/tiny-train.toml` with the `[sampler]` section's body
/// `sampler`.
fn config(sampler: &str) -> TrainConfig {
    let text = with(
        TINY_TRAIN,
        &[("kind = \"poisson\"\nsample_rate = 0.05", sampler)],
    );
    TrainConfig::from_toml(&text, "test.toml").unwrap()
}

#[test]
fn a_poisson_run_reports_a_valid_epsilon_and_writes_a_checkpoint() {
    let cfg = config("kind = \"poisson\"\nsample_rate = 0.05");
    let out = train(&cfg, &Randomness::secure(3).unwrap(), &mut Silent).unwrap();
    assert_eq!(out.mode, Mode::Secure);
    assert_eq!(out.steps, 4);
    assert_eq!(out.test_accuracy.len(), 2);
    assert!(out.test_accuracy.iter().all(|a| (0.0..=1.0).contains(a)));
    let p = out.privacy.clone().expect("σ > 0 gives an ε");
    assert!(p.valid_for_sampler);
    // PLD ε of 4 Poisson steps, q = 0.05, σ = 1 is small but positive.
    assert!(
        p.bound.epsilon > 0.0 && p.bound.epsilon < 2.0,
        "{}",
        p.bound.epsilon
    );
    let dir = tempfile::tempdir().unwrap();
    let meta = out.checkpoint_meta(&cfg);
    let files =
        checkpoint::save(out.model.as_ref(), &dir.path().join("m.safetensors"), &meta).unwrap();
    assert_eq!(files.len(), 2);
    let tensors = tch::Tensor::read_safetensors(&files[1]).unwrap();
    let mut names: Vec<String> = tensors.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    assert_eq!(names, ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]);
    let loaded = checkpoint::load(&files[1], tch::Device::Cpu).unwrap();
    assert_eq!(loaded.meta.mode, Mode::Secure);
    assert_eq!(loaded.meta.replica, 1);
    assert_eq!(loaded.meta.epsilon, Some(p.bound.epsilon));
    for ((n, a), (_, b)) in out
        .model
        .named_parameters()
        .iter()
        .zip(loaded.model.named_parameters())
    {
        assert!(a.get(1).equal(&b.get(0)), "{n} differs after a round trip");
    }
}

#[test]
fn a_shuffled_run_is_flagged_as_accounted_by_the_poisson_proxy() {
    let out = train(
        &config("kind = \"shuffle\"\nbatch_size = 50"),
        &Randomness::replayable(3),
        &mut Silent,
    )
    .unwrap();
    let p = out.privacy.unwrap();
    assert!(!p.valid_for_sampler);
    assert!(
        p.assumption.contains("NOT a valid bound"),
        "{}",
        p.assumption
    );
}
