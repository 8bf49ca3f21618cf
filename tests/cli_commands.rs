//! End-to-end: the pure-crate subcommands (`data`, `account`, `calibrate`,
//! `estimate`) through the real binary: JSON fields, and bad input that is a
//! clear error naming what was wrong, never a panic.

use std::io::Write;
mod common;

use common::{dpaudit, failure, json};

#[test]
fn data_info_reads_the_real_fashion_mnist() {
    // CI installs the Debian package dataset-fashion-mnist (.ci/run); its counts are
    // those of the official release (Xiao et al. 2017): 60,000 train, 10,000 test.
    let info = json(&dpaudit(&["data", "info", "fmnist", "--json"]));
    assert_eq!(info["train_count"], 60_000);
    assert_eq!(info["test_count"], 10_000);
    assert_eq!(info["source"], "/usr/share/datasets/fashion-mnist");
    assert_eq!(info["synthetic"], false);
}

#[test]
fn data_info_on_a_missing_directory_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = failure(&dpaudit(&[
        "data",
        "info",
        "cifar10",
        "--data-dir",
        dir.path().to_str().unwrap(),
    ]));
    assert!(err.contains(dir.path().to_str().unwrap()), "{err}");
}

/// The flags of Annamalai et al. 2024 §6.2.1's setting but σ: Poisson
/// q = 0.01, 100 steps, δ = 1e-5.
const PAPER_SETTING: [&str; 6] = ["--sample-rate", "0.01", "--steps", "100", "--delta", "1e-5"];

#[test]
fn account_matches_the_paper_setting_and_calibrate_inverts_it() {
    // Poisson q = 0.01, 100 steps, σ = 1.0, δ = 1e-5: Annamalai et al. 2024
    // (§6.2.1) print 0.73, the PRV accountant's upper estimate; the tight PLD
    // value is 0.718.
    let acc = json(&dpaudit(
        &[
            &[
                "account",
                "--accountant",
                "pld",
                "--noise-multiplier",
                "1.0",
            ][..],
            &PAPER_SETTING,
            &["--json"],
        ]
        .concat(),
    ));
    let eps = acc["epsilon"].as_f64().unwrap();
    assert!((eps - 0.718).abs() < 1e-3, "ε = {eps}");

    let target = eps.to_string();
    let cal = json(&dpaudit(
        &[
            &[
                "calibrate",
                "--accountant",
                "pld",
                "--target-epsilon",
                &target,
            ][..],
            &PAPER_SETTING,
            &["--json"],
        ]
        .concat(),
    ));
    let sigma = cal["noise_multiplier"].as_f64().unwrap();
    assert!((sigma - 1.0).abs() < 5e-3, "σ = {sigma}");
}

#[test]
fn account_refuses_a_sample_rate_above_one_by_name() {
    let err = failure(&dpaudit(&[
        "account",
        "--sample-rate",
        "1.5",
        "--noise-multiplier",
        "1",
        "--steps",
        "10",
        "--delta",
        "1e-5",
    ]));
    assert!(err.contains("sample_rate"), "{err}");
}

#[test]
fn estimate_reads_csv_and_reports_a_labelled_lower_bound() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "score,member").unwrap();
    // Perfectly separated scores: 200 members at 1.0, 200 non-members at 0.0.
    for i in 0..400 {
        writeln!(
            file,
            "{},{}",
            if i % 2 == 0 { 1.0 } else { 0.0 },
            (i + 1) % 2
        )
        .unwrap();
    }
    let path = file.path().to_str().unwrap();
    let est = json(&dpaudit(&[
        "estimate",
        "--method",
        "eps-delta",
        "--scores",
        path,
        "--delta",
        "1e-5",
        "--json",
    ]));
    assert_eq!(est["method"], "eps-delta");
    // The default for eps-delta is bonferroni on all 400 rows.
    assert_eq!(est["selection"], "bonferroni");
    assert_eq!(est["confidence"], 0.95);
    // Two distinct values, so bonferroni tests the one event {score ≥ 1}
    // (the support family, docs/audit-statistics.md "Tied and binary
    // scores"), each rate's Clopper–Pearson limit at tail 0.05/2: with no
    // errors, TPR ≥ t^(1/200) and FPR ≤ 1 − t^(1/200), t = 0.025, and
    // ε = ln((TPR − δ)/FPR) (Annamalai et al. 2024 Eq. (1)) = 3.9837481 by
    // hand (the closed forms above, in double precision).
    let t: f64 = 0.025_f64.powf(1.0 / 200.0);
    let expected = ((t - 1e-5) / (1.0 - t)).ln();
    let eps = est["epsilon"].as_f64().unwrap();
    assert!(
        (eps - expected).abs() < 1e-6,
        "ε_lb = {eps}, expected {expected}"
    );
    assert!((expected - 3.983_748).abs() < 1e-6);
}

