//! The BGM simulator draws what Annamalai et al. 2024 §4, Algorithm 4 says, for every
//! sampler, and its likelihood ratios are the exact ones where they should be.

mod common;

use common::{auc, mean_se, normal_cdf};
use dpaudit_attacks::{BgmConfig, BgmDataset, BgmSimulator, Hypothesis, LikelihoodRatio};
use dpaudit_data::sampler::GameSampler;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn config(
    steps: usize,
    b: usize,
    sampler: GameSampler,
    dataset: BgmDataset,
    sigma: f64,
) -> BgmConfig {
    BgmConfig {
        steps,
        expected_batch_size: b,
        epochs: 1,
        noise_multiplier: sigma,
        sampler,
        dataset,
        score: dataset.matched_likelihood_ratio(b, steps),
        score_columns: steps,
        seed: 2024,
    }
}

/// The shuffle sampler on the shuffle worst-case dataset (Annamalai et al. 2024 §5.3).
fn shuffle_worst_case(steps: usize, b: usize, sigma: f64) -> BgmConfig {
    config(
        steps,
        b,
        GameSampler::new("shuffle"),
        BgmDataset::ShuffleWorstCase,
        sigma,
    )
}

/// Draws `runs` raw rows (E = 1) with near-zero noise, rounded to integers.
fn noiseless_rows(c: BgmConfig, h: Hypothesis, runs: usize) -> Vec<Vec<i64>> {
    let sim = BgmSimulator::new(c).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    (0..runs)
        .map(|_| {
            let m = sim.sample_observation(h, &mut rng).unwrap();
            m.row(0)
                .iter()
                .map(|&v| {
                    let r = v.round();
                    assert!(
                        (v - r).abs() < 1e-3,
                        "noise 1e-5 should leave integers, got {v}"
                    );
                    r as i64
                })
                .collect()
        })
        .collect()
}

#[test]
fn shuffle_worst_case_rows_have_one_special_entry() {
    // Annamalai et al. 2024 §4, Algorithm 4: D → (−B,…,−B+2,…,−B), D′ → (−B,…,−B+1,…,−B), special entry uniform.
    let b = 3;
    for (h, special) in [
        (Hypothesis::WithTarget, -1),
        (Hypothesis::WithoutTarget, -2),
    ] {
        let rows = noiseless_rows(shuffle_worst_case(5, b, 1e-5), h, 2000);
        let mut hits = [0usize; 5];
        for row in &rows {
            let specials: Vec<usize> = (0..5).filter(|&t| row[t] != -(b as i64)).collect();
            assert_eq!(specials.len(), 1, "{row:?}");
            assert_eq!(row[specials[0]], special);
            hits[specials[0]] += 1;
        }
        // Uniform over 5 batches: 400 each, binomial SE 17.9; 5 SE = 90.
        for &c in &hits {
            assert!((c as i64 - 400).abs() < 90, "{hits:?}");
        }
    }
}

#[test]
fn batch_then_shuffle_layout_rows() {
    // Annamalai et al. 2024 §4.1–4.2, §5.3 BtS variant: (B, −B, …, −B) vs (B−1, −B, …, −B).
    let b = 4;
    for (h, special) in [(Hypothesis::WithTarget, 4), (Hypothesis::WithoutTarget, 3)] {
        let rows = noiseless_rows(
            config(
                6,
                b,
                GameSampler::new("batch_then_shuffle"),
                BgmDataset::FirstBatchPositive,
                1e-5,
            ),
            h,
            500,
        );
        for row in &rows {
            assert_eq!(row.iter().filter(|&&v| v == special).count(), 1, "{row:?}");
            assert_eq!(row.iter().filter(|&&v| v == -4).count(), 5, "{row:?}");
        }
    }
}

#[test]
fn shuffled_first_batch_layout_spreads_the_positives() {
    // "Without the bug" (Annamalai et al. 2024 §4.1–4.2, §5.3): the B positives of the first stored
    // batch land in uniformly random positions. Noise-free batch sums are
    // −B + 2·(#positives in the batch) (minus 1 for ⊥), so the row sums to
    // B − (n − B) = 2B − n with the target and 2B − 1 − n without.
    let (t, b) = (5, 4);
    let n = (t * b) as i64;
    let mut batch0 = 0.0;
    for (h, total) in [
        (Hypothesis::WithTarget, 2 * b as i64 - n),
        (Hypothesis::WithoutTarget, 2 * b as i64 - 1 - n),
    ] {
        let rows = noiseless_rows(
            config(
                t,
                b,
                GameSampler::new("shuffle"),
                BgmDataset::FirstBatchPositive,
                1e-5,
            ),
            h,
            4000,
        );
        for row in &rows {
            assert_eq!(row.iter().sum::<i64>(), total, "{row:?}");
        }
        if h == Hypothesis::WithTarget {
            batch0 = rows
                .iter()
                .map(|r| ((r[0] + b as i64) / 2) as f64)
                .sum::<f64>()
                / rows.len() as f64;
        }
    }
    // Hypergeometric mean of positives in one batch: B·B/n = 0.8 (SE ≈ 0.012).
    assert!((batch0 - 0.8).abs() < 0.06, "{batch0}");
}

