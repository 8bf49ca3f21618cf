//! One forward pass that records every trainable layer, one backward pass to
//! the layer outputs: [`Backprops`].

use tch::{Kind, TchError, Tensor};

use super::batch::{Batch, Override};
use super::overrides::{override_table, OverrideTable};
use crate::error::{torch, Result, TrainError};
use crate::layers::{LayerId, Recorded, Tape};
use crate::models::Model;

/// Per-sample cross-entropy losses `[B, M]` from logits `[B, M, K]`.
pub fn per_sample_cross_entropy(logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
    torch("the per-sample cross-entropy", || {
        logits
            .f_log_softmax(-1, Kind::Float)?
            .f_gather(-1, &targets.f_unsqueeze(-1)?, false)?
            .f_squeeze_dim(-1)?
            .f_neg()
    })
}

/// Result of one forward and one backward pass: each trainable layer's record
/// and backprop, plus the per-sample losses.
#[derive(Debug)]
pub struct Backprops {
    /// One per trainable layer, in [`Model::layers`] order.
    pub records: Vec<Recorded>,
    /// `∂L/∂output` of each layer.
    pub backprops: Vec<Tensor>,
    /// `[B, M]` per-sample losses (detached; masked and overridden slots included,
    /// as computed).
    pub losses: Tensor,
    /// `[B, M]` 1.0 where the computed gradient counts (real, not overridden).
    pub computed: Tensor,
    /// `[B, M]` 1.0 where the slot is present (real and not excluded).
    pub present: Tensor,
    /// The batch's gradient overrides as one table (`None` without any).
    pub overrides: Option<OverrideTable>,
    /// Per-sample gradients that [`Backprops::norms`] materialised and kept,
    /// one entry per layer, taken by [`Backprops::clipped_sum`]
    /// ([`crate::layers::PerSampleGrad::sq_norms_keeping_grads`]).
    pub(super) kept: std::sync::Mutex<Vec<Option<Vec<Tensor>>>>,
}

/// At most this many bytes of per-sample gradients stay alive between the
/// norms and the clipped sum of one step (all layers together); a layer beyond
/// it computes its clipped sum itself (a convolution by its weight backward).
/// 1 GiB holds LeNet-5's at B = 4096 (42 MB) and with 512 replicas at B = 100
/// (0.5 GB).
pub const KEEP_PER_SAMPLE_BYTES: i64 = 1 << 30;

fn check_shape(what: &str, t: &Tensor, expected: &[i64]) -> Result<()> {
    if t.size() != expected {
        return Err(TrainError::Shape {
            what: what.to_string(),
            got: t.size(),
            expected: format!("{expected:?}"),
        });
    }
    Ok(())
}

