//! Batches for all replicas from host datasets: replica `r`'s records, then
//! its extra slots (records or gradient overrides), padded with masked zero
//! slots to the largest batch of the stack. The plain trainer and the
//! experiments' chunk loop both build their batches here.

use std::sync::atomic::{AtomicBool, Ordering};

use tch::{Device, Tensor};

use dpaudit_data::dataset::Dataset;
use dpaudit_data::sampler::{SlotTable, StepSlots, EMPTY_SLOT};

use crate::engine::{Batch, GradientRows, Override, SlotOverride};
use crate::error::{torch, Result};

/// What an extra slot (after a replica's genuine records) holds.
#[derive(Debug, Clone, Copy)]
pub enum Extra {
    /// Row `j` of the extra gradients, as an [`Override::Gradient`].
    Gradient(usize),
    /// Record `j` of the extra records.
    Record(usize),
}

/// Gather genuine records plus extra slots into one batch: replica `r` gets
/// `batches[r]` then `extras[r]`, padded with masked zero slots. Extra records
/// come from `records`, extra gradients are rows of `gradients` (`[m, P]`).
pub fn gather_slots(
    data: &Dataset,
    batches: &[Vec<usize>],
    records: Option<&Dataset>,
    gradients: Option<&Tensor>,
    extras: &[Vec<Extra>],
    device: Device,
) -> Result<Batch> {
    let m = batches.len();
    let b = batches
        .iter()
        .enumerate()
        .map(|(r, g)| g.len() + extras.get(r).map_or(0, Vec::len))
        .max()
        .unwrap_or(0);
    let len = data.record_len();
    let mut x = vec![0f32; b * m * len];
    let mut y = vec![0i64; b * m];
    let mut mask = vec![0f32; b * m];
    let mut overrides = Vec::new();
    let feats = data.features();
    let none = Vec::new();
    for (r, batch) in batches.iter().enumerate() {
        let extra = extras.get(r).unwrap_or(&none);
        for (i, &idx) in batch.iter().enumerate() {
            let k = i * m + r;
            x[k * len..(k + 1) * len].copy_from_slice(&feats[idx * len..(idx + 1) * len]);
            y[k] = data.labels()[idx];
            mask[k] = 1.0;
        }
        for (i, e) in extra.iter().enumerate() {
            let slot = batch.len() + i;
            let k = slot * m + r;
            mask[k] = 1.0;
            match *e {
                Extra::Record(j) => {
                    if let Some(rec) = records {
                        let f = rec.features();
                        x[k * len..(k + 1) * len].copy_from_slice(&f[j * len..(j + 1) * len]);
                        y[k] = rec.labels()[j];
                    }
                }
                Extra::Gradient(j) => {
                    if let Some(g) = gradients {
                        let row = torch("selecting an extra gradient", || g.f_get(j as i64))?;
                        overrides.push(SlotOverride {
                            slot,
                            replica: r,
                            kind: Override::Gradient(row),
                        });
                    }
                }
            }
        }
    }
    let mut shape = vec![b as i64, m as i64];
    shape.extend(data.shape().iter().map(|&d| d as i64));
    let full = mask.iter().all(|&v| v == 1.0);
    let bm = [b as i64, m as i64];
    torch("uploading a batch", || {
        Ok(Batch {
            inputs: Tensor::f_from_slice(&x)?
                .f_reshape(shape.as_slice())?
                .f_to_device(device)?,
            targets: Tensor::f_from_slice(&y)?
                .f_reshape(bm)?
                .f_to_device(device)?,
            mask: match full {
                true => None,
                false => Some(
                    Tensor::f_from_slice(&mask)?
                        .f_reshape(bm)?
                        .f_to_device(device)?,
                ),
            },
            overrides,
            gradient_rows: None,
        })
    })
}

/// A dataset and its extra records resident on the device: uploaded once,
/// then every step's batch for all replicas is gathered there from one
/// integer tensor (see [`DeviceData::batch`]). This is what keeps the host's
/// work per step independent of the record size: the host only lists indices.
#[derive(Debug)]
pub struct DeviceData {
    /// `[N + E + 1, record…]`: the records, the extra records, one zero row.
    features: Tensor,
    /// `[N + E + 1]` int64; 0 for the zero row.
    labels: Tensor,
    records: usize,
    extras: usize,
    shape: Vec<i64>,
}

