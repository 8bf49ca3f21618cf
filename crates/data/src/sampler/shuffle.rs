//! Shuffle-then-batch (docs/samplers.md): a uniformly random
//! permutation of all records, cut into consecutive batches of `batch_size`;
//! redrawn every epoch.

use serde::{Deserialize, Serialize};

use super::plan::{BlockShuffle, FixedSize, LastBatch};
use super::DataError;
use crate::seed::SeedKey;

/// Config of [`ShuffleSampler`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShuffleConfig {
    /// Records per batch `B`, `1 ≤ B ≤ n`.
    pub batch_size: usize,
    /// Required when `B` does not divide `n`; see [`LastBatch`].
    #[serde(default)]
    pub last_batch: Option<LastBatch>,
}

/// Shuffle-then-batch over `n` records.
///
/// Epoch `e` of replica `r`: the identity order `0..n` permuted by
/// Fisher–Yates with the generator of
/// `seed.stream(Sampler).child(r).child(e)`, then cut into batches.
#[derive(Clone, Debug, PartialEq)]
pub struct ShuffleSampler {
    size: FixedSize,
}

impl ShuffleSampler {
    /// Validate `config` for `num_records` records.
    pub fn new(num_records: usize, config: &ShuffleConfig) -> Result<Self, DataError> {
        Ok(Self {
            size: FixedSize::new(num_records, config.batch_size, config.last_batch)?,
        })
    }

    /// The batch size `B`.
    pub fn batch_size(&self) -> usize {
        self.size.batch_size()
    }

    /// The permutation of epoch `epoch` before cutting into batches.
    pub fn order(&self, key: SeedKey, replica: u64, epoch: u64) -> Vec<usize> {
        self.block_order(key, replica, epoch)
    }
}

/// Shuffling is the partial shuffle with one block of all `n` records.
impl BlockShuffle for ShuffleSampler {
    fn blocks(&self) -> (&FixedSize, usize) {
        (&self.size, self.size.num_records())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::BatchSampler;
    use crate::seed::sampler_key;

    fn sampler(n: usize, b: usize, last: Option<LastBatch>) -> Result<ShuffleSampler, DataError> {
        ShuffleSampler::new(
            n,
            &ShuffleConfig {
                batch_size: b,
                last_batch: last,
            },
        )
    }

    #[test]
    fn steps_and_batch_sizes() {
        let even = sampler(10, 5, None).unwrap();
        assert_eq!(even.epoch(sampler_key(0), 0, 0).batch_sizes(), vec![5, 5]);
        let partial = sampler(10, 4, Some(LastBatch::Partial)).unwrap();
        assert_eq!(
            partial.epoch(sampler_key(0), 0, 0).batch_sizes(),
            vec![4, 4, 2]
        );
        let drop = sampler(10, 4, Some(LastBatch::Drop)).unwrap();
        assert_eq!(drop.epoch(sampler_key(0), 0, 0).batch_sizes(), vec![4, 4]);
        assert_eq!(drop.expected_batch_size(), 4.0);
    }

    #[test]
    fn rejects_bad_batch_sizes() {
        for b in [0, 11] {
            assert!(matches!(
                sampler(10, b, None),
                Err(DataError::InvalidArgument {
                    parameter: "batch_size",
                    ..
                })
            ));
        }
        match sampler(10, 4, None) {
            Err(
                err @ DataError::InvalidArgument {
                    parameter: "last_batch",
                    ..
                },
            ) => {
                let message = err.to_string();
                assert!(message.contains("remainder 2"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
