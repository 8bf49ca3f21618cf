//! End to end: `dpaudit run`, `dpaudit merge` and `dpaudit compare` on a
//! tiny Dirac-canary audit: the files a run writes (bounds with their
//! metrics, plots of each bound, the one-run methods), resuming
//! after a lost chunk or a kill, refusing a foreign out-dir, shards merged to
//! the single run's scores, and the comparison table.
//!
//! The experiment is `tests/fixtures/tiny-canary.toml` (a 600 → 8 → 2 MLP on
//! the synthetic Purchase-100 stand-in, no data files needed, 3 steps per
//! run) or a variant of it.

mod common;

use common::fixtures::TINY_CANARY as EXPERIMENT;
use common::{
    assert_second_process_is_refused, binary, dpaudit_on, failure, ok, read, spawn_quiet, write,
};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// 40 runs in chunks of 10.
const CHUNKS: usize = 4;

/// `dpaudit run CONFIG --out-dir OUT --quiet [extra]`, not yet started.
fn run_command(config: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = binary();
    c.arg("run")
        .arg(config)
        .arg("--out-dir")
        .arg(out)
        .arg("--quiet")
        .args(extra);
    c
}

/// `dpaudit run CONFIG --out-dir OUT --quiet [extra]`, run to its end.
fn run(config: &Path, out: &Path, extra: &[&str]) -> Output {
    run_command(config, out, extra).output().unwrap()
}

fn chunk_files(out: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(out.join("chunks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("chunk-") && n.ends_with(".csv"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_run_writes_config_inclusion_scores_audit_summary_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "exp.toml", EXPERIMENT);
    let out = dir.path().join("out");
    let stdout = ok(&run(&config, &out, &[]));
    assert!(stdout.contains("claimed ε"), "{stdout}");

    let cfg: serde_json::Value = serde_json::from_str(&read(&out.join("config.json"))).unwrap();
    assert_eq!(cfg["experiment"]["runs"], 40);
    assert_eq!(cfg["num_parameters"], 600 * 8 + 8 + 8 * 2 + 2);
    assert_eq!(cfg["dirac_coordinates"].as_array().unwrap().len(), 1);
    assert!(cfg["fingerprint"].as_str().is_some_and(|f| f.len() == 16));

    // inclusion.csv: one ±1 bit per run (count = 1), the same bits as the
    // `member` column of scores.csv.
    let inclusion = read(&out.join("inclusion.csv"));
    let mut lines = inclusion.lines();
    assert_eq!(lines.next(), Some("run,canary,included"));
    let bits: Vec<bool> = lines
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!((f[0], f[1]), (i.to_string().as_str(), "0"), "line {l}");
            match f[2] {
                "1" => true,
                "-1" => false,
                other => panic!("inclusion bit {other}"),
            }
        })
        .collect();
    assert_eq!(bits.len(), 40);
    assert!(bits.iter().any(|&b| b) && bits.iter().any(|&b| !b));

    let scores = read(&out.join("scores.csv"));
    let mut lines = scores.lines();
    assert_eq!(
        lines.next(),
        Some("run,canary,member,test_accuracy,dirac,iterates")
    );
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 40);
    for (r, row) in rows.iter().enumerate() {
        assert_eq!(row[0], r.to_string());
        assert_eq!(
            row[2],
            if bits[r] { "1" } else { "0" },
            "run {r}: member vs inclusion.csv"
        );
        let dirac: f64 = row[4].parse().unwrap();
        let iterates: f64 = row[5].parse().unwrap();
        // Dirac canary C·e_d with C = 1: the iterates score telescopes to
        // C·(θ₀[d] − θ_T[d]) (Steinke et al. 2023 §4, white-box scores for
        // fixed canary gradients); float32 sums over
        // 4,826 coordinates allow (P+2)·2⁻²⁴ ≈ 3e-4 relative to Σ|δ||g|.
        assert!(
            (dirac - iterates).abs() <= 3e-4 * dirac.abs() + 1e-7,
            "run {r}: {dirac} vs {iterates}"
        );
    }

    let audit: serde_json::Value = serde_json::from_str(&read(&out.join("audit.json"))).unwrap();
    let eps_up = audit["epsilon_upper"].as_f64().unwrap();
    assert!(eps_up > 0.0 && eps_up.is_finite(), "{eps_up}");
    assert_eq!(audit["delta"].as_f64(), Some(1e-5));
    let lbs = audit["lower_bounds"].as_array().unwrap();
    // 2 scores × 2 methods.
    assert_eq!(lbs.len(), 4, "{lbs:?}");
    for b in lbs {
        let method = b["method"].as_str().unwrap();
        assert!(!method.is_empty());
        let eps = b["epsilon"].as_f64().unwrap();
        assert!(eps >= 0.0 && eps.is_finite(), "{b}");
        assert_eq!(
            b["confidence"].as_f64(),
            Some(0.95),
            "the default confidence"
        );
        assert!(
            b["selection"].as_str().is_some_and(|s| !s.is_empty()),
            "{b}"
        );
    }
    let methods: Vec<&str> = lbs.iter().map(|b| b["method"].as_str().unwrap()).collect();
    assert_ne!(methods[0], methods[1], "one entry per method: {methods:?}");

    let summary = read(&out.join("summary.md"));
    assert!(summary.starts_with("# Audit: tiny canary"), "{summary}");
    assert_eq!(
        summary
            .lines()
            .filter(|l| l.starts_with("| dirac") || l.starts_with("| iterates"))
            .count(),
        4,
        "{summary}"
    );

    // Every bound carries its metrics, its data and its policy: 40 runs.
    for b in lbs {
        let m = &b["metrics"];
        assert_eq!(
            m["members"].as_u64().unwrap() + m["nonmembers"].as_u64().unwrap(),
            40,
            "{b}"
        );
        assert!((0.0..=1.0).contains(&m["auc"].as_f64().unwrap()), "{b}");
        assert_eq!(m["tpr_at_fpr"].as_array().unwrap().len(), 2, "{b}");
        assert!(b["bounded_on"]["data"].is_string(), "{b}");
    }
    assert!(
        summary.contains("| AUC |") && summary.contains("TPR at FPR 10⁻³"),
        "{summary}"
    );

    for plot in [
        "epsilon",
        "hist-dirac",
        "hist-iterates",
        "tradeoff-dirac-eps-delta",
        "tradeoff-dirac-gdp",
        "roc-dirac-eps-delta",
        "roc-iterates-gdp",
    ] {
        let svg = read(&out.join("plots").join(format!("{plot}.svg")));
        assert!(
            svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
            "{plot}.svg"
        );
    }
    assert_eq!(chunk_files(&out).len(), CHUNKS);
}

