//! The DP-SGD step (Abadi et al. 2016, Alg. 1; Cebere et al. 2024, §2.1 Eq. (2)), read as a
//! pipeline of types:
//!
//! [`Backprops`] (one forward, one backward) → [`PerSampleNorms`] →
//! [`ClipCoefficients`] → [`ClippedSum`] → [`NoisySum`] → [`Sgd::step`].
//!
//! * One forward pass records every trainable layer's input and output; one
//!   backward pass (`Tensor::run_backward` with the layer outputs as inputs) gives
//!   `δ = ∂L/∂output` per layer for `L = Σ_i ℓ_i` (reduction = sum, so `δ_i` is
//!   sample `i`'s own backprop).
//! * Squared norms per layer are summed over all layers; the clip coefficient of
//!   slot `i` is `c_i = min(1, C/‖g_i‖)`, and `c_i = 1` when `‖g_i‖ = 0` (the
//!   gradient is zero, so any coefficient gives the same, exact, zero
//!   contribution; `C/0 = +∞` and `min(1, +∞) = 1` in IEEE arithmetic).
//!   No `+ε` in the denominator: clipped norms are `≤ C` up to one rounding.
//! * The clipped sum `Σ_i c_i g_i` is computed per layer from `(x, δ, c)`
//!   without a second backward through the network (book-keeping): linear and
//!   GroupNorm layers contract directly; a convolution runs libtorch's weight
//!   backward of its own recorded node with output gradient `c ⊙ δ`.
//! * Gaussian noise `N(0, σ²C²)` is added to the **sum** of every replica
//!   independently, then the sum is divided by a public constant: the expected
//!   batch size `q·n` under Poisson sampling, or the fixed batch size — never the
//!   realised batch size.
//! * Masked slots (padding, when replicas draw batches of different sizes) and
//!   overridden slots have their loss multiplied by an exact 0, so their backprop
//!   is exactly 0, and their coefficient is multiplied by 0 as well.

use tch::{Kind, TchError, Tensor};

use crate::error::{torch, Result, TrainError};
use crate::layers::{LayerId, Recorded, Tape};
use crate::models::Model;
use crate::noise::{NoiseGenerator, NoiseStreams};
use crate::scalar::{Operand, WithNumber};

/// What a slot contributes instead of its computed per-sample gradient
/// (the crafted gradient canaries of Cebere et al. 2024, §4, and the
/// zero-out neighbouring relation; `docs/canary-audits.md`).
#[derive(Debug)]
pub enum Override {
    /// A given gradient, flat over all parameters of the slot's replica in
    /// [`Model::named_parameters`] order (PyTorch row-major within each
    /// parameter), on the model's device. It is clipped by the same rule as
    /// computed gradients: a vector of norm ≤ C passes unchanged.
    Gradient(Tensor),
    /// A zero gradient (the slot is present, its contribution is exactly zero).
    Zero,
    /// The slot is absent (like a masked slot).
    Exclude,
}

/// An override of one slot `(slot, replica)` of a batch.
#[derive(Debug)]
pub struct SlotOverride {
    /// Index along the batch axis `B`.
    pub slot: usize,
    /// Index along the replica axis `M`.
    pub replica: usize,
    /// What the slot contributes.
    pub kind: Override,
}

/// Gradient overrides of many slots as one tensor: row `k` of `rows`
/// replaces the computed gradient of slot `host[k] = (slot, replica)`, like an
/// [`Override::Gradient`] of that slot. Rows are in *rank-major* order: first
/// the first override of every replica that has one, then the second, and so
/// on; so each rank adds into every replica at most once, and the clipped sum
/// adds a replica's overrides in the order they were listed for it, as it does
/// for the per-slot [`Batch::overrides`].
#[derive(Debug)]
pub struct GradientRows {
    /// `[K]` int64 slot indices, on the model's device.
    pub slots: Tensor,
    /// `[K]` int64 replica indices, on the model's device.
    pub replicas: Tensor,
    /// `[K, P]` float32, flat over all parameters of one replica in
    /// [`Model::named_parameters`] order, on the model's device.
    pub rows: Tensor,
    /// `(slot, replica)` of every row, on the host (checks and grouping only).
    pub host: Vec<(usize, usize)>,
}

/// One batch for all replicas.
#[derive(Debug)]
pub struct Batch {
    /// `[B, M, sample_shape]`, float32. Masked slots must hold finite values
    /// (zeros by convention).
    pub inputs: Tensor,
    /// `[B, M]`, int64 class indices.
    pub targets: Tensor,
    /// `[B, M]`, 1.0 for real slots and 0.0 for padding; `None` = all real.
    pub mask: Option<Tensor>,
    /// Per-slot overrides; at most one per slot.
    pub overrides: Vec<SlotOverride>,
    /// Gradient overrides of many slots in one tensor (the training loop's
    /// canaries); not together with [`Batch::overrides`].
    pub gradient_rows: Option<GradientRows>,
}

impl Batch {
    /// A batch without mask or overrides.
    pub fn new(inputs: Tensor, targets: Tensor) -> Self {
        Self {
            inputs,
            targets,
            mask: None,
            overrides: Vec::new(),
            gradient_rows: None,
        }
    }
}

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
    kept: std::sync::Mutex<Vec<Option<Vec<Tensor>>>>,
}

/// At most this many bytes of per-sample gradients stay alive between the
/// norms and the clipped sum of one step (all layers together); a layer beyond
/// it computes its clipped sum itself (a convolution by its weight backward).
/// 1 GiB holds LeNet-5's at B = 4096 (42 MB) and with 512 replicas at B = 100
/// (0.5 GB).
pub const KEEP_PER_SAMPLE_BYTES: i64 = 1 << 30;

