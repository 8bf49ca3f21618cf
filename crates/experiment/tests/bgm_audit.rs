//! BGM audits through the library: both engines certify what the theory
//! says, and an experiment simulated unit by unit in shards, merged and
//! finalized, gives the bounds of the same experiment audited in memory.

// Tests may panic: the fallible-API guard (clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

mod common;

use common::fixtures::BGM_SETTING;
use common::{parse_bgm, simulate_in_three_shards, with_partial_shuffle};

use std::path::Path;

use dpaudit_experiment::bgm::audit::{audit_setting, prepare, prepare_all};
use dpaudit_experiment::bgm::engine::{
    BgmEngine, CpuBgmEngine, TensorBgmEngine, TENSOR_SELECTION_FIRST_CHUNK,
};
use dpaudit_experiment::bgm::runner::merge_bgm;

fn tensor_engine() -> TensorBgmEngine {
    TensorBgmEngine::new(tch::Device::Cpu, None).unwrap()
}

#[test]
fn tensor_engine_certifies_more_than_poisson_and_less_than_chua() {
    // T = 100, σ = 1, full shuffle, 2·10⁴ runs per hypothesis: the Poisson ε
    // (PLD) is 0.718 and the Chua et al. 2024 lower bound 4.06 (Annamalai et
    // al. 2024 §5, Figure 2); 2·10⁴ runs certify an ε_emp between the two
    // (tests/cli_bgm.rs asserts the same of the Rust engine).
    let p = prepare(parse_bgm(BGM_SETTING).settings[0].clone()).unwrap();
    let r = audit_setting(&p, &tensor_engine()).unwrap();
    let chua = r.epsilon_shuffle_lower_chua.unwrap();
    let lb = r.lower_bound.as_ref().unwrap();
    assert!((r.epsilon_poisson_pld - 0.718).abs() < 1e-2);
    assert!(
        lb.epsilon > r.epsilon_poisson_pld && lb.epsilon < chua,
        "ε_emp = {}, Poisson {}, Chua {chua}",
        lb.epsilon,
        r.epsilon_poisson_pld
    );
    assert!(lb.valid_at_confidence);
    assert!(r.simulation_seconds > 0.0 && r.simulation_seconds <= r.wall_seconds);
    assert!((r.simulation_observations_per_second * r.simulation_seconds - 40_000.0).abs() < 1e-6);
}

#[test]
fn tensor_engine_partial_shuffle_search_picks_the_first_batch_for_k_equal_b() {
    // K = B: the target is always in batch 0, so the guess k = 1 wins; the
    // bound at k = 1 (a plain Gaussian, σ = 1) exceeds the Poisson ε.
    let text = BGM_SETTING
        .replace("expected_batch_size = 1", "expected_batch_size = 10")
        .replace(
            "sampler = \"shuffle\"",
            "sampler = { partial_shuffle = { buffer_size = 10 } }",
        )
        .replace("runs = 20000", "runs = 20000\nguesses = [1, 100]");
    let p = prepare(parse_bgm(&text).settings[0].clone()).unwrap();
    let engine = tensor_engine();
    assert_eq!(engine.selection_first_chunk(), TENSOR_SELECTION_FIRST_CHUNK);
    let r = audit_setting(&p, &engine).unwrap();
    let search = r.guess_search.as_ref().unwrap();
    assert_eq!(search.chosen_columns, 1, "{:?}", search.per_guess);
    assert!(
        r.epsilon_emp() > r.epsilon_poisson_pld,
        "ε_emp = {} vs Poisson {}",
        r.epsilon_emp(),
        r.epsilon_poisson_pld
    );
    // Selection runs (2 guesses × 5000 runs × 2) are counted with the evaluation runs.
    let simulated = r.simulation_observations_per_second * r.simulation_seconds;
    assert!((simulated - 60_000.0).abs() < 1e-6, "{simulated}");
}

/// Two settings (one partial shuffle) in three shards, unit by unit through
/// the library, merged: the bounds equal those of the in-memory audit (the
/// same scores, so the same bound, to the bit).
#[test]
fn units_in_shards_merged_equal_the_in_memory_audit() {
    let text = with_partial_shuffle(BGM_SETTING, "runs = 3000\nguesses = [1, 2, 100]");
    let experiment = parse_bgm(&text);
    let settings = prepare_all(Path::new("t.toml"), &experiment).unwrap();
    let engine = CpuBgmEngine { threads: 1 };
    let dir = tempfile::tempdir().unwrap();
    let shards = simulate_in_three_shards(dir.path(), &experiment, &settings, &engine, |bgm| {
        // 20 000 runs: 5 chunks of 4096; the partial-shuffle setting: 1.
        assert_eq!(bgm.units().len(), 6);
    });
    let merged = merge_bgm(&dir.path().join("merged"), &shards, "library test").unwrap();
    assert_eq!(merged.copied, 6);
    for (p, r) in settings.iter().zip(&merged.report.settings) {
        let memory = audit_setting(p, &engine).unwrap();
        assert_eq!(r.lower_bound, memory.lower_bound, "{}", r.name);
        assert_eq!(r.guess_search, memory.guess_search, "{}", r.name);
        assert_eq!(r.epsilon_poisson_pld, memory.epsilon_poisson_pld);
    }
}
