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
pub mod partial_shuffle;
pub mod placement;
pub mod poisson;
mod random;
pub mod shuffle;
pub mod table;

use serde::{Deserialize, Serialize};

use crate::seed::SeedKey;
use crate::DataError;

pub use batch_then_shuffle::{BatchThenShuffleConfig, BatchThenShuffleSampler};
pub use fixed::{FixedSequenceConfig, FixedSequenceSampler};
pub use partial_shuffle::{PartialShuffleConfig, PartialShuffleSampler};
pub use placement::{InsertionSchedule, RecordRef, TargetLayout};
pub use poisson::{PoissonConfig, PoissonSampler};
pub use shuffle::{ShuffleConfig, ShuffleSampler};
pub use table::{SlotTable, StepSlots, StepTable, EMPTY_SLOT};

fn invalid(parameter: &'static str, value: impl ToString, expected: impl ToString) -> DataError {
    DataError::InvalidArgument {
        parameter,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

/// What happens to the `n mod B` records that do not fill a last batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LastBatch {
    /// Keep a short last batch: `ceil(n/B)` steps per epoch, every record
    /// exactly once per epoch.
    Partial,
    /// Drop it: `floor(n/B)` steps per epoch; the last `n mod B` positions of
    /// the epoch's order are not used that epoch.
    Drop,
}

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

/// What every sampler provides.
pub trait BatchSampler {
    /// `n`, the number of records indexed `0..n`.
    fn num_records(&self) -> usize;

    /// Steps (batches) in one epoch.
    fn steps_per_epoch(&self) -> usize;

    /// The public normaliser of DP-SGD's noisy sum: `sample_rate · n` for
    /// Poisson, `batch_size` for fixed-size samplers.
    fn expected_batch_size(&self) -> f64;

    /// The largest batch this sampler can produce (`n` for Poisson).
    fn max_batch_size(&self) -> usize;

    /// The batches of one epoch, replayable from `(key, replica, epoch)`.
    fn epoch(&self, key: SeedKey, replica: u64, epoch: u64) -> EpochPlan;

    /// The batches of [`BatchSampler::epoch`], packed: `records` receives
    /// every batch's record indices in step order and `sizes` each batch's
    /// size (both are cleared first). For the step tables
    /// ([`table::StepTable`]), which draw an epoch of thousands of replicas
    /// at once: samplers that cut one order into batches pack it without a
    /// vector per batch. The caller makes sure indices fit in `u32`.
    fn pack_epoch(
        &self,
        key: SeedKey,
        replica: u64,
        epoch: u64,
        records: &mut Vec<u32>,
        sizes: &mut Vec<u32>,
    ) {
        pack_batches(self.epoch(key, replica, epoch).batches(), records, sizes);
    }

    /// The batch sizes of every epoch, step by step, when they are the same
    /// for every run and epoch (the samplers that cut one order of all
    /// records into batches); `None` when they vary (Poisson, and
    /// batch-then-shuffle, whose short last batch moves).
    fn uniform_batch_sizes(&self) -> Option<Vec<usize>> {
        None
    }
}

/// Pack `batches` as [`BatchSampler::pack_epoch`] does.
fn pack_batches(batches: &[Vec<usize>], records: &mut Vec<u32>, sizes: &mut Vec<u32>) {
    records.clear();
    sizes.clear();
    for batch in batches {
        records.extend(batch.iter().map(|&i| i as u32));
        sizes.push(batch.len() as u32);
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
    fn pack_epoch(
        &self,
        key: SeedKey,
        replica: u64,
        epoch: u64,
        records: &mut Vec<u32>,
        sizes: &mut Vec<u32>,
    ) {
        self.inner().pack_epoch(key, replica, epoch, records, sizes);
    }
    fn uniform_batch_sizes(&self) -> Option<Vec<usize>> {
        self.inner().uniform_batch_sizes()
    }
}

/// Where a record sits in an epoch: step and position within the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Step within the epoch, from 0.
    pub step: usize,
    /// Position within that step's batch, from 0.
    pub position: usize,
}

/// The batches of one epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpochPlan {
    epoch: u64,
    batches: Vec<Vec<usize>>,
}

impl EpochPlan {
    pub(crate) fn new(epoch: u64, batches: Vec<Vec<usize>>) -> Self {
        Self { epoch, batches }
    }

