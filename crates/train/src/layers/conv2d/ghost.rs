//! [`NormStrategy::Ghost`]: per-sample squared norms of the weight gradient
//! from the unfolded input and the backprop, never materialising it.

use tch::{TchError, Tensor};

use super::layer::{Conv2d, NormStrategy};
use crate::layers::tape::Recorded;

impl Conv2d {
    /// Whether the ghost norm is cheaper than materialising, per sample and group:
    /// ghost costs `L²·(K + O/g)` multiply-adds and `2L²` memory, materialising
    /// `L·K·O/g` and `K·O/g`.
    pub(super) fn use_ghost(&self, l: i64) -> bool {
        match self.norm_strategy {
            NormStrategy::Ghost => true,
            NormStrategy::Materialise => false,
            NormStrategy::Auto => {
                let c = &self.config;
                let k = c.in_channels / c.groups * c.kernel_size[0] * c.kernel_size[1];
                let o = c.out_channels / c.groups;
                l * (k + o) < k * o
            }
        }
    }

    /// The ghost norm of the weight gradient, `[B, M]`:
    /// `‖g‖² = Σ_{l,l'} (u_l·u_l')(δ_l·δ_l')` over output positions.
    pub(super) fn ghost_sq_norms(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
    ) -> Result<Tensor, TchError> {
        let b = backprop.size()[0];
        let m = self.m();
        let l = backprop.size()[2] * backprop.size()[3];
        let u = self.unfold(&rec.input)?;
        let d = self.backprop_groups(backprop)?;
        let gu = Tensor::f_einsum("bgkl,bgkn->bgln", &[&u, &u], None::<i64>)?;
        let gd = Tensor::f_einsum("bgol,bgon->bgln", &[&d, &d], None::<i64>)?;
        gu.f_mul(&gd)?
            .f_reshape([b, m, self.config.groups * l * l])?
            .f_sum_dim_intlist(-1, false, None)
    }
}