#[test]
fn a_one_run_experiment_bounds_every_run_with_both_one_run_methods() {
    // 2 runs with 60 Dirac canaries each, every canary in or out with
    // probability ½: one-run (Steinke et al.) and f-DP one-run (Mahloujifar
    // et al.) bounds — the (ε, δ) family, and the Gaussian family under the
    // name that says what it assumes — each from run 0's canaries, and a
    // plot of each.
    let dir = tempfile::tempdir().unwrap();
    let exp = EXPERIMENT
        .replace("runs = 40", "runs = 2")
        .replace("replicas = 10", "replicas = 2")
        .replace("count = 1", "count = 60")
        .replace("scores = [\"dirac\", \"iterates\"]", "scores = [\"dirac\"]")
        .replace(
            "methods = [\"eps_delta\", \"gdp\"]",
            "methods = [\"one_run\", \"one_run_fdp\", \"one_run_fdp_gaussian\"]",
        );
    let config = write(dir.path(), "exp.toml", &exp);
    let out = dir.path().join("out");
    ok(&run(&config, &out, &[]));
    let audit: serde_json::Value = serde_json::from_str(&read(&out.join("audit.json"))).unwrap();
    let lbs = audit["lower_bounds"].as_array().unwrap();
    let methods: Vec<&str> = lbs.iter().map(|b| b["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["one-run", "one-run-fdp", "one-run-fdp-gaussian"],
        "{audit}"
    );
    for b in lbs {
        assert_eq!(b["run"], 0, "{b}");
        assert_eq!(b["per_run"].as_array().unwrap().len(), 2, "{b}");
        let m = &b["metrics"];
        assert_eq!(
            m["members"].as_u64().unwrap() + m["nonmembers"].as_u64().unwrap(),
            60,
            "{b}"
        );
    }
    // The default f-DP bound assumes nothing of the mechanism; the Gaussian
    // family reports μ⁻ beside ε and says what its ε assumes.
    assert_eq!(lbs[1]["evidence"]["family"], "eps-delta");
    assert_eq!(lbs[1]["assumes"], "nothing", "{}", lbs[1]);
    assert!(
        lbs[2]["evidence"]["mu_lower"].as_f64().is_some(),
        "{}",
        lbs[2]
    );
    assert_eq!(lbs[2]["evidence"]["family"], "gaussian");
    assert_eq!(lbs[2]["assumes"], "gaussian-tradeoff");
    // The experiment's own coins are fair: one-sided guesses are allowed.
    assert_eq!(lbs[0]["evidence"]["guess_family"], "with-one-sided");
    assert!(lbs[0]["evidence"]["inclusion"]["p_value"]
        .as_f64()
        .is_some());
    for plot in [
        "one-run-dirac-one-run",
        "one-run-dirac-one-run-fdp",
        "one-run-dirac-one-run-fdp-gaussian",
    ] {
        let svg = read(&out.join("plots").join(format!("{plot}.svg")));
        assert!(svg.contains("fraction of guesses correct"), "{plot}.svg");
    }
}

#[test]
fn resuming_after_losing_a_chunk_reproduces_the_scores_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "exp.toml", EXPERIMENT);
    let out = dir.path().join("out");
    ok(&run(&config, &out, &[]));
    let first = read(&out.join("scores.csv"));
    let kept = read(&out.join("chunks").join("chunk-000000.csv"));
    for f in ["chunks/chunk-000002.csv", "scores.csv", "audit.json"] {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    let again = run(&config, &out, &[]);
    ok(&again);
    assert_eq!(read(&out.join("scores.csv")), first);
    assert_eq!(
        read(&out.join("chunks").join("chunk-000000.csv")),
        kept,
        "finished chunks are not retrained"
    );
    assert!(out.join("audit.json").exists());
    assert_eq!(chunk_files(&out).len(), CHUNKS);
}