/// Every gradient override of a batch, from [`Batch::overrides`] or
/// [`Batch::gradient_rows`], as tensors: `rows` `[K, P]` in rank-major order
/// (see [`GradientRows`]), their slots and replicas `[K]`, and the row ranges
/// of each rank.
#[derive(Debug)]
pub struct OverrideTable {
    slots: Tensor,
    replicas: Tensor,
    rows: Tensor,
    ranks: Vec<(i64, i64)>,
}

/// Row ranges `(start, length)` of each rank of a rank-major list of
/// replicas, or `None` if the list is not rank-major.
fn rank_ranges(replicas: &[usize]) -> Option<Vec<(i64, i64)>> {
    // Rows seen so far per replica, indexed by replica: one row per replica
    // and step in the training loops, so no hashing.
    let mut seen = vec![0usize; replicas.iter().max().map_or(0, |&r| r + 1)];
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    for (k, &r) in replicas.iter().enumerate() {
        let rank = seen[r];
        seen[r] += 1;
        match rank.cmp(&ranges.len()) {
            std::cmp::Ordering::Equal => ranges.push((k as i64, 1)),
            std::cmp::Ordering::Less if rank + 1 == ranges.len() => {
                if let Some(last) = ranges.last_mut() {
                    last.1 += 1;
                }
            }
            _ => return None,
        }
    }
    Some(ranges)
}

/// The override table of `batch`, checked against the model's parameter
/// count (built once per step, by [`forward_backward`]).
fn override_table(model: &dyn Model, batch: &Batch) -> Result<Option<OverrideTable>> {
    let p = model.num_parameters();
    if let Some(g) = &batch.gradient_rows {
        if !batch.overrides.is_empty() {
            return Err(TrainError::Override {
                slot: 0,
                replica: 0,
                reason: "per-slot overrides and gradient rows in one batch".into(),
            });
        }
        let k = g.host.len() as i64;
        if g.rows.size() != [k, p] || g.slots.size() != [k] || g.replicas.size() != [k] {
            return Err(TrainError::Shape {
                what: "gradient rows".into(),
                got: g.rows.size(),
                expected: format!("[{k}, {p}] rows with [{k}] slots and replicas"),
            });
        }
        let reps: Vec<usize> = g.host.iter().map(|&(_, r)| r).collect();
        let ranks = rank_ranges(&reps).ok_or_else(|| TrainError::Override {
            slot: g.host.first().map_or(0, |h| h.0),
            replica: g.host.first().map_or(0, |h| h.1),
            reason: "gradient rows are not in rank-major order".into(),
        })?;
        return Ok(Some(OverrideTable {
            slots: g.slots.shallow_clone(),
            replicas: g.replicas.shallow_clone(),
            rows: g.rows.shallow_clone(),
            ranks,
        }));
    }
    let listed = override_gradients(model, batch)?;
    if listed.is_empty() {
        return Ok(None);
    }
    // Rank-major order: a stable sort by each entry's rank within its replica.
    let mut seen = std::collections::HashMap::<usize, usize>::new();
    let mut order: Vec<(usize, usize)> = listed
        .iter()
        .enumerate()
        .map(|(k, (o, _))| {
            let rank = *seen.entry(o.replica).and_modify(|c| *c += 1).or_insert(0);
            (rank, k)
        })
        .collect();
    order.sort();
    let sorted: Vec<&(&SlotOverride, &Tensor)> = order.iter().map(|&(_, k)| &listed[k]).collect();
    let reps: Vec<usize> = sorted.iter().map(|(o, _)| o.replica).collect();
    let ranks = rank_ranges(&reps).unwrap_or_default();
    let device = listed[0].1.device();
    torch("stacking the overriding gradients", || {
        let ints = |f: &dyn Fn(&SlotOverride) -> usize| -> Result<Tensor, TchError> {
            let host: Vec<i64> = sorted.iter().map(|(o, _)| f(o) as i64).collect();
            Tensor::f_from_slice(&host)?.f_to_device(device)
        };
        let rows: Vec<&Tensor> = sorted.iter().map(|(_, v)| *v).collect();
        Ok(Some(OverrideTable {
            slots: ints(&|o| o.slot)?,
            replicas: ints(&|o| o.replica)?,
            rows: Tensor::f_stack(&rows, 0)?,
            ranks,
        }))
    })
}

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

/// Per-sample squared gradient norms over all parameters, `[B, M]`.
#[derive(Debug)]
pub struct PerSampleNorms {
    /// `‖g_i‖²`; exactly 0 for masked, excluded and zero-overridden slots; `‖v‖²`
    /// for a slot overridden with gradient `v`. Each layer's contribution is
    /// clamped at 0 before summing (a ghost norm, a difference of products,
    /// can round below 0).
    pub sq: Tensor,
    /// One 0-dim boolean per layer (in [`Model::layers`] order), then one for
    /// the overriding gradients: whether that part of `sq` is finite.
    pub finite: Vec<Tensor>,
}

/// `c_i = min(1, C/‖g_i‖)`, `[B, M]`, zero where the computed gradient does not
/// count.
#[derive(Debug)]
pub struct ClipCoefficients {
    /// Coefficients of the computed per-sample gradients.
    pub computed: Tensor,
    /// Coefficients of the overriding gradients, `[K]`, in the rank-major
    /// order of [`GradientRows`] (batch order when no replica has two
    /// overrides); `None` without overrides.
    pub overrides: Option<Tensor>,
}

/// `Σ_i c_i g_i` per parameter, `[M, ...]` each, in
/// [`Model::named_parameters`] order.
#[derive(Debug)]
pub struct ClippedSum(pub Vec<Tensor>);

