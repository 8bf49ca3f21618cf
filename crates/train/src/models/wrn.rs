//! Wide ResNet (Zagoruyko & Komodakis 2016) with GroupNorm, pre-activation
//! blocks, in the layout of the Opacus baseline the GPU benchmarks compare against
//! (the model of the Opacus comparison in benches/RESULTS.md): stem 3×3 conv to 16 channels
//! (no bias), three groups of `n = (depth − 4)/6` blocks of widths
//! `16k, 32k, 64k` (strides 1, 2, 2), each block
//! `o = relu(n1 x); y = c2(relu(n2(c1 o))); y + (x or sc(o))`, then
//! `relu(norm ·)`, global average pooling and FC. GroupNorm with 16 groups.
//!
//! WRN-16-4, 10 classes: 2,748,890 parameters (sum of the layer shapes; the
//! test derives it layer by layer).

use tch::Tensor;

use super::model::Model;
use super::residual::{conv1x1, conv3x3, gn, head};
use crate::error::Result;
use crate::init::Init;
use crate::layers::{ops, Conv2d, GroupNorm, Linear, PerSampleGrad, Tape};

/// A pre-activation wide block; PyTorch names `n1`, `c1`, `n2`, `c2`, `sc`.
#[derive(Debug)]
pub struct WideBlock {
    /// Norm of the input.
    pub n1: GroupNorm,
    /// 3×3, stride s.
    pub c1: Conv2d,
    /// Norm after c1.
    pub n2: GroupNorm,
    /// 3×3.
    pub c2: Conv2d,
    /// 1×1 shortcut on `relu(n1 x)` when the shape changes.
    pub sc: Option<Conv2d>,
}

/// WRN-depth-k; PyTorch names `conv`, `blocks.{i}.…`, `norm`, `fc`.
#[derive(Debug)]
pub struct WideResNet {
    /// Stem 3 → 16.
    pub conv: Conv2d,
    /// The blocks in order.
    pub blocks: Vec<WideBlock>,
    /// Final norm.
    pub norm: GroupNorm,
    /// 64k → classes.
    pub fc: Linear,
    sample: Vec<i64>,
}

impl WideResNet {
    /// WRN-`depth`-`k` for `[C, H, W]` inputs; `depth ≡ 4 (mod 6)`.
    pub fn new(
        init: &mut Init,
        depth: i64,
        k: i64,
        classes: i64,
        groups: i64,
        sample: [i64; 3],
    ) -> Result<Self> {
        let n = (depth - 4) / 6;
        let w = [16, 16 * k, 32 * k, 64 * k];
        let conv = conv3x3(init, sample[0], 16, 1)?;
        let mut blocks = Vec::new();
        for g in 0..3 {
            for i in 0..n {
                let cin = if i == 0 { w[g] } else { w[g + 1] };
                let cout = w[g + 1];
                let stride = if i == 0 && g > 0 { 2 } else { 1 };
                let n1 = gn(init, groups, cin)?;
                let c1 = conv3x3(init, cin, cout, stride)?;
                let n2 = gn(init, groups, cout)?;
                let c2 = conv3x3(init, cout, cout, 1)?;
                let sc = if cin != cout || stride != 1 {
                    Some(conv1x1(init, cin, cout, stride)?)
                } else {
                    None
                };
                blocks.push(WideBlock { n1, c1, n2, c2, sc });
            }
        }
        let norm = gn(init, groups, w[3])?;
        let fc = head(init, w[3], classes)?;
        Ok(Self {
            conv,
            blocks,
            norm,
            fc,
            sample: sample.to_vec(),
        })
    }
}

impl Model for WideResNet {
    fn replicas(&self) -> i64 {
        self.conv.weight.size()[0]
    }
    fn sample_shape(&self) -> Vec<i64> {
        self.sample.clone()
    }
    fn num_classes(&self) -> i64 {
        self.fc.config.out_features
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let mut h = self.conv.forward(x, tape)?;
        for b in &self.blocks {
            let o = ops::relu(&b.n1.forward(&h, tape)?)?;
            let y = b.c1.forward(&o, tape)?;
            let y = b.c2.forward(&ops::relu(&b.n2.forward(&y, tape)?)?, tape)?;
            let s = match &b.sc {
                Some(sc) => sc.forward(&o, tape)?,
                None => h.shallow_clone(),
            };
            h = ops::residual_add(&y, &s)?;
        }
        let h = ops::relu(&self.norm.forward(&h, tape)?)?;
        self.fc.forward(&ops::global_avg_pool(&h)?, tape)
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        let mut v: Vec<(String, &dyn PerSampleGrad)> = vec![("conv".into(), &self.conv)];
        for (i, b) in self.blocks.iter().enumerate() {
            v.push((format!("blocks.{i}.n1"), &b.n1));
            v.push((format!("blocks.{i}.c1"), &b.c1));
            v.push((format!("blocks.{i}.n2"), &b.n2));
            v.push((format!("blocks.{i}.c2"), &b.c2));
            if let Some(sc) = &b.sc {
                v.push((format!("blocks.{i}.sc"), sc));
            }
        }
        v.push(("norm".into(), &self.norm));
        v.push(("fc".into(), &self.fc));
        v
    }
}
