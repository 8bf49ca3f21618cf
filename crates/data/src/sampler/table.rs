//! The batches of many replicas, step by step, laid out the way a training
//! loop uploads them: one step's record indices of every replica in one
//! slot-major table.
//!
//! A loop that trains `M` replicas at once needs, every step, slot `i` of
//! replica `r` at position `i·M + r`. Reading that from `M` separate
//! [`StepStream`](super::StepStream)s touches `M` unrelated heap blocks per
//! step. [`StepTable`] draws each epoch of every replica with the same calls
//! as a `StepStream` (so the batches are the same) and stores it once in that
//! layout: a step is then a slice of contiguous memory, and the host work per
//! step is a copy, not a walk over the replicas.

use crate::seed::SeedKey;
use crate::DataError;

use super::plan::{invalid, BatchSampler, PackedEpoch};
use super::Sampler;

/// A slot past the end of its replica's batch.
pub const EMPTY_SLOT: u32 = u32::MAX;

/// One step's batches of `M` replicas, slot-major: slot `i` of replica `r` is
/// `slots()[i·M + r]`, [`EMPTY_SLOT`] past the replica's batch size. The
/// table has as many rows as the step's largest batch. Made only by
/// [`StepTable`] and [`SlotTable`], which keep that layout.
#[derive(Debug, Clone, Copy)]
pub struct StepSlots<'t> {
    slots: &'t [u32],
    sizes: &'t [u32],
    rows: usize,
}

impl<'t> StepSlots<'t> {
    /// Replicas, `M`.
    pub fn replicas(&self) -> usize {
        self.sizes.len()
    }

    /// Rows of the table: the largest batch of the step.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// `[rows · M]` record indices, [`EMPTY_SLOT`] past each batch.
    pub fn slots(&self) -> &'t [u32] {
        self.slots
    }

    /// `[M]` batch sizes.
    pub fn sizes(&self) -> &'t [u32] {
        self.sizes
    }

    /// The batch size of replica `r` (0 past the last replica).
    pub fn size(&self, r: usize) -> usize {
        self.sizes.get(r).map_or(0, |&s| s as usize)
    }

    /// Replica `r`'s batch, in its sampler's order.
    pub fn batch(&self, r: usize) -> Vec<usize> {
        let m = self.replicas();
        (0..self.size(r))
            .map(|i| self.slots[i * m + r] as usize)
            .collect()
    }
}

/// The largest number of records a [`StepSlots`] table can index:
/// [`EMPTY_SLOT`] is not a record.
const MAX_RECORDS: usize = EMPTY_SLOT as usize;

/// A [`StepSlots`] table built from per-replica batches (tests and callers
/// that list batches themselves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotTable {
    slots: Vec<u32>,
    sizes: Vec<u32>,
    rows: usize,
}

impl SlotTable {
    /// Lay out `batches[r]` as replica `r`'s batch. Refuses a record index
    /// that does not fit the table ([`EMPTY_SLOT`] or more).
    pub fn from_batches<B: AsRef<[usize]>>(batches: &[B]) -> Result<Self, DataError> {
        let m = batches.len();
        let rows = batches.iter().map(|b| b.as_ref().len()).max().unwrap_or(0);
        let mut slots = vec![EMPTY_SLOT; rows * m];
        let mut sizes = Vec::with_capacity(m);
        for (r, batch) in batches.iter().enumerate() {
            let batch = batch.as_ref();
            for (i, &record) in batch.iter().enumerate() {
                if record >= MAX_RECORDS {
                    return Err(invalid("batch", record, "a record index below 2^32 − 1"));
                }
                slots[i * m + r] = record as u32;
            }
            sizes.push(batch.len() as u32);
        }
        Ok(Self { slots, sizes, rows })
    }

    /// The table as a step.
    pub fn view(&self) -> StepSlots<'_> {
        StepSlots {
            slots: &self.slots,
            sizes: &self.sizes,
            rows: self.rows,
        }
    }
}