/// Whether each layer's part of a [`ClippedSum`] is finite: one 0-dim boolean
/// per layer in [`Model::layers`] order.
#[derive(Debug)]
pub struct SumChecks(pub Vec<Tensor>);

/// `Σ_i c_i g_i + N(0, σ²C²I)`, `[M, ...]` each.
#[derive(Debug)]
pub struct NoisySum(pub Vec<Tensor>);

/// Sizes of the replica's parameters, for splitting flat override vectors.
fn param_sizes(model: &dyn Model) -> Vec<(Vec<i64>, i64)> {
    model
        .named_parameters()
        .iter()
        .map(|(_, t)| {
            let s = t.size()[1..].to_vec();
            let n = s.iter().product();
            (s, n)
        })
        .collect()
}

fn override_gradients<'a>(
    model: &dyn Model,
    batch: &'a Batch,
) -> Result<Vec<(&'a SlotOverride, &'a Tensor)>> {
    let p = model.num_parameters();
    let mut out = Vec::new();
    for o in &batch.overrides {
        if let Override::Gradient(v) = &o.kind {
            if v.size() != [p] {
                return Err(TrainError::Override {
                    slot: o.slot,
                    replica: o.replica,
                    reason: format!(
                        "gradient has shape {:?}, expected [{p}] (all parameters of one replica)",
                        v.size()
                    ),
                });
            }
            out.push((o, v));
        }
    }
    Ok(out)
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

    /// Squared norms over all layers, with overrides applied. Per-sample
    /// gradients a layer materialised for them are kept for
    /// [`Backprops::clipped_sum`], up to [`KEEP_PER_SAMPLE_BYTES`] in all.
    pub fn norms(&self, model: &dyn Model, batch: &Batch) -> Result<PerSampleNorms> {
        let layers = model.layers();
        let mut sq = torch("allocating the per-sample norms", || {
            self.computed.f_zeros_like()
        })?;
        let mut finite = Vec::with_capacity(layers.len() + 1);
        let mut kept = Vec::with_capacity(layers.len());
        let mut budget = KEEP_PER_SAMPLE_BYTES;
        let mut zero = Operand::new(0.0);
        for (((name, layer), rec), bp) in layers.iter().zip(&self.records).zip(&self.backprops) {
            let (part, grads) = layer
                .sq_norms_keeping_grads(rec, bp, budget)
                .map_err(|e| e.in_layer(name))?;
            if let Some(g) = &grads {
                let bytes = g
                    .iter()
                    .map(|t| crate::layers::float_bytes(&t.size()))
                    .fold(0i64, i64::saturating_add);
                budget = budget.saturating_sub(bytes);
            }
            kept.push(grads);
            torch("summing the per-sample norms", || {
                let part = part.f_clamp_min_tensor(&zero.like(&part)?)?;
                finite.push(part.f_isfinite()?.f_all()?);
                let _ = sq.f_add_(&part)?;
                Ok(())
            })
            .map_err(|e| e.in_layer(name))?;
        }
        // The overrides come from the table `forward_backward` built from `batch`.
        let _ = batch;
        let mut sq = torch("masking the per-sample norms", || sq.f_mul(&self.computed))?;
        let overrides_finite = torch("the norms of the overriding gradients", || {
            let Some(t) = &self.overrides else {
                return Tensor::f_ones([], (Kind::Bool, sq.device()));
            };
            let v2 = t
                .rows
                .f_square()?
                .f_sum_dim_intlist(1, false, Kind::Float)?;
            let finite = v2.f_isfinite()?.f_all()?;
            sq = sq.f_index_put(&[Some(&t.slots), Some(&t.replicas)], &v2, false)?;
            Ok(finite)
        })?;
        finite.push(overrides_finite);
        if let Ok(mut slot) = self.kept.lock() {
            *slot = kept;
        }
        Ok(PerSampleNorms { sq, finite })
    }

    /// The clipped sum: each layer's weighted sum with the computed
    /// coefficients, from the per-sample gradients [`Backprops::norms`] kept
    /// (taken: a second call asks the layers) or else by the layer itself
    /// (book-keeping), plus `c_v·v` for every overriding gradient.
    pub fn clipped_sum(
        &self,
        model: &dyn Model,
        batch: &Batch,
        coef: &ClipCoefficients,
    ) -> Result<ClippedSum> {
        let layers = model.layers();
        let mut kept = self
            .kept
            .lock()
            .map(|mut k| std::mem::take(&mut *k))
            .unwrap_or_default();
        kept.resize_with(layers.len(), || None);
        let mut sums = Vec::new();
        for ((((name, layer), rec), bp), grads) in layers
            .iter()
            .zip(&self.records)
            .zip(&self.backprops)
            .zip(kept)
        {
            match grads {
                Some(grads) => sums.extend(
                    torch("the clipped sum of kept per-sample gradients", || {
                        crate::layers::weighted_sums(&grads, &coef.computed)
                    })
                    .map_err(|e| e.in_layer(name))?,
                ),
                None => sums.extend(
                    layer
                        .clipped_sum(rec, bp, &coef.computed)
                        .map_err(|e| e.in_layer(name))?,
                ),
            }
        }
        // (Overrides are added below, from the table `forward_backward` built
        // from `batch`; their finiteness is checked on their norms.)
        let _ = batch;
        let sizes = param_sizes(model);
        if let (Some(t), Some(c)) = (&self.overrides, &coef.overrides) {
            torch("adding the overriding gradients to the clipped sum", || {
                // One rank at a time, so that each index_add_ meets every
                // replica at most once (deterministic on every device).
                let scaled = t.rows.f_mul(&c.f_unsqueeze(1)?)?;
                for &(start, len) in &t.ranks {
                    let rows = scaled.f_narrow(0, start, len)?;
                    let reps = t.replicas.f_narrow(0, start, len)?;
                    let mut offset = 0;
                    for (sum, (shape, n)) in sums.iter_mut().zip(&sizes) {
                        let mut full = vec![len];
                        full.extend(shape);
                        let part = rows.f_narrow(1, offset, *n)?.f_reshape(full.as_slice())?;
                        let _ = sum.f_index_add_(0, &reps, &part)?;
                        offset += n;
                    }
                }
                Ok(())
            })?;
        }
        Ok(ClippedSum(sums))
    }

    /// One 0-dim boolean per layer: whether the layer's parameters' parts of
    /// `sum` are all finite.
    pub fn sum_checks(&self, model: &dyn Model, sum: &ClippedSum) -> Result<SumChecks> {
        let mut out = Vec::new();
        let mut parts = sum.0.iter();
        for (name, layer) in model.layers() {
            let ok = torch("checking the clipped sum", || {
                // Two operators per parameter and one per further parameter
                // of the layer (no constant `true` to start from).
                let mut ok: Option<Tensor> = None;
                for _ in layer.parameters() {
                    if let Some(t) = parts.next() {
                        let finite = t.f_isfinite()?.f_all()?;
                        ok = Some(match ok {
                            Some(o) => o.f_logical_and(&finite)?,
                            None => finite,
                        });
                    }
                }
                match ok {
                    Some(o) => Ok(o),
                    None => Tensor::f_ones([], (Kind::Bool, self.computed.device())),
                }
            })
            .map_err(|e| e.in_layer(&name))?;
            out.push(ok);
        }
        Ok(SumChecks(out))
    }
}

