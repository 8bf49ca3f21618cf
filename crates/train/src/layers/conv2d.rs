//! `nn.Conv2d` (stride, padding, groups) with per-sample gradients, stacked over
//! replicas as one grouped convolution.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use tch::{Device, Kind, TchError, Tensor};

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

/// How per-sample weight gradients `[B, M, out, in/g, kh, kw]` are formed
/// when a convolution materialises them. Both give the same numbers (to float32
/// rounding; the layer oracle tests check each); they differ in speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerSampleMethod {
    /// The default, by the rule of [`Conv2d::per_sample_method_for`]:
    /// [`PerSampleMethod::ExpandedWeights`] for layers with at least
    /// [`EXPANDED_MIN_CHANNELS`] input and output channels per group whose
    /// copies fit in [`EXPANDED_MAX_BYTES`], else
    /// [`PerSampleMethod::GroupedConvolution`] up to [`GROUPED_MAX_OUTPUTS`]
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

/// The direct kernel's entry point for samples `[begin, end)`
/// (`csrc/conv_grad_kernel.cpp`): x `[B, G, C, H, W]` and d
/// `[B, G, O, OH, OW]` by element strides, out `[B·G, O, C, KH, KW]`, and
/// the shape `[G, C, H, W, O, OH, OW, KH, KW, PH, PW]`.
type KernelRange = unsafe extern "C" fn(
    begin: i64,
    end: i64,
    x: *const f32,
    x_strides: *const i64,
    d: *const f32,
    d_strides: *const i64,
    out: *mut f32,
    shape: *const i64,
) -> i32;

