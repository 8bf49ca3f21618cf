//! What every sampler produces and the traits it implements: the batches of
//! an epoch ([`EpochPlan`]), [`BatchSampler`], and for the samplers of one
//! fixed batch size [`FixedSizeSampler`], [`BlockShuffle`] and [`FixedSize`]
//! (the batch size with its remainder rule, [`LastBatch`]). The sampler
//! files implement these; `mod.rs` gathers them into [`super::Sampler`].

use serde::{Deserialize, Serialize};

use crate::seed::SeedKey;
use crate::DataError;

pub(super) fn invalid(
    parameter: &'static str,
    value: impl ToString,
    expected: impl ToString,
) -> DataError {
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

    /// The batches of [`BatchSampler::epoch`], packed into `packed` (its
    /// vectors are cleared first). For the step tables
    /// ([`super::table::StepTable`]), which draw an epoch of thousands of replicas
    /// at once: samplers that cut one order into batches pack it without a
    /// vector per batch. The caller makes sure indices fit in `u32`.
    fn pack_epoch(&self, key: SeedKey, replica: u64, epoch: u64, packed: &mut PackedEpoch) {
        packed.pack(self.epoch(key, replica, epoch).batches());
    }

    /// The batch sizes of every epoch, step by step, when they are the same
    /// for every run and epoch (the samplers that cut one order of all
    /// records into batches); `None` when they vary (Poisson, and
    /// batch-then-shuffle, whose short last batch moves).
    fn uniform_batch_sizes(&self) -> Option<Vec<usize>> {
        None
    }
}

/// One epoch's batches, packed ([`BatchSampler::pack_epoch`]): `records`
/// holds every batch's record indices in step order, `sizes` each batch's
/// size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedEpoch {
    /// The record indices of every batch, one batch after the other.
    pub records: Vec<u32>,
    /// The size of each batch, step by step.
    pub sizes: Vec<u32>,
}

impl PackedEpoch {
    /// Replace the content with `batches`.
    fn pack(&mut self, batches: &[Vec<usize>]) {
        self.records.clear();
        self.sizes.clear();
        for batch in batches {
            self.records.extend(batch.iter().map(|&i| i as u32));
            self.sizes.push(batch.len() as u32);
        }
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
            super::random::shuffle(&mut rng, chunk);
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

    fn pack_epoch(&self, key: SeedKey, replica: u64, epoch: u64, packed: &mut PackedEpoch) {
        match self.cut_order(key, replica, epoch) {
            Some(order) => self.size().cut_packed(&order, packed),
            None => packed.pack(&self.batches(key, replica, epoch)),
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
    pub(crate) fn cut_packed(&self, order: &[usize], packed: &mut PackedEpoch) {
        debug_assert_eq!(order.len(), self.num_records);
        let steps = self.steps();
        let kept = order.len().min(steps * self.batch_size);
        let PackedEpoch { records, sizes } = packed;
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
