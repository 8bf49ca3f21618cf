//! The bounded-memory BGM audit (`evaluation = counts`,
//! `dpaudit_experiment::bgm::counts`): its bound covers mechanisms of known ε,
//! agrees with counting the scores directly, holds no state that grows with
//! the runs, and gives the same counts and bound whether simulated in one
//! process, unit by unit, in shards merged, or resumed.
//! `DPAUDIT_SLOW_TESTS=1` runs ten times the coverage trials.

// Tests may panic: the fallible-API guard (clippy.toml) is for library code.
#![allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)]

mod common;

use common::fixtures::{with, BGM_SETTING};
use common::{assert_coverage, parse_bgm, simulate_in_three_shards, with_partial_shuffle};

use std::path::Path;

use dpaudit_audit::clopper_pearson::upper_limit;
use dpaudit_audit::gaussian::gdp_epsilon;
use dpaudit_audit::region::epsilon_from_error_bounds;
use dpaudit_experiment::bgm::audit::{audit_setting, prepare, prepare_all};
use dpaudit_experiment::bgm::counts::{
    bound_at, boundary, bucket, counted_bound, same_data, HistogramAccumulator, MAX_BUCKET,
};
use dpaudit_experiment::bgm::engine::CpuBgmEngine;
use dpaudit_experiment::bgm::runner::{merge_bgm, BgmDir, BgmFinalized};
use dpaudit_store::{OutDir, Shard};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const DELTA: f64 = 1e-5;

fn trials(fast: usize) -> usize {
    if std::env::var("DPAUDIT_SLOW_TESTS").is_ok_and(|v| v == "1") {
        10 * fast
    } else {
        fast
    }
}

/// Mechanisms on one bit whose ε at δ = 1e-5 is known; the score is higher
/// for "member".
#[derive(Debug, Clone, Copy)]
enum Mechanism {
    /// Randomized response at ε₀ (pure ε₀-DP): score 1 or 0.
    Rr(f64),
    /// Laplace(scale 1) shifted by ε₀ for members (pure ε₀-DP).
    Laplace(f64),
    /// N(0, 1) shifted by μ for members: μ-GDP, ε(δ) exactly.
    Gaussian(f64),
}

impl Mechanism {
    fn epsilon(self) -> f64 {
        match self {
            Mechanism::Rr(e) | Mechanism::Laplace(e) => e,
            Mechanism::Gaussian(mu) => gdp_epsilon(mu, DELTA),
        }
    }

    fn score(self, rng: &mut ChaCha8Rng, member: bool) -> f64 {
        match self {
            Mechanism::Rr(eps) => {
                let truthful = rng.gen::<f64>() < 1.0 / (1.0 + (-eps).exp());
                f64::from(u8::from(member == truthful))
            }
            Mechanism::Laplace(eps) => {
                let u: f64 = rng.gen::<f64>() - 0.5;
                let x = -u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln();
                x + if member { eps } else { 0.0 }
            }
            Mechanism::Gaussian(mu) => {
                // Box–Muller.
                let (u1, u2): (f64, f64) = (rng.gen(), rng.gen());
                let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                z + if member { mu } else { 0.0 }
            }
        }
    }

    /// A histogram of `n` runs per hypothesis.
    fn histogram(
        self,
        rng: &mut ChaCha8Rng,
        n: usize,
    ) -> dpaudit_experiment::bgm::counts::ScoreHistogram {
        let with: Vec<f64> = (0..n).map(|_| self.score(rng, true)).collect();
        let without: Vec<f64> = (0..n).map(|_| self.score(rng, false)).collect();
        let mut acc = HistogramAccumulator::new();
        acc.add(&with, &without).unwrap();
        acc.histogram()
    }
}