/// Declares the builds of the direct kernel, each a [`KernelRange`].
macro_rules! declare_kernel_builds {
    ($($(#[$attr:meta])* $name:ident),*) => {
        #[allow(unsafe_code)]
        extern "C" {
            $($(#[$attr])*
            fn $name(
                begin: i64,
                end: i64,
                x: *const f32,
                x_strides: *const i64,
                d: *const f32,
                d_strides: *const i64,
                out: *mut f32,
                shape: *const i64,
            ) -> i32;)*
        }
    };
}

declare_kernel_builds!(
    dpaudit_conv_grad_range_base,
    #[cfg(target_arch = "x86_64")]
    dpaudit_conv_grad_range_avx2
);

/// The kernel build for this CPU: AVX2 and FMA where it has them.
fn kernel_range() -> KernelRange {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        return dpaudit_conv_grad_range_avx2;
    }
    dpaudit_conv_grad_range_base
}

/// Samples per thread below which the direct kernel runs on one thread.
const DIRECT_MIN_SAMPLES_PER_THREAD: i64 = 16;

/// Up to this many output channels per group, [`PerSampleMethod::Auto`] uses
/// the grouped convolution. Measured on 2 CPU cores (`benches/conv_formulations.py`,
/// table in `benches/RESULTS.md`): it is 2.2× faster than the unfolded product
/// for LeNet-5's conv1 (6 outputs) and 1.5× for conv2 (16) at B = 4096, but
/// 1.2–1.4× slower at 64 outputs (WRN-16-4, B = 64) and 1.7× at 128, where
/// the unfolded product is a large, efficient matrix product.
pub const GROUPED_MAX_OUTPUTS: i64 = 32;

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

/// How a convolution's input, weight and output are laid out in memory. The
/// numbers are the same either way (the layer oracle tests check both); the
/// speed differs by backend and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvLayout {
    /// The process-wide choice if one is set ([`set_conv_layout`]), else the
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

/// [`ConvLayout::Auto`] stores a grouped convolution channels last on the
/// CPU only below this many input channels per group. Measured on 2 cores
/// (benches/RESULTS.md): with 64 replicas, LeNet-5's convolutions (1 and 6
/// inputs) run the non-private step 2.4× faster channels last, while
/// WRN-16-4 with 4 replicas (16–256 inputs) runs it 0.85× as fast.
pub const CHANNELS_LAST_BELOW_INPUTS: i64 = 16;

/// 0: no process-wide layout; 1: contiguous; 2: channels last.
static PROCESS_LAYOUT: AtomicU8 = AtomicU8::new(0);

/// Set (or, with `None`, clear) the layout that every convolution whose
/// `layout` is [`ConvLayout::Auto`] uses, for every model of the process:
/// `dpaudit bench --conv-layout` uses it to time both layouts on one device.
pub fn set_conv_layout(layout: Option<ConvLayout>) {
    let code = match layout {
        None | Some(ConvLayout::Auto) => 0,
        Some(ConvLayout::Contiguous) => 1,
        Some(ConvLayout::ChannelsLast) => 2,
    };
    PROCESS_LAYOUT.store(code, Ordering::Relaxed);
}

/// The process-wide layout, if one is set.
pub fn conv_layout() -> Option<ConvLayout> {
    match PROCESS_LAYOUT.load(Ordering::Relaxed) {
        1 => Some(ConvLayout::Contiguous),
        2 => Some(ConvLayout::ChannelsLast),
        _ => None,
    }
}

/// `t` (`[N, C, H, W]`) stored channels last: the same values and shape, with
/// strides `[H·W·C, 1, W·C, C]`. No copy if it is already stored so.
fn channels_last(t: &Tensor) -> Result<Tensor, TchError> {
    t.f_permute([0, 2, 3, 1])?
        .f_contiguous()?
        .f_permute([0, 3, 1, 2])
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
                    && super::float_bytes(&[b, self.m(), params]) <= EXPANDED_MAX_BYTES =>
            {
                PerSampleMethod::ExpandedWeights
            }
            PerSampleMethod::Auto if oi <= GROUPED_MAX_OUTPUTS => grouped,
            PerSampleMethod::Auto => PerSampleMethod::Unfold,
        }
    }

    /// The layout this layer's ordinary (not weight-expanded) convolution
    /// uses on `device`: never [`ConvLayout::Auto`]. Auto resolves to the
    /// process-wide layout if one is set, else to
    /// [`ConvLayout::ChannelsLast`] on the CPU when the convolution is grouped
    /// (more than one replica, or channel groups) with fewer than
    /// [`CHANNELS_LAST_BELOW_INPUTS`] input channels per group, where it was
    /// measured faster, and to [`ConvLayout::Contiguous`] elsewhere: on a
    /// single ungrouped model the CPU timings of the two were within
    /// run-to-run noise, WRN-16-4's wide layers with replicas were slower
    /// channels last, and on CUDA neither has been measured yet
    /// (`benches/gpu.sh` times both).
    pub fn layout_for(&self, device: Device) -> ConvLayout {
        match (self.layout, conv_layout()) {
            (ConvLayout::Auto, Some(process)) => process,
            (ConvLayout::Auto, None)
                if device == Device::Cpu
                    && self.m() * self.config.groups > 1
                    && self.config.in_channels / self.config.groups
                        < CHANNELS_LAST_BELOW_INPUTS =>
            {
                ConvLayout::ChannelsLast
            }
            (ConvLayout::Auto, None) => ConvLayout::Contiguous,
            (chosen, _) => chosen,
        }
    }

    /// Per-sample weight gradients, `[B, M, out, in/g, kh, kw]` (the grouped
    /// cross-correlation gives a permuted view).
    fn weight_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor, TchError> {
        let b = backprop.size()[0];
        if let Some(copies) = &rec.expanded_weight {
            // ∂/∂copies of Σ y ⊙ δ (δ detached) is the per-sample gradient.
            let target = rec.output.f_mul(backprop)?.f_sum(Kind::Float)?;
            let g = Tensor::f_run_backward(&[&target], &[copies], true, false)?;
            return g
                .into_iter()
                .next()
                .ok_or_else(|| TchError::Torch("no gradient for the expanded weights".into()))?
                .f_reshape(self.per_sample_weight_shape(b));
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
        let u = self.unfold(&rec.input)?;
        let d = self.backprop_groups(backprop)?;
        Tensor::f_einsum("bgol,bgkl->bgok", &[&d, &u], None::<i64>)?
            .f_reshape(self.per_sample_weight_shape(b))
    }

    /// `[B, M, out, in/g, kh, kw]`.
    fn per_sample_weight_shape(&self, b: i64) -> [i64; 6] {
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

    /// Per-sample weight gradients by the direct CPU kernel
    /// ([`PerSampleMethod::Direct`]): the recorded input as
    /// `[B, M·g, in/g, H, W]`, copied to contiguous if it is not, and the
    /// backprop as `[B, M·g, out/g, H', W']`, read in place in either layout;
    /// the samples are split into as many ranges as libtorch's intra-op
    /// thread count, run on rayon's pool.
    #[allow(unsafe_code)]
    fn direct_weight_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor, TchError> {
        let c = &self.config;
        let groups = self.m() * c.groups;
        let (ci, oi) = (c.in_channels / c.groups, c.out_channels / c.groups);
        let (xs, ds) = (rec.input.size(), backprop.size());
        let (b, h, w, oh, ow) = (ds[0], xs[2], xs[3], ds[2], ds[3]);
        let [kh, kw] = c.kernel_size;
        let [ph, pw] = c.padding;
        if xs[0] != b || (oh, ow) != (h + 2 * ph - kh + 1, w + 2 * pw - kw + 1) {
            return Err(TchError::Shape(format!(
                "direct per-sample gradients: input {xs:?} and backprop {ds:?} do not match a \
                 stride-1 {kh}×{kw} convolution with padding {ph}×{pw}"
            )));
        }
        let x = rec
            .input
            .f_to_kind(Kind::Float)?
            .f_to_device(Device::Cpu)?
            .f_reshape([b, groups, ci, h, w])?
            // A channels-last input is copied: one pass over it cost less
            // than the kernel's strided reads of it (LeNet-5's conv1 with 64
            // replicas: norms 49 → 39–43 ms; the backprop is read in place,
            // where a copy cost more than it saved).
            .f_contiguous()?;
        let d = backprop
            .f_to_kind(Kind::Float)?
            .f_to_device(Device::Cpu)?
            .f_reshape([b, groups, oi, oh, ow])?;
        let out = Tensor::f_empty([b, groups, oi, ci, kh, kw], (Kind::Float, Device::Cpu))?;
        let (x_strides, d_strides) = (x.stride(), d.stride());
        let samples = b * groups;
        let threads = (tch::get_num_threads() as i64)
            .min(samples / DIRECT_MIN_SAMPLES_PER_THREAD)
            .max(1);
        let per = (samples + threads - 1) / threads;
        // Addresses as integers, so that the scoped threads may share them.
        let (xp, dp, op) = (
            x.data_ptr() as usize,
            d.data_ptr() as usize,
            out.data_ptr() as usize,
        );
        let shape = [groups, ci, h, w, oi, oh, ow, kh, kw, ph, pw];
        let (xsp, dsp, shp) = (
            x_strides.as_ptr() as usize,
            d_strides.as_ptr() as usize,
            shape.as_ptr() as usize,
        );
        let kernel = kernel_range();
        let run = |begin: i64, end: i64| -> i32 {
            // SAFETY: `x`, `d` and `out` are live float32 CPU tensors of the
            // shapes passed (x [b, groups, ci, h, w] and d [b, groups, oi,
            // oh, ow] with the 5 element strides passed, read only; out
            // contiguous [b·groups, oi, ci, kh, kw]), `data_ptr` points at
            // their first element, and they, the stride vectors and the
            // 11-element shape outlive the scope below. The kernel reads x[n]
            // and d[n] within those shapes and strides, writes out[n] for n
            // in [begin, end) only, and keeps no pointer; the ranges of the
            // threads are disjoint.
            unsafe {
                kernel(
                    begin,
                    end,
                    xp as *const f32,
                    xsp as *const i64,
                    dp as *const f32,
                    dsp as *const i64,
                    op as *mut f32,
                    shp as *const i64,
                )
            }
        };
        // rayon's pool keeps its threads for the life of the process: a
        // thread started and ended per call costs its start-up every step
        // and, measured in tests/host_memory.rs, made the allocator hand
        // fresh pages to the next step's tensors.
        let failed = AtomicBool::new(false);
        let started = std::time::Instant::now();
        rayon::in_place_scope(|scope| {
            for t in 1..threads {
                let (run, failed) = (&run, &failed);
                scope.spawn(move |_| {
                    if run(t * per, ((t + 1) * per).min(samples)) != 0 {
                        failed.store(true, Ordering::Relaxed);
                    }
                });
            }
            if run(0, per.min(samples)) != 0 {
                failed.store(true, Ordering::Relaxed);
            }
        });
        crate::op_count::own_kernel(started);
        let failed = failed.into_inner();
        if failed {
            return Err(TchError::Torch(
                "direct per-sample gradients: a thread could not allocate its buffers".into(),
            ));
        }
        out.f_reshape(self.per_sample_weight_shape(b))
    }

    /// Per-sample weight gradients as one convolution. For sample `b` and
    /// group `G` (replica × channel group), `∇W[o, i, p, q] = Σ_{y,x}
    /// δ[o, y, x] · x_pad[i, s·y + p, s·x + q]`: the padded input correlated
    /// with the backprop as kernel, dilated by the stride `s`. Taking the
    /// `in/g` input channels as the batch and the `B·M·g` (sample, group)
    /// pairs as groups, each with `out/g` kernels, this is a single
    /// `conv2d(x, δ, padding, dilation = stride, groups = B·M·g)`; its output
    /// is at least `kh × kw` and is cut to it (a longer output comes from
    /// input rows the layer's own stride never reaches).
    fn grouped_weight_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor, TchError> {
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

    /// Per-sample gradients of the weight and, if any, the bias.
    fn all_grads(&self, rec: &Recorded, backprop: &Tensor) -> Result<Vec<Tensor>, TchError> {
        let mut out = vec![self.weight_grads(rec, backprop)?];
        if self.bias.is_some() {
            out.push(self.bias_grads(backprop)?);
        }
        Ok(out)
    }

    /// Per-sample bias gradients `[B, M, out]`.
    fn bias_grads(&self, backprop: &Tensor) -> Result<Tensor, TchError> {
        let b = backprop.size()[0];
        backprop
            .f_sum_dim_intlist(&[2i64, 3][..], false, None)?
            .f_reshape([b, self.m(), self.config.out_channels])
    }

    /// `[B, M]` sum of squares of a `[B, M, ...]` tensor, as batched dot
    /// products (no squared copy of a per-sample gradient is written).
    fn sq_sum(t: &Tensor) -> Result<Tensor, TchError> {
        let s = t.size();
        let flat = t.f_reshape([s[0], s[1], s[2..].iter().product()])?;
        Tensor::f_einsum("bmp,bmp->bm", &[&flat, &flat], None::<i64>)
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
        let Some((oh, ow)) = self.output_size(h, w) else {
            return Err(crate::TrainError::Shape {
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
        tape.record_expanded(super::LayerId::of(self), &xin, &y, copies)?;
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
                let u = self.unfold(&rec.input)?;
                let d = self.backprop_groups(backprop)?;
                let gu = Tensor::f_einsum("bgkl,bgkn->bgln", &[&u, &u], None::<i64>)?;
                let gd = Tensor::f_einsum("bgol,bgon->bgln", &[&d, &d], None::<i64>)?;
                let mut sq = gu
                    .f_mul(&gd)?
                    .f_reshape([b, m, self.config.groups * l * l])?
                    .f_sum_dim_intlist(-1, false, None)?;
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
            let keep = b > 0 && super::float_bytes(&[b, m, params]) <= keep_bytes;
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
                return super::weighted_sums(&self.all_grads(rec, backprop)?, coef);
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
