//! Batch samplers as index streams over a dataset of `n` records.
//!
//! A sampler turns `(key, replica, epoch)` into the batches of one epoch,
//! each a list of record indices in `0..n`; nothing here touches tensors.
//! The samplers are those of Annamalai et al. 2024 §2.2 (Algorithm 3 calls the sampler
//! afresh every epoch) plus the fixed batch sequence of Cebere et al. 2024 §2.1, Eq. 2:
//!
//! | config `kind`          | semantics                                            | file                    |
//! |------------------------|------------------------------------------------------|-------------------------|
//! | `poisson`              | each record independently with prob. `sample_rate`   | [`poisson`]             |
//! | `shuffle`              | uniform permutation, then consecutive batches        | [`shuffle`]             |
//! | `partial_shuffle`      | permute within stored blocks of `buffer_size`        | [`partial_shuffle`]     |
//! | `batch_then_shuffle`   | stored-order batches, batch order permuted           | [`batch_then_shuffle`]  |
//! | `fixed_sequence`       | the same batches in every run and replica            | [`fixed`]               |
//!
//! All randomness comes from the substream
//! `seed.stream(Stream::Sampler).child(replica).child(epoch)` (Poisson adds
//! `.child(step)`), see [`crate::seed`]; the fixed sequence uses its own
//! `batch_seed` instead of the run seed.
//!
//! **Records not filling the last batch.** Annamalai et al. 2024 §2.2 has `T = |D|/B`
//! batches and assumes `B` divides `|D|`. When it does not, the config must
//! say what to do ([`LastBatch`]); there is no default, because the choice
//! changes which records a step can hold.
//!
//! **Normalisation.** DP-SGD divides the noisy sum by a public constant
//! (Annamalai et al. 2024 App. A, Algorithm 3; docs/samplers.md): [`BatchSampler::expected_batch_size`] is
//! `sample_rate · n` for Poisson and `batch_size` for the others, also for a
//! short last batch.
//!
//! **Target at a stored position.** The audits of Annamalai et al. 2024 (Algorithm 2,
//! §6 item 6) put the target or the zero-out record at stored position 0;
//! [`TargetLayout`] maps sampler indices to records, and [`EpochPlan`] says
//! in which step and slot a record sits (Algorithm 1 needs "is the target in
//! `B_t`" and "the slot `B−1` of a batch without it").
//!
//! **Many replicas at once.** [`table::StepTable`] draws the epochs of many
//! runs with the same calls as their [`StepStream`]s and lays each step out
//! as one slot-major table, the layout the training loops upload.

pub mod batch_then_shuffle;
pub mod claim;
pub mod fixed;
pub mod game;
pub mod partial_shuffle;
pub mod placement;
mod plan;
pub mod poisson;
mod random;
pub mod shuffle;
pub mod table;

use serde::{Deserialize, Serialize};

use crate::seed::SeedKey;
use crate::DataError;

pub use batch_then_shuffle::{BatchThenShuffleConfig, BatchThenShuffleSampler};
pub use fixed::{FixedSequenceConfig, FixedSequenceSampler};
pub use game::GameSampler;
pub use partial_shuffle::{PartialShuffleConfig, PartialShuffleSampler};
pub use placement::{InsertionSchedule, RecordRef, TargetLayout};
pub use plan::{BatchSampler, EpochPlan, LastBatch, PackedEpoch, Slot};
pub use poisson::{PoissonConfig, PoissonSampler};
pub use shuffle::{ShuffleConfig, ShuffleSampler};
pub use table::{SlotTable, StepSlots, StepTable, EMPTY_SLOT};

/// Which sampler a run uses, as named in the train config's `[sampler]`
/// table by `kind`.
///
/// ```toml
/// [sampler]
/// kind = "shuffle"
/// batch_size = 100
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SamplerConfig {
    /// Poisson subsampling (docs/samplers.md).
    Poisson(PoissonConfig),
    /// Shuffle-then-batch (docs/samplers.md).
    Shuffle(ShuffleConfig),
    /// Partial shuffle with a buffer (docs/samplers.md).
    PartialShuffle(PartialShuffleConfig),
    /// Batch-then-shuffle (docs/samplers.md).
    BatchThenShuffle(BatchThenShuffleConfig),
    /// The fixed batch sequence (Cebere et al. 2024 §2.1, Eq. 2).
    FixedSequence(FixedSequenceConfig),
}

impl SamplerConfig {
    /// Validate against a dataset of `num_records` records.
    pub fn build(&self, num_records: usize) -> Result<Sampler, DataError> {
        Ok(match self {
            Self::Poisson(c) => Sampler::Poisson(PoissonSampler::new(num_records, c)?),
            Self::Shuffle(c) => Sampler::Shuffle(ShuffleSampler::new(num_records, c)?),
            Self::PartialShuffle(c) => {
                Sampler::PartialShuffle(PartialShuffleSampler::new(num_records, c)?)
            }
            Self::BatchThenShuffle(c) => {
                Sampler::BatchThenShuffle(BatchThenShuffleSampler::new(num_records, c)?)
            }
            Self::FixedSequence(c) => {
                Sampler::FixedSequence(FixedSequenceSampler::new(num_records, c)?)
            }
        })
    }

    /// Whether each epoch puts every record in exactly one batch of a random
    /// order (the shuffle family), so that the likelihood-ratio scores of
    /// Annamalai et al. 2024 (§5) describe the mechanism.
    pub fn one_batch_per_epoch(&self) -> bool {
        match self {
            Self::Shuffle(_) | Self::PartialShuffle(_) | Self::BatchThenShuffle(_) => true,
            Self::Poisson(_) | Self::FixedSequence(_) => false,
        }
    }
}