/// The held-out threshold covers: on mechanisms of known ε, the bound
/// exceeds the truth at most 1 − confidence of the time (Monte-Carlo error
/// 3 s.e.); at confidence ½ the same-data figure on the same histograms
/// exceeds it far more often than ½ — the control that shows the test can
/// fail.
#[test]
fn held_out_threshold_covers_and_same_data_does_not() {
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    for mech in [
        Mechanism::Rr(1.0),
        Mechanism::Laplace(2.0),
        Mechanism::Gaussian(1.0),
    ] {
        let truth = mech.epsilon();
        let n = trials(150);
        let mut over = 0;
        let mut sum = 0.0;
        for _ in 0..n {
            let selection = mech.histogram(&mut rng, 2_000);
            let evaluation = mech.histogram(&mut rng, 20_000);
            let b = counted_bound(&selection, &evaluation, 0.95, DELTA).unwrap();
            assert!(b.valid_at_confidence && !b.same_data_valid_at_confidence);
            over += usize::from(b.epsilon > truth);
            sum += b.epsilon;
        }
        assert_coverage(over, n, 0.05, &format!("held-out threshold, {mech:?}"));
        // Not vacuous: the mean bound is a good part of the truth.
        let mean = sum / n as f64;
        println!("{mech:?}: mean bound {mean:.3}, truth {truth:.3}");
        assert!(
            mean > 0.3 * truth,
            "{mech:?}: mean bound {mean} vs truth {truth}"
        );
    }
    // The control: Laplace ε₀ = 2, 2000 runs per class, confidence ½.
    let mech = Mechanism::Laplace(2.0);
    let n = trials(100);
    let (mut valid_over, mut same_over) = (0, 0);
    for _ in 0..n {
        let selection = mech.histogram(&mut rng, 2_000);
        let evaluation = mech.histogram(&mut rng, 2_000);
        let b = counted_bound(&selection, &evaluation, 0.5, DELTA).unwrap();
        valid_over += usize::from(b.epsilon > 2.0);
        same_over += usize::from(same_data(&evaluation, 0.5, DELTA).unwrap().epsilon > 2.0);
    }
    assert_coverage(valid_over, n, 0.5, "held-out threshold at confidence ½");
    assert!(
        same_over * 10 > n * 7,
        "same-data exceeded the truth in only {same_over}/{n} data sets at confidence ½"
    );
}

/// The counts at a cut are the scores on the rule's side of its boundary,
/// and the bound is `dpaudit counts`' (Clopper–Pearson at (1 − c)/2 per rate,
/// Eq. (1)) of those counts.
#[test]
fn counts_agree_with_counting_the_scores() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mech = Mechanism::Gaussian(1.5);
    let with: Vec<f64> = (0..5000).map(|_| mech.score(&mut rng, true)).collect();
    let without: Vec<f64> = (0..4000).map(|_| mech.score(&mut rng, false)).collect();
    let mut acc = HistogramAccumulator::new();
    acc.add(&with, &without).unwrap();
    let h = acc.histogram();
    for b in [
        -300,
        bucket(-0.5),
        0,
        bucket(0.7),
        bucket(2.0),
        bucket(3.5),
        MAX_BUCKET,
    ] {
        let above = |x: &f64| {
            if b >= 0 {
                *x >= boundary(b)
            } else {
                *x > boundary(b)
            }
        };
        let tp = with.iter().filter(|x| above(x)).count() as u64;
        let fp = without.iter().filter(|x| above(x)).count() as u64;
        let e = bound_at(&h, b, 0.95, DELTA).unwrap();
        assert_eq!(
            (e.false_positives, e.false_negatives),
            (fp, 5000 - tp),
            "b = {b}"
        );
        assert_eq!((e.without_target, e.with_target), (4000, 5000));
        let fpr = upper_limit(fp, 4000, 0.025).unwrap();
        let fnr = upper_limit(5000 - tp, 5000, 0.025).unwrap();
        assert_eq!(e.epsilon, epsilon_from_error_bounds(fpr, fnr, DELTA));
    }
}

