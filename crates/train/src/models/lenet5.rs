//! LeNet-5 with tanh and average pooling.
//!
//! Paper 000 (Annamalai et al., shuffling audit, App. C Table 3; Annamalai et al. 2024 §6.1),
//! after LeCun et al. 1998, for 28×28 Fashion-MNIST:
//! `Conv(1→6, 5×5, pad 2) → tanh → AvgPool 2 → Conv(6→16, 5×5) → tanh → AvgPool 2
//! → flatten 400 → FC 120 → tanh → FC 84 → tanh → FC classes`.
//! Parameters with 2 classes: `156 + 2,416 + 48,120 + 10,164 + 170 = 61,026`.

use tch::Tensor;

use super::lenet_family::{LeNetFamily, LeNetVariant};
use crate::error::Result;
use crate::layers::{ops, Conv2dConfig};

/// LeNet-5; PyTorch names `conv1`, `conv2`, `fc1`, `fc2`, `fc3`.
pub type LeNet5 = LeNetFamily<LeNet5Variant>;

/// What makes a [`LeNetFamily`] LeNet-5: `[1, 28, 28]` inputs, first convolution
/// 1 → 6, 5×5, padding 2; tanh; average pooling.
#[derive(Debug)]
pub struct LeNet5Variant;

impl LeNetVariant for LeNet5Variant {
    const SAMPLE_SHAPE: [i64; 3] = [1, 28, 28];
    fn conv1() -> Conv2dConfig {
        Conv2dConfig::new(1, 6, 5).padding(2)
    }
    fn activation(x: &Tensor) -> Result<Tensor> {
        ops::tanh(x)
    }
    fn pooling(x: &Tensor, k: i64, stride: i64) -> Result<Tensor> {
        ops::avg_pool2d(x, k, stride)
    }
}
