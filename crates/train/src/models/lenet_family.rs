//! What LeNet-5 and the ConvNet share, as one model generic over its
//! [`LeNetVariant`]: two 5×5 convolutions (→ 6 → 16 channels), each followed
//! by an activation and 2×2 pooling, then fully connected layers 400 → 120 →
//! 84 → classes with the activation between. The members differ in their
//! first convolution, activation, pooling and input shape; each has its own
//! file, which names its paper and parameter count.

use std::marker::PhantomData;

use tch::Tensor;

use super::model::Model;
use crate::error::Result;
use crate::init::Init;
use crate::layers::{ops, Conv2d, Conv2dConfig, Linear, LinearConfig, PerSampleGrad, Tape};

/// What distinguishes a member of the family.
pub trait LeNetVariant: std::fmt::Debug {
    /// One record's shape `[C, H, W]`.
    const SAMPLE_SHAPE: [i64; 3];
    /// The first convolution (`C` → 6, 5×5).
    fn conv1() -> Conv2dConfig;
    /// The activation after every layer but the last.
    fn activation(x: &Tensor) -> Result<Tensor>;
    /// The pooling (window and stride 2) after each convolution's activation.
    fn pooling(x: &Tensor, k: i64, stride: i64) -> Result<Tensor>;
}

/// A member of the family; PyTorch names `conv1`, `conv2`, `fc1`, `fc2`, `fc3`.
#[derive(Debug)]
pub struct LeNetFamily<V> {
    /// `C` → 6, 5×5 ([`LeNetVariant::conv1`]).
    pub conv1: Conv2d,
    /// 6 → 16, 5×5.
    pub conv2: Conv2d,
    /// 400 → 120.
    pub fc1: Linear,
    /// 120 → 84.
    pub fc2: Linear,
    /// 84 → classes.
    pub fc3: Linear,
    variant: PhantomData<V>,
}

impl<V: LeNetVariant> LeNetFamily<V> {
    /// For [`LeNetVariant::SAMPLE_SHAPE`] inputs and `classes` outputs.
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
            conv1: Conv2d::new(init, V::conv1())?,
            conv2: Conv2d::new(init, Conv2dConfig::new(6, 16, 5))?,
            fc1: fc(init, 400, 120)?,
            fc2: fc(init, 120, 84)?,
            fc3: fc(init, 84, classes)?,
            variant: PhantomData,
        })
    }
}

impl<V: LeNetVariant> Model for LeNetFamily<V> {
    fn replicas(&self) -> i64 {
        self.conv1.weight.size()[0]
    }
    fn sample_shape(&self) -> Vec<i64> {
        V::SAMPLE_SHAPE.to_vec()
    }
    fn num_classes(&self) -> i64 {
        self.fc3.config.out_features
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let (act, pool) = (V::activation, V::pooling);
        let h = pool(&act(&self.conv1.forward(x, tape)?)?, 2, 2)?;
        let h = pool(&act(&self.conv2.forward(&h, tape)?)?, 2, 2)?;
        let h = act(&self.fc1.forward(&ops::flatten(&h)?, tape)?)?;
        let h = act(&self.fc2.forward(&h, tape)?)?;
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