/// `tests/fixtures/bgm-setting.toml` with 20 steps, evaluated in counts
/// mode with 5000 selection runs.
fn setting() -> String {
    with(
        BGM_SETTING,
        &[
            ("steps = 100", "steps = 20"),
            (
                "runs = 20000",
                "runs = 20000\nevaluation = { counts = { selection_runs = 5000 } }",
            ),
        ],
    )
}

/// Memory does not grow with the runs: 10¹¹ runs per hypothesis pass
/// validation in counts mode (the estimate does not depend on `runs`) and
/// are refused in scores mode, with the estimate; the accumulator's state
/// has a fixed size, and a histogram never has more rows than the grid.
#[test]
fn counts_mode_state_does_not_grow_with_runs() {
    let huge = setting().replace("runs = 20000", "runs = 100000000000");
    let p = prepare(parse_bgm(&huge).settings[0].clone()).unwrap();
    assert_eq!(p.selection_runs(), Some(5000));
    let scores = huge.replace(
        "evaluation = { counts = { selection_runs = 5000 } }",
        "evaluation = \"scores\"",
    );
    let err = prepare(parse_bgm(&scores).settings[0].clone())
        .unwrap_err()
        .to_string();
    assert!(err.contains("GiB") && err.contains("`runs`"), "{err}");
    assert!(
        err.contains("counts"),
        "the refusal should name the way out: {err}"
    );
    // Too few selection runs are refused, naming the field.
    let few = setting().replace("selection_runs = 5000", "selection_runs = 10");
    let err = prepare(parse_bgm(&few).settings[0].clone())
        .unwrap_err()
        .to_string();
    assert!(err.contains("selection_runs"), "{err}");

    // The state: one histogram over 10⁴ or 10⁵ scores of the same mechanism.
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let small = Mechanism::Gaussian(1.0).histogram(&mut rng, 10_000);
    let large = Mechanism::Gaussian(1.0).histogram(&mut rng, 100_000);
    let grid = (2 * MAX_BUCKET + 1) as usize;
    assert!(small.buckets.len() <= grid && large.buckets.len() <= grid);
    // Gaussian scores within ±8 fill at most the grid's buckets in ±8.
    let in_range = (bucket(8.0) - bucket(-8.0) + 1) as usize;
    assert!(
        large.buckets.len() <= in_range,
        "{} > {in_range}",
        large.buckets.len()
    );
    // Ten times the runs, far less than ten times the rows.
    assert!(
        large.buckets.len() < 3 * small.buckets.len(),
        "{} rows for 10⁵ runs vs {} for 10⁴",
        large.buckets.len(),
        small.buckets.len()
    );
}