    /// The epoch index, from 0.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Number of steps (batches).
    pub fn steps(&self) -> usize {
        self.batches.len()
    }

    /// All batches, in step order.
    pub fn batches(&self) -> &[Vec<usize>] {
        &self.batches
    }

    /// The batch of `step`, or `None` past the end.
    pub fn batch(&self, step: usize) -> Option<&[usize]> {
        self.batches.get(step).map(Vec::as_slice)
    }

    /// Give the batches away.
    pub fn into_batches(self) -> Vec<Vec<usize>> {
        self.batches
    }

    /// Whether the batch of `step` holds `record` (`false` past the end).
    pub fn contains(&self, step: usize, record: usize) -> bool {
        self.batches
            .get(step)
            .is_some_and(|batch| batch.contains(&record))
    }

    /// Every slot holding `record`, in step order: exactly one per epoch for
    /// shuffle-type samplers with `last_batch = "partial"`, any number for
    /// Poisson.
    pub fn slots_of(&self, record: usize) -> Vec<Slot> {
        let mut slots = Vec::new();
        for (step, batch) in self.batches.iter().enumerate() {
            for (position, &r) in batch.iter().enumerate() {
                if r == record {
                    slots.push(Slot { step, position });
                }
            }
        }
        slots
    }

    /// The first step holding `record`, if any.
    pub fn step_of(&self, record: usize) -> Option<usize> {
        self.batches
            .iter()
            .position(|batch| batch.contains(&record))
    }

    /// For each step, whether it holds `record`.
    pub fn membership(&self, record: usize) -> Vec<bool> {
        self.batches
            .iter()
            .map(|batch| batch.contains(&record))
            .collect()
    }

    /// Batch sizes in step order.
    pub fn batch_sizes(&self) -> Vec<usize> {
        self.batches.iter().map(Vec::len).collect()
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

/// A sampler whose batches all have one [`FixedSize`]: it says only how the
/// batches of an epoch are formed, and [`BatchSampler`] follows from that.
pub(crate) trait FixedSizeSampler {
    /// The validated batch size and remainder rule.
    fn size(&self) -> &FixedSize;

    /// The batches of one epoch, replayable from `(key, replica, epoch)`.
    fn batches(&self, key: SeedKey, replica: u64, epoch: u64) -> Vec<Vec<usize>>;

    /// Whether [`FixedSizeSampler::batches`] cuts one order of all records
    /// into the epoch's batches ([`FixedSize::cut`]); then every epoch of
    /// every run has the batch sizes of [`FixedSize::batch_sizes`], and
    /// [`FixedSizeSampler::cut_order`] gives the order.
    const CUTS_ONE_ORDER: bool = false;

    /// The order that [`FixedSizeSampler::batches`] cuts, for samplers that
    /// cut one ([`FixedSizeSampler::CUTS_ONE_ORDER`]); `None` for the others.
    fn cut_order(&self, _key: SeedKey, _replica: u64, _epoch: u64) -> Option<Vec<usize>> {
        None
    }
}

/// The samplers that permute the records block by block and cut that one
/// order into consecutive batches: shuffle (one block of all `n` records)
/// and partial shuffle (blocks of `buffer_size`). The blocks are permuted in
/// stored order, each by Fisher–Yates, all with the one generator of
/// `seed.stream(Sampler).child(replica).child(epoch)`.
pub(crate) trait BlockShuffle {
    /// The validated batch size and remainder rule, and the block length.
    fn blocks(&self) -> (&FixedSize, usize);

    /// The order of epoch `epoch` before cutting into batches.
    fn block_order(&self, key: SeedKey, replica: u64, epoch: u64) -> Vec<usize> {
        let (size, block) = self.blocks();
        let mut rng = key.replica_epoch(replica, epoch).rng();
        let mut order: Vec<usize> = (0..size.num_records()).collect();
        for chunk in order.chunks_mut(block) {
            random::shuffle(&mut rng, chunk);
        }
        order
    }
}

impl<S: BlockShuffle> FixedSizeSampler for S {
    fn size(&self) -> &FixedSize {
        self.blocks().0
    }

    fn batches(&self, key: SeedKey, replica: u64, epoch: u64) -> Vec<Vec<usize>> {
        self.size().cut(&self.block_order(key, replica, epoch))
    }

    const CUTS_ONE_ORDER: bool = true;

    fn cut_order(&self, key: SeedKey, replica: u64, epoch: u64) -> Option<Vec<usize>> {
        Some(self.block_order(key, replica, epoch))
    }
}

impl<S: FixedSizeSampler> BatchSampler for S {
    fn num_records(&self) -> usize {
        self.size().num_records()
    }

    fn steps_per_epoch(&self) -> usize {
        self.size().steps()
    }

    fn expected_batch_size(&self) -> f64 {
        self.size().batch_size() as f64
    }

    fn max_batch_size(&self) -> usize {
        self.size().batch_size()
    }

    fn epoch(&self, key: SeedKey, replica: u64, epoch: u64) -> EpochPlan {
        EpochPlan::new(epoch, self.batches(key, replica, epoch))
    }

    fn pack_epoch(
        &self,
        key: SeedKey,
        replica: u64,
        epoch: u64,
        records: &mut Vec<u32>,
        sizes: &mut Vec<u32>,
    ) {
        match self.cut_order(key, replica, epoch) {
            Some(order) => self.size().cut_packed(&order, records, sizes),
            None => pack_batches(&self.batches(key, replica, epoch), records, sizes),
        }
    }

    fn uniform_batch_sizes(&self) -> Option<Vec<usize>> {
        Self::CUTS_ONE_ORDER.then(|| self.size().batch_sizes())
    }
}

/// Validated fixed batch size and remainder rule, shared by the fixed-size
/// samplers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FixedSize {
    num_records: usize,
    batch_size: usize,
    last_batch: LastBatch,
}

impl FixedSize {
    pub(crate) fn new(
        num_records: usize,
        batch_size: usize,
        last_batch: Option<LastBatch>,
    ) -> Result<Self, DataError> {
        if num_records == 0 {
            return Err(invalid(
                "num_records",
                0,
                "a dataset with at least one record",
            ));
        }
        if batch_size == 0 || batch_size > num_records {
            return Err(invalid(
                "batch_size",
                batch_size,
                format!("1 ≤ batch_size ≤ {num_records} (the number of records)"),
            ));
        }
        let remainder = num_records % batch_size;
        let last_batch = match (last_batch, remainder) {
            (Some(rule), _) => rule,
            // No records are left over: the rule is irrelevant.
            (None, 0) => LastBatch::Partial,
            (None, _) => {
                return Err(invalid(
                    "last_batch",
                    "(absent)",
                    format!(
                        "\"partial\" (keep a short last batch) or \"drop\" (skip the rest of \
                         each epoch's order), because batch_size = {batch_size} does not divide \
                         the {num_records} records (remainder {remainder})"
                    ),
                ))
            }
        };
        Ok(Self {
            num_records,
            batch_size,
            last_batch,
        })
    }

