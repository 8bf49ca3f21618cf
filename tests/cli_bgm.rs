//! End-to-end: `dpaudit bgm --config FILE.toml`, the shuffling audit of the
//! Batched Gaussian Mechanism (spec 000 §2.3, §5.2), on a tiny config.

use std::path::Path;
use std::process::{Command, Output};

fn bgm(config: &Path, out_dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpaudit"))
        .args(["bgm", "--json", "--config"])
        .arg(config)
        .arg("--out-dir")
        .arg(out_dir)
        .output()
        .unwrap()
}

/// T = 100, σ = 1, one epoch: the setting of spec 000 §5.2 where shuffling
/// leaks far more than its Poisson ε.
const SHUFFLE: &str = r#"
description = "tiny"

[[settings]]
name = "shuffle T=100 σ=1"
steps = 100
epochs = 1
expected_batch_size = 1
noise_multiplier = 1.0
sampler = "shuffle"
dataset = "shuffle_worst_case"
runs = 20000
delta = 1e-5
confidence = 0.95
seed = 3

[[settings]]
name = "no shuffling K=B"
steps = 100
epochs = 1
expected_batch_size = 10
noise_multiplier = 1.0
sampler = { partial_shuffle = { buffer_size = 10 } }
dataset = "shuffle_worst_case"
runs = 20000
guesses = [1, 100]
delta = 1e-5
confidence = 0.95
seed = 4
"#;

#[test]
fn tiny_config_reports_poisson_chua_and_empirical_epsilon() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tiny.toml");
    std::fs::write(&config, SHUFFLE).unwrap();
    let out_dir = dir.path().join("out");
    let out = bgm(&config, &out_dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("audit.json")).unwrap())
            .unwrap();
    assert_eq!(r, on_disk);
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("| shuffle T=100 σ=1 | shuffle |"),
        "{summary}"
    );

    let s = &r["settings"][0];
    // Spec 000 §4/§7: PLD ε of 100 Poisson steps at q = 0.01, σ = 1, δ = 1e-5 is 0.718;
    // the Chua et al. lower bound for shuffling is 4.06.
    let poisson = s["epsilon_poisson_pld"].as_f64().unwrap();
    let chua = s["epsilon_shuffle_lower_chua"].as_f64().unwrap();
    assert!((poisson - 0.718).abs() < 1e-2, "Poisson ε = {poisson}");
    assert!((chua - 4.06).abs() < 2e-2, "Chua ε = {chua}");
    assert_eq!(s["noise_multiplier_source"], "given");
    assert_eq!(s["runs_per_hypothesis"], 20000);
    let lb = &s["lower_bound"];
    assert_eq!(lb["selection"]["policy"], "split");
    assert_eq!(lb["confidence"], 0.95);
    assert_eq!(lb["valid_at_confidence"], true);
    // 2·10⁴ runs certify less than the paper's 4.01 at 10⁹ (spec 000 §5.2) but
    // more than the Poisson ε, and never more than the Chua bound.
    let emp = lb["epsilon"].as_f64().unwrap();
    assert!(
        emp > poisson && emp < chua,
        "ε_emp = {emp}, Poisson {poisson}, Chua {chua}"
    );

    // K = B: the target is always in batch 0, so the guess k = 1 wins and the
    // mechanism is a plain Gaussian with σ = 1 (ε ≈ 4.4 at δ = 1e-5, closed form),
    // certified above the Poisson ε 0.718 (same σ, T) with 2·10⁴ runs.
    let k = &r["settings"][1];
    assert_eq!(k["guess_search"]["chosen_columns"], 1);
    assert_eq!(k["guess_search"]["per_guess"].as_array().unwrap().len(), 2);
    let emp_k = k["lower_bound"]["epsilon"].as_f64().unwrap();
    let poisson_k = k["epsilon_poisson_pld"].as_f64().unwrap();
    assert!(
        emp_k > poisson_k,
        "K = B: ε_emp = {emp_k} vs Poisson {poisson_k}"
    );
}

#[test]
fn bad_buffer_size_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    // K = 15 is not a multiple of B = 10; the first setting is valid, so the
    // refusal must come before any simulation (nothing written).
    std::fs::write(
        &config,
        SHUFFLE.replace("buffer_size = 10 }", "buffer_size = 15 }"),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = bgm(&config, &out_dir);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("buffer_size"), "{err}");
    assert!(err.contains("settings[1]"), "{err}");
    assert!(
        !out_dir.exists(),
        "output written despite an invalid setting"
    );
}

#[test]
fn unknown_fields_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("typo.toml");
    std::fs::write(
        &config,
        SHUFFLE.replace("seed = 3", "seed = 3\nnoise_multiplyer = 2.0"),
    )
    .unwrap();
    let out = bgm(&config, &dir.path().join("out"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown field `noise_multiplyer`"), "{err}");
}

/// Simulations that cannot fit in memory are refused before anything runs,
/// naming the field; a process abort on the allocation is what this replaces.
#[test]
fn a_simulation_too_large_for_memory_is_refused_naming_runs() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("huge.toml");
    std::fs::write(
        &config,
        SHUFFLE.replacen("runs = 20000", "runs = 100000000000", 1),
    )
    .unwrap();
    let out = bgm(&config, &dir.path().join("out"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("memory allocation"),
        "{err}"
    );
    assert!(err.contains("`runs`") && err.contains("GiB"), "{err}");
    assert!(!dir.path().join("out").exists());
}
