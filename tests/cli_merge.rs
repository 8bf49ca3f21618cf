#![cfg(unix)]

//! End-to-end: the pure `dpaudit` merges canary shard out-dirs itself, with
//! no companion to hand over to, into the out-dir a one-process run
//! finalizes. The shards are written through the library's own out-dir code
//! (`dpaudit_plan::canary::outdir`) with made-up scores, since the pure crates
//! cannot train; `tests/cli_run.rs` merges shards of real training runs.

mod common;

use std::path::Path;

use dpaudit_data::seed::RunSeed;
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

    // A copy of `dpaudit` alone: nothing to hand a command over to.
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let bin = bin_dir.join("dpaudit");
    std::fs::copy(common::BINARY, &bin).unwrap();
    let merged = dir.path().join("merged");
    let out = std::process::Command::new(&bin)
        .args(["merge", "--out-dir"])
        .args([&merged, &s0, &s1])
        .env("PATH", &bin_dir)
        .output()
        .unwrap();
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