#[test]
fn a_different_experiment_in_the_same_out_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "exp.toml", EXPERIMENT);
    let out = dir.path().join("out");
    ok(&run(&config, &out, &[]));
    let before = read(&out.join("scores.csv"));
    let other = write(
        dir.path(),
        "other.toml",
        &EXPERIMENT.replace("seed = 5", "seed = 6"),
    );
    let refused = run(&other, &out, &[]);
    assert!(!refused.status.success());
    let e = String::from_utf8_lossy(&refused.stderr);
    assert!(
        e.contains("different experiment") && e.contains("config.json"),
        "{e}"
    );
    assert_eq!(
        read(&out.join("scores.csv")),
        before,
        "the refused run must not touch the out-dir"
    );
}

#[test]
fn two_shards_merged_equal_the_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "exp.toml", EXPERIMENT);
    let single = dir.path().join("single");
    ok(&run(&config, &single, &[]));
    let s0 = dir.path().join("s0");
    let s1 = dir.path().join("s1");
    let shard0 = ok(&run(&config, &s0, &["--shard", "0/2"]));
    assert!(shard0.contains("other shards"), "{shard0}");
    assert!(
        !s0.join("scores.csv").exists(),
        "a shard alone is not a finished audit"
    );
    assert_eq!(chunk_files(&s0), ["chunk-000000.csv", "chunk-000002.csv"]);
    ok(&run(&config, &s1, &["--shard", "1/2"]));
    assert_eq!(chunk_files(&s1), ["chunk-000001.csv", "chunk-000003.csv"]);
    let merged = dir.path().join("merged");
    ok(&dpaudit_on(&["merge", "--out-dir"], &[&merged, &s0, &s1]));
    assert_eq!(
        read(&merged.join("scores.csv")),
        read(&single.join("scores.csv"))
    );
    assert_eq!(
        read(&merged.join("inclusion.csv")),
        read(&single.join("inclusion.csv"))
    );
    let a: serde_json::Value = serde_json::from_str(&read(&merged.join("audit.json"))).unwrap();
    let b: serde_json::Value = serde_json::from_str(&read(&single.join("audit.json"))).unwrap();
    assert_eq!(a["lower_bounds"], b["lower_bounds"]);
    assert_eq!(a["epsilon_upper"], b["epsilon_upper"]);
    // A shard of another experiment is refused.
    let other = write(
        dir.path(),
        "other.toml",
        &EXPERIMENT.replace("seed = 5", "seed = 6"),
    );
    let foreign = dir.path().join("foreign");
    ok(&run(&other, &foreign, &["--shard", "1/2"]));
    let bad = dpaudit_on(
        &["merge", "--out-dir"],
        &[&dir.path().join("m2"), &s0, &foreign],
    );
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("different experiment"));
}