#[test]
fn partial_shuffle_confines_the_target_to_the_first_buffer() {
    // docs/samplers.md: a record at position 0 can only land in the first
    // K/B batches, uniformly. K = B is "no shuffling".
    let (t, b) = (10, 2);
    let rows = noiseless_rows(
        config(
            t,
            b,
            GameSampler::new("partial_shuffle").with("buffer_size", b),
            BgmDataset::ShuffleWorstCase,
            1e-5,
        ),
        Hypothesis::WithTarget,
        200,
    );
    assert!(rows
        .iter()
        .all(|r| r[0] == 0 && r[1..].iter().all(|&v| v == -2)));
    let rows = noiseless_rows(
        config(
            t,
            b,
            GameSampler::new("partial_shuffle").with("buffer_size", 3 * b),
            BgmDataset::ShuffleWorstCase,
            1e-5,
        ),
        Hypothesis::WithoutTarget,
        3000,
    );
    let mut hits = [0usize; 10];
    for r in &rows {
        let t_star = r.iter().position(|&v| v == -1).unwrap();
        hits[t_star] += 1;
    }
    assert!(hits[3..].iter().all(|&c| c == 0), "{hits:?}");
    // 1000 expected per batch, SE 25.8.
    assert!(
        hits[..3].iter().all(|&c| (c as i64 - 1000).abs() < 130),
        "{hits:?}"
    );
}

#[test]
fn poisson_rows_include_the_target_with_rate_one_over_t() {
    // docs/samplers.md and the Poisson worst case (+1, 0, …, 0).
    let t = 8;
    let rows = noiseless_rows(
        config(
            t,
            5,
            GameSampler::new("poisson"),
            BgmDataset::PoissonWorstCase,
            1e-5,
        ),
        Hypothesis::WithTarget,
        4000,
    );
    let ones: usize = rows
        .iter()
        .map(|r| r.iter().filter(|&&v| v == 1).count())
        .sum();
    assert!(rows.iter().all(|r| r.iter().all(|&v| v == 0 || v == 1)));
    // E[#inclusions per epoch] = T·q = 1; 4000 epochs: mean 4000, SE ≈ 59.
    assert!((ones as i64 - 4000).abs() < 300, "{ones}");
    // With −1 fillers every batch sum is −Binomial(n−1, q) + Bernoulli(q):
    // mean −(n−1)/T + 1/T = −B + 2/T = −4.75 for n = 40, T = 8.
    let rows = noiseless_rows(
        config(
            t,
            5,
            GameSampler::new("poisson"),
            BgmDataset::ShuffleWorstCase,
            1e-5,
        ),
        Hypothesis::WithTarget,
        4000,
    );
    let all: Vec<f64> = rows.iter().flatten().map(|&v| v as f64).collect();
    let (m, se) = mean_se(&all);
    assert!((m - (-4.75)).abs() < 5.0 * se, "{m} ± {se}");
}

