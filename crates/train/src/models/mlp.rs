//! Multi-layer perceptron with ReLU.
//!
//! Paper 000 (Annamalai et al., shuffling audit, §6 / App. C; Annamalai et al. 2024 §6.1):
//! Purchase-100 model, "32 hidden neurons and ReLU activations", i.e.
//! 600 → 32 → 100: `600·32 + 32 + 32·100 + 100 = 22,532` parameters.
//! Widths are configurable; the Opacus comparison in benches/RESULTS.md uses 600 → 256 → 100.

use tch::Tensor;

use super::model::Model;
use crate::error::Result;
use crate::init::Init;
use crate::layers::{ops, Linear, LinearConfig, PerSampleGrad, Tape};

/// `Linear → ReLU → … → Linear`; PyTorch names `fc1`, `fc2`, ….
#[derive(Debug)]
pub struct Mlp {
    /// The layers, input to output.
    pub fcs: Vec<Linear>,
    names: Vec<String>,
}

impl Mlp {
    /// `widths = [in, hidden…, classes]`, at least two entries.
    pub fn new(init: &mut Init, widths: &[i64]) -> Result<Self> {
        let fcs: Vec<Linear> = widths
            .windows(2)
            .map(|w| {
                Linear::new(
                    init,
                    LinearConfig {
                        in_features: w[0],
                        out_features: w[1],
                        bias: true,
                    },
                )
            })
            .collect::<Result<_>>()?;
        let names = (1..=fcs.len()).map(|i| format!("fc{i}")).collect();
        Ok(Self { fcs, names })
    }

    /// The Purchase-100 MLP of Annamalai et al. 2024 (§6.1): 600 → 32 → 100.
    pub fn purchase100(init: &mut Init) -> Result<Self> {
        Self::new(init, &[600, 32, 100])
    }
}

impl Model for Mlp {
    fn replicas(&self) -> i64 {
        self.fcs[0].weight.size()[0]
    }
    fn sample_shape(&self) -> Vec<i64> {
        vec![self.fcs[0].config.in_features]
    }
    fn num_classes(&self) -> i64 {
        self.fcs.last().map_or(0, |l| l.config.out_features)
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        let mut h = x.shallow_clone();
        for (i, fc) in self.fcs.iter().enumerate() {
            h = fc.forward(&h, tape)?;
            if i + 1 < self.fcs.len() {
                h = ops::relu(&h)?;
            }
        }
        Ok(h)
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        self.names
            .iter()
            .cloned()
            .zip(self.fcs.iter().map(|l| l as &dyn PerSampleGrad))
            .collect()
    }
}
