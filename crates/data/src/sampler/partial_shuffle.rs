//! Partial shuffle with a buffer of `K` records (docs/samplers.md,
//! Sec. 7.1 and Fig. 10 of the paper; "shuffled within a small buffer",
//! Ponomareva et al.): block-wise, not tf.data's streaming reservoir.
//!
//! 1. Split the stored order `0..n` into consecutive blocks of `K` records
//!    (the last block holds `n mod K` records if `K` does not divide `n`).
//! 2. Permute each block independently and uniformly.
//! 3. Concatenate the blocks in their stored order, cut into batches of `B`.
//!
//! With `K` a multiple of `B`, a record stored at position `i` lands in one
//! of the `K/B` batches of its block `⌊i/K⌋`; the record at position 0 only
//! in the first `K/B` batches. `K = B` keeps every batch's content fixed
//! (no shuffling across batches); `K = n` is full shuffling and gives
//! exactly the batches of [`super::ShuffleSampler`] for the same seed.

use serde::{Deserialize, Serialize};

use super::plan::{invalid, BlockShuffle, FixedSize, LastBatch};
use super::DataError;
use crate::seed::SeedKey;

/// Config of [`PartialShuffleSampler`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialShuffleConfig {
    /// Records per batch `B`, `1 ≤ B ≤ n`.
    pub batch_size: usize,
    /// The buffer `K`: a positive multiple of `batch_size`, at most `n`
    /// (or exactly `n`, full shuffling).
    pub buffer_size: usize,
    /// Required when `B` does not divide `n`; see [`LastBatch`].
    #[serde(default)]
    pub last_batch: Option<LastBatch>,
}

/// Block-wise partial shuffle over `n` records.
///
/// Epoch `e` of replica `r`: blocks permuted in stored order, each by
/// Fisher–Yates, all with the one generator of
/// `seed.stream(Sampler).child(r).child(e)`.
#[derive(Clone, Debug, PartialEq)]
pub struct PartialShuffleSampler {
    size: FixedSize,
    buffer_size: usize,
}

impl PartialShuffleSampler {
    /// Validate `config` for `num_records` records.
    pub fn new(num_records: usize, config: &PartialShuffleConfig) -> Result<Self, DataError> {
        let size = FixedSize::new(num_records, config.batch_size, config.last_batch)?;
        let (k, b) = (config.buffer_size, config.batch_size);
        if k > num_records {
            return Err(invalid(
                "buffer_size",
                k,
                format!("at most the {num_records} records"),
            ));
        }
        if k == 0 || (k % b != 0 && k != num_records) {
            return Err(invalid(
                "buffer_size",
                k,
                format!("a positive multiple of batch_size = {b}, or {num_records} (all records)"),
            ));
        }
        Ok(Self {
            size,
            buffer_size: k,
        })
    }

    /// The batch size `B`.
    pub fn batch_size(&self) -> usize {
        self.size.batch_size()
    }

    /// The buffer `K`.
    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }

    /// The order of epoch `epoch` before cutting into batches.
    pub fn order(&self, key: SeedKey, replica: u64, epoch: u64) -> Vec<usize> {
        self.block_order(key, replica, epoch)
    }
}

impl BlockShuffle for PartialShuffleSampler {
    fn blocks(&self) -> (&FixedSize, usize) {
        (&self.size, self.buffer_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::BatchSampler;
    use crate::seed::sampler_key;

    fn sampler(n: usize, b: usize, k: usize) -> Result<PartialShuffleSampler, DataError> {
        PartialShuffleSampler::new(
            n,
            &PartialShuffleConfig {
                batch_size: b,
                buffer_size: k,
                last_batch: Some(LastBatch::Partial),
            },
        )
    }

    #[test]
    fn rejects_bad_buffers() {
        for k in [0, 3, 12] {
            assert!(
                matches!(
                    sampler(10, 2, k),
                    Err(DataError::InvalidArgument {
                        parameter: "buffer_size",
                        ..
                    })
                ),
                "K = {k}"
            );
        }
        // K = n is full shuffling, accepted even if B does not divide it.
        assert!(sampler(10, 4, 10).is_ok());
        assert!(sampler(10, 2, 4).is_ok());
    }

    /// Fig. 10 of the paper: 8 records, K = 4, B = 2: the record stored at
    /// position 0 only ever appears in batches 1–2 (steps 0 and 1).
    #[test]
    fn figure_10_target_stays_in_first_two_batches() {
        let s = sampler(8, 2, 4).unwrap();
        for epoch in 0..200 {
            let step = s.epoch(sampler_key(3), 0, epoch).step_of(0).unwrap();
            assert!(step < 2, "epoch {epoch}: step {step}");
        }
    }
}
