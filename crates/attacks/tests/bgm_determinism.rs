//! BGM scores replay exactly from the seed, whatever the thread count or the
//! streaming slice size.

use dpaudit_attacks::{BgmConfig, BgmDataset, BgmSimulator, LikelihoodRatio, CHUNK_SIZE};
use dpaudit_data::sampler::GameSampler;

fn config(seed: u64) -> BgmConfig {
    BgmConfig {
        steps: 20,
        expected_batch_size: 2,
        epochs: 2,
        noise_multiplier: 1.0,
        sampler: GameSampler::new("shuffle"),
        dataset: BgmDataset::ShuffleWorstCase,
        score: LikelihoodRatio::WorstCase { batch_size: 2 },
        score_columns: 20,
        seed,
    }
}

#[test]
fn thread_count_does_not_change_the_scores() {
    let sim = BgmSimulator::new(config(9)).unwrap();
    let runs = 3 * CHUNK_SIZE + 5;
    let one = sim.simulate(runs, 1);
    assert_eq!(one.with_target.len(), runs);
    assert_eq!(one.without_target.len(), runs);
    assert_eq!(one, sim.simulate(runs, 2));
    assert_eq!(one, sim.simulate(runs, 7));
}

#[test]
fn streaming_by_chunks_reproduces_one_big_call() {
    let sim = BgmSimulator::new(config(9)).unwrap();
    let whole = sim.simulate(3 * CHUNK_SIZE, 2);
    let head = sim.simulate_from_chunk(0, 2 * CHUNK_SIZE, 2);
    let tail = sim.simulate_from_chunk(2, CHUNK_SIZE, 1);
    assert_eq!(&whole.with_target[..2 * CHUNK_SIZE], &head.with_target[..]);
    assert_eq!(&whole.with_target[2 * CHUNK_SIZE..], &tail.with_target[..]);
    assert_eq!(
        &whole.without_target[2 * CHUNK_SIZE..],
        &tail.without_target[..]
    );
}

#[test]
fn seeds_and_hypotheses_use_different_streams() {
    let a = BgmSimulator::new(config(9)).unwrap().simulate(100, 1);
    let b = BgmSimulator::new(config(10)).unwrap().simulate(100, 1);
    assert_ne!(a.with_target, b.with_target);
    // The two hypotheses never share noise draws.
    assert!(a
        .with_target
        .iter()
        .zip(&a.without_target)
        .all(|(x, y)| x != y));
}

#[test]
fn pinned_scores_replay_across_builds() {
    // Pinned from this implementation (ChaCha8 stream 2c + h of the seed,
    // rand_distr 0.4 ziggurat normals). If this changes, stored experiment
    // seeds no longer replay: treat it as a breaking change, not a tolerance issue.
    let s = BgmSimulator::new(config(9)).unwrap().simulate(2, 1);
    let pinned = [PINNED_WITH, PINNED_WITHOUT];
    let got = [s.with_target[0], s.without_target[0]];
    for (g, p) in got.iter().zip(pinned) {
        assert!((g - p).abs() < 1e-12, "got {got:?}, pinned {pinned:?}");
    }
}

const PINNED_WITH: f64 = 2.301_917_642_204_182_7;
const PINNED_WITHOUT: f64 = -1.069_031_506_678_265_4;
