//! Parameter-free operations on `[B, M, C, H, W]` (or `[B, M, F]`) activations.
//!
//! They need no per-sample support: autograd carries the backprop through them.
//! Spatial ops run on the `[B, M·C, H, W]` view so replicas stay independent.
//! A shape libtorch refuses (e.g. a pooling window larger than the input)
//! comes back as [`crate::TrainError::Torch`] naming the op.

use tch::{TchError, Tensor};

use crate::error::{torch, Result};

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
pub fn avg_pool2d(x: &Tensor, k: i64, stride: i64) -> Result<Tensor> {
    torch("avg_pool2d", || {
        spatial(x, |v| {
            v.f_avg_pool2d([k, k], [stride, stride], [0, 0], false, true, None::<i64>)
        })
    })
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
