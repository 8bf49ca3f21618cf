//! End-to-end: `dpaudit bgm --config FILE.toml`, the shuffling audit of the
//! Batched Gaussian Mechanism (Annamalai et al. 2024 §4.1, §5), on a tiny
//! config; its out-dir, shards and merges.

mod common;

use common::fixtures::{with, TINY_BGM};
use common::{assert_second_process_is_refused, binary, dpaudit_on, failure, ok, read, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `dpaudit bgm --json --config CONFIG --out-dir OUT [extra]`, not yet started.
fn bgm_command(config: &Path, out_dir: &Path, extra: &[&str]) -> Command {
    let mut c = binary();
    c.args(["bgm", "--json", "--config"])
        .arg(config)
        .arg("--out-dir")
        .arg(out_dir)
        .args(extra);
    c
}

/// `dpaudit bgm --json --config CONFIG --out-dir OUT [extra]`, run to its end.
fn bgm_with(config: &Path, out_dir: &Path, extra: &[&str]) -> Output {
    bgm_command(config, out_dir, extra).output().unwrap()
}

fn bgm(config: &Path, out_dir: &Path) -> Output {
    bgm_with(config, out_dir, &[])
}

#[test]
fn tiny_config_reports_poisson_chua_and_empirical_epsilon() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "tiny.toml", TINY_BGM);
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
    // PLD ε of 100 Poisson steps at q = 0.01, σ = 1, δ = 1e-5 is 0.718 (dp_accounting's
    // PLD accountant gives the same); the Chua et al. 2024 lower bound for shuffling
    // at these parameters is 4.06 (Annamalai et al. 2024 §5 report both).
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
    // 2·10⁴ runs certify less than the paper's 4.01 at 10⁹ runs (Annamalai et al. 2024 §5) but
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
    // K = 15 is not a multiple of B = 10; the first setting is valid, so the
    // refusal must come before any simulation (nothing written).
    let config = write(
        dir.path(),
        "bad.toml",
        &with(TINY_BGM, &[("buffer_size = 10 }", "buffer_size = 15 }")]),
    );
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
    let config = write(
        dir.path(),
        "typo.toml",
        &with(
            TINY_BGM,
            &[("seed = 3", "seed = 3\nnoise_multiplyer = 2.0")],
        ),
    );
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
    let config = write(
        dir.path(),
        "huge.toml",
        &with(TINY_BGM, &[("runs = 20000", "runs = 100000000000")]),
    );
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

/// `audit.json` without its timings (`dpaudit_experiment::bgm::audit::TIMING_FIELDS`),
/// the only fields that differ between two runs of one experiment.
fn without_timings(audit: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(audit).unwrap();
    for s in v["settings"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        for f in dpaudit_experiment::bgm::audit::TIMING_FIELDS {
            assert!(s.remove(f).is_some(), "{f}");
        }
    }
    v
}

/// The first setting of `tests/fixtures/tiny-bgm.toml`: 20 000 runs are 5 chunks of 4096 runs
/// (`dpaudit_attacks::CHUNK_SIZE`) on the Rust engine; the partial-shuffle
/// setting is one more chunk (its guess search decides what the runs score).
const CHUNKS: usize = 6;

#[test]
fn sharded_and_merged_equals_a_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "tiny.toml", TINY_BGM);
    let single = dir.path().join("single");
    ok(&bgm_with(&config, &single, &[]));
    let mut shards = Vec::new();
    for i in 0..3 {
        let s = dir.path().join(format!("s{i}"));
        let stdout = ok(&bgm_with(&config, &s, &["--shard", &format!("{i}/3")]));
        assert!(stdout.contains("belong to other shards"), "{stdout}");
        assert!(!s.join("audit.json").exists());
        shards.push(s);
    }
    let merged = dir.path().join("merged");
    let paths: Vec<&Path> = shards.iter().map(|p| p.as_path()).collect();
    let out = dpaudit_on(&["merge", "--out-dir", merged.to_str().unwrap()], &paths);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("merged {CHUNKS} chunk(s)")));
    assert_eq!(
        read(&merged.join("scores.csv")),
        read(&single.join("scores.csv"))
    );
    assert_eq!(
        without_timings(&read(&merged.join("audit.json"))),
        without_timings(&read(&single.join("audit.json")))
    );
    for c in 0..CHUNKS {
        assert!(merged.join(format!("chunks/chunk-{c:06}.json")).exists());
    }
    // The same shard twice is a duplicate; a missing shard is named.
    let e = failure(&dpaudit_on(
        &["merge", "--out-dir"],
        &[&dir.path().join("m2"), &shards[0], &shards[0]],
    ));
    assert!(e.contains("duplicate") && e.contains("0/3"), "{e}");
    let e = failure(&dpaudit_on(
        &["merge", "--out-dir"],
        &[&dir.path().join("m3"), &shards[0], &shards[1]],
    ));
    assert!(e.contains("missing") && e.contains("2/3"), "{e}");
}

