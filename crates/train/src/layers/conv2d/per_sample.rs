//! Which formulation a convolution uses, its forward pass, and its
//! [`PerSampleGrad`] implementation.

use tch::{Device, Kind, TchError, Tensor};

use super::expanded::{EXPANDED_MAX_BYTES, EXPANDED_MIN_CHANNELS};
use super::grouped::GROUPED_MAX_OUTPUTS;
use super::layer::{Conv2d, ConvLayout, PerSampleMethod};
use super::layout::channels_last;
use crate::error::{torch, Result, TrainError};
use crate::layers::per_sample::{float_bytes, weighted_sums, PerSampleGrad};
use crate::layers::tape::{LayerId, Recorded, Tape};

impl Conv2d {
    /// The method this layer uses on `device` for a batch of `b` slots with
    /// `l` output positions: never [`PerSampleMethod::Auto`];
    /// [`PerSampleMethod::ExpandedWeights`] only where the norms are not ghost
    /// norms (which need no per-sample gradients) and the batch is not empty;
    /// [`PerSampleMethod::Direct`] only where it applies (stride 1, the CPU,
    /// float32), in place of the grouped convolution.
    pub fn per_sample_method_for(&self, b: i64, l: i64, device: Device) -> PerSampleMethod {
        let c = &self.config;
        let (ci, oi) = (c.in_channels / c.groups, c.out_channels / c.groups);
        let expandable = b > 0 && !self.use_ghost(l);
        let params = self.weight.numel() as i64 / self.m().max(1);
        let direct = device == Device::Cpu
            && c.stride == [1, 1]
            && self.weight.f_kind().is_ok_and(|k| k == Kind::Float);
        let grouped = match direct {
            true => PerSampleMethod::Direct,
            false => PerSampleMethod::GroupedConvolution,
        };
        match self.per_sample_method {
            PerSampleMethod::ExpandedWeights if expandable => PerSampleMethod::ExpandedWeights,
            PerSampleMethod::ExpandedWeights | PerSampleMethod::GroupedConvolution => {
                PerSampleMethod::GroupedConvolution
            }
            PerSampleMethod::Direct => grouped,
            PerSampleMethod::Unfold => PerSampleMethod::Unfold,
            PerSampleMethod::Auto
                if expandable
                    && ci >= EXPANDED_MIN_CHANNELS
                    && oi >= EXPANDED_MIN_CHANNELS
                    && float_bytes(&[b, self.m(), params]) <= EXPANDED_MAX_BYTES =>
            {
                PerSampleMethod::ExpandedWeights
            }
            PerSampleMethod::Auto if oi <= GROUPED_MAX_OUTPUTS => grouped,
            PerSampleMethod::Auto => PerSampleMethod::Unfold,
        }
    }

    /// Per-sample weight gradients, `[B, M, out, in/g, kh, kw]` (the grouped
    /// cross-correlation gives a permuted view).
    pub(super) fn weight_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
    ) -> Result<Tensor, TchError> {
        let b = backprop.size()[0];
        if let Some(copies) = &rec.expanded_weight {
            return self.expanded_weight_grads(rec, backprop, copies);
        }
        let l = backprop.size()[2] * backprop.size()[3];
        match self.per_sample_method_for(b, l, backprop.device()) {
            _ if b == 0 => {}
            PerSampleMethod::Direct if backprop.f_kind().is_ok_and(|k| k == Kind::Float) => {
                return self.direct_weight_grads(rec, backprop);
            }
            PerSampleMethod::Unfold => {}
            _ => return self.grouped_weight_grads(rec, backprop),
        }
        self.unfold_weight_grads(rec, backprop)
    }
}

