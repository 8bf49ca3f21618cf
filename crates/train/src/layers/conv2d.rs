//! `nn.Conv2d` (stride, padding, groups) with per-sample gradients, stacked over
//! replicas as one grouped convolution.

use tch::{Kind, TchError, Tensor};

use super::{PerSampleGrad, Recorded, Tape};
use crate::error::{torch, Result};
use crate::init::Init;

/// Shape of a Conv2d layer (PyTorch `nn.Conv2d`, dilation 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv2dConfig {
    /// Input channels.
    pub in_channels: i64,
    /// Output channels.
    pub out_channels: i64,
    /// `(kh, kw)`.
    pub kernel_size: [i64; 2],
    /// `(sh, sw)`.
    pub stride: [i64; 2],
    /// `(ph, pw)`, zero padding.
    pub padding: [i64; 2],
    /// Channel groups; divides both channel counts.
    pub groups: i64,
    /// Whether the layer has a bias.
    pub bias: bool,
}

impl Conv2dConfig {
    /// A square `k×k` convolution with stride 1, no padding, one group, bias.
    pub fn new(in_channels: i64, out_channels: i64, k: i64) -> Self {
        Self {
            in_channels,
            out_channels,
            kernel_size: [k, k],
            stride: [1, 1],
            padding: [0, 0],
            groups: 1,
            bias: true,
        }
    }

    /// Set the stride.
    pub fn stride(mut self, s: i64) -> Self {
        self.stride = [s, s];
        self
    }

    /// Set the padding.
    pub fn padding(mut self, p: i64) -> Self {
        self.padding = [p, p];
        self
    }

    /// Set the groups.
    pub fn groups(mut self, g: i64) -> Self {
        self.groups = g;
        self
    }

    /// Drop the bias.
    pub fn no_bias(mut self) -> Self {
        self.bias = false;
        self
    }
}

/// How per-sample squared norms of a convolution are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormStrategy {
    /// Choose by cost per layer (the default).
    Auto,
    /// Materialise the per-sample weight gradients `[B, M, out, in/g, kh, kw]`.
    Materialise,
    /// Ghost norm: `‖g‖² = Σ_{l,l'} (u_l·u_l')(δ_l·δ_l')` over output positions
    /// (Li et al. 2022, Bu et al. 2023), never materialising `g`.
    Ghost,
}

/// A 2-D convolution for every replica. `weight` is `[M, out, in/g, kh, kw]`,
/// `bias` `[M, out]`; the input is `[B, M, in, H, W]`, the output
/// `[B, M, out, H', W']`. Replicas run as one convolution with `M·groups` groups
/// over the `[B, M·in, H, W]` view of the input.
///
/// Per-sample gradients come from the unfolded input `U = im2col(x)`
/// (`[B, M·g, (in/g)·kh·kw, L]`, `L = H'·W'`) and the backprop
/// `δ` (`[B, M·g, out/g, L]`): `∇W_i = δ_i U_iᵀ`, `∇b_i = Σ_l δ_i`.
#[derive(Debug)]
pub struct Conv2d {
    /// `[M, out, in/groups, kh, kw]`.
    pub weight: Tensor,
    /// `[M, out]`.
    pub bias: Option<Tensor>,
    /// The shape.
    pub config: Conv2dConfig,
    /// How squared norms are computed.
    pub norm_strategy: NormStrategy,
}

impl Conv2d {
    /// PyTorch default initialisation: weight and bias `U(±1/√fan_in)`,
    /// `fan_in = in/groups · kh · kw`.
    pub fn new(init: &mut Init, config: Conv2dConfig) -> Result<Self> {
        let c = &config;
        let fan_in = c.in_channels / c.groups * c.kernel_size[0] * c.kernel_size[1];
        let bound = 1.0 / (fan_in as f64).sqrt();
        let weight = init.uniform(
            &[
                c.out_channels,
                c.in_channels / c.groups,
                c.kernel_size[0],
                c.kernel_size[1],
            ],
            bound,
        )?;
        let bias = match c.bias {
            true => Some(init.uniform(&[c.out_channels], bound)?),
            false => None,
        };
        Ok(Self {
            weight,
            bias,
            config,
            norm_strategy: NormStrategy::Auto,
        })
    }

    /// Output spatial size for an input of `h × w`; `None` if the kernel does not fit.
    pub fn output_size(&self, h: i64, w: i64) -> Option<(i64, i64)> {
        let c = &self.config;
        let oh = (h + 2 * c.padding[0] - c.kernel_size[0]) / c.stride[0] + 1;
        let ow = (w + 2 * c.padding[1] - c.kernel_size[1]) / c.stride[1] + 1;
        (h + 2 * c.padding[0] >= c.kernel_size[0] && w + 2 * c.padding[1] >= c.kernel_size[1])
            .then_some((oh, ow))
    }

    fn m(&self) -> i64 {
        super::replicas_of(&self.weight)
    }