/// The clip coefficients of squared norms `sq` (float32 `[B, M]`):
/// `c = min(1, C/‖g‖)` as float32, with `‖g‖ = √sq` in float64, and
/// `c·‖g‖ ≤ C` guaranteed: where the float64 product `c·‖g‖` exceeds `C`
/// (the quotient rounded up to the next float32, which happens for about half
/// of the norms above `C`), `c` steps one float32 ulp toward zero, which puts
/// the product about 2⁻²⁴ below `C`. (A product that rounds to `C` is within
/// 2⁻⁵³ of it.) A norm of exactly `C` keeps `c = 1`, so a canary of norm `C`
/// passes unchanged. `c = 1` where `‖g‖ = 0` (`C/0 = +∞`); NaN where `sq` is
/// NaN, which [`DpSgd::step`] reports.
///
/// The norm is itself a float32 sum and carries a relative rounding error of
/// order 10⁻⁶ against the exact norm of the gradient; the sensitivity of the
/// sum is therefore `C` up to that relative error, which moves ε by the same
/// relative amount (Opacus divides by `‖g‖ + 10⁻⁶` for the same reason).
pub fn clip_coefficients(sq: &Tensor, max_grad_norm: f64) -> Result<Tensor> {
    torch("the clip coefficients", || {
        let norm = sq.f_to_kind(Kind::Double)?.f_sqrt()?;
        let c = norm
            .f_reciprocal()?
            .mul_f64(max_grad_norm)?
            .clamp_max_f64(1.0)?
            .f_to_kind(Kind::Float)?;
        let over = c
            .f_to_kind(Kind::Double)?
            .f_mul(&norm)?
            .gt_f64(max_grad_norm)?;
        let down = c.f_nextafter(&c.f_zeros_like()?)?;
        c.f_where_self(&over.f_logical_not()?, &down)
    })
}

impl PerSampleNorms {
    /// `c_i = min(1, C/‖g_i‖)` (1 where `‖g_i‖ = 0`), never rounded above `C`
    /// ([`clip_coefficients`]), times the computed mask; overriding gradients
    /// get their own coefficient by the same rule.
    pub fn clip(
        &self,
        max_grad_norm: f64,
        backprops: &Backprops,
        model: &dyn Model,
        batch: &Batch,
    ) -> Result<ClipCoefficients> {
        let all = clip_coefficients(&self.sq, max_grad_norm)?;
        // The overrides are those of `backprops`' table (built from `batch`).
        let _ = (model, batch);
        let (computed, overrides) = torch("masking the clip coefficients", || {
            let computed = all.f_mul(&backprops.computed)?;
            let overrides = match &backprops.overrides {
                Some(t) => Some(all.f_index(&[Some(&t.slots), Some(&t.replicas)])?),
                None => None,
            };
            Ok((computed, overrides))
        })?;
        Ok(ClipCoefficients {
            computed,
            overrides,
        })
    }
}

impl ClippedSum {
    /// Add `N(0, (σC)²)` to every coordinate of every replica's sum, drawn
    /// from the runs' own [`NoiseStreams`] for their current step (which then
    /// advances, also when `σ = 0`).
    pub fn add_noise(
        self,
        noise_multiplier: f64,
        max_grad_norm: f64,
        noise: &mut NoiseStreams,
    ) -> Result<NoisySum> {
        let std = noise_multiplier * max_grad_norm;
        if std == 0.0 {
            noise.skip_step();
            return Ok(NoisySum(self.0));
        }
        let device = self.0.first().map_or(tch::Device::Cpu, |t| t.device());
        let draws = noise.next_step(std, &self.0, device)?;
        let mut out = Vec::with_capacity(self.0.len());
        for (s, z) in self.0.iter().zip(&draws) {
            out.push(s.f_add(z).map_err(TrainError::torch("adding DP noise"))?);
        }
        Ok(NoisySum(out))
    }
}

