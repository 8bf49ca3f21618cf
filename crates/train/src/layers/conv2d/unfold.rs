//! [`PerSampleMethod::Unfold`]: `∇W_i = δ_i U_iᵀ` on the unfolded input
//! `U = im2col(x)`.

use tch::{TchError, Tensor};

use super::layer::Conv2d;
#[cfg(doc)]
use super::layer::PerSampleMethod;
use crate::layers::tape::Recorded;

impl Conv2d {
    /// `U` as `[B, M·g, (in/g)·kh·kw, L]`.
    pub(super) fn unfold(&self, input: &Tensor) -> Result<Tensor, TchError> {
        let c = &self.config;
        let b = input.size()[0];
        let u = input.f_im2col(c.kernel_size, [1, 1], c.padding, c.stride)?;
        let k = c.in_channels / c.groups * c.kernel_size[0] * c.kernel_size[1];
        let l = u.size()[2];
        u.f_reshape([b, self.m() * c.groups, k, l])
    }

    /// `δ` as `[B, M·g, out/g, L]`.
    pub(super) fn backprop_groups(&self, backprop: &Tensor) -> Result<Tensor, TchError> {
        let c = &self.config;
        let s = backprop.size();
        backprop.f_reshape([
            s[0],
            self.m() * c.groups,
            c.out_channels / c.groups,
            s[2] * s[3],
        ])
    }

    /// Per-sample weight gradients `[B, M, out, in/g, kh, kw]` as one batched
    /// product `δ Uᵀ`.
    pub(super) fn unfold_weight_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
    ) -> Result<Tensor, TchError> {
        let b = backprop.size()[0];
        let u = self.unfold(&rec.input)?;
        let d = self.backprop_groups(backprop)?;
        Tensor::f_einsum("bgol,bgkl->bgok", &[&d, &u], None::<i64>)?
            .f_reshape(self.per_sample_weight_shape(b))
    }
}
