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
/// Bad training input: an error naming the field and what was expected, a
/// non-zero exit, never an abort or a panic.
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
