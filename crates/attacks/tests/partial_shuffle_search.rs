//! The partial-shuffle search over guesses k (Annamalai et al. 2024 §7.1, Algorithm 2.

mod common;

use common::auc;
use dpaudit_attacks::{
    partial_shuffle_search, AttacksError, BgmConfig, BgmDataset, BgmSimulator, Hypothesis,
    LikelihoodRatio, ObservationMatrix,
};
use dpaudit_data::sampler::GameSampler;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// With B = 1 the shuffle worst case has noise-free rows (−1,…,+1,…,−1) vs
/// (−1,…,0,…,−1): exactly the Partially-Informed signal (Annamalai et al. 2024 §5.1 table).
fn pi_observations(buffer: usize, runs: usize) -> (Vec<ObservationMatrix>, Vec<ObservationMatrix>) {
    let sim = BgmSimulator::new(BgmConfig {
        steps: 20,
        expected_batch_size: 1,
        epochs: 1,
        noise_multiplier: 0.7,
        sampler: GameSampler::new("partial_shuffle").with("buffer_size", buffer),
        dataset: BgmDataset::ShuffleWorstCase,
        score: LikelihoodRatio::PartiallyInformed,
        score_columns: 20,
        seed: 4,
    })
    .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let with = (0..runs)
        .map(|_| {
            sim.sample_observation(Hypothesis::WithTarget, &mut rng)
                .unwrap()
        })
        .collect();
    let without = (0..runs)
        .map(|_| {
            sim.sample_observation(Hypothesis::WithoutTarget, &mut rng)
                .unwrap()
        })
        .collect();
    (with, without)
}

#[test]
fn the_search_finds_the_buffer_the_target_is_confined_to() {
    // K = 3 batches: truncating the LR to k = 3 columns drops 17 columns of pure
    // noise without losing the target, so it separates best (AUC as the proxy estimator).
    let (with, without) = pi_observations(3, 3000);
    let mut calls = Vec::new();
    let result = partial_shuffle_search(
        LikelihoodRatio::PartiallyInformed,
        &with,
        &without,
        0.7,
        &[1, 3, 10, 20],
        |s, s_prime| {
            calls.push((s.len(), s_prime.len()));
            auc(s, s_prime)
        },
    )
    .unwrap();
    assert_eq!(calls, vec![(3000, 3000); 4]);
    let ks: Vec<usize> = result.per_guess.iter().map(|g| g.columns).collect();
    assert_eq!(ks, vec![1, 3, 10, 20]);
    assert_eq!(result.best.columns, 3, "{:?}", result.per_guess);
    // Every guess still separates in the member direction.
    assert!(
        result.per_guess.iter().all(|g| g.epsilon > 0.5),
        "{:?}",
        result.per_guess
    );
}

#[test]
fn the_search_refuses_inconsistent_inputs() {
    let (with, without) = pi_observations(3, 2);
    let lr = LikelihoodRatio::PartiallyInformed;
    assert!(matches!(
        partial_shuffle_search(lr, &with, &without, 0.7, &[21], |_, _| 0.0),
        Err(AttacksError::InvalidParameter {
            parameter: "columns",
            ..
        })
    ));
    assert!(matches!(
        partial_shuffle_search(lr, &with, &[], 0.7, &[1], |_, _| 0.0),
        Err(AttacksError::Empty {
            what: "without_target"
        })
    ));
    let short = vec![ObservationMatrix::new(1, 5, vec![0.0; 5]).unwrap()];
    assert!(matches!(
        partial_shuffle_search(lr, &with, &short, 0.7, &[1], |_, _| 0.0),
        Err(AttacksError::LengthMismatch {
            what: "observation matrix steps",
            expected: 20,
            found: 5
        })
    ));
}