/// A validated sampler.
#[derive(Clone, Debug, PartialEq)]
pub enum Sampler {
    /// See [`PoissonSampler`].
    Poisson(PoissonSampler),
    /// See [`ShuffleSampler`].
    Shuffle(ShuffleSampler),
    /// See [`PartialShuffleSampler`].
    PartialShuffle(PartialShuffleSampler),
    /// See [`BatchThenShuffleSampler`].
    BatchThenShuffle(BatchThenShuffleSampler),
    /// See [`FixedSequenceSampler`].
    FixedSequence(FixedSequenceSampler),
}

impl Sampler {
    fn inner(&self) -> &dyn BatchSampler {
        match self {
            Self::Poisson(s) => s,
            Self::Shuffle(s) => s,
            Self::PartialShuffle(s) => s,
            Self::BatchThenShuffle(s) => s,
            Self::FixedSequence(s) => s,
        }
    }

    /// The config `kind` of this sampler.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Poisson(_) => "poisson",
            Self::Shuffle(_) => "shuffle",
            Self::PartialShuffle(_) => "partial_shuffle",
            Self::BatchThenShuffle(_) => "batch_then_shuffle",
            Self::FixedSequence(_) => "fixed_sequence",
        }
    }

    /// The Poisson `sample_rate`, if this is the Poisson sampler.
    pub fn sample_rate(&self) -> Option<f64> {
        match self {
            Self::Poisson(s) => Some(s.sample_rate()),
            _ => None,
        }
    }

    /// The fixed `batch_size`, if this sampler has one.
    pub fn batch_size(&self) -> Option<usize> {
        match self {
            Self::Poisson(_) => None,
            Self::Shuffle(s) => Some(s.batch_size()),
            Self::PartialShuffle(s) => Some(s.batch_size()),
            Self::BatchThenShuffle(s) => Some(s.batch_size()),
            Self::FixedSequence(s) => Some(s.batch_size()),
        }
    }

    /// How many leading batches of an epoch can hold the record stored at
    /// position 0 (the target record of Annamalai et al. 2024, §5.2):
    /// shuffling and batch-then-shuffle put it in a uniform batch; a partial
    /// shuffle keeps it in the first block of K records, i.e. among the first
    /// K/B batches (§7.1). At least 1, at most the epoch's steps.
    pub fn first_record_reach(&self) -> u64 {
        let per_epoch = self.steps_per_epoch().max(1) as u64;
        match self {
            Self::PartialShuffle(p) => {
                ((p.buffer_size() / p.batch_size().max(1)) as u64).clamp(1, per_epoch)
            }
            Self::Poisson(_)
            | Self::Shuffle(_)
            | Self::BatchThenShuffle(_)
            | Self::FixedSequence(_) => per_epoch,
        }
    }

    /// Whether the batches depend on the run seed and replica (all but the
    /// fixed sequence).
    pub fn depends_on_seed(&self) -> bool {
        !matches!(self, Self::FixedSequence(_))
    }

    /// Steps in order across epochs, from epoch 0: take as many as the run
    /// needs (`.take(steps)`).
    pub fn steps(&self, key: SeedKey, replica: u64) -> StepStream<'_> {
        StepStream {
            sampler: self,
            key,
            replica,
            epoch: 0,
            global: 0,
            current: Vec::new(),
            step_in_epoch: 0,
        }
    }
}

impl BatchSampler for Sampler {
    fn num_records(&self) -> usize {
        self.inner().num_records()
    }
    fn steps_per_epoch(&self) -> usize {
        self.inner().steps_per_epoch()
    }
    fn expected_batch_size(&self) -> f64 {
        self.inner().expected_batch_size()
    }
    fn max_batch_size(&self) -> usize {
        self.inner().max_batch_size()
    }
    fn epoch(&self, key: SeedKey, replica: u64, epoch: u64) -> EpochPlan {
        self.inner().epoch(key, replica, epoch)
    }
    fn pack_epoch(&self, key: SeedKey, replica: u64, epoch: u64, packed: &mut PackedEpoch) {
        self.inner().pack_epoch(key, replica, epoch, packed);
    }
    fn uniform_batch_sizes(&self) -> Option<Vec<usize>> {
        self.inner().uniform_batch_sizes()
    }
}

/// One step of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Step index over the whole run, from 0.
    pub global: u64,
    /// Epoch, from 0.
    pub epoch: u64,
    /// Step within the epoch, from 0.
    pub step_in_epoch: usize,
    /// Record indices of the batch.
    pub batch: Vec<usize>,
}

/// Endless iterator over the steps of a run; see [`Sampler::steps`].
#[derive(Debug)]
pub struct StepStream<'a> {
    sampler: &'a Sampler,
    key: SeedKey,
    replica: u64,
    epoch: u64,
    global: u64,
    /// The current epoch's batches; those before `step_in_epoch` are spent
    /// (emptied by [`Iterator::next`]).
    current: Vec<Vec<usize>>,
    step_in_epoch: usize,
}

impl StepStream<'_> {
    /// Draws the next epoch once the current one is spent.
    fn ensure_epoch(&mut self) {
        // Every sampler has at least one step per epoch (validated).
        while self.step_in_epoch >= self.current.len() {
            let plan = self.sampler.epoch(self.key, self.replica, self.epoch);
            self.current = plan.into_batches();
            self.epoch += 1;
            self.step_in_epoch = 0;
        }
    }
}

impl Iterator for StepStream<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        self.ensure_epoch();
        let step = Step {
            global: self.global,
            epoch: self.epoch - 1,
            step_in_epoch: self.step_in_epoch,
            batch: std::mem::take(&mut self.current[self.step_in_epoch]),
        };
        self.global += 1;
        self.step_in_epoch += 1;
        Some(step)
    }
}
