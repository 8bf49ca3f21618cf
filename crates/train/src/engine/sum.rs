//! The clipped sum `Σ_i c_i g_i` per parameter (book-keeping), and its
//! finiteness checks per layer.

use tch::{Kind, Tensor};

use super::backprop::Backprops;
use super::batch::Batch;
use super::clip::ClipCoefficients;
use super::overrides::param_sizes;
use crate::error::{torch, Result};
use crate::models::Model;

/// `Σ_i c_i g_i` per parameter, `[M, ...]` each, in
/// [`Model::named_parameters`] order.
#[derive(Debug)]
pub struct ClippedSum(pub Vec<Tensor>);

/// Whether each layer's part of a [`ClippedSum`] is finite: one 0-dim boolean
/// per layer in [`Model::layers`] order.
#[derive(Debug)]
pub struct SumChecks(pub Vec<Tensor>);

impl Backprops {
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