/// A run's scores do not depend on how many runs share a replica stack: the
/// same experiment in chunks of 10 and of 40 gives byte-identical scores
/// (every run's initialisation, batches and noise are keyed by its run index,
/// and a fixed-size sampler gives every replica the same batch length).
#[test]
fn scores_do_not_depend_on_the_replica_stack() {
    let dir = tempfile::tempdir().unwrap();
    let ten = write(dir.path(), "ten.toml", EXPERIMENT);
    let forty = write(
        dir.path(),
        "forty.toml",
        &EXPERIMENT.replace("replicas = 10", "replicas = 40"),
    );
    ok(&run(&ten, &dir.path().join("ten"), &[]));
    ok(&run(&forty, &dir.path().join("forty"), &[]));
    assert_eq!(chunk_files(&dir.path().join("ten")).len(), CHUNKS);
    assert_eq!(chunk_files(&dir.path().join("forty")).len(), 1);
    assert_eq!(
        read(&dir.path().join("ten/scores.csv")),
        read(&dir.path().join("forty/scores.csv"))
    );
}

#[test]
fn compare_writes_one_row_per_lower_bound() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.toml", EXPERIMENT);
    let b = write(
        dir.path(),
        "b.toml",
        &EXPERIMENT
            .replace("name = \"tiny canary\"", "name = \"random direction\"")
            .replace("kind = \"dirac\"", "kind = \"random_direction\"")
            .replace(
                "scores = [\"dirac\", \"iterates\"]",
                "scores = [\"cosine\"]",
            )
            .replace("methods = [\"eps_delta\", \"gdp\"]", "methods = [\"gdp\"]"),
    );
    let (oa, ob) = (dir.path().join("a"), dir.path().join("b"));
    ok(&run(&a, &oa, &[]));
    ok(&run(&b, &ob, &[]));
    let cmp = dir.path().join("cmp");
    ok(&dpaudit_on(&["compare", "--out-dir"], &[&cmp, &oa, &ob]));
    let md = read(&cmp.join("compare.md"));
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| experiment"))
        .collect();
    // 4 bounds of a (2 scores × 2 methods) + 1 of b.
    assert_eq!(rows.len(), 5, "{md}");
    assert_eq!(
        rows.iter()
            .filter(|r| r.starts_with("| tiny canary |"))
            .count(),
        4,
        "{md}"
    );
    assert_eq!(
        rows.iter()
            .filter(|r| r.starts_with("| random direction | ") && r.contains("| cosine |"))
            .count(),
        1,
        "{md}"
    );
    assert!(read(&cmp.join("compare.svg")).contains("<svg"));
}

/// 8 chunks of 10 runs × 8 steps (≥ 0.1 s a chunk): the kill, within a few
/// milliseconds of the first chunk file, lands while chunks are left to train.
fn slow_experiment() -> String {
    EXPERIMENT
        .replace("runs = 40", "runs = 80")
        .replace("steps = 3", "steps = 8")
}

#[test]
fn a_killed_run_resumes_to_the_uninterrupted_scores() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "exp.toml", &slow_experiment());
    let whole = dir.path().join("whole");
    ok(&run(&config, &whole, &[]));
    let out = dir.path().join("killed");
    let mut child = spawn_quiet(run_command(&config, &out, &[]));
    let first = out.join("chunks").join("chunk-000000.csv");
    let start = Instant::now();
    while !first.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its first chunk"
        );
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "no chunk after 300 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The secret bits were on disk before the first chunk was trained.
    assert_eq!(
        read(&out.join("inclusion.csv")),
        read(&whole.join("inclusion.csv"))
    );
    let done = chunk_files(&out).len();
    assert!(
        done < 8,
        "the kill must interrupt the run ({done} of 8 chunks on disk)"
    );
    assert!(!out.join("scores.csv").exists());
    let resumed = binary()
        .arg("run")
        .arg(&config)
        .arg("--out-dir")
        .arg(&out)
        .output()
        .unwrap();
    ok(&resumed);
    assert!(
        String::from_utf8_lossy(&resumed.stderr)
            .contains(&format!("resuming: {done} chunk(s) already on disk")),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(
        read(&out.join("scores.csv")),
        read(&whole.join("scores.csv"))
    );
    assert_eq!(chunk_files(&out).len(), 8);
}

