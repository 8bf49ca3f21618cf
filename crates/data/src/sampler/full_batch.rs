//! Full batch (docs/samplers.md): every record in every step, one step per
//! epoch. Deterministic: the batch does not depend on the seed or replica.
//! A toy sampler, the worked example of "How to add a sampler"
//! (ARCHITECTURE.md).

use serde::{Deserialize, Serialize};

use super::{DataError, FixedSize, FixedSizeSampler};
use crate::seed::SeedKey;

/// Config of [`FullBatchSampler`]: nothing to choose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FullBatchConfig {}

/// Full-batch "sampling" over `n` records: the one batch `0..n`, every step.
#[derive(Clone, Debug, PartialEq)]
pub struct FullBatchSampler {
    size: FixedSize,
}

impl FullBatchSampler {
    /// Validate for `num_records` records (at least one).
    pub fn new(num_records: usize, _config: &FullBatchConfig) -> Result<Self, DataError> {
        Ok(Self {
            size: FixedSize::new(num_records, num_records, None)?,
        })
    }

    /// The batch size, `n`.
    pub fn batch_size(&self) -> usize {
        self.size.batch_size()
    }
}

impl FixedSizeSampler for FullBatchSampler {
    fn size(&self) -> &FixedSize {
        &self.size
    }

    fn batches(&self, _key: SeedKey, _replica: u64, _epoch: u64) -> Vec<Vec<usize>> {
        vec![(0..self.size.num_records()).collect()]
    }

    const CUTS_ONE_ORDER: bool = true;

    fn cut_order(&self, _key: SeedKey, _replica: u64, _epoch: u64) -> Option<Vec<usize>> {
        Some((0..self.size.num_records()).collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::sampler::{BatchSampler, SamplerConfig};
    use crate::seed::sampler_key;

    #[test]
    fn every_record_in_every_step() {
        let config: SamplerConfig = toml::from_str("kind = \"full_batch\"").unwrap();
        let s = config.build(7).unwrap();
        assert_eq!(s.kind(), "full_batch");
        assert_eq!(s.steps_per_epoch(), 1);
        assert_eq!(s.expected_batch_size(), 7.0);
        assert_eq!(s.batch_size(), Some(7));
        for step in s.steps(sampler_key(3), 1).take(3) {
            assert_eq!(step.batch, (0..7).collect::<Vec<_>>());
        }
        assert!(SamplerConfig::build(&config, 0).is_err());
    }
}