mod out_dir_faults {
    use super::*;

    /// Minutes of simulation: the first setting's 2·10⁴ runs of 100 steps
    /// become 5·10⁶ runs of 1000 steps.
    fn endless(dir: &Path) -> PathBuf {
        let text = with(
            TINY_BGM,
            &[
                ("runs = 20000", "runs = 5000000"),
                ("steps = 100", "steps = 1000"),
            ],
        );
        write(dir, "endless.toml", &text)
    }

    #[test]
    fn a_second_process_on_the_same_out_dir_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        // Minutes of simulation: the first process is killed once the
        // second has been refused.
        let config = endless(dir.path());
        let out = dir.path().join("out");
        let mut first = binary();
        first
            .args(["bgm", "--threads", "1", "--config"])
            .arg(&config)
            .arg("--out-dir")
            .arg(&out);
        assert_second_process_is_refused(first, bgm_command(&config, &out, &[]), &out);
    }

    #[test]
    fn edited_and_truncated_chunks_are_named_and_only_they_are_recomputed() {
        let dir = tempfile::tempdir().unwrap();
        let config = write(dir.path(), "tiny.toml", TINY_BGM);
        let out = dir.path().join("out");
        ok(&bgm_with(&config, &out, &[]));
        let scores = read(&out.join("scores.csv"));
        let chunk = |c: usize| out.join("chunks").join(format!("chunk-{c:06}.json"));
        let untouched = std::fs::metadata(chunk(0)).unwrap().modified().unwrap();
        // Edit one score of chunk 1 (a digit of its first with-target score);
        // truncate chunk 3.
        let text = read(&chunk(1));
        let at = text.find("\"with_target\":[").unwrap() + 16;
        let digit = text[at..].find(|c: char| c.is_ascii_digit()).unwrap() + at;
        let flipped = if &text[digit..=digit] == "7" {
            "8"
        } else {
            "7"
        };
        let mut edited = text.clone();
        edited.replace_range(digit..=digit, flipped);
        assert_ne!(edited, text);
        std::fs::write(chunk(1), edited).unwrap();
        let text = read(&chunk(3));
        std::fs::write(chunk(3), &text[..text.len() / 2]).unwrap();
        // Merging is refused, naming the damaged chunk …
        let e = failure(&dpaudit_on(
            &["merge", "--out-dir"],
            &[&dir.path().join("m"), &out],
        ));
        assert!(
            e.contains("chunk-000001.json") && e.contains("damaged"),
            "{e}"
        );
        // … and a resume names both and recomputes only them.
        let again = bgm_with(&config, &out, &[]);
        ok(&again);
        let err = String::from_utf8_lossy(&again.stderr);
        assert!(
            err.contains("chunk 1 is damaged") && err.contains("chunk 3 is damaged"),
            "{err}"
        );
        assert!(
            err.contains(&format!(
                "{} chunk(s) already on disk, 2 to simulate",
                CHUNKS - 2
            )),
            "{err}"
        );
        assert_eq!(read(&out.join("scores.csv")), scores);
        assert_eq!(
            std::fs::metadata(chunk(0)).unwrap().modified().unwrap(),
            untouched
        );
        assert!(out.join("chunks/chunk-000001.json.damaged").exists());
    }

    #[test]
    fn an_out_dir_of_another_experiment_or_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = write(dir.path(), "tiny.toml", TINY_BGM);
        let out = dir.path().join("out");
        ok(&bgm_with(&config, &out, &["--shard", "0/4"]));
        let other = write(
            dir.path(),
            "other.toml",
            &with(TINY_BGM, &[("seed = 3", "seed = 30")]),
        );
        let e = failure(&bgm_with(&other, &out, &["--shard", "0/4"]));
        assert!(e.contains("different experiment"), "{e}");
        let manifest = read(&out.join("config.json"));
        let old = manifest.replace("\"format_version\": 2", "\"format_version\": 1");
        assert_ne!(old, manifest);
        std::fs::write(out.join("config.json"), old).unwrap();
        let e = failure(&bgm_with(&config, &out, &["--shard", "0/4"]));
        assert!(e.contains("format 1") && e.contains("new --out-dir"), "{e}");
    }

    #[test]
    fn an_unwritable_out_dir_is_refused_before_anything_is_simulated() {
        let dir = tempfile::tempdir().unwrap();
        // Minutes of simulation if it started.
        let config = endless(dir.path());
        // Below a regular file: no one can create it, root included.
        let file = dir.path().join("plain-file");
        std::fs::write(&file, "").unwrap();
        let e = failure(&bgm_with(&config, &file.join("out"), &[]));
        assert!(
            e.contains("not writable") && e.contains("nothing was computed"),
            "{e}"
        );
        assert!(!e.contains("Poisson ε"), "{e}");
        // The same for merge.
        let e = failure(&dpaudit_on(
            &["merge", "--out-dir"],
            &[&file.join("m"), dir.path()],
        ));
        assert!(e.contains("not writable"), "{e}");
    }
}

