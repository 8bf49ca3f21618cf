//! Batch-then-shuffle, the "wrong" order of `dataset.batch(B).shuffle(..)`
//! (docs/samplers.md, §5.8; Sec. 7.2, Fig. 11 and App. D.2 of the paper):
//! the stored order `0..n` is cut once into consecutive batches of `B`, and
//! every epoch only the order of those batches is permuted uniformly. The
//! content of every batch, and the order inside it, never changes.

use serde::{Deserialize, Serialize};

use super::plan::{FixedSize, FixedSizeSampler, LastBatch};
use super::random::shuffle;
use super::DataError;
use crate::seed::SeedKey;

/// Config of [`BatchThenShuffleSampler`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchThenShuffleConfig {
    /// Records per batch `B`, `1 ≤ B ≤ n`.
    pub batch_size: usize,
    /// Required when `B` does not divide `n`. With `partial`, the short
    /// stored-last batch is permuted with the others; with `drop`, the last
    /// `n mod B` stored records are never used.
    #[serde(default)]
    pub last_batch: Option<LastBatch>,
}

/// Batch-then-shuffle over `n` records.
///
/// Epoch `e` of replica `r`: the stored batches `0..T` permuted by
/// Fisher–Yates with the generator of `seed.stream(Sampler).child(r).child(e)`.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchThenShuffleSampler {
    size: FixedSize,
}

impl BatchThenShuffleSampler {
    /// Validate `config` for `num_records` records.
    pub fn new(num_records: usize, config: &BatchThenShuffleConfig) -> Result<Self, DataError> {
        Ok(Self {
            size: FixedSize::new(num_records, config.batch_size, config.last_batch)?,
        })
    }

    /// The batch size `B`.
    pub fn batch_size(&self) -> usize {
        self.size.batch_size()
    }

    /// The stored batches, formed once: `[0..B), [B..2B), …`.
    pub fn stored_batches(&self) -> Vec<Vec<usize>> {
        let identity: Vec<usize> = (0..self.size.num_records()).collect();
        self.size.cut(&identity)
    }

    /// Which stored batch each step of epoch `epoch` uses.
    pub fn batch_order(&self, key: SeedKey, replica: u64, epoch: u64) -> Vec<usize> {
        let mut rng = key.replica_epoch(replica, epoch).rng();
        let mut order: Vec<usize> = (0..self.size.steps()).collect();
        shuffle(&mut rng, &mut order);
        order
    }
}

impl FixedSizeSampler for BatchThenShuffleSampler {
    fn size(&self) -> &FixedSize {
        &self.size
    }

    fn batches(&self, key: SeedKey, replica: u64, epoch: u64) -> Vec<Vec<usize>> {
        let mut stored: Vec<Option<Vec<usize>>> =
            self.stored_batches().into_iter().map(Some).collect();
        self.batch_order(key, replica, epoch)
            .into_iter()
            .map(|b| stored[b].take().unwrap_or_default())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::BatchSampler;
    use crate::seed::sampler_key;

    /// App. D.2: D = (x_T, −1, −1, −1, +1, +1, +1, +1), B = 4: the record at
    /// position 0 always shares its batch with positions 1–3.
    #[test]
    fn appendix_d2_first_batch_stays_together() {
        let s = BatchThenShuffleSampler::new(
            8,
            &BatchThenShuffleConfig {
                batch_size: 4,
                last_batch: None,
            },
        )
        .unwrap();
        for epoch in 0..50 {
            let plan = s.epoch(sampler_key(11), 0, epoch);
            let step = plan.step_of(0).unwrap();
            assert_eq!(plan.batch(step).unwrap(), &[0, 1, 2, 3]);
        }
    }
}
