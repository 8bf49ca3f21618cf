//! A_S^{h*}: the adversary of Cebere et al. 2024 §6 that crafts both the gradient and
//! the loss landscape, as a 1-D simulation (Cebere et al. 2024 §6, Eq. 3).
//!
//! One crafted gradient ∇* = C is inserted at the first step only; the
//! adversary sees only the last iterate θ_T (hidden state). The genuine
//! gradient sum g(θ) ∈ [−BC, BC] is chosen by the adversary:
//! [`Landscape::Threshold`] uses g = ±BC on either side of h* = C/2 and
//! [`Landscape::Constant`] is Cebere et al.'s Example 1.
//!
//! Direction of the drift (Cebere et al. 2024 §6; the erratum is in docs/canary-games.md): the
//! literal sign of Eq. 3 pulls θ back toward h*, which contradicts the
//! paper's reported tightness at B = 16; this module
//! implements, the self-reinforcing version θ ← θ + s·C + Z/B with
//! s = sign(θ − h*), which reproduces the paper's qualitative results.

use crate::bgm_simulator::PairedScores;
use crate::error::{check_positive, AttacksError, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// The loss landscape of the 1-D process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Landscape {
    /// g_{φ*}: drift +C above h* = C/2 and −C below (drift away from h*).
    Threshold,
    /// g(θ) = `gradient_sum` everywhere (Cebere et al. 2024 Example 1): θ moves by
    /// −gradient_sum/B per step, identically under both hypotheses.
    Constant {
        /// The batch's gradient sum c, |c| ≤ B·C.
        gradient_sum: f64,
    },
}

/// A_S^{h*} simulation parameters (Cebere et al. 2024 §6; the pseudocode in docs/canary-games.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandscapeSimulation {
    /// Batch size B (divides the noise after the first step).
    pub expected_batch_size: usize,
    /// Noise multiplier σ (noise std σC on the batch sum).
    pub noise_multiplier: f64,
    /// Clipping norm C (the crafted gradient's size).
    pub max_grad_norm: f64,
    /// Number of steps T ≥ 1 (the canary only in step 1).
    pub steps: usize,
    /// The landscape.
    pub landscape: Landscape,
    /// Run seed.
    pub seed: u64,
}

impl LandscapeSimulation {
    fn validate(&self) -> Result<()> {
        if self.expected_batch_size == 0 {
            return Err(AttacksError::InvalidParameter {
                parameter: "expected_batch_size",
                value: "0".to_owned(),
                expected: "at least 1".to_owned(),
            });
        }
        if self.steps == 0 {
            return Err(AttacksError::InvalidParameter {
                parameter: "steps",
                value: "0".to_owned(),
                expected: "at least 1".to_owned(),
            });
        }
        check_positive("noise_multiplier", self.noise_multiplier)?;
        check_positive("max_grad_norm", self.max_grad_norm)?;
        if let Landscape::Constant { gradient_sum } = self.landscape {
            let bound = self.expected_batch_size as f64 * self.max_grad_norm;
            if !gradient_sum.is_finite() || gradient_sum.abs() > bound {
                return Err(AttacksError::InvalidParameter {
                    parameter: "gradient_sum",
                    value: gradient_sum.to_string(),
                    expected: format!("|c| ≤ expected_batch_size × max_grad_norm = {bound}"),
                });
            }
        }
        Ok(())
    }

    /// The final iterate θ_T of one run; the score (higher ⇒ crafted gradient
    /// inserted, since it adds +C at step 1).
    fn run<R: Rng>(&self, with_canary: bool, rng: &mut R) -> f64 {
        let c = self.max_grad_norm;
        let noise_std = c * self.noise_multiplier;
        let b = self.expected_batch_size as f64;
        let h_star = c / 2.0;
        let z: f64 = rng.sample(StandardNormal);
        let mut theta = if with_canary { c } else { 0.0 } + noise_std * z;
        for _ in 1..self.steps {
            let z: f64 = rng.sample(StandardNormal);
            let drift = match self.landscape {
                Landscape::Threshold => {
                    if theta > h_star {
                        c
                    } else {
                        -c
                    }
                }
                Landscape::Constant { gradient_sum } => -gradient_sum / b,
            };
            theta += drift + noise_std * z / b;
        }
        theta
    }

