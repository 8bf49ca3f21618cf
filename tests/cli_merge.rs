#![cfg(unix)]

//! End-to-end: the pure `dpaudit` merges canary and BGM shard out-dirs
//! itself, with no companion to hand over to, into the out-dir a one-process
//! run finalizes. The canary shards are written through the library's own
//! out-dir code (`dpaudit_plan::canary::outdir`) with made-up scores, since
//! the pure crates cannot train; `tests/cli_run.rs` merges shards of real
//! training runs. The BGM shards are simulated by the library's CPU engine
//! (`dpaudit_plan::bgm`); `tests/cli_bgm.rs` shards and merges with the
//! `dpaudit bgm` command.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use dpaudit_data::seed::RunSeed;
use dpaudit_plan::bgm::audit::{prepare_all, BgmExperiment, TIMING_FIELDS};
use dpaudit_plan::bgm::engine::CpuBgmEngine;
use dpaudit_plan::bgm::runner::{BgmDir, BgmFinalized};
use dpaudit_plan::canary::audit_report::DataInfo;
use dpaudit_plan::canary::book::{rows_to_csv, ScoreRow};
use dpaudit_plan::canary::canaries::inclusion_bits;
use dpaudit_plan::canary::outdir::{finalize, fingerprint, CanaryWork, Finalized, Manifest};
use dpaudit_plan::canary::settings::ExperimentConfig;
use dpaudit_store::kind::ExperimentFile;
use dpaudit_store::outdir::{OutDir, FORMAT_VERSION};
use dpaudit_store::shard::Shard;
use dpaudit_store::store::Store;

fn config() -> ExperimentConfig {
    let file = ExperimentFile::parse(Path::new("tiny-canary.toml"), common::fixtures::TINY_CANARY)
        .unwrap();
    ExperimentConfig::from_toml(&file.text, "tiny-canary.toml").unwrap()
}

/// The out-dir `dir` of `shard` holding its chunks, scores made up from the
/// run, the canary and the bit (members score higher).
fn write_shard(dir: &Path, config: &ExperimentConfig, shard: Shard) -> Store<Manifest, CanaryWork> {
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        dpaudit_version: env!("CARGO_PKG_VERSION").into(),
        fingerprint: fingerprint(config).unwrap(),
        shard,
        experiment: config.clone(),
        claimed_epsilon: 8.0,
        claimed_assumption: "made up by the test".into(),
        claimed_valid_for_sampler: true,
        num_parameters: 4826,
        dirac_coordinates: vec![17],
        input_canary_labels: vec![],
        input_canary_true_labels: vec![],
        data: DataInfo {
            source: "made up by the test".into(),
            synthetic: true,
        },
    };
    let work = CanaryWork {
        config: config.clone(),
    };
    let store = Store::claim(OutDir::open(dir, "test").unwrap(), manifest, work).unwrap();
    let seed = RunSeed(config.train.seed);
    for c in (0..config.chunks()).filter(|&c| shard.owns(c)) {
        let mut rows = Vec::new();
        for run in c * config.chunk_size()..((c + 1) * config.chunk_size()).min(config.runs) {
            for (j, member) in inclusion_bits(seed, run, config.canary.count)
                .into_iter()
                .enumerate()
            {
                let base = (run * 7 % 11) as f64 / 11.0 + if member { 0.8 } else { 0.0 };
                rows.push(ScoreRow {
                    run,
                    canary: j,
                    member,
                    test_accuracy: 0.75,
                    scores: vec![base, base / 2.0 + 0.125],
                });
            }
        }
        store
            .write_unit(c, rows_to_csv(&config.audit.scores, &rows).as_bytes())
            .unwrap();
    }
    store
}

/// `dpaudit merge --out-dir MERGED SHARD...` run by a copy of `dpaudit`
/// alone in `dir/bin`, the only folder on `PATH`: nothing to hand a command
/// over to.
fn lone_merge(dir: &Path, merged: &Path, shards: &[&Path]) -> Output {
    let bin_dir = dir.join("bin");
    let bin = bin_dir.join("dpaudit");
    if !bin.exists() {
        std::fs::create_dir_all(&bin_dir).unwrap();
        std::fs::copy(common::BINARY, &bin).unwrap();
    }
    std::process::Command::new(&bin)
        .args(["merge", "--out-dir"])
        .arg(merged)
        .args(shards)
        .env("PATH", &bin_dir)
        .output()
        .unwrap()
}

