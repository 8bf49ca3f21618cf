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

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;
    use crate::testing::normal_tensor;
    use tch::Kind;

    /// The value and input gradient of [`avg_pool2d`] and of libtorch's own
    /// average pooling on the same `[B, M, C, H, W]` input and output
    /// gradient.
    fn both(x: &Tensor, k: i64, stride: i64) -> [(Tensor, Tensor); 2] {
        let s = x.size();
        let ours = {
            let x = x.detach().requires_grad_(true);
            let y = avg_pool2d(&x, k, stride).unwrap();
            let g = normal_tensor(&y.size(), 1).unwrap();
            (&y * &g).sum(Kind::Float).backward();
            (y.detach(), x.grad(), g)
        };
        let theirs = {
            let x = x.detach().requires_grad_(true);
            let y = x.reshape([s[0], s[1] * s[2], s[3], s[4]]).avg_pool2d(
                [k, k],
                [stride, stride],
                [0, 0],
                false,
                true,
                None::<i64>,
            );
            let y = y.reshape(ours.0.size());
            (&y * &ours.2).sum(Kind::Float).backward();
            (y.detach(), x.grad())
        };
        [(ours.0, ours.1), theirs]
    }

    fn assert_same_pooling(x: &Tensor, k: i64, stride: i64) {
        let [(y, gx), (y_ref, gx_ref)] = both(x, k, stride);
        assert_eq!(y.size(), y_ref.size());
        // Σx·(1/k²) against (Σx)/k²: a few float32 roundings apart.
        let err = (&y - &y_ref).abs().max().double_value(&[]);
        assert!(err <= 1e-6, "values differ by {err}");
        // The gradient is δ/k² either way, with k² a power of two here: exact.
        assert!(gx.equal(&gx_ref), "input gradients differ");
    }

    #[test]
    fn tiled_average_pooling_matches_libtorch_in_both_layouts() {
        // LeNet-5's two poolings, with 1 and 3 replicas.
        for shape in [[5, 1, 6, 28, 28], [4, 3, 16, 10, 10]] {
            let x = normal_tensor(&shape, 2).unwrap();
            assert!(x.is_contiguous());
            assert_same_pooling(&x, 2, 2);
            // Channels last on the [B, M·C, H, W] view, as replica-stacked
            // convolutions leave their output on the CPU.
            let s = x.size();
            let cl = x
                .reshape([s[0], s[1] * s[2], s[3], s[4]])
                .contiguous()
                .permute([0, 2, 3, 1])
                .contiguous()
                .permute([0, 3, 1, 2])
                .reshape(shape);
            assert!(!cl.is_contiguous());
            assert_same_pooling(&cl, 2, 2);
        }
        // Windows that do not tile the input go to libtorch's kernel.
        let x = normal_tensor(&[2, 1, 3, 9, 9], 3).unwrap();
        assert_same_pooling(&x, 2, 2);
        assert_same_pooling(&x, 3, 2);
    }
}