#[test]
fn an_inconsistent_experiment_is_refused_before_any_file_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for (edit, field) in [
        ("insertion = \"every\"", "canary.every"),
        ("delta = 1e-5", "train.delta"),
        ("count = 1", "canary.count"),
    ] {
        let bad = match field {
            "canary.every" => EXPERIMENT.replace(edit, "insertion = \"every\"\nevery = 4"),
            "train.delta" => EXPERIMENT.replace(edit, "delta = 1.0"),
            // 4,827 Dirac canaries in a model of 4,826 parameters.
            _ => EXPERIMENT.replace(edit, "count = 4827").replace(
                "methods = [\"eps_delta\", \"gdp\"]",
                "methods = [\"one_run\"]",
            ),
        };
        let config = write(dir.path(), "bad.toml", &bad);
        let out = dir.path().join(field);
        let refused = run(&config, &out, &[]);
        assert!(!refused.status.success(), "{field}");
        let e = String::from_utf8_lossy(&refused.stderr);
        assert!(e.contains(field), "{field}: {e}");
        assert!(!out.exists(), "{field}: the out-dir must not be created");
    }
}

/// `runs = 100000000000` is refused at once with the memory its results
/// need and the memory there is, before the out-dir is created (it used to
/// grow in memory without output); `runs = 1e11`, a float, is refused by the
/// parser.
#[test]
fn runs_whose_results_cannot_fit_in_memory_are_refused_with_the_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "huge.toml",
        &EXPERIMENT.replace("runs = 40", "runs = 100000000000"),
    );
    let out = dir.path().join("out");
    let mut child = run_command(&config, &out, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A liveness guard, not a timing: the refusal takes well under a second.
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("runs = 10¹¹ was not refused within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = child.wait_with_output().unwrap();
    assert!(!refused.status.success());
    let e = String::from_utf8_lossy(&refused.stderr);
    assert!(
        e.contains("huge.toml")
            && e.contains("100000000000 runs")
            && e.contains("GiB")
            && e.contains("of memory are available")
            && e.contains("`runs`")
            && !e.contains("panicked"),
        "{e}"
    );
    assert!(!out.exists(), "the out-dir must not be created");

    let config = write(
        dir.path(),
        "float.toml",
        &EXPERIMENT.replace("runs = 40", "runs = 1e11"),
    );
    let refused = run(&config, &out, &[]);
    assert!(!refused.status.success());
    let e = String::from_utf8_lossy(&refused.stderr);
    assert!(
        e.contains("float.toml") && e.contains("line 3") && e.contains("expected u64"),
        "{e}"
    );
    assert!(!out.exists());
}

/// The out-dir defends itself: every fault is named, and only what is damaged
/// is retrained.
mod out_dir_faults {
    use super::*;

    #[test]
    fn a_second_process_on_the_same_out_dir_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        // Minutes of training: the first run is killed once the second has
        // been refused.
        let endless = EXPERIMENT
            .replace("runs = 40", "runs = 100000")
            .replace("steps = 3", "steps = 50");
        let config = write(dir.path(), "exp.toml", &endless);
        let out = dir.path().join("out");
        assert_second_process_is_refused(
            run_command(&config, &out, &[]),
            run_command(&config, &out, &[]),
            &out,
        );
    }

    #[test]
    fn edited_and_truncated_chunks_are_named_and_only_they_are_retrained() {
        let dir = tempfile::tempdir().unwrap();
        let config = write(dir.path(), "exp.toml", EXPERIMENT);
        let out = dir.path().join("out");
        ok(&run(&config, &out, &[]));
        let scores = read(&out.join("scores.csv"));
        let chunk = |c: usize| out.join("chunks").join(format!("chunk-{c:06}.csv"));
        let untouched = std::fs::metadata(chunk(0)).unwrap().modified().unwrap();
        // Edit one score of chunk 1; truncate chunk 3.
        let text = read(&chunk(1));
        let line = text.lines().nth(1).unwrap().to_string();
        let mut fields: Vec<String> = line.split(',').map(str::to_string).collect();
        fields[4] = "12345".into();
        std::fs::write(chunk(1), text.replacen(&line, &fields.join(","), 1)).unwrap();
        let text = read(&chunk(3));
        std::fs::write(chunk(3), &text[..text.len() / 2]).unwrap();
        // Finalizing is refused, naming the damaged chunk …
        let merged = dir.path().join("m");
        let e = failure(&dpaudit_on(&["merge", "--out-dir"], &[&merged, &out]));
        assert!(
            e.contains("chunk-000001.csv") && e.contains("damaged"),
            "{e}"
        );
        // … and a resume names both and retrains only them.
        let again = run(&config, &out, &[]);
        let stdout = ok(&again);
        let err = String::from_utf8_lossy(&again.stderr);
        assert!(
            err.contains("chunk 1 is damaged") && err.contains("chunk 3 is damaged"),
            "{err}"
        );
        assert!(stdout.contains("trained 20 runs"), "{stdout}");
        assert_eq!(read(&out.join("scores.csv")), scores);
        assert_eq!(
            std::fs::metadata(chunk(0)).unwrap().modified().unwrap(),
            untouched
        );
        assert!(out.join("chunks/chunk-000001.csv.damaged").exists());
    }

    #[test]
    fn an_out_dir_of_another_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = write(dir.path(), "exp.toml", EXPERIMENT);
        let out = dir.path().join("out");
        ok(&run(&config, &out, &[]));
        let manifest = read(&out.join("config.json"));
        let old = manifest.replace("\"format_version\": 2", "\"format_version\": 1");
        assert_ne!(old, manifest);
        std::fs::write(out.join("config.json"), old).unwrap();
        let e = failure(&run(&config, &out, &[]));
        assert!(e.contains("format 1") && e.contains("new --out-dir"), "{e}");
    }

    #[test]
    fn edited_inclusion_bits_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = write(dir.path(), "exp.toml", EXPERIMENT);
        let out = dir.path().join("out");
        ok(&run(&config, &out, &["--shard", "0/2"]));
        let inc = read(&out.join("inclusion.csv"));
        let flipped = if inc.contains("\n0,0,1\n") {
            inc.replacen("\n0,0,1\n", "\n0,0,-1\n", 1)
        } else {
            inc.replacen("\n0,0,-1\n", "\n0,0,1\n", 1)
        };
        std::fs::write(out.join("inclusion.csv"), flipped).unwrap();
        let e = failure(&run(&config, &out, &["--shard", "0/2"]));
        assert!(e.contains("inclusion.csv") && e.contains("differ"), "{e}");
    }

    #[test]
    fn an_unwritable_out_dir_is_refused_before_anything_is_computed() {
        let dir = tempfile::tempdir().unwrap();
        let config = write(dir.path(), "exp.toml", EXPERIMENT);
        // Below a regular file: no one can create it, root included.
        let file = write(dir.path(), "plain-file", "");
        let start = Instant::now();
        let e = failure(&run(&config, &file.join("out"), &[]));
        assert!(
            e.contains("not writable") && e.contains("nothing was computed"),
            "{e}"
        );
        // Refused before preparing data or training (which take seconds).
        assert!(start.elapsed() < Duration::from_secs(30));
        // The same for merge and train.
        let e = failure(&dpaudit_on(
            &["merge", "--out-dir"],
            &[&file.join("m"), dir.path()],
        ));
        assert!(e.contains("not writable"), "{e}");
    }

    #[test]
    fn merging_a_shard_twice_says_duplicate_and_a_missing_one_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = write(dir.path(), "exp.toml", EXPERIMENT);
        let s0 = dir.path().join("s0");
        ok(&run(&config, &s0, &["--shard", "0/2"]));
        let e = failure(&dpaudit_on(
            &["merge", "--out-dir"],
            &[&dir.path().join("m"), &s0, &s0],
        ));
        assert!(e.contains("duplicate") && e.contains("0/2"), "{e}");
        let e = failure(&dpaudit_on(
            &["merge", "--out-dir"],
            &[&dir.path().join("m"), &s0],
        ));
        assert!(
            e.contains("missing") && e.contains("1/2") && e.contains("[1, 3]"),
            "{e}"
        );
    }
}

