//! The DP-SGD hyperparameters, and the public constant the noisy sum is
//! divided by.

use dpaudit_accounting::dp_fields::{self, DpContext, DpField};

use crate::error::{PlanError, Result};

/// The public constant the noisy sum is divided by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Normaliser {
    /// Poisson sampling: the expected batch size `q·n`.
    ExpectedBatchSize(f64),
    /// Fixed-size batches: the batch size.
    FixedBatchSize(u64),
}

impl Normaliser {
    /// The divisor.
    pub fn value(&self) -> f64 {
        match *self {
            Normaliser::ExpectedBatchSize(v) => v,
            Normaliser::FixedBatchSize(b) => b as f64,
        }
    }
}

/// DP-SGD hyperparameters. All DP-critical values are explicit.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgdConfig {
    /// σ: noise std on the sum is `σ·C`.
    pub noise_multiplier: f64,
    /// C: per-sample clipping norm.
    pub max_grad_norm: f64,
    /// η.
    pub learning_rate: f64,
    /// What the noisy sum is divided by.
    pub normaliser: Normaliser,
    /// SGD momentum (PyTorch semantics, dampening 0); 0 = off (the seeds).
    pub momentum: f64,
    /// L2 weight decay added to the gradient; 0 = off.
    pub weight_decay: f64,
}

impl DpSgdConfig {
    /// Check ranges once.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, value: f64, expected: &str| {
            Err(PlanError::InvalidConfig {
                field: field.into(),
                value: value.to_string(),
                expected: expected.into(),
            })
        };
        // The DP fields, through the one validation (σ = 0 trains without
        // noise: the engine claims no ε itself).
        let dp = [
            (DpField::NoiseMultiplier, self.noise_multiplier),
            (DpField::MaxGradNorm, self.max_grad_norm),
            (DpField::ExpectedBatchSize, self.normaliser.value()),
        ];
        for (field, value) in dp {
            dp_fields::check(DpContext::Training, field, value)?;
        }
        if !(self.learning_rate > 0.0 && self.learning_rate.is_finite()) {
            return bad("learning_rate", self.learning_rate, "a finite number > 0");
        }
        if !(0.0..1.0).contains(&self.momentum) {
            return bad("momentum", self.momentum, "in [0, 1)");
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return bad("weight_decay", self.weight_decay, "a finite number ≥ 0");
        }
        Ok(())
    }
}
