//! The ConvNet of Cebere et al. 2024 (§5.1, App. D Table 2) for CIFAR-10.
//!
//! Paper 001 (hidden-state audit, §6.2 / App. D Table 2; Cebere et al. 2024 §5.1 and App. D, Table 2): 62,006
//! trainable parameters, which is exactly the PyTorch CIFAR-10 tutorial network:
//! `Conv(3→6, 5) → ReLU → MaxPool 2 → Conv(6→16, 5) → ReLU → MaxPool 2 → flatten
//! 400 → FC 120 → ReLU → FC 84 → ReLU → FC 10`:
//! `456 + 2,416 + 48,120 + 10,164 + 850 = 62,006`.

use tch::Tensor;

use crate::error::Result;
use crate::init::Init;
use crate::layers::{ops, Conv2d, Conv2dConfig, Linear, LinearConfig, PerSampleGrad, Tape};
use crate::models::Model;

/// The ConvNet; PyTorch names `conv1`, `conv2`, `fc1`, `fc2`, `fc3`.
#[derive(Debug)]
pub struct ConvNet {
    /// 3 → 6, 5×5.
    pub conv1: Conv2d,
    /// 6 → 16, 5×5.
    pub conv2: Conv2d,
    /// 400 → 120.
    pub fc1: Linear,
    /// 120 → 84.
    pub fc2: Linear,
    /// 84 → classes.
    pub fc3: Linear,
}

impl ConvNet {
    /// For `[3, 32, 32]` inputs and `classes` outputs.
    pub fn new(init: &mut Init, classes: i64) -> Result<Self> {
        let fc = |init: &mut Init, i, o| {
            Linear::new(
                init,
                LinearConfig {
                    in_features: i,
                    out_features: o,
                    bias: true,
                },
            )
        };
        Ok(Self {
            conv1: Conv2d::new(init, Conv2dConfig::new(3, 6, 5))?,
            conv2: Conv2d::new(init, Conv2dConfig::new(6, 16, 5))?,
            fc1: fc(init, 400, 120)?,
            fc2: fc(init, 120, 84)?,
            fc3: fc(init, 84, classes)?,
        })
    }
}

impl Model for ConvNet {
    fn replicas(&self) -> i64 {
        self.conv1.weight.size()[0]
    }
    fn sample_shape(&self) -> Vec<i64> {
        vec![3, 32, 32]
    }
    fn num_classes(&self) -> i64 {
        self.fc3.config.out_features
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let h = ops::max_pool2d(&ops::relu(&self.conv1.forward(x, tape)?)?, 2, 2)?;
        let h = ops::max_pool2d(&ops::relu(&self.conv2.forward(&h, tape)?)?, 2, 2)?;
        let h = ops::relu(&self.fc1.forward(&ops::flatten(&h)?, tape)?)?;
        let h = ops::relu(&self.fc2.forward(&h, tape)?)?;
        self.fc3.forward(&h, tape)
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        vec![
            ("conv1".into(), &self.conv1 as &dyn PerSampleGrad),
            ("conv2".into(), &self.conv2),
            ("fc1".into(), &self.fc1),
            ("fc2".into(), &self.fc2),
            ("fc3".into(), &self.fc3),
        ]
    }
}