/// The public constant the noisy sum is divided by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Normaliser {
    /// Poisson sampling: the expected batch size `q·n`.
    ExpectedBatchSize(f64),
    /// Fixed-size batches: the batch size.
    FixedBatchSize(u64),
}

impl Normaliser {
    /// The divisor.
    pub fn value(&self) -> f64 {
        match *self {
            Normaliser::ExpectedBatchSize(v) => v,
            Normaliser::FixedBatchSize(b) => b as f64,
        }
    }
}

/// DP-SGD hyperparameters. All DP-critical values are explicit.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgdConfig {
    /// σ: noise std on the sum is `σ·C`.
    pub noise_multiplier: f64,
    /// C: per-sample clipping norm.
    pub max_grad_norm: f64,
    /// η.
    pub learning_rate: f64,
    /// What the noisy sum is divided by.
    pub normaliser: Normaliser,
    /// SGD momentum (PyTorch semantics, dampening 0); 0 = off (the seeds).
    pub momentum: f64,
    /// L2 weight decay added to the gradient; 0 = off.
    pub weight_decay: f64,
}

impl DpSgdConfig {
    /// Check ranges once.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, value: f64, expected: &str| {
            Err(TrainError::InvalidConfig {
                field: field.into(),
                value: value.to_string(),
                expected: expected.into(),
            })
        };
        if !(self.noise_multiplier >= 0.0 && self.noise_multiplier.is_finite()) {
            return bad(
                "noise_multiplier",
                self.noise_multiplier,
                "a finite number ≥ 0",
            );
        }
        if !(self.max_grad_norm > 0.0 && self.max_grad_norm.is_finite()) {
            return bad("max_grad_norm", self.max_grad_norm, "a finite number > 0");
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return bad("learning_rate", self.learning_rate, "a finite number > 0");
        }
        let n = self.normaliser.value();
        if !(n > 0.0 && n.is_finite()) {
            return bad("expected_batch_size", n, "a finite number > 0");
        }
        if !(0.0..1.0).contains(&self.momentum) {
            return bad("momentum", self.momentum, "in [0, 1)");
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return bad("weight_decay", self.weight_decay, "a finite number ≥ 0");
        }
        Ok(())
    }
}

/// What one step reports. The figures are sums over the steps since the
/// previous read-back from the device ([`DpSgd::set_read_back_every`]):
/// `steps` of them, ending at `step`; `steps = 0` (and zero figures) on a
/// step whose figures stay on the device.
#[derive(Debug, Clone)]
pub struct StepReport {
    /// Zero-based index of the step just taken.
    pub step: u64,
    /// How many steps the figures cover (`1` when every step is read back).
    pub steps: u64,
    /// Sum of the losses of present slots with computed gradients, all
    /// replicas, over those steps.
    pub loss_sum: f64,
    /// Number of slots whose computed gradient counted, over those steps.
    pub samples: f64,
    /// Fraction of those slots that were clipped (`‖g_i‖ > C`).
    pub clipped_fraction: f64,
}

impl StepReport {
    /// Whether this report carries figures read back from the device.
    pub fn is_read_back(&self) -> bool {
        self.steps > 0
    }

    /// Mean loss per counted slot over the steps covered (NaN when none).
    pub fn mean_loss(&self) -> f64 {
        if self.samples > 0.0 {
            self.loss_sum / self.samples
        } else {
            f64::NAN
        }
    }
}

/// How often the training loops (experiment chunks, `dpaudit train`) read
/// a step's report and checks back from the device: each read-back waits
/// for the device to finish everything queued, so a GPU loop that read every
/// step would idle while the host queues the next one. Figures and checks
/// accumulate on the device in between (see [`DpSgd::step`]).
pub const LOOP_READ_BACK_EVERY: u64 = 16;

/// Plain SGD on a model's parameters (momentum and weight decay optional), used
/// by both the DP and the non-private step.
#[derive(Debug)]
pub struct Sgd {
    /// Learning rate.
    pub learning_rate: f64,
    /// Momentum; 0 = off.
    pub momentum: f64,
    /// Weight decay; 0 = off.
    pub weight_decay: f64,
    buffers: Option<Vec<Tensor>>,
}

impl Sgd {
    /// A fresh optimiser.
    pub fn new(learning_rate: f64, momentum: f64, weight_decay: f64) -> Self {
        Self {
            learning_rate,
            momentum,
            weight_decay,
            buffers: None,
        }
    }

    /// `θ ← θ − η·(g + λθ)` (with momentum `v ← μv + g + λθ`, `θ ← θ − ηv`, as
    /// `torch.optim.SGD`), for gradients in [`Model::named_parameters`] order.
    pub fn step(&mut self, model: &dyn Model, grads: &[Tensor]) -> Result<()> {
        self.step_gated(model, grads, None)
    }

