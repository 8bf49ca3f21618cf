//! Per-sample squared gradient norms over all layers, overrides applied.

use tch::{Kind, Tensor};

use super::backprop::{Backprops, KEEP_PER_SAMPLE_BYTES};
use super::batch::Batch;
use crate::error::{torch, Result};
use crate::models::Model;
use crate::scalar::Operand;

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

impl Backprops {
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
}