#[test]
fn slurm_writes_a_bgm_array_over_its_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "tiny.toml", TINY_BGM);
    let out = dir.path().join("cluster");
    let stdout = ok(&dpaudit_on(
        &["slurm", "--tasks", "3", "--out-dir", out.to_str().unwrap()],
        &[&config],
    ));
    assert!(stdout.contains("3 array tasks"), "{stdout}");
    let script = read(&out.join("slurm/shards.sbatch"));
    assert!(
        script.contains("'bgm' --config '") && script.contains("--shard auto/3"),
        "{script}"
    );
    let e = failure(&dpaudit_on(
        &["slurm", "--tasks", "7", "--out-dir", out.to_str().unwrap()],
        &[&config],
    ));
    assert!(e.contains(&format!("expected 1 to {CHUNKS}")), "{e}");
}

/// `dpaudit run` of a `kind = "bgm"` file is `dpaudit bgm`: the same
/// out-dir, byte for byte but for the timings; `dpaudit merge` finds its
/// shards' kind in their manifests.
#[test]
fn dpaudit_run_of_a_bgm_file_is_dpaudit_bgm() {
    let dir = tempfile::tempdir().unwrap();
    // `dpaudit bgm` also reads a file without the `kind` line.
    let config = write(
        dir.path(),
        "tiny.toml",
        &with(TINY_BGM, &[("kind = \"bgm\"", "")]),
    );
    let alias = dir.path().join("alias");
    ok(&bgm(&config, &alias));
    let kinded = write(dir.path(), "kinded.toml", TINY_BGM);
    let mut shards = Vec::new();
    for i in 0..2 {
        let shard = dir.path().join(format!("run-{i}"));
        let shard_arg = format!("{i}/2");
        ok(&dpaudit_on(
            &[
                "run",
                "--json",
                "--shard",
                &shard_arg,
                "--out-dir",
                shard.to_str().unwrap(),
            ],
            &[&kinded],
        ));
        shards.push(shard);
    }
    let merged = dir.path().join("merged");
    let paths: Vec<&Path> = shards.iter().map(|p| p.as_path()).collect();
    ok(&dpaudit_on(
        &["merge", "--out-dir", merged.to_str().unwrap()],
        &paths,
    ));
    // summary.md holds the timings.
    assert_eq!(
        read(&merged.join("scores.csv")),
        read(&alias.join("scores.csv"))
    );
    let mut a = without_timings(&read(&alias.join("audit.json")));
    let mut b = without_timings(&read(&merged.join("audit.json")));
    // The config is named as given: the two files differ in name only.
    a["config"] = serde_json::Value::Null;
    b["config"] = serde_json::Value::Null;
    assert_eq!(a, b);
}