/// A counts-mode experiment (a full-shuffle setting in selection and
/// evaluation units, a partial-shuffle setting in one unit) simulated unit
/// by unit in three shards and merged, or resumed after half its units,
/// gives the histograms and the bound of the one-process audit, to the bit.
#[test]
fn counts_in_shards_merged_or_resumed_equal_one_process() {
    let text = with_partial_shuffle(
        &setting(),
        "runs = 6000\nguesses = [2, 20]\nguess_runs = 2000",
    );
    let experiment = parse_bgm(&text);
    let settings = prepare_all(Path::new("t.toml"), &experiment).unwrap();
    let engine = CpuBgmEngine { threads: 1 };
    let dir = tempfile::tempdir().unwrap();

    // Three shards, merged.
    let shards = simulate_in_three_shards(dir.path(), &experiment, &settings, &engine, |bgm| {
        // Setting "t": 5000 selection runs (2 chunks of 4096), 20 000
        // evaluation runs (5 chunks); setting "k": one unit.
        assert_eq!(bgm.units().len(), 2 + 5 + 1);
        assert_eq!(bgm.units().iter().filter(|u| u.selection).count(), 2);
    });
    let merged = merge_bgm(&dir.path().join("merged"), &shards, "library test").unwrap();
    assert_eq!(merged.copied, 8);

    // Resumed: half the units, then a new process on the same out-dir.
    let resumed = dir.path().join("resumed");
    {
        let out = OutDir::open(&resumed, "library test").unwrap();
        let bgm =
            BgmDir::claim(out, "t.toml", &experiment, &settings, &engine, Shard::ALL).unwrap();
        for c in bgm.plan().unwrap().todo.into_iter().step_by(2) {
            bgm.run_unit(c).unwrap();
        }
    }
    let out = OutDir::open(&resumed, "library test").unwrap();
    let bgm = BgmDir::claim(out, "t.toml", &experiment, &settings, &engine, Shard::ALL).unwrap();
    let plan = bgm.plan().unwrap();
    assert_eq!((plan.done.len(), plan.todo.len()), (4, 4));
    for c in plan.todo {
        bgm.run_unit(c).unwrap();
    }
    let BgmFinalized::Complete(report) = bgm.finalize().unwrap() else {
        panic!("every unit was run");
    };
    assert_eq!(
        std::fs::read(resumed.join("counts.csv")).unwrap(),
        std::fs::read(dir.path().join("merged/counts.csv")).unwrap()
    );
    assert!(!resumed.join("scores.csv").exists());

    for ((p, r), m) in settings
        .iter()
        .zip(&report.settings)
        .zip(&merged.report.settings)
    {
        let one = audit_setting(p, &engine).unwrap();
        assert!(r.lower_bound.is_none() && r.counted_bound.is_some());
        assert_eq!(r.counted_bound, one.counted_bound, "{}", r.name);
        assert_eq!(m.counted_bound, one.counted_bound, "{}", r.name);
        assert_eq!(r.guess_search, one.guess_search, "{}", r.name);
        let b = one.counted_bound.unwrap();
        assert_eq!(b.evaluation.with_target, p.setting.runs as u64);
        assert_eq!(b.choice.selection_with_target, 5000);
    }
    // K = 2B: the target is in one of the first 2 batches, where the guess
    // k = 2 looks (the ratio is exact there), rather than all 20.
    assert_eq!(
        report.settings[1]
            .guess_search
            .as_ref()
            .unwrap()
            .chosen_columns,
        2
    );
}

/// Soundness on the BGM itself: Poisson batches on the Poisson worst case
/// (T = 100, σ = 1) certify no more than the Poisson ε (PLD), the mechanism's
/// upper bound, while shuffled batches at the same (σ, T) certify more than
/// it — the paper's finding, in counts mode.
#[test]
fn counts_mode_poisson_control_stays_below_the_accountant() {
    let poisson = setting()
        .replace("steps = 20", "steps = 100")
        .replace("sampler = \"shuffle\"", "sampler = \"poisson\"")
        .replace(
            "dataset = \"shuffle_worst_case\"",
            "dataset = \"poisson_worst_case\"",
        )
        .replace("runs = 20000", "runs = 200000")
        .replace("selection_runs = 5000", "selection_runs = 50000");
    let p = prepare(parse_bgm(&poisson).settings[0].clone()).unwrap();
    let r = audit_setting(&p, &CpuBgmEngine { threads: 0 }).unwrap();
    assert!(
        r.epsilon_emp() <= r.epsilon_poisson_pld,
        "ε_emp = {} above the Poisson ε {}",
        r.epsilon_emp(),
        r.epsilon_poisson_pld
    );
    let shuffle = poisson
        .replace("sampler = \"poisson\"", "sampler = \"shuffle\"")
        .replace(
            "dataset = \"poisson_worst_case\"",
            "dataset = \"shuffle_worst_case\"",
        );
    let p = prepare(parse_bgm(&shuffle).settings[0].clone()).unwrap();
    let s = audit_setting(&p, &CpuBgmEngine { threads: 0 }).unwrap();
    assert!(
        s.epsilon_emp() > s.epsilon_poisson_pld,
        "shuffle: ε_emp = {} vs Poisson ε {}",
        s.epsilon_emp(),
        s.epsilon_poisson_pld
    );
    // The same-data figure maximises over every cut of the counted runs,
    // the held-out one included.
    assert!(s.same_data_epsilon().unwrap() >= s.epsilon_emp());
}
