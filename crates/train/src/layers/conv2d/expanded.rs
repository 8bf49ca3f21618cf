//! [`PerSampleMethod::ExpandedWeights`]: the DP forward pass runs one
//! convolution over `B` copies of the weight, whose gradient is the
//! per-sample gradient.

use tch::{Kind, TchError, Tensor};

use super::layer::Conv2d;
#[cfg(doc)]
use super::layer::PerSampleMethod;
use crate::layers::tape::Recorded;

/// [`PerSampleMethod::Auto`] expands the weights of layers with at least this
/// many input and output channels per group: measured on 2 CPU cores (same
/// table), the sample-grouped forward and backward of WRN-16-4's layers at
/// B = 64 cost 1.1× (32 × 32), 1.2× (16 × 16) and 1.4× (stride 2) the ordinary
/// ones and give the per-sample gradients with them, while LeNet-5's conv2
/// (6 → 16 channels) costs 2.1× and is faster by
/// [`PerSampleMethod::GroupedConvolution`].
pub const EXPANDED_MIN_CHANNELS: i64 = 16;

/// [`PerSampleMethod::Auto`] expands a layer's weights only while the `B·M`
/// copies take at most this many bytes (256 MiB).
pub const EXPANDED_MAX_BYTES: i64 = 1 << 28;

impl Conv2d {
    /// The DP forward pass over `B` copies of the weight, one per sample, as
    /// one convolution with `B·M·g` groups: the output `[B, M·out, H', W']`
    /// and the copies (a leaf that requires grad; the bias is added after the
    /// convolution). `xin` is the `[B, M·in, H, W]` view of the input.
    pub(super) fn expanded_forward(
        &self,
        xin: &Tensor,
        [b, h, w]: [i64; 3],
        [oh, ow]: [i64; 2],
    ) -> Result<(Tensor, Tensor), TchError> {
        let c = &self.config;
        let m = self.m();
        let per_group = [c.in_channels / c.groups, c.kernel_size[0], c.kernel_size[1]];
        // B copies of the weight, one per sample, as a leaf; the
        // bias is added after the convolution.
        let copies = self
            .weight
            .f_detach()?
            .f_unsqueeze(0)?
            .f_expand(
                [
                    b,
                    m,
                    c.out_channels,
                    per_group[0],
                    per_group[1],
                    per_group[2],
                ],
                false,
            )?
            .f_contiguous()?
            .f_reshape([
                b * m * c.out_channels,
                per_group[0],
                per_group[1],
                per_group[2],
            ])?
            .f_set_requires_grad(true)?;
        let mut y = xin
            .f_reshape([1, b * m * c.in_channels, h, w])?
            .f_conv2d(
                &copies,
                None::<&Tensor>,
                c.stride,
                c.padding,
                [1, 1],
                b * m * c.groups,
            )?
            .f_reshape([b, m * c.out_channels, oh, ow])?;
        if let Some(bias) = &self.bias {
            y = y.f_add(&bias.f_reshape([1, m * c.out_channels, 1, 1])?)?;
        }
        Ok((y, copies))
    }

    /// The per-sample weight gradients of a forward pass that expanded the
    /// weights: the gradient of its `copies`, `[B, M, out, in/g, kh, kw]`.
    pub(super) fn expanded_weight_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
        copies: &Tensor,
    ) -> Result<Tensor, TchError> {
        let b = backprop.size()[0];
        // ∂/∂copies of Σ y ⊙ δ (δ detached) is the per-sample gradient.
        let target = rec.output.f_mul(backprop)?.f_sum(Kind::Float)?;
        let g = Tensor::f_run_backward(&[&target], &[copies], true, false)?;
        g.into_iter()
            .next()
            .ok_or_else(|| TchError::Torch("no gradient for the expanded weights".into()))?
            .f_reshape(self.per_sample_weight_shape(b))
    }
}