#[test]
fn estimate_names_the_line_of_a_malformed_csv_row() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(file, "score,member\n0.5,1\n0.1,0\nnot-a-number,1\n").unwrap();
    let err = failure(&dpaudit(&[
        "estimate",
        "--method",
        "eps-delta",
        "--scores",
        file.path().to_str().unwrap(),
        "--delta",
        "1e-5",
    ]));
    // `FILE:LINE:` as compilers print it; line 4 holds the bad score.
    let path = file.path().to_str().unwrap();
    assert!(err.contains(&format!("{path}:4:")), "{err}");
    assert!(err.contains("not-a-number"), "{err}");
}

#[test]
fn selftest_catches_removed_clipping_and_halved_noise_but_not_the_correct_pipeline() {
    // The correct and the two required variants share one experiment: a Dirac
    // canary of norm 4C at all 10 steps, σ = 2, so the claim is μ = √10/2-GDP
    // (10 composed Gaussian mechanisms), ε = 7.5113 at δ = 1e-5 (Cebere et al.
    // 2025 Corollary 1). Without
    // clipping the canary counts 4 times (μ = 6.3), with half the noise twice
    // (μ = 3.2): both audit far above 7.51 with 300 runs at 99 %.
    let rows = json(&dpaudit(&[
        "selftest",
        "--runs",
        "300",
        "--bgm-runs",
        "20000",
        "--json",
    ]));
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["variant"] == name)
            .unwrap_or_else(|| panic!("no variant {name}"))
            .clone()
    };
    let correct = row("correct");
    assert!((correct["claimed_epsilon"].as_f64().unwrap() - 7.5113).abs() < 1e-3);
    assert_eq!(correct["caught"], false, "{correct}");
    // Shuffled batches accounted as Poisson (q = 0.01, σ = 1, 100 steps: ε = 0.718,
    // as above), audited by simulation in the Worst-Case threat model: Annamalai
    // et al. 2024 (§6.2.1, Fig. 3) measure ε_emp = 4.01; 2·10⁴ runs per hypothesis
    // certify > 0.718.
    for name in [
        "clipping removed",
        "noise halved",
        "shuffled, accounted as Poisson",
    ] {
        let r = row(name);
        assert_eq!(r["caught"], true, "{r}");
        assert!(
            r["best_valid_lower_bound"].as_f64().unwrap() > r["claimed_epsilon"].as_f64().unwrap(),
            "{r}"
        );
    }
}

#[test]
fn counts_reproduces_the_lecture_audit() {
    // Karimireddy 2025 (lecture notes, privacy auditing): FNR ≤ 0.95509 and
    // FPR ≤ 0.00274 (rounded; 0.955082 and 0.0027445 unrounded) at confidence
    // 1 − 1e-10 refute the claimed ε = 0.21.
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = manifest.join("../../experiments/lecture/backprop-clipping-counts.toml");
    let r = json(&dpaudit(&["counts", file.to_str().unwrap(), "--json"]));
    assert!(
        (r["fnr_upper"].as_f64().unwrap() - 0.955082).abs() < 1e-6,
        "{r}"
    );
    assert!(
        (r["fpr_upper"].as_f64().unwrap() - 0.0027445).abs() < 1e-7,
        "{r}"
    );
    assert_eq!(r["claim_refuted"], true);
}

/// `dpaudit train` is secure by default: two runs of the same config give two
/// different models, and say so; `--replayable` gives byte-identical
/// checkpoints and says that the model is not private against whoever has the
/// config.
#[test]
fn train_is_secure_by_default_and_replayable_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/training/mlp-purchase.toml"
    );
    let train = |name: &str, replayable: bool| {
        let out_dir = dir.path().join(name);
        let mut args = vec![
            "train",
            "--config",
            config,
            "--steps",
            "5",
            "--json",
            "--out-dir",
            out_dir.to_str().unwrap(),
        ];
        if replayable {
            args.push("--replayable");
        }
        let report = json(&dpaudit(&args));
        let bytes = std::fs::read(out_dir.join("model.safetensors")).unwrap();
        (report, bytes)
    };
    let (s1, secure1) = train("s1", false);
    let (_, secure2) = train("s2", false);
    let (r1, replay1) = train("r1", true);
    let (_, replay2) = train("r2", true);
    assert_eq!(s1["mode"], "secure");
    assert!(s1["mode_meaning"]
        .as_str()
        .unwrap()
        .contains("never written"));
    assert_eq!(r1["mode"], "replayable");
    assert!(r1["mode_meaning"].as_str().unwrap().contains("NOT private"));
    assert_ne!(secure1, secure2, "two secure runs gave the same checkpoint");
    assert_eq!(replay1, replay2, "two replayable runs differ");
    assert_ne!(secure1, replay1);
    // The checkpoint's metadata names the mode too.
    let header = String::from_utf8_lossy(&replay1[..4096.min(replay1.len())]).into_owned();
    assert!(
        header.contains("\\\"mode\\\":\\\"replayable\\\""),
        "{header}"
    );
}

