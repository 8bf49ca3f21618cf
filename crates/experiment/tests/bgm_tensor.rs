//! The tensor BGM simulator (`dpaudit_experiment::bgm::tensor`) against
//! the pure-Rust one (`dpaudit_attacks::BgmSimulator`): the same scores on the
//! same observations, the same score distributions from independent draws,
//! the same refusals. Runs on CPU tensors; the code is device-agnostic.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_attacks::likelihood::{log_likelihood_ratio, ObservationMatrix};
use dpaudit_attacks::{
    AttacksError, BgmConfig, BgmDataset, BgmSimulator, Hypothesis, LikelihoodRatio,
};
use dpaudit_data::sampler::GameSampler;
use dpaudit_experiment::bgm::tensor::{log_likelihood_ratios, TensorBgmSimulator};
use dpaudit_train::TrainError;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

/// Every likelihood ratio a `BgmConfig` can name (Annamalai et al. 2024 §4.1–4.2, §5.3).
fn all_ratios(batch_size: usize, steps: usize) -> [LikelihoodRatio; 5] {
    [
        LikelihoodRatio::Natural,
        LikelihoodRatio::PartiallyInformed,
        LikelihoodRatio::WorstCase { batch_size },
        LikelihoodRatio::BatchThenShuffle { batch_size },
        LikelihoodRatio::Poisson {
            sample_rate: 1.0 / steps as f64,
        },
    ]
}

fn config(
    steps: usize,
    expected_batch_size: usize,
    epochs: usize,
    sampler: GameSampler,
    dataset: BgmDataset,
    seed: u64,
) -> BgmConfig {
    BgmConfig {
        steps,
        expected_batch_size,
        epochs,
        noise_multiplier: 1.0,
        sampler,
        dataset,
        score: dataset.matched_likelihood_ratio(expected_batch_size, steps),
        score_columns: steps,
        seed,
    }
}

fn to_tensor(matrices: &[ObservationMatrix]) -> Tensor {
    let (e, t) = (matrices[0].epochs() as i64, matrices[0].steps() as i64);
    let values: Vec<f64> = matrices.iter().flat_map(|m| m.values().to_vec()).collect();
    Tensor::from_slice(&values).view([matrices.len() as i64, e, t])
}

/// Relative-or-absolute agreement: |x − y| ≤ 1e-9 · max(1, |y|). The two
/// scorers evaluate the same closed forms with different summation orders, so
/// they agree to a few ulps per term (≈ 1e-16 relative) times the number of
/// terms summed (T·E ≤ 5·10⁵): ≤ 1e-10 relative, inside 1e-9.
fn assert_close(got: f64, want: f64, what: &str) {
    assert!(got.is_finite(), "{what}: tensor score {got} is not finite");
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: tensor {got} vs CPU {want} (diff {:e})",
        (got - want).abs()
    );
}

