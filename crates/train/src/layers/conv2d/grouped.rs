//! [`PerSampleMethod::GroupedConvolution`]: the per-sample weight gradients
//! as one convolution of the input with the backprop.

use tch::{TchError, Tensor};

use super::layer::Conv2d;
#[cfg(doc)]
use super::layer::PerSampleMethod;
use crate::layers::tape::Recorded;

/// Up to this many output channels per group, [`PerSampleMethod::Auto`] uses
/// the grouped convolution. Measured on 2 CPU cores (`benches/conv_formulations.py`,
/// table in `benches/RESULTS.md`): it is 2.2× faster than the unfolded product
/// for LeNet-5's conv1 (6 outputs) and 1.5× for conv2 (16) at B = 4096, but
/// 1.2–1.4× slower at 64 outputs (WRN-16-4, B = 64) and 1.7× at 128, where
/// the unfolded product is a large, efficient matrix product.
pub const GROUPED_MAX_OUTPUTS: i64 = 32;

impl Conv2d {
    /// Per-sample weight gradients as one convolution. For sample `b` and
    /// group `G` (replica × channel group), `∇W[o, i, p, q] = Σ_{y,x}
    /// δ[o, y, x] · x_pad[i, s·y + p, s·x + q]`: the padded input correlated
    /// with the backprop as kernel, dilated by the stride `s`. Taking the
    /// `in/g` input channels as the batch and the `B·M·g` (sample, group)
    /// pairs as groups, each with `out/g` kernels, this is a single
    /// `conv2d(x, δ, padding, dilation = stride, groups = B·M·g)`; its output
    /// is at least `kh × kw` and is cut to it (a longer output comes from
    /// input rows the layer's own stride never reaches).
    pub(super) fn grouped_weight_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
    ) -> Result<Tensor, TchError> {
        let c = &self.config;
        let m = self.m();
        let (ci, oi) = (c.in_channels / c.groups, c.out_channels / c.groups);
        let xs = rec.input.size();
        let ds = backprop.size();
        let (b, groups) = (ds[0], ds[0] * m * c.groups);
        let x = rec
            .input
            .f_reshape([groups, ci, xs[2], xs[3]])?
            .f_transpose(0, 1)?;
        let kernels = backprop.f_reshape([groups * oi, 1, ds[2], ds[3]])?;
        x.f_conv2d(
            &kernels,
            None::<&Tensor>,
            [1, 1],
            c.padding,
            c.stride,
            groups,
        )?
        .f_narrow(2, 0, c.kernel_size[0])?
        .f_narrow(3, 0, c.kernel_size[1])?
        .f_reshape([ci, b, m, c.out_channels, c.kernel_size[0], c.kernel_size[1]])?
        .f_permute([1, 2, 3, 0, 4, 5])
    }
}
