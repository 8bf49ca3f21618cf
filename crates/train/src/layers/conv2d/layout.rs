//! The memory layout of a convolution: [`ConvLayout`], per layer or for the
//! whole process.

use std::sync::atomic::{AtomicU8, Ordering};

use tch::{Device, TchError, Tensor};

use super::layer::{Conv2d, ConvLayout};

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
pub(super) fn channels_last(t: &Tensor) -> Result<Tensor, TchError> {
    t.f_permute([0, 2, 3, 1])?
        .f_contiguous()?
        .f_permute([0, 3, 1, 2])
}

impl Conv2d {
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
    ///
    /// One exception overrides every choice: a 1×1 kernel with a stride
    /// above 1 is stored contiguous on the CPU ([`Conv2d::cpu_channels_last_unsafe`]).
    pub fn layout_for(&self, device: Device) -> ConvLayout {
        if device == Device::Cpu && self.cpu_channels_last_unsafe() {
            return ConvLayout::Contiguous;
        }
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
}

impl Conv2d {
    /// Whether this convolution must not run channels last on the CPU: a
    /// 1×1 kernel with a stride above 1. libtorch 2.11's oneDNN weight
    /// backward for it, on channels-last input, corrupts the heap on an AVX2
    /// CPU without AVX-512 (AMD EPYC, 2026-11-29): with 3 or 4 input channels
    /// and stride 2 the process aborted (`malloc_consolidate(): unaligned
    /// fastbin chunk`) within 300 random batches in PyTorch itself, and
    /// dpaudit's clipped sums missed the one-sample-at-a-time oracle by up to
    /// 1 % (`crates/train/tests/layer_oracle.rs`); 1, 8, 16 and 64 input
    /// channels, stride 3, a padded 1×1 kernel, 3×3 kernels and the
    /// contiguous layout passed, and with oneDNN disabled every case did. The
    /// exact conditions are oneDNN's, so every strided 1×1 kernel is kept off
    /// that path: in dpaudit's models, the strided shortcuts of ResNet-18
    /// and WRN-16-4 (64 input channels or more, which `Auto` already keeps
    /// contiguous, so only a forced channels-last layout changes).
    pub fn cpu_channels_last_unsafe(&self) -> bool {
        self.config.kernel_size == [1, 1] && self.config.stride != [1, 1]
    }
}