    /// [`Sgd::step`], where every parameter keeps its value unless `gate.0`
    /// (a 0-dim boolean on the device) is true; `gate.1` is a 0-dim float zero
    /// on the same device. The DP step's update is gated by its checks
    /// without reading them back.
    pub fn step_gated(
        &mut self,
        model: &dyn Model,
        grads: &[Tensor],
        gate: Option<(&Tensor, &Tensor)>,
    ) -> Result<()> {
        let params = model.named_parameters();
        // Each number is built once for all parameters.
        let mut weight_decay = Operand::new(self.weight_decay);
        let mut momentum = Operand::new(self.momentum);
        let mut learning_rate = Operand::new(self.learning_rate);
        torch("the SGD update", || {
            tch::no_grad(|| {
                let mut updates: Vec<Tensor> = params
                    .iter()
                    .zip(grads)
                    .map(|((_, p), g)| {
                        if self.weight_decay != 0.0 {
                            g.f_add(&p.f_mul(&weight_decay.like(p)?)?)
                        } else {
                            Ok(g.shallow_clone())
                        }
                    })
                    .collect::<Result<_, TchError>>()?;
                if self.momentum != 0.0 {
                    match &mut self.buffers {
                        None => {
                            let copies = updates
                                .iter()
                                .map(|u| {
                                    let mut copy = u.f_zeros_like()?;
                                    match gate {
                                        Some((g, zero)) => {
                                            copy.f_copy_(&u.f_where_self(g, zero)?)?
                                        }
                                        None => copy.f_copy_(u)?,
                                    }
                                    Ok(copy)
                                })
                                .collect::<Result<_, TchError>>()?;
                            self.buffers = Some(copies);
                        }
                        Some(bufs) => {
                            for (buf, u) in bufs.iter_mut().zip(&updates) {
                                match gate {
                                    // A gated-off step keeps the momentum too.
                                    Some((g, _)) => {
                                        let next = buf.f_mul(&momentum.like(buf)?)?.f_add(u)?;
                                        buf.f_copy_(&next.f_where_self(g, buf)?)?;
                                    }
                                    None => {
                                        let factor = momentum.like(buf)?;
                                        let _ = buf.f_mul_(&factor)?;
                                        let _ = buf.f_add_(u)?;
                                    }
                                }
                            }
                        }
                    }
                    if let Some(bufs) = &self.buffers {
                        updates = bufs.iter().map(|b| b.shallow_clone()).collect();
                    }
                }
                // A gated-off step subtracts an exact 0 (`where`, not a
                // product: the update may hold NaN).
                for ((_, p), u) in params.iter().zip(&updates) {
                    let mut p = p.shallow_clone();
                    let delta = u.f_mul(&learning_rate.like(u)?)?;
                    let delta = match gate {
                        Some((g, zero)) => delta.f_where_self(g, zero)?,
                        None => delta,
                    };
                    let _ = p.f_sub_(&delta)?;
                }
                Ok(())
            })
        })
    }
}

/// A deliberately broken DP-SGD variant, for `dpaudit selftest` only: an audit of a correct pipeline must not flag it, an audit of
/// these should. Never used by training configs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Per-sample clipping removed: every coefficient is 1.
    NoClipping,
    /// The noise std is `factor·σ·C` instead of `σ·C` (e.g. 0.5: noise halved).
    NoiseScale(f64),
    /// The noisy sum of each replica is divided by its realised batch size
    /// (present slots, at least 1) instead of the public normaliser.
    RealisedBatchSize,
}

/// The DP-SGD optimiser: the pipeline above, the step counter, and the
/// noise generators of the runs it trains.
#[derive(Debug)]
pub struct DpSgd {
    /// The hyperparameters.
    pub config: DpSgdConfig,
    sgd: Sgd,
    step: u64,
    fault: Option<Fault>,
    noise: NoiseStreams,
    read_back_every: u64,
    pending: Option<Pending>,
}

/// The steps since the last read-back, as the device holds them.
#[derive(Debug)]
struct Pending {
    /// `[k, 3 + 1 + F]` float64 on the device, one row per step of the window
    /// (`k` = steps between read-backs): loss sum, counted slots, clipped
    /// slots, then the checks, 1 (passed) or 0: the loss is finite, then each
    /// entry of `norms_finite` and of `sums_finite`.
    table: Tensor,
    /// Boolean, 0-dim, on the device: every step so far passed its checks.
    gate: Tensor,
    /// A 0-dim float zero on the device, what a gated-off update subtracts.
    zero: Tensor,
    /// Rows of the table: the read-back interval when the window began.
    rows: u64,
    /// The step of the first row.
    first_step: u64,
    /// Rows written.
    steps: u64,
    /// Entries of `norms_finite` among the checks.
    norm_checks: usize,
    /// The model's layer names, for the error message.
    layers: Vec<String>,
}

/// Columns of [`Pending::table`] before the checks.
const FIGURES: usize = 3;

impl DpSgd {
    /// Validate and build; `noise` holds one generator per replica of the
    /// models this optimiser will step.
    pub fn new(config: DpSgdConfig, noise: NoiseStreams) -> Result<Self> {
        config.validate()?;
        let sgd = Sgd::new(config.learning_rate, config.momentum, config.weight_decay);
        Ok(Self {
            config,
            sgd,
            step: 0,
            fault: None,
            noise,
            read_back_every: 1,
            pending: None,
        })
    }

    /// Read the step report and the checks back from the device every `k`
    /// steps (`k ≥ 1`; 1, the default, reads every step). In between they
    /// accumulate on the device and each update is gated there, so a step
    /// that fails its checks, and every later step until the read-back,
    /// leaves the parameters as they were; the read-back then fails naming
    /// the first failing step. Callers read the last steps with
    /// [`DpSgd::read_back`] before using the model. A new interval takes
    /// effect from the next read-back on.
    pub fn set_read_back_every(&mut self, k: u64) {
        self.read_back_every = k.max(1);
    }

    /// Steps between read-backs.
    pub fn read_back_every(&self) -> u64 {
        self.read_back_every
    }

    /// Draw the noise with `generator` whatever the device (secure mode
    /// refuses the device generator; see [`NoiseStreams::with_generator`]).
    pub fn set_noise_generator(&mut self, generator: NoiseGenerator) -> Result<()> {
        self.noise.set_generator(generator)
    }

    /// The generator of this engine's noise on `device`.
    pub fn noise_generator(&self, device: tch::Device) -> NoiseGenerator {
        self.noise.generator(device)
    }