/// Forward with recording, loss with reduction = sum over computed slots, one
/// backward to the layer outputs.
pub fn forward_backward(model: &dyn Model, batch: &Batch) -> Result<Backprops> {
    let m = model.replicas();
    let xs = batch.inputs.size();
    let b = *xs.first().unwrap_or(&0);
    let mut expected = vec![b, m];
    expected.extend(model.sample_shape());
    check_shape("batch inputs", &batch.inputs, &expected)?;
    check_shape("batch targets", &batch.targets, &[b, m])?;
    let device = batch.inputs.device();
    let mask = match &batch.mask {
        Some(t) => {
            check_shape("batch mask", t, &[b, m])?;
            torch("reading the batch mask", || t.f_to_kind(Kind::Float))?
        }
        None => torch("building the batch mask", || {
            Tensor::f_ones([b, m], (Kind::Float, device))
        })?,
    };
    // Host-side override checks: every override inside the batch, at most
    // one per slot (one bit per slot). The per-slot overrides also need
    // masks of the slots that drop their computed gradient; the gradient rows
    // build theirs on the device.
    let slots = (b * m) as usize;
    let mut taken = vec![0u64; slots.div_ceil(64)];
    let mut take = |slot: usize, replica: usize| -> Result<usize> {
        if slot as i64 >= b || replica as i64 >= m {
            return Err(TrainError::Override {
                slot,
                replica,
                reason: format!("outside the batch of {b} slots × {m} replicas"),
            });
        }
        let k = slot * m as usize + replica;
        let (word, bit) = (k / 64, 1u64 << (k % 64));
        if taken[word] & bit != 0 {
            return Err(TrainError::Override {
                slot,
                replica,
                reason: "more than one override for this slot".into(),
            });
        }
        taken[word] |= bit;
        Ok(k)
    };
    let mut computed_host = Vec::new();
    let mut present_host = Vec::new();
    if !batch.overrides.is_empty() {
        computed_host = vec![1f32; slots];
        present_host = vec![1f32; slots];
        for o in &batch.overrides {
            let k = take(o.slot, o.replica)?;
            computed_host[k] = 0.0;
            if matches!(o.kind, Override::Exclude) {
                present_host[k] = 0.0;
            }
        }
    }
    let rows_host: &[(usize, usize)] = batch.gradient_rows.as_ref().map_or(&[], |g| &g.host);
    for &(slot, replica) in rows_host {
        take(slot, replica)?;
    }
    let table = override_table(model, batch)?;
    let (computed, present) = if let (Some(g), true) =
        (&batch.gradient_rows, batch.overrides.is_empty())
    {
        // On the device: the overridden slots drop their computed gradient.
        torch("masking the overridden slots", || {
            // Made on the device: uploading a number would wait for the device.
            let zero = Tensor::f_zeros([], (Kind::Float, device))?;
            let computed = mask.f_index_put(&[Some(&g.slots), Some(&g.replicas)], &zero, false)?;
            Ok((computed, mask.shallow_clone()))
        })?
    } else if batch.overrides.is_empty() {
        (mask.shallow_clone(), mask.shallow_clone())
    } else {
        torch("uploading the override masks", || {
            let upload = |host: &[f32]| -> Result<Tensor, TchError> {
                Tensor::f_from_slice(host)?
                    .f_reshape([b, m])?
                    .f_to_device(device)
            };
            Ok((
                mask.f_mul(&upload(&computed_host)?)?,
                mask.f_mul(&upload(&present_host)?)?,
            ))
        })?
    };

    let mut tape = Tape::recording();
    let logits = model.forward(&batch.inputs, &mut tape)?;
    let records = match_records(model, tape.into_records())?;
    let losses = per_sample_cross_entropy(&logits, &batch.targets)?;
    let total = torch("summing the losses", || {
        losses.f_mul(&computed)?.f_sum(Kind::Float)
    })?;
    let outputs: Vec<&Tensor> = records.iter().map(|r| &r.output).collect();
    // The graph is kept: convolutions take their clipped sum from their own
    // recorded node (`Conv2d::clipped_sum`).
    let backprops = Tensor::f_run_backward(&[&total], &outputs, true, false)
        .map_err(TrainError::torch("backward to the layer outputs"))?;
    Ok(Backprops {
        records,
        backprops,
        losses: torch("detaching the losses", || losses.f_detach())?,
        computed,
        present,
        overrides: table,
        kept: std::sync::Mutex::new(Vec::new()),
    })
}

/// The records of a forward pass in [`Model::layers`] order, matched by
/// [`LayerId`]: every listed layer must have recorded itself exactly once,
/// and nothing else may have.
fn match_records(model: &dyn Model, records: Vec<Recorded>) -> Result<Vec<Recorded>> {
    let layers = model.layers();
    let ids: Vec<LayerId> = layers.iter().map(|(_, l)| LayerId::of(*l)).collect();
    let mut slots: Vec<Option<Recorded>> = layers.iter().map(|_| None).collect();
    for rec in records {
        let Some(i) = ids.iter().position(|id| *id == rec.layer) else {
            return Err(TrainError::LayerRecords {
                reason: "a layer that Model::layers does not list recorded itself (its gradient would be \
                         neither clipped nor noised)"
                    .into(),
            });
        };
        if slots[i].is_some() {
            return Err(TrainError::LayerRecords {
                reason: format!(
                    "layer `{}` recorded itself twice in one forward pass (a layer used twice shares its \
                     parameters; per-sample gradients of shared parameters are not supported)",
                    layers[i].0
                ),
            });
        }
        slots[i] = Some(rec);
    }
    slots
        .into_iter()
        .zip(&layers)
        .map(|(slot, (name, _))| {
            slot.ok_or_else(|| TrainError::LayerRecords {
                reason: format!(
                    "layer `{name}` is listed by Model::layers but did not record itself"
                ),
            })
        })
        .collect()
}

impl Backprops {
    /// Per-sample gradients `[B, M, ...]` of every parameter, in
    /// [`Model::named_parameters`] order (computed values; overrides ignored).
    pub fn per_sample_grads(&self, model: &dyn Model) -> Result<Vec<Tensor>> {
        let mut out = Vec::new();
        for (((name, layer), rec), bp) in model
            .layers()
            .iter()
            .zip(&self.records)
            .zip(&self.backprops)
        {
            out.extend(
                layer
                    .per_sample_grads(rec, bp)
                    .map_err(|e| e.in_layer(name))?,
            );
        }
        Ok(out)
    }

    /// Drop the per-sample gradients [`Backprops::norms`] kept, so that the
    /// next [`Backprops::clipped_sum`] asks every layer for its own (the
    /// oracle tests check both ways).
    pub fn forget_kept_grads(&self) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.clear();
        }
    }
}
