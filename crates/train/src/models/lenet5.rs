//! LeNet-5 with tanh and average pooling.
//!
//! Paper 000 (Annamalai et al., shuffling audit, App. C Table 3; Annamalai et al. 2024 §6.1),
//! after LeCun et al. 1998, for 28×28 Fashion-MNIST:
//! `Conv(1→6, 5×5, pad 2) → tanh → AvgPool 2 → Conv(6→16, 5×5) → tanh → AvgPool 2
//! → flatten 400 → FC 120 → tanh → FC 84 → tanh → FC classes`.
//! Parameters with 2 classes: `156 + 2,416 + 48,120 + 10,164 + 170 = 61,026`.

use tch::Tensor;

use crate::error::Result;
use crate::init::Init;
use crate::layers::{ops, Conv2d, Conv2dConfig, Linear, LinearConfig, PerSampleGrad, Tape};
use crate::models::Model;

/// LeNet-5; PyTorch names `conv1`, `conv2`, `fc1`, `fc2`, `fc3`.
#[derive(Debug)]
pub struct LeNet5 {
    /// 1 → 6, 5×5, padding 2.
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

fn fc(init: &mut Init, i: i64, o: i64) -> Result<Linear> {
    Linear::new(
        init,
        LinearConfig {
            in_features: i,
            out_features: o,
            bias: true,
        },
    )
}

impl LeNet5 {
    /// For `[1, 28, 28]` inputs and `classes` outputs.
    pub fn new(init: &mut Init, classes: i64) -> Result<Self> {
        Ok(Self {
            conv1: Conv2d::new(init, Conv2dConfig::new(1, 6, 5).padding(2))?,
            conv2: Conv2d::new(init, Conv2dConfig::new(6, 16, 5))?,
            fc1: fc(init, 400, 120)?,
            fc2: fc(init, 120, 84)?,
            fc3: fc(init, 84, classes)?,
        })
    }
}

impl Model for LeNet5 {
    fn replicas(&self) -> i64 {
        self.conv1.weight.size()[0]
    }
    fn sample_shape(&self) -> Vec<i64> {
        vec![1, 28, 28]
    }
    fn num_classes(&self) -> i64 {
        self.fc3.config.out_features
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let h = ops::avg_pool2d(&ops::tanh(&self.conv1.forward(x, tape)?)?, 2, 2)?;
        let h = ops::avg_pool2d(&ops::tanh(&self.conv2.forward(&h, tape)?)?, 2, 2)?;
        let h = ops::tanh(&self.fc1.forward(&ops::flatten(&h)?, tape)?)?;
        let h = ops::tanh(&self.fc2.forward(&h, tape)?)?;
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