    /// Secure or replayable noise.
    pub fn mode(&self) -> dpaudit_data::seed::Mode {
        self.noise.mode()
    }

    /// The same optimiser with a deliberate [`Fault`] (self-test only).
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// The injected fault, if any.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// Steps taken so far.
    pub fn steps_taken(&self) -> u64 {
        self.step
    }

    /// Everything up to the noisy sum (no parameter change; the noise
    /// generators advance one step).
    pub fn noisy_sum(
        &mut self,
        model: &dyn Model,
        batch: &Batch,
    ) -> Result<(NoisySum, Backprops, ClipCoefficients)> {
        let parts = self.noisy_sum_checked(model, batch)?;
        Ok((parts.noisy, parts.backprops, parts.coef))
    }

    fn noisy_sum_checked(&mut self, model: &dyn Model, batch: &Batch) -> Result<StepParts> {
        let bp = forward_backward(model, batch)?;
        let norms = bp.norms(model, batch)?;
        let mut coef = norms.clip(self.config.max_grad_norm, &bp, model, batch)?;
        if self.fault == Some(Fault::NoClipping) {
            coef = ClipCoefficients {
                computed: bp.computed.shallow_clone(),
                overrides: torch("the fault's coefficients", || {
                    coef.overrides.as_ref().map(|c| c.f_ones_like()).transpose()
                })?,
            };
        }
        let sum = bp.clipped_sum(model, batch, &coef)?;
        let sums_finite = bp.sum_checks(model, &sum)?;
        let sigma = match self.fault {
            Some(Fault::NoiseScale(f)) => self.config.noise_multiplier * f,
            _ => self.config.noise_multiplier,
        };
        if self.noise.replicas() as i64 != model.replicas() {
            return Err(TrainError::Shape {
                what: "noise streams".into(),
                got: vec![self.noise.replicas() as i64],
                expected: format!("{} (one per replica of the model)", model.replicas()),
            });
        }
        let noisy = sum.add_noise(sigma, self.config.max_grad_norm, &mut self.noise)?;
        Ok(StepParts {
            noisy,
            backprops: bp,
            coef,
            norms_finite: norms.finite,
            sums_finite: sums_finite.0,
        })
    }

    /// One DP-SGD step. Nothing changes the parameters unless the loss, every
    /// layer's per-sample norms and every layer's clipped sum are finite: the
    /// update is gated on the device by these checks. They, and the step's
    /// report, come back from the device in one copy every
    /// [`DpSgd::read_back_every`] steps (every step by default); a failed
    /// check then stops the run with an error that names the first failing
    /// step and its layer, and every step from that one on has left the
    /// parameters unchanged.
    pub fn step(&mut self, model: &dyn Model, batch: &Batch) -> Result<StepReport> {
        let parts = self.noisy_sum_checked(model, batch)?;
        let (gate, zero) = self.record(model, &parts)?;
        let noisy = &parts.noisy;
        let bp = &parts.backprops;
        let mut inv = Operand::new(1.0 / self.config.normaliser.value());
        let grads: Vec<Tensor> = torch("normalising the noisy sum", || {
            if self.fault == Some(Fault::RealisedBatchSize) {
                // Present slots per replica, at least 1: `[M]`.
                let realised = bp
                    .present
                    .f_sum_dim_intlist(0, false, Kind::Float)?
                    .clamp_min_f64(1.0)?;
                noisy
                    .0
                    .iter()
                    .map(|s| {
                        let mut shape = vec![-1i64];
                        shape.extend(std::iter::repeat_n(1, s.dim().saturating_sub(1)));
                        s.f_div(&realised.f_reshape(shape.as_slice())?)
                    })
                    .collect()
            } else {
                noisy.0.iter().map(|s| s.f_mul(&inv.like(s)?)).collect()
            }
        })?;
        self.sgd.step_gated(model, &grads, Some((&gate, &zero)))?;
        self.step += 1;
        let due = self.pending.as_ref().is_some_and(|p| p.steps >= p.rows);
        if due {
            if let Some(report) = self.read_back()? {
                return Ok(report);
            }
        }
        Ok(StepReport {
            step: self.step.saturating_sub(1),
            steps: 0,
            loss_sum: 0.0,
            samples: 0.0,
            clipped_fraction: 0.0,
        })
    }

    /// Write this step's figures and checks into the device's table of the
    /// steps since the last read-back; return the gate of its update (true
    /// while every step since the last read-back passed its checks) and the
    /// zero a gated-off update subtracts.
    fn record(&mut self, model: &dyn Model, parts: &StepParts) -> Result<(Tensor, Tensor)> {
        let bp = &parts.backprops;
        let coef = &parts.coef;
        let flags: Vec<&Tensor> = parts
            .norms_finite
            .iter()
            .chain(&parts.sums_finite)
            .collect();
        let width = (FIGURES + 1 + flags.len()) as i64;
        let mut pending = match self.pending.take() {
            Some(p) => p,
            None => {
                let device = bp.computed.device();
                let rows = self.read_back_every;
                torch("the table of the steps until the next read-back", || {
                    Ok(Pending {
                        table: Tensor::f_zeros([rows as i64, width], (Kind::Double, device))?,
                        gate: Tensor::f_ones([], (Kind::Bool, device))?,
                        zero: Tensor::f_zeros([], (Kind::Float, device))?,
                        rows,
                        first_step: self.step,
                        steps: 0,
                        norm_checks: parts.norms_finite.len(),
                        layers: model.layers().into_iter().map(|(n, _)| n).collect(),
                    })
                })?
            }
        };
        if pending.table.size().get(1) != Some(&width) {
            return Err(TrainError::Shape {
                what: "the table of the steps since the last read-back".into(),
                got: pending.table.size(),
                expected: format!("[k, {width}]: the same model at every step"),
            });
        }
        torch("recording the step's checks on the device", || {
            let loss_sum = bp.losses.f_mul(&bp.computed)?.f_sum(Kind::Double)?;
            let samples = bp.computed.f_sum(Kind::Double)?;
            let clipped = coef
                .computed
                .lt_f64(1.0)?
                .f_to_kind(Kind::Double)?
                .f_mul(&bp.computed)?
                .f_sum(Kind::Double)?;
            let loss_finite = loss_sum.f_isfinite()?;
            let checks = Tensor::f_stack(
                &std::iter::once(&loss_finite)
                    .chain(flags.iter().copied())
                    .collect::<Vec<_>>(),
                0,
            )?;
            let figures = Tensor::f_stack(&[&loss_sum, &samples, &clipped], 0)?;
            let row = Tensor::f_cat(&[figures, checks.f_to_kind(Kind::Double)?], 0)?;
            pending
                .table
                .f_select(0, pending.steps as i64)?
                .f_copy_(&row)?;
            let _ = pending.gate.f_logical_and_(&checks.f_all()?)?;
            Ok(())
        })?;
        pending.steps += 1;
        let gate = (pending.gate.shallow_clone(), pending.zero.shallow_clone());
        self.pending = Some(pending);
        Ok(gate)
    }

