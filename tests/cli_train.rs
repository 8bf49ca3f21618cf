//! End-to-end: `selftest`, `train` and `bench`, the libtorch commands of
//! the old `cli_commands` (run on `dpaudit-torch`).

mod common;

use common::{dpaudit, failure, json};

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
