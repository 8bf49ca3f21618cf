//! The noisy sum: Gaussian noise `N(0, σ²C²)` added to every replica's
//! clipped sum.

use tch::Tensor;

use super::sum::ClippedSum;
use crate::error::{Result, TrainError};
use crate::noise::NoiseStreams;

/// `Σ_i c_i g_i + N(0, σ²C²I)`, `[M, ...]` each.
#[derive(Debug)]
pub struct NoisySum(pub Vec<Tensor>);

impl ClippedSum {
    /// Add `N(0, (σC)²)` to every coordinate of every replica's sum, drawn
    /// from the runs' own [`NoiseStreams`] for their current step (which then
    /// advances, also when `σ = 0`).
    pub fn add_noise(
        self,
        noise_multiplier: f64,
        max_grad_norm: f64,
        noise: &mut NoiseStreams,
    ) -> Result<NoisySum> {
        let std = noise_multiplier * max_grad_norm;
        if std == 0.0 {
            noise.skip_step();
            return Ok(NoisySum(self.0));
        }
        let device = self.0.first().map_or(tch::Device::Cpu, |t| t.device());
        let draws = noise.next_step(std, &self.0, device)?;
        let mut out = Vec::with_capacity(self.0.len());
        for (s, z) in self.0.iter().zip(&draws) {
            out.push(s.f_add(z).map_err(TrainError::torch("adding DP noise"))?);
        }
        Ok(NoisySum(out))
    }
}