/// The step's index table on `device`. On a GPU a copy from ordinary host
/// memory waits until the device has finished everything queued, which would
/// stall the loop every step; the table goes through page-locked memory
/// instead and the copy is queued like a kernel (libtorch keeps the
/// page-locked block until the copy has run). Should page-locking fail, the
/// waiting copy is used: slower, same values; the failure is remembered for
/// the rest of the process, so that later steps do not pay a failed call
/// each.
fn upload_indices(host: &[i64], device: Device) -> std::result::Result<Tensor, tch::TchError> {
    let table = Tensor::f_from_slice(host)?;
    if !device.is_cuda() || PINNING_FAILED.load(Ordering::Relaxed) {
        return table.f_to_device(device);
    }
    // `_pin_memory` with the device named (`pin_memory` with a device argument
    // warns on every call in libtorch 2.11).
    match table.f_internal_pin_memory(device) {
        Ok(pinned) => pinned.f_to_device_(device, tch::Kind::Int64, true, false),
        Err(_) => {
            PINNING_FAILED.store(true, Ordering::Relaxed);
            table.f_to_device(device)
        }
    }
}

/// Set once page-locking host memory has failed in this process.
static PINNING_FAILED: AtomicBool = AtomicBool::new(false);

/// A gradient override of one slot, by row of a table of gradients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowOverride {
    /// Index along the batch axis `B`.
    pub slot: usize,
    /// Index along the replica axis `M`.
    pub replica: usize,
    /// Row of the gradient table.
    pub row: usize,
}

impl DeviceData {
    /// Upload `data`, then `extra` (records of the same shape), then a zero
    /// row for padding.
    pub fn upload(data: &Dataset, extra: Option<&Dataset>, device: Device) -> Result<Self> {
        let len = data.record_len();
        let shape: Vec<i64> = data.shape().iter().map(|&d| d as i64).collect();
        let extras = extra.map_or(0, Dataset::len);
        if let Some(e) = extra {
            if e.shape() != data.shape() {
                return Err(crate::error::invalid(
                    "canary records",
                    format!("{:?}", e.shape()),
                    format!("records of the training data's shape {:?}", data.shape()),
                ));
            }
        }
        let rows = data.len() + extras + 1;
        let mut x = Vec::with_capacity(rows * len);
        x.extend_from_slice(data.features());
        let mut y = Vec::with_capacity(rows);
        y.extend_from_slice(data.labels());
        if let Some(e) = extra {
            x.extend_from_slice(e.features());
            y.extend_from_slice(e.labels());
        }
        x.resize(rows * len, 0.0);
        y.push(0);
        let mut full = vec![rows as i64];
        full.extend(&shape);
        let (features, labels) = torch("uploading the training data", || {
            Ok((
                Tensor::f_from_slice(&x)?
                    .f_reshape(full.as_slice())?
                    .f_to_device(device)?,
                Tensor::f_from_slice(&y)?.f_to_device(device)?,
            ))
        })?;
        Ok(Self {
            features,
            labels,
            records: data.len(),
            extras,
            shape,
        })
    }

    /// Index of the zero row (padding and gradient slots).
    fn zero_row(&self) -> i64 {
        (self.records + self.extras) as i64
    }