/// The steps of several runs of one sampler, epoch by epoch, in the layout
/// of [`StepSlots`]. Replica `r` follows run `runs[r]`: its batches are those
/// of `sampler.steps(key, runs[r])`, in the same order.
///
/// While the steps of one epoch are taken, the next epoch (if the run needs
/// it) is drawn on a helper thread, so that the loop's thread does not stop
/// for it at the epoch boundary: on a GPU host the loop's thread only queues
/// work, and drawing an epoch of thousands of replicas takes as long as many
/// steps' worth of queuing. The draw is a pure function of the sampler, the
/// key, the runs and the epoch; should the thread not start or fail, the
/// epoch is drawn on the loop's thread instead, with the same result.
#[derive(Debug)]
pub struct StepTable<'a> {
    sampler: &'a Sampler,
    key: SeedKey,
    runs: Vec<u64>,
    /// Steps the caller will take; no epoch past them is prefetched.
    steps: u64,
    /// Epochs drawn so far (the current one is `drawn − 1`).
    drawn: u64,
    current: Epoch,
    step_in_epoch: usize,
    /// The next epoch, being drawn.
    next: Option<std::thread::JoinHandle<Epoch>>,
}

/// One epoch of every replica, laid out.
#[derive(Default)]
struct Epoch {
    /// Each step's start in `slots` and rows.
    steps: Vec<(usize, usize)>,
    /// The steps' tables, one after the other.
    slots: Vec<u32>,
    /// `[steps, M]` batch sizes.
    sizes: Vec<u32>,
}

/// Counts only: an epoch of thousands of replicas holds millions of indices.
impl std::fmt::Debug for Epoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epoch")
            .field("steps", &self.steps.len())
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl<'a> StepTable<'a> {
    /// The steps of `runs` under `sampler`, from epoch 0. `steps` is how many
    /// the caller will take (more may be taken; they are drawn when needed).
    pub fn new(
        sampler: &'a Sampler,
        key: SeedKey,
        runs: &[u64],
        steps: u64,
    ) -> Result<Self, DataError> {
        let n = sampler.num_records();
        if n > MAX_RECORDS {
            return Err(invalid(
                "sampler",
                n,
                "at most 2^32 − 1 records for the step tables",
            ));
        }
        Ok(Self {
            sampler,
            key,
            runs: runs.to_vec(),
            steps,
            drawn: 0,
            current: Epoch::default(),
            step_in_epoch: 0,
            next: None,
        })
    }

    /// The next step of every replica.
    pub fn advance(&mut self) -> StepSlots<'_> {
        // Every sampler has at least one step per epoch (validated); the
        // loop only guards against a plan without any.
        while self.step_in_epoch >= self.current.steps.len() {
            self.current = self.take_next();
            self.step_in_epoch = 0;
            self.prefetch();
        }
        let m = self.runs.len();
        let s = self.step_in_epoch;
        self.step_in_epoch += 1;
        let (start, rows) = self.current.steps[s];
        StepSlots {
            slots: &self.current.slots[start..start + rows * m],
            sizes: &self.current.sizes[s * m..(s + 1) * m],
            rows,
        }
    }

    /// The epoch after the current one: the helper thread's, or drawn here.
    fn take_next(&mut self) -> Epoch {
        let epoch = self.drawn;
        self.drawn += 1;
        if let Some(Ok(drawn)) = self.next.take().map(std::thread::JoinHandle::join) {
            return drawn;
        }
        draw_epoch(self.sampler, self.key, &self.runs, epoch)
    }

    /// Start drawing the next epoch on a helper thread if the run reaches it.
    fn prefetch(&mut self) {
        let first_step = self
            .drawn
            .saturating_mul(self.sampler.steps_per_epoch() as u64);
        if first_step >= self.steps {
            return;
        }
        let (sampler, key, runs, epoch) = (
            self.sampler.clone(),
            self.key,
            self.runs.clone(),
            self.drawn,
        );
        self.next = std::thread::Builder::new()
            .name("dpaudit-sampler".into())
            .spawn(move || draw_epoch(&sampler, key, &runs, epoch))
            .ok();
    }
}

/// Draw epoch `epoch` of every run (the draws a [`super::StepStream`]
/// makes, packed by [`BatchSampler::pack_epoch`]) and lay it out step by step.
fn draw_epoch(sampler: &Sampler, key: SeedKey, runs: &[u64], epoch: u64) -> Epoch {
    if let Some(sizes) = sampler.uniform_batch_sizes() {
        if let Some(drawn) = draw_uniform(sampler, key, runs, epoch, &sizes) {
            return drawn;
        }
    }
    draw_any(sampler, key, runs, epoch)
}

