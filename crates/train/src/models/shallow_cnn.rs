//! The shallow CNN of Annamalai et al. 2024 (App. C, Table 2) for CIFAR-10.
//!
//! Paper 000 (Annamalai et al., shuffling audit, App. C Table 2; Annamalai et al. 2024 §6.1),
//! from Dörmann et al. (a modification of Tramèr & Boneh 2021), tanh activations:
//! two 3×3 convolutions (padding 1) per stage with 32, 64, 128 filters, each stage
//! followed by 2×2 max pooling, then FC 2048 → 128 → classes.
//! Parameters with 2 classes: `896 + 9,248 + 18,496 + 36,928 + 73,856 + 147,584
//! + 262,272 + 258 = 549,538`.

use tch::Tensor;

use super::model::Model;
use crate::error::Result;
use crate::init::Init;
use crate::layers::{ops, Conv2d, Conv2dConfig, Linear, LinearConfig, PerSampleGrad, Tape};

/// The shallow CNN; PyTorch names `conv1`…`conv6`, `fc1`, `fc2`.
#[derive(Debug)]
pub struct ShallowCnn {
    /// Six 3×3 convolutions.
    pub convs: Vec<Conv2d>,
    /// 2048 → 128.
    pub fc1: Linear,
    /// 128 → classes.
    pub fc2: Linear,
}

impl ShallowCnn {
    /// For `[3, 32, 32]` inputs and `classes` outputs.
    pub fn new(init: &mut Init, classes: i64) -> Result<Self> {
        let chans = [(3, 32), (32, 32), (32, 64), (64, 64), (64, 128), (128, 128)];
        let convs = chans
            .iter()
            .map(|&(i, o)| Conv2d::new(init, Conv2dConfig::new(i, o, 3).padding(1)))
            .collect::<Result<_>>()?;
        let fc1 = Linear::new(
            init,
            LinearConfig {
                in_features: 2048,
                out_features: 128,
                bias: true,
            },
        )?;
        let fc2 = Linear::new(
            init,
            LinearConfig {
                in_features: 128,
                out_features: classes,
                bias: true,
            },
        )?;
        Ok(Self { convs, fc1, fc2 })
    }
}

impl Model for ShallowCnn {
    fn replicas(&self) -> i64 {
        self.fc1.weight.size()[0]
    }
    fn sample_shape(&self) -> Vec<i64> {
        vec![3, 32, 32]
    }
    fn num_classes(&self) -> i64 {
        self.fc2.config.out_features
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let mut h = x.shallow_clone();
        for pair in self.convs.chunks(2) {
            h = ops::tanh(&pair[0].forward(&h, tape)?)?;
            h = ops::tanh(&pair[1].forward(&h, tape)?)?;
            h = ops::max_pool2d(&h, 2, 2)?;
        }
        let h = ops::tanh(&self.fc1.forward(&ops::flatten(&h)?, tape)?)?;
        self.fc2.forward(&h, tape)
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        let mut v: Vec<(String, &dyn PerSampleGrad)> = self
            .convs
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("conv{}", i + 1), c as &dyn PerSampleGrad))
            .collect();
        v.push(("fc1".into(), &self.fc1));
        v.push(("fc2".into(), &self.fc2));
        v
    }
}