impl PerSampleGrad for Conv2d {
    fn parameters(&self) -> Vec<(&'static str, &Tensor)> {
        let mut p = vec![("weight", &self.weight)];
        if let Some(b) = &self.bias {
            p.push(("bias", b));
        }
        p
    }

    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let c = &self.config;
        let m = self.m();
        let s = x.size();
        if s.len() != 5 {
            return Err(TrainError::Shape {
                what: "Conv2d input".into(),
                got: s,
                expected: "[B, M, C, H, W]".into(),
            });
        }
        let (b, h, w) = (s[0], s[3], s[4]);
        let Some((oh, ow)) = self.output_size(h, w) else {
            return Err(TrainError::Shape {
                what: "Conv2d input".into(),
                got: s,
                expected: format!("at least the kernel {:?} after padding", c.kernel_size),
            });
        };
        let expanded = tape.is_recording()
            && self.per_sample_method_for(b, oh * ow, x.device())
                == PerSampleMethod::ExpandedWeights;
        let (xin, y, copies) = torch("the forward pass of a Conv2d layer", || {
            let xin = x.f_reshape([b, m * c.in_channels, h, w])?;
            let per_group = [c.in_channels / c.groups, c.kernel_size[0], c.kernel_size[1]];
            if expanded {
                let (y, copies) = self.expanded_forward(&xin, [b, h, w], [oh, ow])?;
                return Ok((xin, y, Some(copies)));
            }
            let wt = self.weight.f_reshape([
                m * c.out_channels,
                per_group[0],
                per_group[1],
                per_group[2],
            ])?;
            let bias = match &self.bias {
                Some(t) => Some(t.f_reshape([m * c.out_channels])?),
                None => None,
            };
            // The recorded input is the one the convolution saw, so the
            // per-sample paths read it in the same layout (their reshapes
            // copy where a layout needs it).
            // A contiguous layer copies an input that an earlier layer left
            // channels last, so that each layer runs in its own layout.
            let (xin, wt) = match self.layout_for(x.device()) {
                ConvLayout::ChannelsLast => (channels_last(&xin)?, channels_last(&wt)?),
                _ => (xin.f_contiguous()?, wt),
            };
            let y = xin.f_conv2d(
                &wt,
                bias.as_ref(),
                c.stride,
                c.padding,
                [1, 1],
                m * c.groups,
            )?;
            Ok((xin, y, None))
        })?;
        tape.record_expanded(LayerId::of(self), &xin, &y, copies)?;
        torch("the forward pass of a Conv2d layer", || {
            y.f_reshape([b, m, c.out_channels, oh, ow])
        })
    }

    fn per_sample_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Vec<Tensor>> {
        torch("the per-sample gradients of a Conv2d layer", || {
            self.all_grads(rec, backprop)
        })
    }

    fn per_sample_sq_norms(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor> {
        Ok(self.sq_norms_keeping_grads(rec, backprop, 0)?.0)
    }

    /// Ghost norms where they are cheaper; otherwise the materialised
    /// per-sample gradients, which are returned with the norms when they fit
    /// in `keep_bytes`.
    fn sq_norms_keeping_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
        keep_bytes: i64,
    ) -> Result<(Tensor, Option<Vec<Tensor>>)> {
        torch("the per-sample squared norms of a Conv2d layer", || {
            let b = backprop.size()[0];
            let m = self.m();
            let l = backprop.size()[2] * backprop.size()[3];
            let gb = match self.bias {
                Some(_) => Some(self.bias_grads(backprop)?),
                None => None,
            };
            if self.use_ghost(l) {
                let mut sq = self.ghost_sq_norms(rec, backprop)?;
                if let Some(gb) = &gb {
                    sq = sq.f_add(&Self::sq_sum(gb)?)?;
                }
                return Ok((sq, None));
            }
            let gw = self.weight_grads(rec, backprop)?;
            let mut sq = Self::sq_sum(&gw)?;
            if let Some(gb) = &gb {
                sq = sq.f_add(&Self::sq_sum(gb)?)?;
            }
            let params = self.weight.numel() as i64 / m.max(1)
                + gb.as_ref().map_or(0, |_| self.config.out_channels);
            let keep = b > 0 && float_bytes(&[b, m, params]) <= keep_bytes;
            Ok((
                sq,
                keep.then(|| [Some(gw), gb].into_iter().flatten().collect()),
            ))
        })
    }

    /// `Σ_b c_b ∇W_b` is the weight gradient of the recorded convolution for the
    /// output gradient `c ⊙ δ`, so libtorch's own convolution weight backward
    /// (mkldnn, cuDNN) computes it from the recorded graph: one backward through
    /// this layer's convolution node alone, asking for the weight only, with no
    /// unfolded input and no per-sample tensor.
    fn clipped_sum(&self, rec: &Recorded, backprop: &Tensor, coef: &Tensor) -> Result<Vec<Tensor>> {
        torch("the clipped sum of a Conv2d layer", || {
            if rec.expanded_weight.is_some() {
                // The recorded node is per sample; its weighted sum is that of
                // the per-sample gradients.
                return weighted_sums(&self.all_grads(rec, backprop)?, coef);
            }
            let c = &self.config;
            let m = self.m();
            let bs = backprop.size();
            let (b, l) = (bs[0], bs[2] * bs[3]);
            // c ⊙ δ, with coef [B, M] broadcast over each replica's `out` channels.
            let cd = backprop
                .f_reshape([b, m, c.out_channels, l])?
                .f_mul(&coef.f_reshape([b, m, 1, 1])?)?;
            // ∂/∂y of Σ y ⊙ (c ⊙ δ) is exactly c ⊙ δ (detached).
            let target = rec
                .output
                .f_mul(&cd.f_reshape(bs.as_slice())?)?
                .f_sum(Kind::Float)?;
            let mut out = Tensor::f_run_backward(&[&target], &[&self.weight], true, false)?;
            if self.bias.is_some() {
                out.push(cd.f_sum_dim_intlist(&[0i64, 3][..], false, None)?);
            }
            Ok(out)
        })
    }
}