/// [`draw_epoch`] for samplers whose batches have the same `sizes` in every
/// run: the layout is known before drawing, so replicas are drawn
/// [`BLOCK`] at a time and written into it, and no more than a block of
/// packed epochs lives beside the table. Slot `i` of step `s` is record
/// `k = Σ sizes[..s] + i` of a replica's packed records, at `k·M + r`: the
/// table is the `[M, K]` matrix of packed records transposed, in blocks of
/// [`BLOCK`] × [`BLOCK`] that stay in the cache. `None` if a run's sizes are
/// not `sizes` (not expected; the caller then lays out what was drawn).
fn draw_uniform(
    sampler: &Sampler,
    key: SeedKey,
    runs: &[u64],
    epoch: u64,
    sizes: &[usize],
) -> Option<Epoch> {
    let m = runs.len();
    let per_run: usize = sizes.iter().sum();
    let mut steps = Vec::with_capacity(sizes.len());
    let mut all_sizes = Vec::with_capacity(sizes.len() * m);
    let mut start = 0;
    for &size in sizes {
        steps.push((start, size));
        start += size * m;
        all_sizes.extend(std::iter::repeat_n(size as u32, m));
    }
    let want: Vec<u32> = sizes.iter().map(|&s| s as u32).collect();
    let mut slots = vec![EMPTY_SLOT; per_run * m];
    let mut block: Vec<PackedEpoch> = vec![PackedEpoch::default(); BLOCK.min(m)];
    for (b, chunk) in runs.chunks(BLOCK).enumerate() {
        for (&run, packed) in chunk.iter().zip(block.iter_mut()) {
            sampler.pack_epoch(key, run, epoch, packed);
            if packed.sizes != want {
                return None;
            }
        }
        for k0 in (0..per_run).step_by(BLOCK) {
            let k1 = (k0 + BLOCK).min(per_run);
            for (j, packed) in block.iter().take(chunk.len()).enumerate() {
                let r = b * BLOCK + j;
                for (kk, &record) in packed.records[k0..k1].iter().enumerate() {
                    slots[(k0 + kk) * m + r] = record;
                }
            }
        }
    }
    Some(Epoch {
        steps,
        slots,
        sizes: all_sizes,
    })
}

/// [`draw_epoch`] for any sampler: every run's epoch is packed first (the
/// rows of a step are its largest batch, known only once all are drawn),
/// then laid out one step's table at a time, so that the writes stay within
/// a table that fits the cache.
fn draw_any(sampler: &Sampler, key: SeedKey, runs: &[u64], epoch: u64) -> Epoch {
    let m = runs.len();
    let mut packed: Vec<PackedEpoch> = Vec::with_capacity(m);
    // Longer if a plan is (every validated sampler has this many steps).
    let mut rows: Vec<usize> = vec![0; sampler.steps_per_epoch()];
    for &run in runs {
        let mut epoch_of_run = PackedEpoch::default();
        sampler.pack_epoch(key, run, epoch, &mut epoch_of_run);
        if rows.len() < epoch_of_run.sizes.len() {
            rows.resize(epoch_of_run.sizes.len(), 0);
        }
        for (row, &size) in rows.iter_mut().zip(&epoch_of_run.sizes) {
            *row = (*row).max(size as usize);
        }
        packed.push(epoch_of_run);
    }
    let mut steps = Vec::with_capacity(rows.len());
    let mut total = 0;
    for &r in &rows {
        steps.push((total, r));
        total += r * m;
    }
    let mut slots = vec![EMPTY_SLOT; total];
    let mut all_sizes = vec![0u32; rows.len() * m];
    // `at[r]`: where replica r's next batch starts in its packed records.
    let mut at = vec![0usize; m];
    for (s, &(start, _)) in steps.iter().enumerate() {
        for (r, run) in packed.iter().enumerate() {
            let size = run.sizes.get(s).map_or(0, |&v| v as usize);
            let from = at[r];
            for (i, &record) in run.records[from..from + size].iter().enumerate() {
                slots[start + i * m + r] = record;
            }
            all_sizes[s * m + r] = size as u32;
            at[r] = from + size;
        }
    }
    Epoch {
        steps,
        slots,
        sizes: all_sizes,
    }
}

/// Side of the square blocks of [`draw_uniform`]: 64 × 64 `u32` are 16 KiB.
const BLOCK: usize = 64;
