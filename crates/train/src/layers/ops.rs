//! Parameter-free operations on `[B, M, C, H, W]` (or `[B, M, F]`) activations.
//!
//! They need no per-sample support: autograd carries the backprop through them.
//! Spatial ops run on the `[B, M·C, H, W]` view so replicas stay independent.
//! A shape libtorch refuses (e.g. a pooling window larger than the input)
//! comes back as [`crate::TrainError::Torch`] naming the op.

use tch::{Device, TchError, Tensor};

use crate::error::{torch, Result};
use crate::scalar::{full, number};

/// `max(x, 0)`.
pub fn relu(x: &Tensor) -> Result<Tensor> {
    torch("relu", || x.f_relu())
}

/// `tanh(x)`.
pub fn tanh(x: &Tensor) -> Result<Tensor> {
    torch("tanh", || x.f_tanh())
}

fn spatial(
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor, TchError>,
) -> Result<Tensor, TchError> {
    let s = x.size();
    if s.len() != 5 {
        return Err(TchError::Shape(format!(
            "expected a [B, M, C, H, W] activation, got {s:?}"
        )));
    }
    let y = f(&x.f_reshape([s[0], s[1] * s[2], s[3], s[4]])?)?;
    let ys = y.size();
    y.f_reshape([s[0], s[1], s[2], ys[2], ys[3]])
}

/// `nn.MaxPool2d(k, stride)`, no padding.
pub fn max_pool2d(x: &Tensor, k: i64, stride: i64) -> Result<Tensor> {
    torch("max_pool2d", || {
        spatial(x, |v| {
            v.f_max_pool2d([k, k], [stride, stride], [0, 0], [1, 1], false)
        })
    })
}

/// `nn.AvgPool2d(k, stride)`, no padding.
///
/// On the CPU, windows that tile the input (`stride = k`, `k` dividing `H`
/// and `W`: LeNet-5's pooling) are averaged by operations that libtorch runs
/// faster there than its average-pooling kernel (`tiled_avg_pool_cpu`).
pub fn avg_pool2d(x: &Tensor, k: i64, stride: i64) -> Result<Tensor> {
    torch("avg_pool2d", || {
        spatial(x, |v| {
            let s = v.size();
            let tiles = k >= 1 && stride == k && s[2] % k == 0 && s[3] % k == 0;
            if tiles && v.device() == Device::Cpu {
                return tiled_avg_pool_cpu(v, k);
            }
            v.f_avg_pool2d([k, k], [stride, stride], [0, 0], false, true, None::<i64>)
        })
    })
}

/// The mean of each `k × k` tile of `v` (`[N, C, H, W]`, `k` dividing `H`
/// and `W`), on the CPU, where libtorch's average-pooling kernels (forward
/// and backward) are slow: measured on 2 cores for LeNet-5's first pooling
/// at B = 256 (`[256, 6, 28, 28]`), 2.3–2.4 ms forward and backward, against
/// 0.94 ms for the product below and 0.89 ms for the depthwise convolution
/// on a channels-last input (benches/RESULTS.md).
/// - Stored row-major, `k` input rows of one channel are one row of `k·W`
///   values, and the tile means of the output row are that row times a
///   constant `[k·W, W/k]` matrix with `1/k²` where a value belongs to a
///   tile: one matrix product, whose backward is the product with the
///   transpose.
/// - Stored otherwise (channels last, as replica-stacked convolutions are on
///   the CPU), a depthwise convolution with a constant `k × k` kernel of
///   `1/k²` and stride `k`, which oneDNN runs directly on that layout.
///
/// Both compute `Σ x·(1/k²)` over a tile, so values agree with libtorch's
/// pooling (`(Σ x)/k²`) to float rounding, and gradients are `δ/k²` exactly.
fn tiled_avg_pool_cpu(v: &Tensor, k: i64) -> Result<Tensor, TchError> {
    let s = v.size();
    let (n, c, h, w) = (s[0], s[1], s[2], s[3]);
    let options = (v.f_kind()?, v.device());
    let weight = number(1.0 / (k * k) as f64, options.0)?;
    if v.is_contiguous() {
        // P[a·W + j, t] = 1/k² when column j of input row a lies in tile t.
        let pool = Tensor::f_eye(w / k, options)?
            .f_repeat_interleave_self_int(k, 0, None::<i64>)?
            .f_repeat([k, 1])?
            .f_mul(&weight)?;
        return v
            .f_reshape([n * c * (h / k), k * w])?
            .f_matmul(&pool)?
            .f_reshape([n, c, h / k, w / k]);
    }
    let kernel = full(&[c, 1, k, k], &weight, options)?;
    v.f_conv2d(&kernel, None::<Tensor>, [k, k], [0, 0], [1, 1], c)
}

/// `nn.AdaptiveAvgPool2d((1, 1))` followed by flatten: `[B, M, C, H, W] → [B, M, C]`.
pub fn global_avg_pool(x: &Tensor) -> Result<Tensor> {
    torch("global average pooling", || {
        x.f_mean_dim(&[3i64, 4][..], false, None)
    })
}

/// `nn.AdaptiveAvgPool2d((oh, ow))`.
pub fn adaptive_avg_pool2d(x: &Tensor, oh: i64, ow: i64) -> Result<Tensor> {
    torch("adaptive_avg_pool2d", || {
        spatial(x, |v| v.f_adaptive_avg_pool2d([oh, ow]))
    })
}

/// `torch.flatten(x, 1)` per replica: `[B, M, ...] → [B, M, F]`.
pub fn flatten(x: &Tensor) -> Result<Tensor> {
    torch("flatten", || {
        let s = x.size();
        if s.len() < 2 {
            return Err(TchError::Shape(format!(
                "expected a [B, M, ...] activation, got {s:?}"
            )));
        }
        let f: i64 = s[2..].iter().product();
        x.f_reshape([s[0], s[1], f])
    })
}

/// Residual connection `x + f(x)`.
pub fn residual_add(x: &Tensor, fx: &Tensor) -> Result<Tensor> {
    torch("residual connection", || x.f_add(fx))
}
