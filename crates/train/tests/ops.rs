//! The parameter-free operations of `layers::ops` against libtorch's own.

#![allow(clippy::disallowed_methods)] // tests may panic

use dpaudit_train::layers::ops::avg_pool2d;
use dpaudit_train::testing::normal_tensor;
use tch::{Kind, Tensor};

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
