//! Results that cannot fit in memory are refused before anything of their
//! size is allocated: an experiment with an absurd `runs` (10¹¹) is refused
//! with the estimate and the limit by every entry point of the library — the
//! estimate itself, `run_in_memory`, `ExperimentDir::claim` (before
//! `inclusion.csv` is built) — instead of growing until the machine runs out.
//!
//! The experiment is `tests/fixtures/tiny-canary.toml` (no data files).

// Tests may panic: the fallible-API guard (crates/train/clippy.toml, shared by this crate) is for library code.
#![allow(clippy::disallowed_methods)]

mod common;

use common::canary_config;
use common::fixtures::{with, TINY_CANARY};

use dpaudit_experiment::canary::chunk::Prepared;
use dpaudit_experiment::canary::runner::{
    check_results_memory_against, holder_of, results_memory, ResultsHolder,
};
use dpaudit_experiment::canary::settings::ExperimentConfig;
use dpaudit_experiment::{run_in_memory, ExperimentDir};
use dpaudit_store::{OutDir, Shard};
use dpaudit_train::trainer::Silent;

const HUGE_RUNS: u64 = 100_000_000_000;

/// `tests/fixtures/tiny-canary.toml` with `runs` runs.
fn config(runs: u64) -> ExperimentConfig {
    let runs = format!("runs = {runs}");
    canary_config(&with(TINY_CANARY, &[("runs = 40", &runs)]), "test.toml")
}

const GIB: u64 = 1 << 30;

#[test]
fn the_estimate_grows_with_runs_canaries_and_scores() {
    let huge = config(HUGE_RUNS);
    for holder in [
        ResultsHolder::OutDir,
        ResultsHolder::Shard,
        ResultsHolder::Memory,
    ] {
        let e = results_memory(&huge, holder);
        // At least 6 bytes per run in every holder: 10¹¹ runs need > 500 GiB.
        assert!(e.total() > 500 * GIB, "{holder:?}: {e}");
        assert!(
            e.to_string().contains("100000000000 runs × 1 canaries"),
            "{e}"
        );
    }
    // Rows of 2 scores: the finalizing out-dir holds more than a shard.
    let out = results_memory(&huge, ResultsHolder::OutDir).total();
    assert!(out > results_memory(&huge, ResultsHolder::Shard).total());
    assert!(out >= HUGE_RUNS * (48 + 16 + 24 + 12), "{out}");
    // 40 runs fit anywhere.
    assert!(results_memory(&config(40), ResultsHolder::OutDir).total() < 1 << 20);
    assert_eq!(holder_of(Shard::ALL), ResultsHolder::OutDir);
    assert_eq!(
        holder_of(Shard { index: 1, count: 4 }),
        ResultsHolder::Shard
    );
}

#[test]
fn an_absurd_runs_is_refused_with_the_estimate_and_the_limit() {
    let huge = config(HUGE_RUNS);
    let err = check_results_memory_against(&huge, ResultsHolder::OutDir, Some(16 * GIB))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("holding the experiment's results needs at least")
            && err.contains("16.00 GiB")
            && err.contains("`runs`")
            && err.contains("score rows"),
        "{err}"
    );
    check_results_memory_against(&config(40), ResultsHolder::OutDir, Some(16 * GIB)).unwrap();
    // Unknown available memory: nothing is refused.
    check_results_memory_against(&huge, ResultsHolder::OutDir, None).unwrap();
}

/// The library's entry points refuse on this machine's memory (10¹¹ runs
/// need terabytes) before building anything that grows with `runs`.
#[test]
fn run_in_memory_and_claim_refuse_before_allocating() {
    if dpaudit_train::preflight::available_memory().is_none() {
        eprintln!("no /proc/meminfo: nothing is refused here, skipping");
        return;
    }
    tch::set_num_threads(1);
    let huge = config(HUGE_RUNS);
    let err = run_in_memory(&huge, None, &mut Silent).unwrap_err();
    assert!(err.to_string().contains("`runs`"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let prepared = Prepared::new(&huge, None).unwrap();
    let out = OutDir::open(&path, "library test").unwrap();
    let err = ExperimentDir::claim(out, &prepared, Shard::ALL).unwrap_err();
    assert!(err.to_string().contains("`runs`"), "{err}");
    // Nothing was written: the out-dir this test created is gone again.
    assert!(!path.exists());
    // A shard writes the whole inclusion.csv: refused too.
    let out = OutDir::open(&path, "library test").unwrap();
    let err = ExperimentDir::claim(out, &prepared, Shard { index: 0, count: 4 }).unwrap_err();
    assert!(err.to_string().contains("inclusion.csv"), "{err}");
}