/// Bad training input: an error naming the field and what was expected, a
/// non-zero exit, never an abort or a panic.
#[test]
fn impossible_training_configs_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/training/mlp-purchase.toml"
    ))
    .unwrap();
    let cases = [
        // 600·10⁸ parameters: refused before allocating, with the estimate.
        (
            base.replace("hidden = [32]", "hidden = [100000000]"),
            "`model`",
        ),
        (
            base.replace("[data]", "[data]\ntrain_size = 0"),
            "data.train_size",
        ),
        (
            base.replace("[data]", "[data]\nclasses = [3]"),
            "data.classes",
        ),
    ];
    for (i, (text, field)) in cases.iter().enumerate() {
        let config = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&config, text).unwrap();
        let out_dir = dir.path().join(format!("out{i}"));
        let err = failure(&dpaudit(&[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out-dir",
            out_dir.to_str().unwrap(),
        ]));
        assert!(err.contains(field), "case {i}: {err}");
        assert!(!err.contains("memory allocation"), "case {i}: {err}");
    }
}

/// A calibration target the PLD accountant cannot represent says so and names
/// the accountant that can (`--accountant rdp` exists).
#[test]
fn calibrate_to_an_unrepresentable_epsilon_names_the_rdp_accountant() {
    let calibrate = [
        &["calibrate", "--target-epsilon", "800"][..],
        &PAPER_SETTING,
    ]
    .concat();
    let err = failure(&dpaudit(&calibrate));
    assert!(err.contains("--accountant rdp"), "{err}");
    let ok = json(&dpaudit(
        &[&calibrate[..], &["--accountant", "rdp", "--json"]].concat(),
    ));
    assert!(ok["noise_multiplier"].as_f64().unwrap() > 0.0, "{ok}");
}

#[test]
fn bench_op_names_lists_a_steps_operators_by_name() {
    let out = dpaudit(&[
        "bench",
        "--overhead",
        "--max-replicas",
        "1",
        "--iters",
        "2",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--op-names",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "top-level operators per step by name, tiny M=1: calls, and host µs before them (loop / engine):"
        ),
        "{text}"
    );
    // Lines "loop engine loop-µs engine-µs name": the loop gathers its batch
    // with index_select, the engine-only step (a pre-built batch) never does.
    // The first two numbers of the first line `matches` accepts.
    let first_two = |matches: &dyn Fn(&str) -> bool| -> (f64, f64, String) {
        let line = text
            .lines()
            .find(|l| matches(l))
            .unwrap_or_else(|| panic!("no such line in {text}"));
        let v: Vec<f64> = line
            .split_whitespace()
            .take(2)
            .map(|v| v.parse().unwrap())
            .collect();
        (v[0], v[1], line.to_string())
    };
    let (loop_calls, engine_calls, gather) =
        first_two(&|l: &str| l.trim_end().ends_with("aten::index_select"));
    assert!(loop_calls >= 1.0 && engine_calls == 0.0, "{gather}");
    // The host time before operators, in all, is positive on both sides, and
    // the longest gaps are listed by pair for both.
    let (loop_us, engine_us, total) =
        first_two(&|l: &str| l.contains("(host µs before operators, in all)"));
    assert!(loop_us > 0.0 && engine_us > 0.0, "{total}");
    for side in ["loop step", "engine-only step"] {
        let header = format!("host time between operators, {side}, the 12 longest");
        let at = text
            .lines()
            .position(|l| l.contains(&header))
            .unwrap_or_else(|| panic!("no {header:?} in {text}"));
        let first = text.lines().nth(at + 1).unwrap_or("");
        assert!(first.contains(" -> "), "{first}");
    }
    // Without a loop benchmark there is nothing to name.
    let err = failure(&dpaudit(&["bench", "--op-names"]));
    assert!(err.contains("--end-to-end or --overhead"), "{err}");
}