/// The experiment library without the CLI: a smoke experiment trained chunk
/// by chunk through `dpaudit_experiment` in two shards, merged and
/// finalized, gives the audit `dpaudit run` gives.
#[test]
fn the_library_chunk_by_chunk_equals_dpaudit_run() {
    use dpaudit_experiment::canary::chunk::Prepared;
    use dpaudit_experiment::canary::settings::ExperimentConfig;
    use dpaudit_experiment::{merge, ExperimentDir, Finalized};
    use dpaudit_store::kind::ExperimentFile;
    use dpaudit_store::{OutDir, Shard};
    use dpaudit_train::trainer::Silent;

    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "exp.toml", EXPERIMENT);
    let cli = dir.path().join("cli");
    ok(&run(&config, &cli, &[]));

    tch::set_num_threads(1);
    let file = ExperimentFile::read(&config).unwrap();
    let experiment = ExperimentConfig::from_toml(&file.text, "exp.toml").unwrap();
    let prepared = Prepared::new(&experiment, None).unwrap();
    let mut shards = Vec::new();
    for i in 0..2 {
        let path = dir.path().join(format!("lib-{i}"));
        let out = OutDir::open(&path, "library test").unwrap();
        let shard = Shard { index: i, count: 2 };
        let exp_dir = ExperimentDir::claim(out, &prepared, shard).unwrap();
        let plan = exp_dir.plan().unwrap();
        assert_eq!(plan.todo.len(), 2);
        for c in plan.todo {
            exp_dir.train_chunk(c, &mut Silent).unwrap();
        }
        assert!(matches!(
            exp_dir.finalize().unwrap(),
            Finalized::Incomplete(_)
        ));
        shards.push(path);
    }
    let merged_dir = dir.path().join("lib");
    let merged = merge(&merged_dir, &shards, "library test").unwrap();
    assert_eq!(merged.copied, CHUNKS);
    for f in ["scores.csv", "audit.json", "summary.md", "inclusion.csv"] {
        assert_eq!(read(&merged_dir.join(f)), read(&cli.join(f)), "{f}");
    }
}

