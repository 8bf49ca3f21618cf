//! Parameter-free operations on `[B, M, C, H, W]` (or `[B, M, F]`) activations.
//!
//! They need no per-sample support: autograd carries the backprop through them.
//! Spatial ops run on the `[B, M·C, H, W]` view so replicas stay independent.

use tch::Tensor;

/// `max(x, 0)`.
pub fn relu(x: &Tensor) -> Tensor {
    x.relu()
}

/// `tanh(x)`.
pub fn tanh(x: &Tensor) -> Tensor {
    x.tanh()
}

fn spatial(x: &Tensor, f: impl FnOnce(&Tensor) -> Tensor) -> Tensor {
    let s = x.size();
    let y = f(&x.reshape([s[0], s[1] * s[2], s[3], s[4]]));
    let ys = y.size();
    y.reshape([s[0], s[1], s[2], ys[2], ys[3]])
}

/// `nn.MaxPool2d(k, stride)`, no padding.
pub fn max_pool2d(x: &Tensor, k: i64, stride: i64) -> Tensor {
    spatial(x, |v| {
        v.max_pool2d([k, k], [stride, stride], [0, 0], [1, 1], false)
    })
}

/// `nn.AvgPool2d(k, stride)`, no padding.
pub fn avg_pool2d(x: &Tensor, k: i64, stride: i64) -> Tensor {
    spatial(x, |v| {
        v.avg_pool2d([k, k], [stride, stride], [0, 0], false, true, None::<i64>)
    })
}

/// `nn.AdaptiveAvgPool2d((1, 1))` followed by flatten: `[B, M, C, H, W] → [B, M, C]`.
pub fn global_avg_pool(x: &Tensor) -> Tensor {
    x.mean_dim(&[3i64, 4][..], false, None)
}

/// `nn.AdaptiveAvgPool2d((oh, ow))`.
pub fn adaptive_avg_pool2d(x: &Tensor, oh: i64, ow: i64) -> Tensor {
    spatial(x, |v| v.adaptive_avg_pool2d([oh, ow]))
}

/// `torch.flatten(x, 1)` per replica: `[B, M, ...] → [B, M, F]`.
pub fn flatten(x: &Tensor) -> Tensor {
    let s = x.size();
    let f: i64 = s[2..].iter().product();
    x.reshape([s[0], s[1], f])
}

/// Residual connection `x + f(x)`.
pub fn residual_add(x: &Tensor, fx: &Tensor) -> Tensor {
    x + fx
}