/// Issue 7 (a): the tensor scorer equals `dpaudit_attacks::log_likelihood_ratio`
/// on the same matrices, for every ratio and column count, including
/// T = 1000, E = 500 where the raw likelihood products underflow (Annamalai et al. 2024
/// §6.14) but the log-space scores must stay finite.
#[test]
fn tensor_scores_equal_cpu_scores_on_the_same_observations() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let shapes = [(10, 4, 2), (100, 1, 3), (1000, 3, 500)];
    for (steps, b, epochs) in shapes {
        for dataset in [
            BgmDataset::ShuffleWorstCase,
            BgmDataset::PoissonWorstCase,
            BgmDataset::FirstBatchPositive,
        ] {
            let sim = BgmSimulator::new(config(
                steps,
                b,
                epochs,
                GameSampler::new("shuffle"),
                dataset,
                1,
            ))
            .unwrap();
            let matrices: Vec<ObservationMatrix> =
                [Hypothesis::WithTarget, Hypothesis::WithoutTarget]
                    .into_iter()
                    .map(|h| sim.sample_observation(h, &mut rng).unwrap())
                    .collect();
            let tensor = to_tensor(&matrices);
            // The large shape once per ratio: 5·10⁵ values per matrix.
            let (sigmas, column_counts): (&[f64], Vec<usize>) = if steps == 1000 {
                (&[0.8], vec![steps])
            } else {
                (&[0.5, 1.0, 3.0], vec![1, steps / 2 + 1, steps])
            };
            for &sigma in sigmas {
                for lr in all_ratios(b, steps) {
                    for &columns in &column_counts {
                        let got: Vec<f64> = Vec::try_from(
                            &log_likelihood_ratios(lr, &tensor, sigma, columns).unwrap(),
                        )
                        .unwrap();
                        for (m, g) in matrices.iter().zip(&got) {
                            let want = log_likelihood_ratio(lr, m, sigma, columns).unwrap();
                            assert_close(
                                *g,
                                want,
                                &format!("{lr:?}, σ = {sigma}, T = {steps}, E = {epochs}, k = {columns}, {dataset:?}"),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Extreme rows: one huge entry among very negative ones (every exponent
/// far outside f64's range), and a float32 input.
#[test]
fn tensor_scores_stay_finite_and_exact_on_extreme_observations() {
    let (e, t) = (500, 1000);
    let mut values = vec![-2000.0; e * t];
    for (i, v) in values.iter_mut().enumerate() {
        if i % t == i / t % t {
            *v = 1500.0;
        } else if i % 7 == 0 {
            *v = -2000.5;
        }
    }
    let m = ObservationMatrix::new(e, t, values).unwrap();
    let tensor = to_tensor(std::slice::from_ref(&m));
    for lr in all_ratios(1000, t) {
        let got = log_likelihood_ratios(lr, &tensor, 0.7, t)
            .unwrap()
            .double_value(&[0]);
        let want = log_likelihood_ratio(lr, &m, 0.7, t).unwrap();
        assert_close(got, want, &format!("{lr:?} extreme"));
    }
    // float32 observations are scored in float64 (exact for these values).
    let lr = LikelihoodRatio::WorstCase { batch_size: 1000 };
    let got = log_likelihood_ratios(lr, &tensor.to_kind(Kind::Float), 0.7, t)
        .unwrap()
        .double_value(&[0]);
    assert_close(got, log_likelihood_ratio(lr, &m, 0.7, t).unwrap(), "f32");
}

/// Mean, standard deviation, and the standard errors of both.
struct Moments {
    n: f64,
    mean: f64,
    sd: f64,
    se_mean: f64,
    se_sd: f64,
}

fn moments(x: &[f64]) -> Moments {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let m2 = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let m4 = x.iter().map(|v| (v - mean).powi(4)).sum::<f64>() / n;
    let sd = m2.sqrt();
    Moments {
        n,
        mean,
        sd,
        se_mean: sd / n.sqrt(),
        // Delta method: Var(s²) ≈ (m₄ − m₂²)/n and s = √s², so
        // se(s) ≈ √((m₄ − m₂²)/n) / (2s); no normality assumed.
        se_sd: ((m4 - m2 * m2) / n).sqrt() / (2.0 * sd),
    }
}

/// Two-sample Kolmogorov–Smirnov statistic sup |F₁ − F₂|.
fn ks_statistic(a: &[f64], b: &[f64]) -> f64 {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    d
}

/// The KS critical value at level α = 0.001 for samples of n and m:
/// c(α)·√((n + m)/(n·m)), c(α) = √(−ln(α/2)/2) = 1.9495 (Smirnov's
/// asymptotic distribution).
fn ks_critical(n: usize, m: usize) -> f64 {
    let c = (-(0.001f64 / 2.0).ln() / 2.0).sqrt();
    c * ((n + m) as f64 / (n * m) as f64).sqrt()
}

const RUNS: usize = 20_000;

/// Issue 7 (b) for one configuration: scores from the tensor engine and from
/// the pure-Rust simulator (independent draws, different generators) agree
/// in distribution under each hypothesis.
///
/// Tolerances: means within 5 standard errors of their difference
/// (√(se₁² + se₂²)), standard deviations likewise with delta-method standard
/// errors; a correct engine fails one such check with probability 6·10⁻⁷.
/// The KS statistic must stay below its 99.9% critical value (0.0195 at
/// N = 20,000 per engine). All seeds are fixed, so the outcome is reproducible.
fn assert_same_distribution(c: BgmConfig, label: &str) {
    // Small tensors: one libtorch thread per test process (nextest runs
    // several processes at once on few cores).
    tch::set_num_threads(1);
    let cpu = BgmSimulator::new(c.clone()).unwrap().simulate(RUNS, 0);
    // A different seed: the tensor engine's draws are independent of these.
    let tensor_config = BgmConfig {
        seed: c.seed + 1000,
        ..c
    };
    let sim = TensorBgmSimulator::new(tensor_config, Device::Cpu)
        .unwrap()
        .with_chunk_runs(4096)
        .unwrap();
    let gpu = sim.simulate(RUNS).unwrap();
    for (h, a, b) in [
        ("D", &cpu.with_target, &gpu.with_target),
        ("D′", &cpu.without_target, &gpu.without_target),
    ] {
        let (ma, mb) = (moments(a), moments(b));
        assert_eq!((ma.n, mb.n), (RUNS as f64, RUNS as f64));
        let tol_mean = 5.0 * ma.se_mean.hypot(mb.se_mean);
        assert!(
            (ma.mean - mb.mean).abs() <= tol_mean,
            "{label}, {h}: mean CPU {} vs tensor {} (tolerance {tol_mean})",
            ma.mean,
            mb.mean
        );
        let tol_sd = 5.0 * ma.se_sd.hypot(mb.se_sd);
        assert!(
            (ma.sd - mb.sd).abs() <= tol_sd,
            "{label}, {h}: sd CPU {} vs tensor {} (tolerance {tol_sd})",
            ma.sd,
            mb.sd
        );
        let d = ks_statistic(a, b);
        let crit = ks_critical(a.len(), b.len());
        assert!(
            d < crit,
            "{label}, {h}: KS statistic {d} ≥ critical value {crit}"
        );
    }
}

#[test]
fn shuffle_matches_cpu_in_distribution() {
    for epochs in [1, 2] {
        let c = config(
            10,
            4,
            epochs,
            GameSampler::new("shuffle"),
            BgmDataset::ShuffleWorstCase,
            21,
        );
        assert_same_distribution(c, &format!("shuffle, WC, E = {epochs}"));
    }
    // Several special records: the batch-then-shuffle dataset, correctly shuffled.
    let c = config(
        10,
        4,
        1,
        GameSampler::new("shuffle"),
        BgmDataset::FirstBatchPositive,
        22,
    );
    assert_same_distribution(c, "shuffle, first batch positive, BtS");
}

#[test]
fn partial_shuffle_matches_cpu_in_distribution() {
    // K = 8 = 2B: the target only reaches batches 0 and 1 (Annamalai et al. 2024 §2.2).
    let partial = GameSampler::new("partial_shuffle").with("buffer_size", 8);
    let c = config(10, 4, 1, partial.clone(), BgmDataset::ShuffleWorstCase, 31);
    assert_same_distribution(c.clone(), "partial K = 8, WC, k = T");
    // The adversary's guess k = 2 (scored columns), and k = 1 < K/B, two epochs.
    for k in [1, 2] {
        let c = BgmConfig {
            score_columns: k,
            epochs: 2,
            ..c.clone()
        };
        assert_same_distribution(c, &format!("partial K = 8, WC, k = {k}, E = 2"));
    }
    let c = config(10, 4, 1, partial, BgmDataset::FirstBatchPositive, 32);
    assert_same_distribution(c, "partial K = 8, first batch positive, BtS");
    // K = B: no shuffling at all.
    let c = config(
        10,
        4,
        2,
        GameSampler::new("partial_shuffle").with("buffer_size", 4),
        BgmDataset::ShuffleWorstCase,
        33,
    );
    assert_same_distribution(c, "partial K = B, WC, E = 2");
}

#[test]
fn batch_then_shuffle_matches_cpu_in_distribution() {
    for epochs in [1, 2] {
        let c = config(
            10,
            4,
            epochs,
            GameSampler::new("batch_then_shuffle"),
            BgmDataset::FirstBatchPositive,
            41,
        );
        assert_same_distribution(c, &format!("batch-then-shuffle, BtS, E = {epochs}"));
    }
    let c = BgmConfig {
        score_columns: 3,
        ..config(
            10,
            4,
            1,
            GameSampler::new("batch_then_shuffle"),
            BgmDataset::FirstBatchPositive,
            42,
        )
    };
    assert_same_distribution(c, "batch-then-shuffle, BtS, k = 3");
}

#[test]
fn poisson_matches_cpu_in_distribution() {
    for epochs in [1, 2] {
        let c = config(
            10,
            4,
            epochs,
            GameSampler::new("poisson"),
            BgmDataset::PoissonWorstCase,
            51,
        );
        assert_same_distribution(c, &format!("Poisson, Poisson LR, E = {epochs}"));
    }
    // Binomial fillers (−1 records), and binomial fillers plus other +1 records.
    let c = config(
        10,
        4,
        1,
        GameSampler::new("poisson"),
        BgmDataset::ShuffleWorstCase,
        52,
    );
    assert_same_distribution(c, "Poisson sampler, shuffle worst case, WC");
    let c = config(
        10,
        4,
        2,
        GameSampler::new("poisson"),
        BgmDataset::FirstBatchPositive,
        53,
    );
    assert_same_distribution(c, "Poisson sampler, first batch positive, BtS, E = 2");
}

#[test]
fn other_ratios_match_cpu_in_distribution() {
    // Λ^N and Λ^PI on BGM draws (allowed by BgmConfig, meant for DP-SGD).
    for (score, seed) in [
        (LikelihoodRatio::Natural, 61),
        (LikelihoodRatio::PartiallyInformed, 62),
    ] {
        let c = BgmConfig {
            score,
            ..config(
                10,
                4,
                2,
                GameSampler::new("shuffle"),
                BgmDataset::PoissonWorstCase,
                seed,
            )
        };
        assert_same_distribution(c, &format!("shuffle, Poisson worst case, {score:?}"));
    }
}

/// The distribution checks have power: a tensor run of full shuffling is
/// told apart from a CPU run of partial shuffling with K = 2B, both scored on
/// the first k = 2 batches (under K = 2B the target is always among them,
/// under full shuffling with probability 2/10), which is what a sampler that
/// misplaced the target would look like. (With all T columns scored the two
/// would be indistinguishable: the ratios are symmetric in the columns.)
#[test]
fn distribution_check_detects_a_misplaced_target() {
    let scored_first_two = |sampler, seed| BgmConfig {
        score_columns: 2,
        ..config(10, 4, 1, sampler, BgmDataset::ShuffleWorstCase, seed)
    };
    let partial = GameSampler::new("partial_shuffle").with("buffer_size", 8);
    let cpu = BgmSimulator::new(scored_first_two(partial, 71))
        .unwrap()
        .simulate(RUNS, 0);
    let tensor = TensorBgmSimulator::new(
        scored_first_two(GameSampler::new("shuffle"), 72),
        Device::Cpu,
    )
    .unwrap()
    .simulate(RUNS)
    .unwrap();
    let d = ks_statistic(&cpu.with_target, &tensor.with_target);
    assert!(
        d > 2.0 * ks_critical(RUNS, RUNS),
        "KS statistic {d} should reject"
    );
}

/// Chunks are the unit of seeding: a longer simulation extends a shorter
/// one, and slices of whole chunks concatenate to the whole.
#[test]
fn chunks_are_reproducible_and_stream_in_slices() {
    let c = config(
        10,
        4,
        2,
        GameSampler::new("shuffle"),
        BgmDataset::ShuffleWorstCase,
        81,
    );
    let sim = TensorBgmSimulator::new(c, Device::Cpu)
        .unwrap()
        .with_chunk_runs(100)
        .unwrap();
    let whole = sim.simulate(300).unwrap();
    assert_eq!(whole, sim.simulate(300).unwrap());
    let first = sim.simulate_from_chunk(0, 200).unwrap();
    let last = sim.simulate_from_chunk(2, 100).unwrap();
    assert_eq!(&whole.with_target[..200], &first.with_target[..]);
    assert_eq!(&whole.without_target[200..], &last.without_target[..]);
    // Scores of chunk 1 are those of its raw observations.
    let o = sim
        .sample_observations(1, Hypothesis::WithoutTarget, 100)
        .unwrap();
    let rescored: Vec<f64> =
        Vec::try_from(&log_likelihood_ratios(sim.config().score, &o, 1.0, 10).unwrap()).unwrap();
    assert_eq!(&whole.without_target[100..200], &rescored[..]);
    assert_ne!(whole.with_target[..100], whole.with_target[100..200]);
}

fn same_refusal(c: BgmConfig) {
    let cpu = match BgmSimulator::new(c.clone()) {
        Err(AttacksError::InvalidParameter {
            parameter,
            value,
            expected,
        }) => (parameter.to_string(), value, expected),
        other => panic!("expected the CPU simulator to refuse {c:?}, got {other:?}"),
    };
    match TensorBgmSimulator::new(c, Device::Cpu) {
        Err(TrainError::InvalidConfig {
            field,
            value,
            expected,
        }) => assert_eq!((field, value, expected), cpu),
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

/// Issue 7 (c) "Bad input": the tensor engine refuses what the CPU simulator
/// refuses, with the same parameter, value and expectation.
#[test]
fn bad_input_is_refused_like_the_cpu_simulator() {
    let base = config(
        10,
        4,
        1,
        GameSampler::new("shuffle"),
        BgmDataset::ShuffleWorstCase,
        1,
    );
    // K not a multiple of B, K > n = 40, K = 0.
    for k in [6, 44, 0] {
        same_refusal(BgmConfig {
            sampler: GameSampler::new("partial_shuffle").with("buffer_size", k),
            ..base.clone()
        });
    }
    for sigma in [0.0, -1.0, f64::NAN, 1e-200] {
        same_refusal(BgmConfig {
            noise_multiplier: sigma,
            ..base.clone()
        });
    }
    same_refusal(BgmConfig {
        steps: 0,
        ..base.clone()
    });
    same_refusal(BgmConfig {
        epochs: 0,
        ..base.clone()
    });
    same_refusal(BgmConfig {
        score_columns: 11,
        ..base.clone()
    });
    same_refusal(BgmConfig {
        score: LikelihoodRatio::Poisson { sample_rate: 1.5 },
        ..base.clone()
    });
    // The message names the field and what was expected.
    let err = TensorBgmSimulator::new(
        BgmConfig {
            sampler: GameSampler::new("partial_shuffle").with("buffer_size", 6),
            ..base.clone()
        },
        Device::Cpu,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("buffer_size")
            && err.contains("multiple of batch_size = 4")
            && err.contains("steps × expected_batch_size = 40 records"),
        "{err}"
    );
    // The scorer: wrong shape, k outside 1..=T, non-finite observations.
    let lr = LikelihoodRatio::WorstCase { batch_size: 4 };
    let flat = Tensor::zeros([3, 10], (Kind::Double, Device::Cpu));
    assert!(matches!(
        log_likelihood_ratios(lr, &flat, 1.0, 10),
        Err(TrainError::Shape { .. })
    ));
    let o = Tensor::zeros([3, 2, 10], (Kind::Double, Device::Cpu));
    for k in [0, 11] {
        assert!(matches!(
            log_likelihood_ratios(lr, &o, 1.0, k),
            Err(TrainError::InvalidConfig { field, .. }) if field == "columns"
        ));
    }
    let _ = o.get(1).get(0).get(3).fill_(f64::NAN);
    assert!(matches!(
        log_likelihood_ratios(lr, &o, 1.0, 10),
        Err(TrainError::InvalidConfig { field, .. }) if field == "observations"
    ));
    assert!(matches!(
        log_likelihood_ratios(lr, &o, 0.0, 10),
        Err(TrainError::InvalidConfig { field, .. }) if field == "noise_multiplier"
    ));
}
