//! [`PerSampleMethod::Direct`]: the per-sample weight gradients by dpaudit's
//! own CPU kernel (`csrc/conv_grad_kernel.cpp`).

use std::sync::atomic::{AtomicBool, Ordering};

use tch::{Device, Kind, TchError, Tensor};

use super::layer::Conv2d;
#[cfg(doc)]
use super::layer::PerSampleMethod;
use crate::layers::tape::Recorded;

/// Declares [`KernelRange`], the type of the direct kernel's entry point,
/// and the builds of the kernel, each one such function: the parameter list
/// is written once, for both.
macro_rules! declare_kernel_builds {
    ($params:tt -> $ret:ty; $($(#[$attr:meta])* $name:ident),*) => {
        /// The direct kernel's entry point for samples `[begin, end)`
        /// (`csrc/conv_grad_kernel.cpp`): x `[B, G, C, H, W]` and d
        /// `[B, G, O, OH, OW]` by element strides, out `[B·G, O, C, KH, KW]`, and
        /// the shape `[G, C, H, W, O, OH, OW, KH, KW, PH, PW]`.
        type KernelRange = unsafe extern "C" fn $params -> $ret;

        #[allow(unsafe_code)]
        extern "C" {
            $($(#[$attr])* fn $name $params -> $ret;)*
        }
    };
}

declare_kernel_builds!(
    (
        begin: i64,
        end: i64,
        x: *const f32,
        x_strides: *const i64,
        d: *const f32,
        d_strides: *const i64,
        out: *mut f32,
        shape: *const i64,
    ) -> i32;
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

impl Conv2d {
    /// Per-sample weight gradients by the direct CPU kernel
    /// ([`PerSampleMethod::Direct`]): the recorded input as
    /// `[B, M·g, in/g, H, W]`, copied to contiguous if it is not, and the
    /// backprop as `[B, M·g, out/g, H', W']`, read in place in either layout;
    /// the samples are split into as many ranges as libtorch's intra-op
    /// thread count, run on rayon's pool.
    #[allow(unsafe_code)]
    pub(super) fn direct_weight_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
    ) -> Result<Tensor, TchError> {
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
}
