//! Issue 7 "Bad input": likelihood ratios stay finite for T up to 1000 and E
//! up to 500 (docs/canary-games.md: raw products under- or overflow there).

mod common;

use common::normal_pdf;
use dpaudit_attacks::{
    log_likelihood_ratio, BgmConfig, BgmDataset, BgmSimulator, Hypothesis, LikelihoodRatio,
    ObservationMatrix,
};
use dpaudit_data::sampler::GameSampler;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const T: usize = 1000;
const E: usize = 500;

fn config(
    sampler: GameSampler,
    dataset: BgmDataset,
    score: LikelihoodRatio,
    sigma: f64,
) -> BgmConfig {
    BgmConfig {
        steps: T,
        expected_batch_size: 2,
        epochs: E,
        noise_multiplier: sigma,
        sampler,
        dataset,
        score,
        score_columns: T,
        seed: 3,
    }
}

#[test]
fn simulated_scores_are_finite_at_t_1000_e_500() {
    let b = 2;
    let cases = [
        (
            GameSampler::new("shuffle"),
            BgmDataset::ShuffleWorstCase,
            LikelihoodRatio::WorstCase { batch_size: b },
        ),
        (
            GameSampler::new("batch_then_shuffle"),
            BgmDataset::FirstBatchPositive,
            LikelihoodRatio::BatchThenShuffle { batch_size: b },
        ),
        (
            GameSampler::new("poisson"),
            BgmDataset::PoissonWorstCase,
            LikelihoodRatio::Poisson {
                sample_rate: 1.0 / T as f64,
            },
        ),
        (
            GameSampler::new("partial_shuffle").with("buffer_size", 20),
            BgmDataset::ShuffleWorstCase,
            LikelihoodRatio::WorstCase { batch_size: b },
        ),
    ];
    for &sigma in &[0.5, 1.0] {
        for (sampler, dataset, score) in &cases {
            let s = BgmSimulator::new(config(sampler.clone(), *dataset, *score, sigma))
                .unwrap()
                .simulate(2, 2);
            for v in s.with_target.iter().chain(&s.without_target) {
                assert!(v.is_finite(), "{sampler:?} σ={sigma}: {v}");
            }
            // With 500 epochs of σ = 0.5 the two hypotheses are far apart.
            if sigma == 0.5 {
                assert!(
                    s.with_target.iter().all(|&v| v > 0.0),
                    "{sampler:?}: {:?}",
                    s.with_target
                );
                assert!(
                    s.without_target.iter().all(|&v| v < 0.0),
                    "{sampler:?}: {:?}",
                    s.without_target
                );
            }
        }
    }
}

#[test]
fn naive_products_fail_where_log_space_does_not() {
    // One T = 1000, E = 500 observation: the density Π_{i,t} φ(o_t^i) of the
    // whole matrix is about 0.5^(5·10⁵), far below f64's smallest positive value.
    let sim = BgmSimulator::new(config(
        GameSampler::new("shuffle"),
        BgmDataset::ShuffleWorstCase,
        LikelihoodRatio::WorstCase { batch_size: 2 },
        0.5,
    ))
    .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let m = sim
        .sample_observation(Hypothesis::WithTarget, &mut rng)
        .unwrap();
    let naive_row: f64 = m
        .values()
        .iter()
        .map(|&o| normal_pdf(o, -2.0, 0.5))
        .product();
    assert_eq!(naive_row, 0.0, "the direct product underflows");
    for lr in [
        LikelihoodRatio::Natural,
        LikelihoodRatio::PartiallyInformed,
        LikelihoodRatio::WorstCase { batch_size: 2 },
        LikelihoodRatio::BatchThenShuffle { batch_size: 2 },
        LikelihoodRatio::Poisson { sample_rate: 0.001 },
    ] {
        let v = log_likelihood_ratio(lr, &m, 0.5, T).unwrap();
        assert!(v.is_finite(), "{lr:?}: {v}");
    }
}

#[test]
fn extreme_observations_stay_finite() {
    // Observations of ±1e6 (a diverged run) give huge but finite log-ratios.
    let values: Vec<f64> = (0..T * 3)
        .map(|i| if i % 2 == 0 { 1e6 } else { -1e6 })
        .collect();
    let m = ObservationMatrix::new(3, T, values).unwrap();
    for lr in [
        LikelihoodRatio::Natural,
        LikelihoodRatio::PartiallyInformed,
        LikelihoodRatio::WorstCase { batch_size: 100 },
        LikelihoodRatio::BatchThenShuffle { batch_size: 100 },
        LikelihoodRatio::Poisson { sample_rate: 0.5 },
    ] {
        let v = log_likelihood_ratio(lr, &m, 0.1, T).unwrap();
        assert!(v.is_finite(), "{lr:?}: {v}");
    }
}