    /// Simulates `runs_per_hypothesis` runs with the crafted gradient and as
    /// many without; scores are the final iterates θ_T.
    pub fn simulate(&self, runs_per_hypothesis: usize) -> Result<PairedScores> {
        self.validate()?;
        let draw = |stream: u64, with_canary: bool| {
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
            rng.set_stream(stream);
            (0..runs_per_hypothesis)
                .map(|_| self.run(with_canary, &mut rng))
                .collect::<Vec<f64>>()
        };
        Ok(PairedScores {
            with_target: draw(0, true),
            without_target: draw(1, false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(landscape: Landscape, steps: usize, b: usize) -> LandscapeSimulation {
        LandscapeSimulation {
            expected_batch_size: b,
            noise_multiplier: 2.0,
            max_grad_norm: 1.0,
            steps,
            landscape,
            seed: 11,
        }
    }

    fn mean_var(x: &[f64]) -> (f64, f64) {
        let n = x.len() as f64;
        let m = x.iter().sum::<f64>() / n;
        (
            m,
            x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0),
        )
    }

    #[test]
    fn one_step_is_the_gaussian_mechanism() {
        // T = 1: θ_T ~ N(b·C, C²σ²) (Cebere et al. 2024 §6, step 1).
        let s = sim(Landscape::Threshold, 1, 4).simulate(40_000).unwrap();
        let (m1, v1) = mean_var(&s.with_target);
        let (m0, v0) = mean_var(&s.without_target);
        // Standard errors: σC/√n = 0.01 for the mean; ≈ 4·√(2/n) = 0.028 for the variance.
        assert!((m1 - 1.0).abs() < 0.05, "{m1}");
        assert!(m0.abs() < 0.05, "{m0}");
        assert!(
            (v1 - 4.0).abs() < 0.15 && (v0 - 4.0).abs() < 0.15,
            "{v1} {v0}"
        );
    }

    #[test]
    fn constant_landscape_matches_example_1_closed_form() {
        // Cebere et al. 2024 §6, Example 1: with constant g the mean gap stays C
        // and Var θ_T = C²σ²(1 + (T−1)/B²), so μ_T = 1/(σ√(1 + (T−1)/B²)).
        let (t, b) = (9, 2);
        let s = sim(Landscape::Constant { gradient_sum: 1.5 }, t, b)
            .simulate(40_000)
            .unwrap();
        let (m1, v1) = mean_var(&s.with_target);
        let (m0, v0) = mean_var(&s.without_target);
        let drift = -(t as f64 - 1.0) * 1.5 / b as f64;
        let var = 4.0 * (1.0 + (t as f64 - 1.0) / (b * b) as f64); // = 12
                                                                   // Mean SE = √12/√40000 ≈ 0.017; variance SE ≈ 12·√(2/40000) ≈ 0.085.
        assert!((m1 - (1.0 + drift)).abs() < 0.08, "{m1}");
        assert!((m0 - drift).abs() < 0.08, "{m0}");
        assert!(
            (v1 - var).abs() < 0.45 && (v0 - var).abs() < 0.45,
            "{v1} {v0} vs {var}"
        );
    }

    #[test]
    fn threshold_landscape_keeps_the_gap_for_large_batches() {
        // Cebere et al. 2024 §6 (our reading, docs/canary-games.md): with drift away from h*, B large relative
        // to σ keeps the two hypotheses apart. With σ = 2, B = 16 and T = 10 the
        // noise after step 1 is tiny (std 2/16 per step), so the side of h* taken
        // at step 1 decides the sign of θ_T: P(θ_T > h*) ≈ P(N(b, 4) > 0.5),
        // Φ(0.25) = 0.599 with the canary and Φ(−0.25) = 0.401 without.
        let s = sim(Landscape::Threshold, 10, 16).simulate(20_000).unwrap();
        let frac = |x: &[f64]| x.iter().filter(|&&v| v > 0.5).count() as f64 / x.len() as f64;
        // SE of a proportion ≈ 0.0035; later steps cross h* rarely, tolerance 0.02.
        assert!(
            (frac(&s.with_target) - 0.599).abs() < 0.02,
            "{}",
            frac(&s.with_target)
        );
        assert!(
            (frac(&s.without_target) - 0.401).abs() < 0.02,
            "{}",
            frac(&s.without_target)
        );
    }

    #[test]
    fn refuses_bad_parameters_and_replays_from_the_seed() {
        let mut s = sim(Landscape::Threshold, 3, 2);
        assert_eq!(s.simulate(10).unwrap(), s.simulate(10).unwrap());
        s.max_grad_norm = 0.0;
        assert!(matches!(
            s.simulate(1),
            Err(AttacksError::InvalidParameter {
                parameter: "max_grad_norm",
                ..
            })
        ));
        let s = sim(Landscape::Constant { gradient_sum: 3.0 }, 3, 1);
        assert!(matches!(
            s.simulate(1),
            Err(AttacksError::InvalidParameter {
                parameter: "gradient_sum",
                ..
            })
        ));
    }
}
