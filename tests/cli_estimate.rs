//! End to end: `dpaudit estimate` through the real binary: every method
//! states its assumptions, its metrics and its selection policy (text and
//! JSON), the plots are written, and the I/O failures are clear errors or
//! correct answers: GDP at δ = 0, an NPY shape whose size overflows, a CSV
//! byte-order mark, and output to a closed pipe.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

mod common;

use common::{binary, dpaudit, failure, json, ok};

/// `n` members scored `i/n + shift` and `n` non-members scored `i/n`,
/// interleaved (a deterministic stand-in for two score distributions).
fn scores_csv(dir: &Path, n: usize, shift: f64) -> String {
    let path = dir.join("scores.csv");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "score,member").unwrap();
    for i in 0..n {
        let x = (i * 7919 % n) as f64 / n as f64;
        writeln!(f, "{},1", x + shift).unwrap();
        writeln!(f, "{x},0").unwrap();
    }
    path.to_str().unwrap().to_string()
}

/// `dpaudit estimate --method METHOD --scores SCORES --delta DELTA`, then
/// `rest`.
fn estimate_args<'a>(
    method: &'a str,
    scores: &'a str,
    delta: &'a str,
    rest: &[&'a str],
) -> Vec<&'a str> {
    let head = [
        "estimate", "--method", method, "--scores", scores, "--delta", delta,
    ];
    [&head[..], rest].concat()
}

/// Run [`estimate_args`].
fn estimate(method: &str, scores: &str, delta: &str, rest: &[&str]) -> Output {
    dpaudit(&estimate_args(method, scores, delta, rest))
}

#[test]
fn every_method_states_assumptions_metrics_and_policy() {
    let dir = tempfile::tempdir().unwrap();
    let path = scores_csv(dir.path(), 500, 0.6);
    for (method, extra) in [
        ("eps-delta", "no assumption on the mechanism"),
        ("gdp", "Gaussian-shaped"),
        ("one-run", "2mδ term"),
        ("one-run-fdp", "no assumption on the mechanism"),
    ] {
        let v = json(&estimate(method, &path, "1e-5", &["--json"]));
        assert_eq!(v["method"], method);
        // The default policy, chosen from the method and the 1000 rows:
        // Bonferroni for every method at this size.
        assert_eq!(v["selection"], "bonferroni", "{method}");
        assert!(v["selection_chosen_by"]
            .as_str()
            .unwrap()
            .contains("1000 rows"));
        assert_eq!(v["valid_at_confidence"], true);
        let assumptions: Vec<&str> = v["assumptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            assumptions.iter().any(|a| a.contains(extra)),
            "{method}: {assumptions:?}"
        );
        let m = &v["metrics"];
        assert_eq!(
            (m["members"].as_u64(), m["nonmembers"].as_u64()),
            (Some(500), Some(500))
        );
        // Members x + 0.6, non-members x, x uniform on a 1/500 grid: AUC = P[x₁ + 0.6 > x₀]
        // = 1 − 0.4²/2 = 0.92 (the grid moves it by less than 0.002).
        assert!((m["auc"].as_f64().unwrap() - 0.92).abs() < 2e-3, "{m}");
        for t in m["tpr_at_fpr"].as_array().unwrap() {
            let (lo, tpr, hi) = (
                t["tpr_interval"]["lower"].as_f64().unwrap(),
                t["tpr"].as_f64().unwrap(),
                t["tpr_interval"]["upper"].as_f64().unwrap(),
            );
            assert!(lo <= tpr && tpr <= hi, "{t}");
        }
        let eps = v["epsilon"].as_f64().unwrap();
        assert!(eps.is_finite() && eps >= 0.0, "{method}: {eps}");
        // What the number rests on travels with it: the rank test of a
        // threshold, or the one-run design check and guess family.
        let ev = &v["evidence"];
        if method.starts_with("one-run") {
            assert_eq!(ev["inclusion"]["included"], 500, "{ev}");
            assert_eq!(ev["inclusion"]["p_value"], 1.0, "{ev}");
            assert_eq!(ev["guess_family"], "symmetric", "{ev}");
            assert_eq!(v["assumes"], "nothing", "{method}");
        } else {
            assert_eq!(ev["test"], "rank", "{ev}");
        }
        assert_eq!(v["label"], method);
    }
    // The Gaussian family of the f-DP one-run audit, on request only, says
    // what it assumes in its name, its JSON and its confidence line.
    let gaussian = ["--family", "gaussian"];
    let v = json(&estimate(
        "one-run-fdp",
        &path,
        "1e-5",
        &[&gaussian[..], &["--json"]].concat(),
    ));
    assert_eq!(v["label"], "one-run-fdp-gaussian");
    assert_eq!(v["assumes"], "gaussian-tradeoff");
    let out = ok(&estimate("one-run-fdp", &path, "1e-5", &gaussian));
    assert!(out.contains("method:     one-run-fdp-gaussian"), "{out}");
    assert!(
        out.contains("ONLY IF the mechanism's trade-off curve is Gaussian"),
        "{out}"
    );
    // Text: the same facts for a reader.
    let out = ok(&estimate("gdp", &path, "1e-5", &[]));
    for needle in [
        "selection:  bonferroni",
        "[default for gdp with 1000 rows]",
        "metrics:",
        "AUC",
        "TPR at FPR 1e-3",
        "assumes:",
        "Gaussian-shaped",
        "bounded on: all observations",
    ] {
        assert!(out.contains(needle), "`{needle}` in\n{out}");
    }
}

