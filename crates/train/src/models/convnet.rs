//! The ConvNet of Cebere et al. 2024 (§5.1, App. D Table 2) for CIFAR-10.
//!
//! Paper 001 (hidden-state audit, §6.2 / App. D Table 2; Cebere et al. 2024 §5.1 and App. D, Table 2): 62,006
//! trainable parameters, which is exactly the PyTorch CIFAR-10 tutorial network:
//! `Conv(3→6, 5) → ReLU → MaxPool 2 → Conv(6→16, 5) → ReLU → MaxPool 2 → flatten
//! 400 → FC 120 → ReLU → FC 84 → ReLU → FC 10`:
//! `456 + 2,416 + 48,120 + 10,164 + 850 = 62,006`.

use tch::Tensor;

use super::lenet_family::{LeNetFamily, LeNetVariant};
use crate::error::Result;
use crate::layers::{ops, Conv2dConfig};

/// The ConvNet; PyTorch names `conv1`, `conv2`, `fc1`, `fc2`, `fc3`.
pub type ConvNet = LeNetFamily<ConvNetVariant>;

/// What makes a [`LeNetFamily`] the ConvNet: `[3, 32, 32]` inputs, first convolution
/// 3 → 6, 5×5; ReLU; max pooling.
#[derive(Debug)]
pub struct ConvNetVariant;

impl LeNetVariant for ConvNetVariant {
    const SAMPLE_SHAPE: [i64; 3] = [3, 32, 32];
    fn conv1() -> Conv2dConfig {
        Conv2dConfig::new(3, 6, 5)
    }
    fn activation(x: &Tensor) -> Result<Tensor> {
        ops::relu(x)
    }
    fn pooling(x: &Tensor, k: i64, stride: i64) -> Result<Tensor> {
        ops::max_pool2d(x, k, stride)
    }
}
