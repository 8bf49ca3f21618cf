//! The fixed batch sequence of Cebere et al. 2024 §2.1, Eq. 2 (Cebere et al.): the mini-batches
//! `B_1 … B_T` are fixed before training and known to the adversary, the
//! same in every auditing run and every replica, so that no subsampling
//! amplification applies. They never depend on the run seed.

use serde::{Deserialize, Serialize};

use super::plan::{EpochPlan, FixedSize, FixedSizeSampler, LastBatch};
use super::random::shuffle;
use super::DataError;
use crate::seed::{RunSeed, SeedKey, Stream};

/// Config of [`FixedSequenceSampler`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedSequenceConfig {
    /// Records per batch `B`, `1 ≤ B ≤ n`.
    pub batch_size: usize,
    /// Absent: every epoch cuts the stored order into consecutive batches.
    /// Present: epoch `e` cuts a permutation drawn from
    /// `RunSeed(batch_seed).stream(FixedBatches).child(e)`, the same for
    /// every run seed and replica.
    #[serde(default)]
    pub batch_seed: Option<u64>,
    /// Required when `B` does not divide `n`; see [`LastBatch`].
    #[serde(default)]
    pub last_batch: Option<LastBatch>,
}

/// A batch sequence fixed in advance; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedSequenceSampler {
    size: FixedSize,
    batch_seed: Option<u64>,
}

impl FixedSequenceSampler {
    /// Validate `config` for `num_records` records.
    pub fn new(num_records: usize, config: &FixedSequenceConfig) -> Result<Self, DataError> {
        Ok(Self {
            size: FixedSize::new(num_records, config.batch_size, config.last_batch)?,
            batch_seed: config.batch_seed,
        })
    }

    /// The batch size `B`.
    pub fn batch_size(&self) -> usize {
        self.size.batch_size()
    }

    /// The seed of the sequence, if it is not the stored order.
    pub fn batch_seed(&self) -> Option<u64> {
        self.batch_seed
    }

    /// The batches of `epoch`, the same for every run.
    pub fn fixed_epoch(&self, epoch: u64) -> EpochPlan {
        EpochPlan::new(epoch, self.size.cut(&self.fixed_order(epoch)))
    }

    /// The order `epoch`'s batches are cut from: the stored order, or its
    /// permutation by `batch_seed`.
    fn fixed_order(&self, epoch: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.size.num_records()).collect();
        if let Some(batch_seed) = self.batch_seed {
            let mut rng = RunSeed(batch_seed)
                .stream(Stream::FixedBatches)
                .child(epoch)
                .rng();
            shuffle(&mut rng, &mut order);
        }
        order
    }
}

impl FixedSizeSampler for FixedSequenceSampler {
    fn size(&self) -> &FixedSize {
        &self.size
    }

    /// Ignores `seed` and `replica` by design.
    fn batches(&self, _key: SeedKey, _replica: u64, epoch: u64) -> Vec<Vec<usize>> {
        self.fixed_epoch(epoch).into_batches()
    }

    const CUTS_ONE_ORDER: bool = true;

    fn cut_order(&self, _key: SeedKey, _replica: u64, epoch: u64) -> Option<Vec<usize>> {
        Some(self.fixed_order(epoch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::BatchSampler;
    use crate::seed::sampler_key;

    #[test]
    fn stored_order_batches() {
        let s = FixedSequenceSampler::new(
            7,
            &FixedSequenceConfig {
                batch_size: 3,
                batch_seed: None,
                last_batch: Some(LastBatch::Partial),
            },
        )
        .unwrap();
        let expected = vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]];
        assert_eq!(s.epoch(sampler_key(1), 0, 0).into_batches(), expected);
        assert_eq!(s.epoch(sampler_key(2), 5, 3).into_batches(), expected);
    }
}
