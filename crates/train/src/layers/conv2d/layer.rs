//! The layer, its config, and the enums that choose how it computes.

use tch::{TchError, Tensor};

use crate::error::Result;
use crate::init::Init;
use crate::layers::per_sample::replicas_of;
use crate::layers::tape::Recorded;

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

/// How per-sample weight gradients `[B, M, out, in/g, kh, kw]` are formed
/// when a convolution materialises them. Both give the same numbers (to float32
/// rounding; the layer oracle tests check each); they differ in speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerSampleMethod {
    /// The default, by the rule of [`Conv2d::per_sample_method_for`]:
    /// [`PerSampleMethod::ExpandedWeights`] for layers with at least
    /// [`EXPANDED_MIN_CHANNELS`](super::EXPANDED_MIN_CHANNELS) input and output channels per group whose
    /// copies fit in [`EXPANDED_MAX_BYTES`](super::EXPANDED_MAX_BYTES), else
    /// [`PerSampleMethod::GroupedConvolution`] up to [`GROUPED_MAX_OUTPUTS`](super::GROUPED_MAX_OUTPUTS)
    /// output channels per group (computed by [`PerSampleMethod::Direct`]
    /// where that applies), else [`PerSampleMethod::Unfold`].
    Auto,
    /// The DP forward pass runs the layer as one convolution with `B·M·g`
    /// groups over `B` copies of the weight, so each sample meets its own
    /// copy; the gradient of the copies is the per-sample gradient, one
    /// weight backward of that node (PyTorch's "expanded weights" for small
    /// batches; Rochette, Manoel & Tramel 2019). Evaluation and non-private
    /// forward passes use the ordinary convolution.
    ExpandedWeights,
    /// One convolution with `B·M·g` groups: sample `b`'s input, channels as
    /// the batch, correlated with its own backprop as the kernel, dilated by
    /// the stride (Rochette, Manoel & Tramel 2019). No unfolded input.
    GroupedConvolution,
    /// `∇W_i = δ_i U_iᵀ` on the unfolded input `U = im2col(x)`, one batched
    /// matrix product.
    Unfold,
    /// The same cross-correlation as [`PerSampleMethod::GroupedConvolution`]
    /// by dpaudit's own CPU kernel (`csrc/conv_grad_kernel.cpp`), one sample
    /// at a time in cache-sized buffers: with the backprop stored at the padded
    /// input's width, each kernel offset meets a contiguous run of the
    /// flattened input, so the gradient is a small dense product with no
    /// `im2col`. For stride 1 on the CPU, in float32; elsewhere a layer asked
    /// for it uses the grouped convolution.
    Direct,
}

/// How a convolution's input, weight and output are laid out in memory. The
/// numbers are the same either way (the layer oracle tests check both); the
/// speed differs by backend and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvLayout {
    /// The process-wide choice if one is set ([`set_conv_layout`](super::set_conv_layout)), else the
    /// rule of [`Conv2d::layout_for`]: [`ConvLayout::ChannelsLast`] for a
    /// replica-stacked (grouped) convolution with few input channels per
    /// group on the CPU, and [`ConvLayout::Contiguous`] otherwise.
    Auto,
    /// `[B, C, H, W]` row-major (PyTorch's default, "NCHW").
    Contiguous,
    /// The same logical shape stored as `[B, H, W, C]` ("NHWC", PyTorch's
    /// `torch.channels_last`). On the CPU, oneDNN then runs a grouped
    /// convolution with its direct kernels instead of one im2col and small
    /// matrix product per group: measured on 2 cores for LeNet-5 with 64
    /// replicas, the non-private step ran 2.4× faster (benches/RESULTS.md).
    ChannelsLast,
}

impl std::str::FromStr for ConvLayout {
    type Err = String;

    /// `auto`, `contiguous` or `channels-last` (the names `dpaudit bench
    /// --conv-layout` takes).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(ConvLayout::Auto),
            "contiguous" => Ok(ConvLayout::Contiguous),
            "channels-last" => Ok(ConvLayout::ChannelsLast),
            other => Err(format!(
                "convolution layout `{other}`: expected auto, contiguous or channels-last"
            )),
        }
    }
}

/// A 2-D convolution for every replica. `weight` is `[M, out, in/g, kh, kw]`,
/// `bias` `[M, out]`; the input is `[B, M, in, H, W]`, the output
/// `[B, M, out, H', W']`. Replicas run as one convolution with `M·groups` groups
/// over the `[B, M·in, H, W]` view of the input (with `B·M·groups` groups over
/// `B` weight copies in a DP forward pass that expands the weights; see
/// `docs/per-sample-gradients.md`).
///
/// Per-sample weight gradients come from the backprop `δ`
/// (`[B, M·g, out/g, L]`, `L = H'·W'`) either by one grouped convolution or
/// from the unfolded input `U = im2col(x)` (`[B, M·g, (in/g)·kh·kw, L]`) as
/// `∇W_i = δ_i U_iᵀ` ([`PerSampleMethod`]); `∇b_i = Σ_l δ_i`.
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
    /// How per-sample weight gradients are materialised.
    pub per_sample_method: PerSampleMethod,
    /// The memory layout of the replica-stacked convolution.
    pub layout: ConvLayout,
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
            per_sample_method: PerSampleMethod::Auto,
            layout: ConvLayout::Auto,
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

    pub(super) fn m(&self) -> i64 {
        replicas_of(&self.weight)
    }

    /// `[B, M, out, in/g, kh, kw]`.
    pub(super) fn per_sample_weight_shape(&self, b: i64) -> [i64; 6] {
        let c = &self.config;
        [
            b,
            self.m(),
            c.out_channels,
            c.in_channels / c.groups,
            c.kernel_size[0],
            c.kernel_size[1],
        ]
    }

    /// Per-sample gradients of the weight and, if any, the bias.
    pub(super) fn all_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
    ) -> Result<Vec<Tensor>, TchError> {
        let mut out = vec![self.weight_grads(rec, backprop)?];
        if self.bias.is_some() {
            out.push(self.bias_grads(backprop)?);
        }
        Ok(out)
    }

    /// Per-sample bias gradients `[B, M, out]`.
    pub(super) fn bias_grads(&self, backprop: &Tensor) -> Result<Tensor, TchError> {
        let b = backprop.size()[0];
        backprop
            .f_sum_dim_intlist(&[2i64, 3][..], false, None)?
            .f_reshape([b, self.m(), self.config.out_channels])
    }

    /// `[B, M]` sum of squares of a `[B, M, ...]` tensor, as batched dot
    /// products (no squared copy of a per-sample gradient is written).
    pub(super) fn sq_sum(t: &Tensor) -> Result<Tensor, TchError> {
        let s = t.size();
        let flat = t.f_reshape([s[0], s[1], s[2..].iter().product()])?;
        Tensor::f_einsum("bmp,bmp->bm", &[&flat, &flat], None::<i64>)
    }
}