/// `dpaudit run` and `dpaudit slurm` read the file's `kind` first: a file
/// without it, or of an unknown kind, is refused naming the file and the
/// kinds, before any out-dir exists; simulation flags are refused for a
/// canary audit.
#[test]
fn the_kind_line_is_required_and_picks_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let plain = write(
        dir.path(),
        "plain.toml",
        &EXPERIMENT.replace("kind = \"canary\"\n", "\n"),
    );
    let unknown = write(
        dir.path(),
        "unknown.toml",
        &EXPERIMENT.replace("kind = \"canary\"", "kind = \"train\""),
    );
    for (file, says) in [(&plain, "no top-level `kind`"), (&unknown, "\"train\"")] {
        for e in [
            failure(&run(file, &out, &[])),
            failure(&dpaudit_on(
                &["slurm", "--tasks", "2", "--out-dir", out.to_str().unwrap()],
                &[file],
            )),
        ] {
            assert!(
                e.contains(file.to_str().unwrap()) && e.contains(says),
                "{e}"
            );
            for kind in ["canary", "bgm", "panoramia"] {
                assert!(e.contains(&format!("`kind = \"{kind}\"`")), "{e}");
            }
        }
    }
    let config = write(dir.path(), "exp.toml", EXPERIMENT);
    let e = failure(&run(&config, &out, &["--device", "cuda"]));
    assert!(e.contains("--device") && e.contains("train.device"), "{e}");
    // A BGM file is not a `dpaudit bgm` file of another kind's command.
    let e = failure(&dpaudit_on(
        &["bgm", "--out-dir", out.to_str().unwrap(), "--config"],
        &[&config],
    ));
    assert!(
        e.contains("kind = \"canary\"") && e.contains("dpaudit run"),
        "{e}"
    );
    assert!(!out.exists(), "the out-dir must not be created");
}