    /// Read the steps since the last read-back from the device: their report,
    /// or the error of the first that failed its checks (that step and every
    /// later one left the parameters unchanged). `None` when there are none.
    pub fn read_back(&mut self) -> Result<Option<StepReport>> {
        let Some(p) = self.pending.take() else {
            return Ok(None);
        };
        crate::op_count::host_read();
        let host: Vec<f64> = torch("reading the steps' report", || {
            Vec::<f64>::try_from(
                &p.table
                    .f_narrow(0, 0, p.steps as i64)?
                    .f_to_device(tch::Device::Cpu)?
                    .f_reshape([-1])?,
            )
        })?;
        let width = host.len() / p.steps.max(1) as usize;
        let (mut loss_sum, mut samples, mut clipped) = (0.0, 0.0, 0.0);
        for (j, row) in host.chunks(width.max(1)).enumerate() {
            let step = p.first_step + j as u64;
            let (figures, checks) = row.split_at(FIGURES.min(row.len()));
            if let Some(i) = checks.iter().position(|&c| c != 1.0) {
                return Err(failure(step, figures[0], i, p.norm_checks, &p.layers));
            }
            loss_sum += figures[0];
            samples += figures[1];
            clipped += figures[2];
        }
        Ok(Some(StepReport {
            step: p.first_step + p.steps.saturating_sub(1),
            steps: p.steps,
            loss_sum,
            samples,
            clipped_fraction: if samples > 0.0 {
                clipped / samples
            } else {
                0.0
            },
        }))
    }
}

/// The error of a step whose check `check` failed: 0 is the loss, then the
/// `norm_checks` per-sample norm checks (one per layer, then the overrides),
/// then the clipped sums (one per layer).
fn failure(
    step: u64,
    loss: f64,
    check: usize,
    norm_checks: usize,
    layers: &[String],
) -> TrainError {
    let layer = |i: usize| layers.get(i).cloned().unwrap_or_else(|| "overrides".into());
    match check.checked_sub(1) {
        None => TrainError::NonFiniteLoss { step, loss },
        Some(i) if i < norm_checks => TrainError::NonFinite {
            step,
            layer: layer(i),
            what: "per-sample gradient norm".into(),
        },
        Some(i) => TrainError::NonFinite {
            step,
            layer: layer(i - norm_checks),
            what: "clipped sum".into(),
        },
    }
}

/// What [`DpSgd::step`] needs from the pipeline before it touches the model.
struct StepParts {
    noisy: NoisySum,
    backprops: Backprops,
    coef: ClipCoefficients,
    norms_finite: Vec<Tensor>,
    sums_finite: Vec<Tensor>,
}

/// One non-private step with the same model and optimiser (mean loss over
/// present slots of each replica, ordinary autograd): the baseline of `dpaudit
/// bench`.
pub fn non_private_step(model: &dyn Model, sgd: &mut Sgd, batch: &Batch) -> Result<f64> {
    let logits = model.forward(&batch.inputs, &mut Tape::off())?;
    let losses = per_sample_cross_entropy(&logits, &batch.targets)?;
    let b = losses.size().first().copied().unwrap_or(0).max(1) as f64;
    let total = torch("the mean loss", || losses.f_sum(Kind::Float)?.div_f64(b))?;
    let params: Vec<Tensor> = model
        .named_parameters()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let grads = Tensor::f_run_backward(&[&total], &params, false, false)
        .map_err(TrainError::torch("non-private backward"))?;
    sgd.step(model, &grads)?;
    torch("reading the loss", || total.f_double_value(&[]))
}

#[cfg(test)]
mod tests {
    use super::rank_ranges;

    /// Rank-major lists give one range per rank; a replica's second row
    /// before another replica's first is not rank-major.
    #[test]
    fn rank_ranges_of_rank_major_lists() {
        assert_eq!(rank_ranges(&[]), Some(vec![]));
        assert_eq!(rank_ranges(&[0, 1, 2, 0, 2]), Some(vec![(0, 3), (3, 2)]));
        assert_eq!(rank_ranges(&[1, 0, 1]), Some(vec![(0, 2), (2, 1)]));
        assert_eq!(rank_ranges(&[0, 0, 1]), None);
        assert_eq!(rank_ranges(&[3, 3, 3]), Some(vec![(0, 1), (1, 1), (2, 1)]));
    }
}
