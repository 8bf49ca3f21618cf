//! End to end: `dpaudit compare` on finished out-dirs, run by the pure
//! binary (it reads `audit.json` only). The audits here are written by hand
//! with the fields `compare` reads; `tests/cli_run.rs` compares out-dirs that
//! `dpaudit run` made.

mod common;

use common::{dpaudit_on, failure, ok, read, write};

/// An `audit.json` of experiment `name` (accountant's ε `upper`) with one
/// lower bound per `(score, threat model in words, method, ε, valid)`.
fn audit_json(name: &str, upper: f64, bounds: &[(&str, &str, &str, f64, bool)]) -> String {
    let entries: Vec<serde_json::Value> = bounds
        .iter()
        .map(|&(score, threat, method, eps, valid)| {
            serde_json::json!({
                "method": method,
                "score": score,
                "threat_model": threat,
                "epsilon": eps,
                "confidence": 0.95,
                "selection": if valid { "split" } else { "same-data" },
                "valid_at_confidence": valid,
            })
        })
        .collect();
    serde_json::json!({
        "name": name,
        "canary": "dirac, every step",
        "epsilon_upper": upper,
        "delta": 1e-5,
        "lower_bounds": entries,
    })
    .to_string()
}

const HIDDEN: &str = "hidden state (final model θ_T and θ₀)";
const BLACK_BOX: &str = "black box (loss of the final model)";

#[test]
fn compare_writes_one_row_and_one_bar_per_lower_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    write(
        &a,
        "audit.json",
        &audit_json(
            "first",
            2.0,
            &[
                ("dirac", HIDDEN, "eps-delta", 0.5, true),
                ("dirac", HIDDEN, "gdp", 1.5, false),
            ],
        ),
    );
    write(
        &b,
        "audit.json",
        &audit_json("second", 4.0, &[("loss", BLACK_BOX, "gdp", 1.0, true)]),
    );
    let cmp = dir.path().join("cmp");
    let stdout = ok(&dpaudit_on(&["compare", "--out-dir"], &[&cmp, &a, &b]));
    let md = read(&cmp.join("compare.md"));
    assert_eq!(stdout, md);
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| first") || l.starts_with("| second"))
        .collect();
    // ratio = ε lower / claimed ε, to 3 decimals: 0.5/2, 1.5/2, 1/4.
    assert_eq!(
        rows,
        [
            "| first | dirac, every step | dirac | hidden state (final model θ_T and θ₀) | eps-delta | split | 0.5000 | 2.0000 | 0.250 |",
            "| first | dirac, every step | dirac | hidden state (final model θ_T and θ₀) | gdp | same-data | 1.5000 | 2.0000 | 0.750 |",
            "| second | dirac, every step | loss | black box (loss of the final model) | gdp | split | 1.0000 | 4.0000 | 0.250 |",
        ]
    );
    let svg = read(&cmp.join("compare.svg"));
    assert!(svg.starts_with("<svg") || svg.contains("<svg"), "{svg}");
    for label in [
        "first: dirac / eps-delta",
        "first: dirac / gdp",
        "second: loss / gdp",
    ] {
        assert!(svg.contains(label), "{label} missing from the plot");
    }
}

#[test]
fn compare_names_the_file_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let cmp = dir.path().join("cmp");
    let missing = dir.path().join("nothing-here");
    let err = failure(&dpaudit_on(&["compare", "--out-dir"], &[&cmp, &missing]));
    let path = missing.join("audit.json").display().to_string();
    assert!(err.contains(&format!("{path}: reading:")), "{err}");
    // A file that is not a canary audit's `audit.json`: named, with what serde found.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    write(&other, "audit.json", "{\"name\": \"x\"}");
    let err = failure(&dpaudit_on(&["compare", "--out-dir"], &[&cmp, &other]));
    assert!(
        err.contains("not the audit.json of a `dpaudit run` experiment: missing field"),
        "{err}"
    );
    let bad_threat = audit_json("x", 1.0, &[("dirac", "telepathy", "gdp", 0.1, true)]);
    write(&other, "audit.json", &bad_threat);
    let err = failure(&dpaudit_on(&["compare", "--out-dir"], &[&cmp, &other]));
    assert!(err.contains("unknown threat model `telepathy`"), "{err}");
    assert!(!cmp.join("compare.md").exists());
}
