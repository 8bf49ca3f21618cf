//! CIFAR-style ResNet-18 with GroupNorm in place of BatchNorm.
//!
//! Paper 001 (hidden-state audit, §6.2; Cebere et al. 2024 §5.1 and App. D, Table 2): 11,173,962 trainable
//! parameters with 10 classes, which is the CIFAR layout of He et al. 2016 as in
//! kuangliu/pytorch-cifar: 3×3 stride-1 stem (64, no bias), no max-pool,
//! BasicBlock stages [2, 2, 2, 2] of widths 64/128/256/512 with 1×1 convolution
//! shortcuts when downsampling, global average pooling, FC 512 → classes. Each
//! norm layer has 2 parameters per channel, so GroupNorm keeps the count.
//! BatchNorm mixes samples and has no per-sample gradient; DP training replaces
//! it with GroupNorm (`min(32, C)` groups by default).

use tch::Tensor;

use super::model::Model;
use super::residual::{conv1x1, conv3x3, gn, head};
use crate::error::Result;
use crate::init::Init;
use crate::layers::{ops, Conv2d, GroupNorm, Linear, PerSampleGrad, Tape};

/// One BasicBlock: `relu(bn1(conv1 x)) → bn2(conv2 ·) + shortcut(x) → relu`.
#[derive(Debug)]
pub struct BasicBlock {
    /// 3×3, stride s.
    pub conv1: Conv2d,
    /// Norm after conv1.
    pub bn1: GroupNorm,
    /// 3×3, stride 1.
    pub conv2: Conv2d,
    /// Norm after conv2.
    pub bn2: GroupNorm,
    /// 1×1 convolution and norm when the shape changes (`shortcut.0`, `shortcut.1`).
    pub shortcut: Option<(Conv2d, GroupNorm)>,
}

impl BasicBlock {
    fn new(init: &mut Init, groups: i64, cin: i64, cout: i64, stride: i64) -> Result<Self> {
        let conv1 = conv3x3(init, cin, cout, stride)?;
        let bn1 = gn(init, groups, cout)?;
        let conv2 = conv3x3(init, cout, cout, 1)?;
        let bn2 = gn(init, groups, cout)?;
        let shortcut = if stride != 1 || cin != cout {
            Some((conv1x1(init, cin, cout, stride)?, gn(init, groups, cout)?))
        } else {
            None
        };
        Ok(Self {
            conv1,
            bn1,
            conv2,
            bn2,
            shortcut,
        })
    }

    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let h = ops::relu(&self.bn1.forward(&self.conv1.forward(x, tape)?, tape)?)?;
        let h = self.bn2.forward(&self.conv2.forward(&h, tape)?, tape)?;
        let s = match &self.shortcut {
            Some((c, n)) => n.forward(&c.forward(x, tape)?, tape)?,
            None => x.shallow_clone(),
        };
        ops::relu(&ops::residual_add(&s, &h)?)
    }

    fn layers<'a>(&'a self, p: &str, out: &mut Vec<(String, &'a dyn PerSampleGrad)>) {
        out.push((format!("{p}.conv1"), &self.conv1));
        out.push((format!("{p}.bn1"), &self.bn1));
        out.push((format!("{p}.conv2"), &self.conv2));
        out.push((format!("{p}.bn2"), &self.bn2));
        if let Some((c, n)) = &self.shortcut {
            out.push((format!("{p}.shortcut.0"), c));
            out.push((format!("{p}.shortcut.1"), n));
        }
    }
}

/// ResNet-18; PyTorch names `conv1`, `bn1`, `layer{1..4}.{0,1}.…`, `linear`.
#[derive(Debug)]
pub struct ResNet18 {
    /// Stem 3 → 64.
    pub conv1: Conv2d,
    /// Stem norm.
    pub bn1: GroupNorm,
    /// Four stages of two blocks.
    pub stages: Vec<Vec<BasicBlock>>,
    /// 512 → classes.
    pub linear: Linear,
    sample: Vec<i64>,
}

impl ResNet18 {
    /// For `[3, H, W]` inputs, `classes` outputs and GroupNorm with
    /// `min(groups, C)` groups.
    pub fn new(init: &mut Init, classes: i64, groups: i64, sample: [i64; 3]) -> Result<Self> {
        let conv1 = conv3x3(init, sample[0], 64, 1)?;
        let bn1 = gn(init, groups, 64)?;
        let mut cin = 64;
        let mut stages = Vec::new();
        for (i, &w) in [64i64, 128, 256, 512].iter().enumerate() {
            let stride = if i == 0 { 1 } else { 2 };
            let b0 = BasicBlock::new(init, groups, cin, w, stride)?;
            let b1 = BasicBlock::new(init, groups, w, w, 1)?;
            stages.push(vec![b0, b1]);
            cin = w;
        }
        let linear = head(init, 512, classes)?;
        Ok(Self {
            conv1,
            bn1,
            stages,
            linear,
            sample: sample.to_vec(),
        })
    }
}

impl Model for ResNet18 {
    fn replicas(&self) -> i64 {
        self.conv1.weight.size()[0]
    }
    fn sample_shape(&self) -> Vec<i64> {
        self.sample.clone()
    }
    fn num_classes(&self) -> i64 {
        self.linear.config.out_features
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let mut h = ops::relu(&self.bn1.forward(&self.conv1.forward(x, tape)?, tape)?)?;
        for stage in &self.stages {
            for block in stage {
                h = block.forward(&h, tape)?;
            }
        }
        self.linear.forward(&ops::global_avg_pool(&h)?, tape)
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        let mut v: Vec<(String, &dyn PerSampleGrad)> =
            vec![("conv1".into(), &self.conv1), ("bn1".into(), &self.bn1)];
        for (i, stage) in self.stages.iter().enumerate() {
            for (j, block) in stage.iter().enumerate() {
                block.layers(&format!("layer{}.{j}", i + 1), &mut v);
            }
        }
        v.push(("linear".into(), &self.linear));
        v
    }
}