    /// The batch of one step for all replicas: replica `r` gets the records
    /// `batches[r]`, then its `extras[r]` (an extra record `j`, or a gradient
    /// slot holding row `j` of `gradients`), padded with masked zero slots,
    /// exactly as [`gather_slots`] lays them out; `more` adds gradient
    /// overrides of existing slots (after each replica's extras).
    ///
    /// Lays the lists out as a [`StepSlots`] table and calls
    /// [`DeviceData::batch_of_step`]; the training loops draw their batches in
    /// that layout directly ([`dpaudit_data::sampler::StepTable`]).
    pub fn batch<B: AsRef<[usize]>>(
        &self,
        batches: &[B],
        extras: &[&[Extra]],
        gradients: Option<&Tensor>,
        more: &[RowOverride],
    ) -> Result<Batch> {
        let table = SlotTable::from_batches(batches)
            .map_err(|e| crate::error::invalid("batch", "record indices", e.to_string()))?;
        let listed: Vec<(usize, Extra)> = extras
            .iter()
            .take(batches.len())
            .enumerate()
            .flat_map(|(r, e)| e.iter().map(move |&x| (r, x)))
            .collect();
        self.batch_of_step(table.view(), &listed, gradients, more)
    }

    /// The batch of one step for all replicas: replica `r` gets its batch of
    /// `step`, then its extra slots, padded with masked zero slots, exactly as
    /// [`gather_slots`] lays them out. `extras` lists `(replica, extra)` by
    /// replica, each replica's in slot order: an extra record `j`, or a
    /// gradient slot holding row `j` of `gradients`. `more` adds gradient
    /// overrides of existing slots (after each replica's extras).
    ///
    /// One host-to-device copy: the record indices `[B·M]`, the batch sizes
    /// `[M]` and the overrides' slots, replicas and rows `[3K]` in one int64
    /// tensor. Inputs, targets, the mask (from the sizes) and the override
    /// rows are gathered on the device. The host's work is a copy of the
    /// step's table and a pass over the sizes and the extras: it does not
    /// visit each replica's batch.
    pub fn batch_of_step(
        &self,
        step: StepSlots<'_>,
        extras: &[(usize, Extra)],
        gradients: Option<&Tensor>,
        more: &[RowOverride],
    ) -> Result<Batch> {
        let m = step.replicas();
        let sizes = step.sizes();
        if let Some(w) = extras.windows(2).find(|w| w[1].0 < w[0].0) {
            return Err(crate::error::invalid(
                "extra slots",
                format!("replica {} listed after replica {}", w[1].0, w[0].0),
                "extra slots listed by replica",
            ));
        }
        if let Some(&(r, _)) = extras.last().filter(|e| e.0 >= m) {
            return Err(crate::error::invalid(
                "extra slot replica",
                r,
                format!("below {m}"),
            ));
        }
        // The largest index of the step, with empty slots counted as 0: a
        // branch-free pass the compiler vectorises (a search that stops at
        // the first bad index does not vectorise).
        let largest = step
            .slots()
            .iter()
            .map(|&v| if v == EMPTY_SLOT { 0 } else { v })
            .max()
            .unwrap_or(0);
        if largest as usize >= self.records && step.slots().iter().any(|&v| v != EMPTY_SLOT) {
            return Err(crate::error::invalid(
                "batch",
                largest,
                format!("a record index below {}", self.records),
            ));
        }
        // Rows of the batch: the largest batch size with its extra slots
        // (the extras are listed by replica, so a replica's are adjacent).
        let mut b = sizes.iter().copied().max().unwrap_or(0) as usize;
        let mut group = (usize::MAX, 0usize);
        for &(r, _) in extras {
            group = if group.0 == r {
                (r, group.1 + 1)
            } else {
                (r, 1)
            };
            b = b.max(sizes[r] as usize + group.1);
        }
        let pad = self.zero_row();
        let bm = b * m;
        // One host buffer, uploaded as one tensor: the index table `[B·M]`,
        // the batch sizes with their extra slots `[M]` (the mask's input),
        // then the overrides' slots, replicas and rows `[3K]`.
        let mut host = Vec::with_capacity(bm + m + 3 * (extras.len() + more.len()));
        // The step's rows (never more than `b`), then padding rows.
        host.extend(step.slots().iter().map(|&v| match v {
            EMPTY_SLOT => pad,
            record => i64::from(record),
        }));
        host.resize(bm, pad);
        host.extend(sizes.iter().map(|&v| i64::from(v)));
        // Overrides as (rank within their replica, replica, slot, row): each
        // replica's in listing order, then sorted rank-major.
        let mut listed: Vec<(usize, usize, usize, usize)> =
            Vec::with_capacity(extras.len() + more.len());
        // (replica, its next extra slot, its gradient overrides so far)
        let mut at = (usize::MAX, 0usize, 0usize);
        for &(r, e) in extras {
            if at.0 != r {
                at = (r, sizes[r] as usize, 0);
            }
            let slot = at.1;
            at.1 += 1;
            host[bm + r] += 1;
            match e {
                Extra::Record(j) if j < self.extras => {
                    host[slot * m + r] = (self.records + j) as i64;
                }
                Extra::Record(j) => {
                    return Err(crate::error::invalid(
                        "extra record",
                        j,
                        format!("below the {} uploaded extra records", self.extras),
                    ))
                }
                Extra::Gradient(j) => {
                    listed.push((at.2, r, slot, j));
                    at.2 += 1;
                }
            }
        }
        let full = host[bm..].iter().all(|&l| l as usize == b);
        if !more.is_empty() {
            // A replica's overrides of existing slots rank after its extra
            // slots' (rare: Partially-Informed runs).
            let mut ranks = vec![0usize; m];
            for &(_, r, _, _) in &listed {
                ranks[r] += 1;
            }
            for o in more {
                if o.replica >= m {
                    return Err(crate::error::invalid(
                        "override replica",
                        o.replica,
                        format!("below {m}"),
                    ));
                }
                listed.push((ranks[o.replica], o.replica, o.slot, o.row));
                ranks[o.replica] += 1;
            }
        }
        // (rank, replica) pairs are distinct: an unstable sort is deterministic.
        // One canary per replica, listed in replica order (the common case),
        // is already sorted: the check is O(M), the sort O(M log M).
        if !listed.is_sorted_by_key(|&(rank, r, _, _)| (rank, r)) {
            listed.sort_unstable_by_key(|&(rank, r, _, _)| (rank, r));
        }
        let k = listed.len();
        if k > 0 && gradients.is_none() {
            return Err(crate::error::invalid(
                "gradient overrides",
                k,
                "a table of gradients for them",
            ));
        }
        host.extend(listed.iter().map(|&(_, _, slot, _)| slot as i64));
        host.extend(listed.iter().map(|&(_, r, _, _)| r as i64));
        host.extend(listed.iter().map(|&(_, _, _, row)| row as i64));
        let device = self.features.device();
        let (mi, bi, ki) = (m as i64, b as i64, k as i64);
        let mut shape = vec![bi, mi];
        shape.extend(&self.shape);
        torch("gathering a batch on the device", || {
            let all = upload_indices(&host, device)?;
            let idx = all.f_narrow(0, 0, bm as i64)?;
            let inputs = self
                .features
                .f_index_select(0, &idx)?
                .f_reshape(shape.as_slice())?;
            let targets = self.labels.f_index_select(0, &idx)?.f_reshape([bi, mi])?;
            let mask = if full {
                None
            } else {
                // Slot i of replica r is real iff i + 1 ≤ its batch size.
                let sizes = all.f_narrow(0, bm as i64, mi)?.f_unsqueeze(0)?;
                let position = Tensor::f_ones([bi], (tch::Kind::Int64, device))?
                    .f_cumsum(0, tch::Kind::Int64)?
                    .f_unsqueeze(1)?;
                Some(position.f_le_tensor(&sizes)?.f_to_kind(tch::Kind::Float)?)
            };
            let gradient_rows = match gradients {
                Some(g) if k > 0 => {
                    let base = bm as i64 + mi;
                    let rows = all.f_narrow(0, base + 2 * ki, ki)?;
                    Some(GradientRows {
                        slots: all.f_narrow(0, base, ki)?,
                        replicas: all.f_narrow(0, base + ki, ki)?,
                        rows: g.f_index_select(0, &rows)?,
                        host: listed.iter().map(|&(_, r, slot, _)| (slot, r)).collect(),
                    })
                }
                _ => None,
            };
            Ok(Batch {
                inputs,
                targets,
                mask,
                overrides: Vec::new(),
                gradient_rows,
            })
        })
    }
}