#[test]
fn max_statistic_follows_chua_et_al_closed_form() {
    // Annamalai et al. 2024 §6.1 (Chua et al. lower bound): centred BGM rows u = o + B are
    // MoG(μ) with μ = 2 (D) or 1 (D′), and P(max_t u_t ≤ C) = Φ((C−μ)/σ)·Φ(C/σ)^{T−1}.
    let (t, b, sigma) = (20, 3, 1.0);
    let sim = BgmSimulator::new(shuffle_worst_case(t, b, sigma)).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let runs = 20_000;
    for (h, mu) in [
        (Hypothesis::WithTarget, 2.0),
        (Hypothesis::WithoutTarget, 1.0),
    ] {
        let maxima: Vec<f64> = (0..runs)
            .map(|_| {
                let m = sim.sample_observation(h, &mut rng).unwrap();
                m.row(0)
                    .iter()
                    .map(|&o| o + b as f64)
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        for &c in &[1.0, 2.0, 3.0] {
            let expected = normal_cdf((c - mu) / sigma) * normal_cdf(c / sigma).powi(t as i32 - 1);
            let got = maxima.iter().filter(|&&x| x <= c).count() as f64 / runs as f64;
            // Binomial SE ≤ 0.0036 at n = 20000; 5 SE.
            assert!(
                (got - expected).abs() < 0.018,
                "μ={mu} C={c}: {got} vs {expected}"
            );
        }
    }
}

fn exact_lr_has_unit_mean_under_the_alternative(c: BgmConfig, runs: usize) {
    ratio_has_mean_under_the_alternative(c, runs, 1.0)
}

/// For a score log Λ with Λ = κ·dP/dQ: E_Q[Λ] = κ and E_P[1/Λ] = 1/κ
/// (for the exact likelihood ratio, κ = 1).
fn ratio_has_mean_under_the_alternative(c: BgmConfig, runs: usize, kappa: f64) {
    let s = BgmSimulator::new(c.clone()).unwrap().simulate(runs, 2);
    let lam_q: Vec<f64> = s
        .without_target
        .iter()
        .map(|v| (v - kappa.ln()).exp())
        .collect();
    let inv_p: Vec<f64> = s
        .with_target
        .iter()
        .map(|v| (kappa.ln() - v).exp())
        .collect();
    for (name, x) in [("E_Q[Λ]/κ", lam_q), ("κ·E_P[1/Λ]", inv_p)] {
        let (m, se) = mean_se(&x);
        assert!(
            (m - 1.0).abs() < 5.0 * se && se < 0.05,
            "{c:?} {name} = {m} ± {se}"
        );
    }
}

#[test]
fn worst_case_ratio_is_the_exact_likelihood_ratio_of_the_shuffle_bgm() {
    // Λ^WC is Pr[g̃ | D]/Pr[g̃ | D′] for the shuffle BGM (Annamalai et al. 2024 §4.1–4.2, §5.3 derivation).
    exact_lr_has_unit_mean_under_the_alternative(
        BgmConfig {
            epochs: 2,
            ..shuffle_worst_case(10, 5, 1.5)
        },
        100_000,
    );
}

#[test]
fn bts_ratio_is_exact_for_batch_then_shuffle() {
    exact_lr_has_unit_mean_under_the_alternative(
        config(
            10,
            1,
            GameSampler::new("batch_then_shuffle"),
            BgmDataset::FirstBatchPositive,
            2.0,
        ),
        100_000,
    );
}

#[test]
fn poisson_ratio_is_exact_for_the_poisson_bgm() {
    exact_lr_has_unit_mean_under_the_alternative(
        BgmConfig {
            epochs: 3,
            ..config(
                10,
                4,
                GameSampler::new("poisson"),
                BgmDataset::PoissonWorstCase,
                1.0,
            )
        },
        100_000,
    );
}

#[test]
fn natural_ratio_is_exact_for_shuffled_zero_fillers() {
    // Shuffling D = (+1, 0, …, 0) gives rows (0,…,+1,…,0) vs (0,…,0): the
    // Natural threat model's noise-free signal (Annamalai et al. 2024 §5.1 table). The paper's
    // Λ^N drops the 1/T prior of the numerator only (Annamalai et al. 2024 §4.1–4.2, §5.3: "an extra
    // constant −E·log T"), so Λ^N = T^E·dP/dQ = 100·dP/dQ here.
    ratio_has_mean_under_the_alternative(
        BgmConfig {
            score: LikelihoodRatio::Natural,
            epochs: 2,
            ..config(
                10,
                3,
                GameSampler::new("shuffle"),
                BgmDataset::PoissonWorstCase,
                1.5,
            )
        },
        100_000,
        100.0,
    );
}

#[test]
fn partially_informed_ratio_is_exact_for_the_unit_batch_worst_case() {
    // With B = 1 the shuffle worst case gives rows (−1,…,+1,…,−1) vs
    // (−1,…,0,…,−1): the Partially-Informed signal (Annamalai et al. 2024 §5.1 table), so Λ^PI is exact.
    exact_lr_has_unit_mean_under_the_alternative(
        BgmConfig {
            score: LikelihoodRatio::PartiallyInformed,
            ..shuffle_worst_case(10, 1, 1.5)
        },
        100_000,
    );
}

#[test]
fn scores_separate_in_the_member_direction_at_sigma_1_t_100() {
    // σ = 1, T = 100 (Annamalai et al. 2024 Fig. 3 setting): E_P[log Λ] = KL(P‖Q) > 0 and
    // E_Q[log Λ] = −KL(Q‖P) < 0 (Gibbs' inequality), so scores with the target
    // are higher on average.
    let c = shuffle_worst_case(100, 1, 1.0);
    let s = BgmSimulator::new(c).unwrap().simulate(20_000, 2);
    let (m1, se1) = mean_se(&s.with_target);
    let (m0, se0) = mean_se(&s.without_target);
    assert!(m1 > 5.0 * se1, "with target: {m1} ± {se1}");
    assert!(m0 < -5.0 * se0, "without target: {m0} ± {se0}");
    let a = auc(&s.with_target, &s.without_target);
    // The AUC's SE at n = 20000 per class is below 0.003.
    assert!(a > 0.52, "AUC {a}");
}

#[test]
fn score_columns_use_only_the_leading_batches() {
    // With K = B the target is always in batch 0, so the score on the first
    // column alone is the Gaussian LR of that column (Annamalai et al. 2024 §7.1, Algorithm 2, k = 1).
    let mut c = config(
        10,
        2,
        GameSampler::new("partial_shuffle").with("buffer_size", 2),
        BgmDataset::ShuffleWorstCase,
        1.0,
    );
    c.score_columns = 1;
    let sim = BgmSimulator::new(c).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let m = sim
        .sample_observation(Hypothesis::WithTarget, &mut rng)
        .unwrap();
    let u = m.row(0)[0] + 2.0;
    let expected = ((u - 1.0).powi(2) - (u - 2.0).powi(2)) / 2.0;
    assert!((sim.score(&m).unwrap() - expected).abs() < 1e-12);
    assert_eq!(
        sim.config().score,
        LikelihoodRatio::WorstCase { batch_size: 2 }
    );
}