#[test]
fn the_pure_binary_merges_canary_shards_into_the_one_process_out_dir() {
    let dir = tempfile::tempdir().unwrap();
    let config = config();
    let single = dir.path().join("single");
    let report = match finalize(&write_shard(&single, &config, Shard::ALL)).unwrap() {
        Finalized::Complete(r) => r,
        Finalized::Incomplete(missing) => panic!("missing {missing:?}"),
    };
    let s0 = dir.path().join("s0");
    let s1 = dir.path().join("s1");
    drop(write_shard(&s0, &config, Shard { index: 0, count: 2 }));
    drop(write_shard(&s1, &config, Shard { index: 1, count: 2 }));

    let merged = dir.path().join("merged");
    let out = lone_merge(dir.path(), &merged, &[&s0, &s1]);
    let stdout = common::ok(&out);
    assert!(
        stdout.starts_with(&format!("merged 4 chunk(s) into {}\n", merged.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("claimed ε = {:.4}", report.epsilon_upper)),
        "{stdout}"
    );
    for file in ["scores.csv", "audit.json", "summary.md", "inclusion.csv"] {
        assert_eq!(
            std::fs::read(merged.join(file)).unwrap(),
            std::fs::read(single.join(file)).unwrap(),
            "{file}"
        );
    }
    // The bounds are there (the same-data scores separate members).
    assert_eq!(report.lower_bounds.len(), 4);
}

/// The fields both settings of [`tiny_bgm`] share.
const BGM_COMMON: &str = r#"steps = 10
epochs = 1
expected_batch_size = 1
noise_multiplier = 1.0
sampler = "shuffle"
dataset = "shuffle_worst_case"
runs = 8192
delta = 1e-5
confidence = 0.95"#;

/// A BGM experiment with a scores-mode setting (2 units of 4096 runs,
/// `dpaudit_attacks::CHUNK_SIZE`) and a counts-mode one (1 unit of selection
/// runs, 2 of evaluation runs): 5 units.
fn tiny_bgm() -> String {
    format!(
        "kind = \"bgm\"\ndescription = \"the pure merge\"\n\n\
         [[settings]]\nname = \"scores\"\n{BGM_COMMON}\nseed = 3\n\n\
         [[settings]]\nname = \"counts\"\n{BGM_COMMON}\n\
         evaluation = {{ counts = {{ selection_runs = 4096 }} }}\nseed = 4\n"
    )
}

const BGM_UNITS: u64 = 5;

/// Simulate the units of `shard` of [`tiny_bgm`] into the out-dir `dir` on
/// the CPU engine, as `dpaudit bgm --shard` does, and finalize it.
fn simulate_bgm_shard(dir: &Path, shard: Shard) -> BgmFinalized {
    let file = ExperimentFile::parse(Path::new("tiny-bgm.toml"), &tiny_bgm()).unwrap();
    let experiment = BgmExperiment::from_toml(&file.path, &file.text).unwrap();
    let settings = prepare_all(&file.path, &experiment).unwrap();
    let engine = CpuBgmEngine { threads: 1 };
    let out = OutDir::open(dir, "test").unwrap();
    let bgm = BgmDir::claim(out, "tiny-bgm.toml", &experiment, &settings, &engine, shard).unwrap();
    assert_eq!(bgm.units().len() as u64, BGM_UNITS);
    for c in bgm.plan().unwrap().todo {
        bgm.run_unit(c).unwrap();
    }
    bgm.finalize().unwrap()
}

/// `audit.json` without its timings ([`TIMING_FIELDS`]), the only fields
/// that differ between two finalizations of one experiment (the wall time
/// includes the bounding, timed when finalizing).
fn without_timings(path: &Path) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&common::read(path)).unwrap();
    for s in v["settings"].as_array_mut().unwrap() {
        for f in TIMING_FIELDS {
            assert!(s.as_object_mut().unwrap().remove(f).is_some(), "{f}");
        }
    }
    v
}

/// `summary.md` without the table's timing columns (the last two: wall
/// seconds and simulated observations per second).
fn without_timing_columns(summary: &str) -> String {
    summary
        .lines()
        .map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            match cells.len() {
                n if n > 3 => cells[..n - 3].join("|"),
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn chunk_file(dir: &Path, c: u64) -> PathBuf {
    dir.join(format!("chunks/chunk-{c:06}.json"))
}

#[test]
fn the_pure_binary_merges_bgm_shards_of_both_modes_into_the_one_process_out_dir() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    let BgmFinalized::Complete(report) = simulate_bgm_shard(&single, Shard::ALL) else {
        panic!("the one-process run is incomplete");
    };
    let shards: Vec<PathBuf> = (0..2)
        .map(|index| {
            let s = dir.path().join(format!("s{index}"));
            let done = simulate_bgm_shard(&s, Shard { index, count: 2 });
            assert!(matches!(done, BgmFinalized::Incomplete(_)), "{done:?}");
            s
        })
        .collect();
    let shard_paths: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();

    // Shards simulated apart: the same scores, counts and bounds; every file
    // byte for byte but for the timings.
    let merged = dir.path().join("merged");
    let out = lone_merge(dir.path(), &merged, &shard_paths);
    let stdout = common::ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "merged {BGM_UNITS} chunk(s) into {}",
            merged.display()
        )),
        "{stderr}"
    );
    assert!(
        stdout.contains(&format!("written: {}/audit.json", merged.display())),
        "{stdout}"
    );
    for file in ["scores.csv", "counts.csv"] {
        assert_eq!(
            std::fs::read(merged.join(file)).unwrap(),
            std::fs::read(single.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(
        without_timings(&merged.join("audit.json")),
        without_timings(&single.join("audit.json"))
    );
    let modes: Vec<_> = report.settings.iter().map(|s| s.evaluation).collect();
    assert_eq!(modes, ["scores", "counts"]);
    assert!(report.settings[1].counted_bound.is_some());
    assert_eq!(
        without_timing_columns(&common::read(&merged.join("summary.md"))),
        without_timing_columns(&common::read(&single.join("summary.md")))
    );
    for c in 0..BGM_UNITS {
        assert!(chunk_file(&merged, c).exists(), "unit {c}");
    }
}