    /// `U` as `[B, M·g, (in/g)·kh·kw, L]`.
    fn unfold(&self, input: &Tensor) -> Result<Tensor, TchError> {
        let c = &self.config;
        let b = input.size()[0];
        let u = input.f_im2col(c.kernel_size, [1, 1], c.padding, c.stride)?;
        let k = c.in_channels / c.groups * c.kernel_size[0] * c.kernel_size[1];
        let l = u.size()[2];
        u.f_reshape([b, self.m() * c.groups, k, l])
    }

    /// `δ` as `[B, M·g, out/g, L]`.
    fn backprop_groups(&self, backprop: &Tensor) -> Result<Tensor, TchError> {
        let c = &self.config;
        let s = backprop.size();
        backprop.f_reshape([
            s[0],
            self.m() * c.groups,
            c.out_channels / c.groups,
            s[2] * s[3],
        ])
    }

    /// Whether the ghost norm is cheaper than materialising, per sample and group:
    /// ghost costs `L²·(K + O/g)` multiply-adds and `2L²` memory, materialising
    /// `L·K·O/g` and `K·O/g`.
    fn use_ghost(&self, l: i64) -> bool {
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
            return Err(crate::TrainError::Shape {
                what: "Conv2d input".into(),
                got: s,
                expected: "[B, M, C, H, W]".into(),
            });
        }
        let (b, h, w) = (s[0], s[3], s[4]);
        let (xin, y) = torch("the forward pass of a Conv2d layer", || {
            let xin = x.f_reshape([b, m * c.in_channels, h, w])?;
            let wt = self.weight.f_reshape([
                m * c.out_channels,
                c.in_channels / c.groups,
                c.kernel_size[0],
                c.kernel_size[1],
            ])?;
            let bias = match &self.bias {
                Some(t) => Some(t.f_reshape([m * c.out_channels])?),
                None => None,
            };
            let y = xin.f_conv2d(
                &wt,
                bias.as_ref(),
                c.stride,
                c.padding,
                [1, 1],
                m * c.groups,
            )?;
            Ok((xin, y))
        })?;
        tape.record(super::LayerId::of(self), &xin, &y)?;
        let ys = y.size();
        torch("the forward pass of a Conv2d layer", || {
            y.f_reshape([b, m, c.out_channels, ys[2], ys[3]])
        })
    }

    fn per_sample_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Vec<Tensor>> {
        torch("the per-sample gradients of a Conv2d layer", || {
            let c = &self.config;
            let b = backprop.size()[0];
            let u = self.unfold(&rec.input)?;
            let d = self.backprop_groups(backprop)?;
            let g = Tensor::f_einsum("bgol,bgkl->bgok", &[&d, &u], None::<i64>)?;
            let mut out = vec![g.f_reshape([
                b,
                self.m(),
                c.out_channels,
                c.in_channels / c.groups,
                c.kernel_size[0],
                c.kernel_size[1],
            ])?];
            if self.bias.is_some() {
                out.push(
                    backprop
                        .f_sum_dim_intlist(&[2i64, 3][..], false, None)?
                        .f_reshape([b, self.m(), c.out_channels])?,
                );
            }
            Ok(out)
        })
    }

    fn per_sample_sq_norms(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor> {
        torch("the per-sample squared norms of a Conv2d layer", || {
            let b = backprop.size()[0];
            let m = self.m();
            let u = self.unfold(&rec.input)?;
            let d = self.backprop_groups(backprop)?;
            let l = u.size()[3];
            let w2 = if self.use_ghost(l) {
                let gu = Tensor::f_einsum("bgkl,bgkn->bgln", &[&u, &u], None::<i64>)?;
                let gd = Tensor::f_einsum("bgol,bgon->bgln", &[&d, &d], None::<i64>)?;
                gu.f_mul(&gd)?
                    .f_reshape([b, m, self.config.groups * l * l])?
                    .f_sum_dim_intlist(-1, false, None)?
            } else {
                Tensor::f_einsum("bgol,bgkl->bgok", &[&d, &u], None::<i64>)?
                    .f_square()?
                    .f_reshape([b, m, self.weight.numel() as i64 / m])?
                    .f_sum_dim_intlist(-1, false, None)?
            };
            if self.bias.is_some() {
                let gb = backprop.f_sum_dim_intlist(&[2i64, 3][..], false, None)?;
                w2.f_add(
                    &gb.f_square()?
                        .f_reshape([b, m, self.config.out_channels])?
                        .f_sum_dim_intlist(-1, false, None)?,
                )
            } else {
                Ok(w2)
            }
        })
    }

    /// `Σ_b c_b ∇W_b` is the weight gradient of the recorded convolution for the
    /// output gradient `c ⊙ δ`, so libtorch's own convolution weight backward
    /// (mkldnn, cuDNN) computes it from the recorded graph: one backward through
    /// this layer's convolution node alone, asking for the weight only, with no
    /// unfolded input and no per-sample tensor.
    fn clipped_sum(&self, rec: &Recorded, backprop: &Tensor, coef: &Tensor) -> Result<Vec<Tensor>> {
        torch("the clipped sum of a Conv2d layer", || {
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