    pub(crate) fn num_records(&self) -> usize {
        self.num_records
    }

    pub(crate) fn batch_size(&self) -> usize {
        self.batch_size
    }

    pub(crate) fn steps(&self) -> usize {
        match self.last_batch {
            LastBatch::Partial => self.num_records.div_ceil(self.batch_size),
            LastBatch::Drop => self.num_records / self.batch_size,
        }
    }

    /// The sizes of the batches [`FixedSize::cut`] makes, step by step.
    pub(crate) fn batch_sizes(&self) -> Vec<usize> {
        let kept = self.num_records.min(self.steps() * self.batch_size);
        (0..self.steps())
            .map(|s| (kept - s * self.batch_size).min(self.batch_size))
            .collect()
    }

    /// [`FixedSize::cut`], packed as [`BatchSampler::pack_epoch`] packs it.
    pub(crate) fn cut_packed(&self, order: &[usize], records: &mut Vec<u32>, sizes: &mut Vec<u32>) {
        debug_assert_eq!(order.len(), self.num_records);
        let steps = self.steps();
        let kept = order.len().min(steps * self.batch_size);
        records.clear();
        records.extend(order[..kept].iter().map(|&i| i as u32));
        sizes.clear();
        sizes.extend(self.batch_sizes().into_iter().map(|s| s as u32));
    }

    /// Cut an order of all `n` records into this epoch's batches.
    pub(crate) fn cut(&self, order: &[usize]) -> Vec<Vec<usize>> {
        debug_assert_eq!(order.len(), self.num_records);
        order
            .chunks(self.batch_size)
            .take(self.steps())
            .map(<[usize]>::to_vec)
            .collect()
    }
}
