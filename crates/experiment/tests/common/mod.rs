//! Set-up shared by the library tests: the experiment fixtures of the
//! workspace's `tests/fixtures/`, their parsers, and a BGM experiment
//! simulated in shards; the coverage assertion of the audit crate's tests.

// Every test file uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use dpaudit_experiment::bgm::audit::{BgmExperiment, PreparedSetting};
use dpaudit_experiment::bgm::engine::BgmEngine;
use dpaudit_experiment::bgm::runner::{BgmDir, BgmFinalized};
use dpaudit_experiment::canary::settings::ExperimentConfig;
use dpaudit_store::kind::ExperimentFile;
use dpaudit_store::{OutDir, Shard};

#[path = "../../../../tests/fixtures/mod.rs"]
pub mod fixtures;

include!("../../../audit/tests/common/assert_coverage.rs");

use fixtures::with;

/// A canary experiment file's `text` (`origin` names it in errors), read as
/// `dpaudit run` reads it: its `kind` line first, then the config; an
/// error as its message.
pub fn read_canary(text: &str, origin: &str) -> Result<ExperimentConfig, String> {
    let file = ExperimentFile::parse(Path::new(origin), text).map_err(|e| e.to_string())?;
    ExperimentConfig::from_toml(&file.text, origin).map_err(|e| e.to_string())
}

/// [`read_canary`] of a valid file.
pub fn canary_config(text: &str, origin: &str) -> ExperimentConfig {
    read_canary(text, origin).unwrap()
}

/// A BGM experiment file's `text`.
pub fn parse_bgm(text: &str) -> BgmExperiment {
    BgmExperiment::from_toml(Path::new("t.toml"), text).unwrap()
}

/// The one-setting BGM experiment `first` (named `t`, a full shuffle with
/// `runs = 20000`) followed by its partial-shuffle copy `k` (B = 10,
/// K = 20), whose `runs = 20000` line becomes `runs`.
pub fn with_partial_shuffle(first: &str, runs: &str) -> String {
    let k = with(
        first,
        &[
            ("name = \"t\"", "name = \"k\""),
            ("expected_batch_size = 1", "expected_batch_size = 10"),
            (
                "sampler = \"shuffle\"",
                "sampler = { partial_shuffle = { buffer_size = 20 } }",
            ),
            ("runs = 20000", runs),
        ],
    );
    format!("{first}{k}")
}

/// `experiment` simulated unit by unit through the library in three shards,
/// out-dirs `dir/s0` … `dir/s2`: `check` sees each shard once claimed, and
/// every shard ends incomplete. Returns the shards' out-dirs.
pub fn simulate_in_three_shards(
    dir: &Path,
    experiment: &BgmExperiment,
    settings: &[PreparedSetting],
    engine: &dyn BgmEngine,
    check: impl Fn(&BgmDir),
) -> Vec<PathBuf> {
    let mut shards = Vec::new();
    for i in 0..3 {
        let path = dir.join(format!("s{i}"));
        let out = OutDir::open(&path, "library test").unwrap();
        let shard = Shard { index: i, count: 3 };
        let bgm = BgmDir::claim(out, "t.toml", experiment, settings, engine, shard).unwrap();
        check(&bgm);
        for c in bgm.plan().unwrap().todo {
            bgm.run_unit(c).unwrap();
        }
        assert!(matches!(
            bgm.finalize().unwrap(),
            BgmFinalized::Incomplete(_)
        ));
        shards.push(path);
    }
    shards
}