#[test]
fn gaussian_scores_says_what_it_assumes_and_refuses_a_split() {
    // Never a default; asked for, it names its assumption in the label,
    // the JSON, the confidence line and the assumptions.
    let dir = tempfile::tempdir().unwrap();
    let path = scores_csv(dir.path(), 500, 0.6);
    let method = "one-run-gaussian-scores";
    let v = json(&estimate(method, &path, "1e-5", &["--json"]));
    assert_eq!(v["label"], method);
    assert_eq!(v["assumes"], "gaussian-scores");
    assert_eq!(v["selection"], "bonferroni");
    let ev = &v["evidence"];
    assert_eq!(ev["kind"], "gaussian-scores", "{ev}");
    assert_eq!(ev["inclusion"]["included"], 500, "{ev}");
    // Uniform scores on a 1/500 grid shifted by 0.6: mean difference 0.6,
    // standard deviation ≈ 1/√12, so the estimate is ≈ 2.08 and μ⁻ > 0.
    assert!(
        (ev["mu_estimate"].as_f64().unwrap() - 2.078).abs() < 0.01,
        "{ev}"
    );
    assert!(ev["mu_lower"].as_f64().unwrap() > 0.0, "{ev}");
    assert!(v["assumptions"].as_array().unwrap().iter().any(|a| a
        .as_str()
        .unwrap()
        .contains("assumes Gaussian canary scores")));
    let out = ok(&estimate(method, &path, "1e-5", &[]));
    assert!(
        out.contains("ONLY IF the canary scores are Gaussian"),
        "{out}"
    );
    let err = failure(&estimate(method, &path, "1e-5", &["--selection", "split"]));
    assert!(err.contains("chooses no threshold or guess count"), "{err}");
}

#[test]
fn gdp_at_delta_zero_is_a_clear_error_not_a_null() {
    let dir = tempfile::tempdir().unwrap();
    let path = scores_csv(dir.path(), 200, 0.8);
    let out = estimate("gdp", &path, "0", &["--json"]);
    let err = failure(&out);
    assert!(
        err.contains("δ > 0") && err.contains("any finite ε"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // eps-delta at δ = 0 is a correct, finite answer.
    let v = json(&estimate("eps-delta", &path, "0", &["--json"]));
    assert!(v["epsilon"].as_f64().is_some_and(f64::is_finite), "{v}");
}

#[test]
fn npy_with_an_overflowing_shape_and_csv_with_a_bom() {
    let dir = tempfile::tempdir().unwrap();
    // (2⁶⁰ + 4) rows × 16 bytes wraps to 64 in 64-bit arithmetic: 64 data bytes.
    let mut header =
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846980, 2), }".to_string();
    header.push_str(&" ".repeat((64 - (10 + header.len() + 1) % 64) % 64));
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0u8; 64]);
    let npy = dir.path().join("big.npy");
    std::fs::write(&npy, bytes).unwrap();
    let err = failure(&estimate("eps-delta", npy.to_str().unwrap(), "1e-5", &[]));
    assert!(
        err.contains("big.npy") && err.contains("more than any file can hold"),
        "{err}"
    );

    let csv = dir.path().join("bom.csv");
    std::fs::write(&csv, "\u{feff}score,member\n1.0,1\n0.0,0\n2.0,1\n-1.0,0\n").unwrap();
    let v = json(&estimate(
        "eps-delta",
        csv.to_str().unwrap(),
        "1e-5",
        &["--json"],
    ));
    assert_eq!(v["metrics"]["members"], 2);
}

#[test]
fn output_to_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let path = scores_csv(dir.path(), 2000, 0.5);
    // The reader closes its end before the program writes (it first reads
    // and bounds 4000 scores), so the first line printed meets a closed pipe.
    let mut child = binary()
        .args(estimate_args(
            "gdp",
            &path,
            "1e-5",
            &["--selection", "multi-split"],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {:?}, stderr {err}",
        out.status
    );
    assert!(err.is_empty(), "{err}");
}

#[test]
fn plots_are_written_for_threshold_and_one_run_methods() {
    let dir = tempfile::tempdir().unwrap();
    let path = scores_csv(dir.path(), 300, 0.7);
    let plot = dir.path().join("p.svg");
    let plot_arg = plot.to_str().unwrap();
    let v = json(&estimate(
        "eps-delta",
        &path,
        "1e-5",
        &["--claimed-epsilon", "1", "--plot", plot_arg, "--json"],
    ));
    assert_eq!(v["plots"].as_array().unwrap().len(), 3);
    for name in ["p.svg", "p-roc.svg", "p-hist.svg"] {
        let svg = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}"
        );
    }
    let trade = std::fs::read_to_string(&plot).unwrap();
    assert!(
        trade.contains("threshold of the bound") && trade.contains("claimed (1.000"),
        "{trade}"
    );
    // Same-data: the plot itself says it is not valid.
    json(&estimate(
        "gdp",
        &path,
        "1e-5",
        &["--selection", "same-data", "--plot", plot_arg, "--json"],
    ));
    assert!(std::fs::read_to_string(&plot)
        .unwrap()
        .contains("NOT VALID"));
    // One-run f-DP, (ε, δ) family, guesses fixed in advance.
    let v = json(&estimate(
        "one-run-fdp",
        &path,
        "1e-5",
        &[
            "--family",
            "eps-delta",
            "--selection",
            "fixed",
            "--k-plus",
            "30",
            "--k-minus",
            "30",
            "--plot",
            plot_arg,
            "--json",
        ],
    ));
    assert_eq!(v["evidence"]["family"], "eps-delta");
    assert_eq!(v["evidence"]["guesses"], 60);
    assert!(std::fs::read_to_string(&plot)
        .unwrap()
        .contains("fraction of guesses correct"));
}
