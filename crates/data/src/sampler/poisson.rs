//! Poisson subsampling (docs/samplers.md; Abadi et al. 2016): in every
//! step each record is included independently with probability
//! `sample_rate`, so batch sizes are Binomial(n, q) and vary.

use serde::{Deserialize, Serialize};

use super::plan::{invalid, BatchSampler, EpochPlan};
use super::random::{ByteReader, Inclusion};
use super::DataError;
use crate::seed::SeedKey;

/// Config of [`PoissonSampler`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoissonConfig {
    /// The inclusion probability `q` of every record in every step, in `(0, 1]`.
    pub sample_rate: f64,
    /// Steps per epoch; absent: `round(1 / sample_rate)` (Annamalai et al. 2024 §2.2:
    /// `T = |D|/B` with `q = B/|D|`).
    #[serde(default)]
    pub steps_per_epoch: Option<usize>,
}

/// Poisson subsampling over `n` records.
///
/// The inclusion draws of step `s` of epoch `e`, replica `r` come from
/// `seed.stream(Sampler).child(r).child(e).child(s)`, records in index
/// order, one exact Bernoulli draw each that reads random bytes lazily
/// (usually one byte per record; see the `random` module): a record is
/// included with probability `floor(q·2^64)/2^64 ≤ q`. Any step
/// can be replayed on its own with [`PoissonSampler::batch`].
#[derive(Clone, Debug, PartialEq)]
pub struct PoissonSampler {
    num_records: usize,
    sample_rate: f64,
    steps_per_epoch: usize,
    inclusion: Inclusion,
}

impl PoissonSampler {
    /// Validate `config` for `num_records` records.
    pub fn new(num_records: usize, config: &PoissonConfig) -> Result<Self, DataError> {
        let q = config.sample_rate;
        if !(q.is_finite() && q > 0.0 && q <= 1.0) {
            return Err(invalid("sample_rate", q, "a number in (0, 1]"));
        }
        if num_records == 0 {
            return Err(invalid(
                "num_records",
                0,
                "a dataset with at least one record",
            ));
        }
        let steps_per_epoch = match config.steps_per_epoch {
            Some(0) => return Err(invalid("steps_per_epoch", 0, "at least 1")),
            Some(steps) => steps,
            None => {
                let steps = (1.0 / q).round();
                if steps > u32::MAX as f64 {
                    return Err(invalid(
                        "sample_rate",
                        q,
                        "a rate whose 1/sample_rate steps per epoch fit in 32 bits, \
                         or an explicit steps_per_epoch",
                    ));
                }
                steps as usize
            }
        };
        Ok(Self {
            num_records,
            sample_rate: q,
            steps_per_epoch,
            inclusion: Inclusion::from_rate(q),
        })
    }

    /// The configured `sample_rate` q.
    pub fn sample_rate(&self) -> f64 {
        self.sample_rate
    }

    /// The exact inclusion probability realised, `floor(q·2^64)/2^64`
    /// (1 for q = 1); within 2^-64 below `sample_rate`.
    pub fn realised_sample_rate(&self) -> f64 {
        self.inclusion.probability()
    }

    fn epoch_key(key: SeedKey, replica: u64, epoch: u64) -> SeedKey {
        key.replica_epoch(replica, epoch)
    }

    fn draw(&self, key: SeedKey) -> Vec<usize> {
        let threshold = match self.inclusion {
            Inclusion::Always => return (0..self.num_records).collect(),
            Inclusion::Below(threshold) => threshold,
        };
        let mut rng = key.rng();
        let mut bytes = ByteReader::new();
        let mut batch =
            Vec::with_capacity((self.sample_rate * self.num_records as f64 * 1.5) as usize + 16);
        for record in 0..self.num_records {
            if bytes.below(&mut rng, threshold) {
                batch.push(record);
            }
        }
        batch
    }

    /// The batch of one step, without drawing the rest of the epoch. Steps
    /// at or past `steps_per_epoch` are well defined but belong to no epoch.
    pub fn batch(&self, key: SeedKey, replica: u64, epoch: u64, step: u64) -> Vec<usize> {
        self.draw(Self::epoch_key(key, replica, epoch).child(step))
    }
}

impl BatchSampler for PoissonSampler {
    fn num_records(&self) -> usize {
        self.num_records
    }

    fn steps_per_epoch(&self) -> usize {
        self.steps_per_epoch
    }

    /// `q · n`, the public normaliser of DP-SGD with Poisson sampling.
    fn expected_batch_size(&self) -> f64 {
        self.sample_rate * self.num_records as f64
    }

    fn max_batch_size(&self) -> usize {
        self.num_records
    }

    fn epoch(&self, key: SeedKey, replica: u64, epoch: u64) -> EpochPlan {
        let key = Self::epoch_key(key, replica, epoch);
        let batches = (0..self.steps_per_epoch as u64)
            .map(|step| self.draw(key.child(step)))
            .collect();
        EpochPlan::new(epoch, batches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::sampler_key;

    fn sampler(n: usize, q: f64, steps: Option<usize>) -> Result<PoissonSampler, DataError> {
        PoissonSampler::new(
            n,
            &PoissonConfig {
                sample_rate: q,
                steps_per_epoch: steps,
            },
        )
    }

    #[test]
    fn steps_default_to_round_inverse_rate() {
        // q = B/|D| = 100/10000 gives T = 100 (Annamalai et al. 2024 §2.2).
        assert_eq!(sampler(10_000, 0.01, None).unwrap().steps_per_epoch(), 100);
        assert_eq!(sampler(10, 0.3, None).unwrap().steps_per_epoch(), 3);
        assert_eq!(sampler(10, 0.3, Some(7)).unwrap().steps_per_epoch(), 7);
        assert_eq!(sampler(10, 1.0, None).unwrap().steps_per_epoch(), 1);
    }

    #[test]
    fn expected_batch_size_is_q_times_n() {
        let s = sampler(60_000, 256.0 / 60_000.0, None).unwrap();
        assert!((s.expected_batch_size() - 256.0).abs() < 1e-9);
    }

    #[test]
    fn rate_one_takes_everything() {
        let s = sampler(17, 1.0, Some(3)).unwrap();
        let plan = s.epoch(sampler_key(1), 0, 0);
        for batch in plan.batches() {
            assert_eq!(batch, &(0..17).collect::<Vec<_>>());
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        for q in [0.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
            match sampler(10, q, None) {
                Err(DataError::InvalidArgument { parameter, .. }) => {
                    assert_eq!(parameter, "sample_rate")
                }
                other => panic!("q = {q}: {other:?}"),
            }
        }
        assert!(matches!(
            sampler(10, 0.5, Some(0)),
            Err(DataError::InvalidArgument {
                parameter: "steps_per_epoch",
                ..
            })
        ));
        assert!(matches!(
            sampler(0, 0.5, None),
            Err(DataError::InvalidArgument {
                parameter: "num_records",
                ..
            })
        ));
    }

    #[test]
    fn single_step_replay_matches_the_epoch() {
        let s = sampler(500, 0.05, None).unwrap();
        let plan = s.epoch(sampler_key(9), 3, 2);
        for step in 0..plan.steps() {
            assert_eq!(
                plan.batch(step).unwrap(),
                s.batch(sampler_key(9), 3, 2, step as u64)
            );
        }
    }
}
