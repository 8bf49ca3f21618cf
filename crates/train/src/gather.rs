//! Batches for all replicas from host datasets: replica `r`'s records, then
//! its extra slots (records or gradient overrides), padded with masked zero
//! slots to the largest batch of the stack. The plain trainer and the
//! experiments' chunk loop both build their batches here.

use tch::{Device, Tensor};

use dpaudit_data::dataset::Dataset;

use crate::engine::{Batch, Override, SlotOverride};
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
        })
    })
}
