//! The DP-SGD optimiser: the pipeline of this module, the step counter and
//! the noise generators of the runs it trains.

use tch::{Kind, Tensor};

use super::backprop::{forward_backward, Backprops};
use super::batch::Batch;
use super::clip::ClipCoefficients;
use super::fault::Fault;
use super::noisy::NoisySum;
use super::read_back::{ReadBack, StepParts, StepReport};
use super::sgd::Sgd;
use super::DpSgdConfig;
use crate::error::{torch, Result, TrainError};
use crate::models::Model;
use crate::noise::{NoiseGenerator, NoiseStreams};
use crate::scalar::{Operand, WithNumber};

/// The DP-SGD optimiser: the pipeline of [`crate::engine`], the step counter, and the
/// noise generators of the runs it trains.
#[derive(Debug)]
pub struct DpSgd {
    /// The hyperparameters.
    pub config: DpSgdConfig,
    sgd: Sgd,
    step: u64,
    fault: Option<Fault>,
    noise: NoiseStreams,
    read_backs: ReadBack,
}

impl DpSgd {
    /// Validate and build; `noise` holds one generator per replica of the
    /// models this optimiser will step.
    pub fn new(config: DpSgdConfig, noise: NoiseStreams) -> Result<Self> {
        config.validate()?;
        let sgd = Sgd::new(config.learning_rate, config.momentum, config.weight_decay);
        Ok(Self {
            config,
            sgd,
            step: 0,
            fault: None,
            noise,
            read_backs: ReadBack::new(),
        })
    }

    /// Read the step report and the checks back from the device every `k`
    /// steps (`k ≥ 1`; 1, the default, reads every step). In between they
    /// accumulate on the device and each update is gated there, so a step
    /// that fails its checks, and every later step until the read-back,
    /// leaves the parameters as they were; the read-back then fails naming
    /// the first failing step. Callers read the last steps with
    /// [`DpSgd::read_back`] before using the model. A new interval takes
    /// effect from the next read-back on.
    pub fn set_read_back_every(&mut self, k: u64) {
        self.read_backs.every = k.max(1);
    }

    /// Steps between read-backs.
    pub fn read_back_every(&self) -> u64 {
        self.read_backs.every
    }

    /// Draw the noise with `generator` whatever the device (secure mode
    /// refuses the device generator; see [`NoiseStreams::with_generator`]).
    pub fn set_noise_generator(&mut self, generator: NoiseGenerator) -> Result<()> {
        self.noise.set_generator(generator)
    }

    /// The generator of this engine's noise on `device`.
    pub fn noise_generator(&self, device: tch::Device) -> NoiseGenerator {
        self.noise.generator(device)
    }

    /// Secure or replayable noise.
    pub fn mode(&self) -> dpaudit_data::seed::Mode {
        self.noise.mode()
    }

    /// The same optimiser with a deliberate [`Fault`] (self-test only).
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// The injected fault, if any.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// Steps taken so far.
    pub fn steps_taken(&self) -> u64 {
        self.step
    }

    /// Everything up to the noisy sum (no parameter change; the noise
    /// generators advance one step).
    pub fn noisy_sum(
        &mut self,
        model: &dyn Model,
        batch: &Batch,
    ) -> Result<(NoisySum, Backprops, ClipCoefficients)> {
        let parts = self.noisy_sum_checked(model, batch)?;
        Ok((parts.noisy, parts.backprops, parts.coef))
    }

    fn noisy_sum_checked(&mut self, model: &dyn Model, batch: &Batch) -> Result<StepParts> {
        let bp = forward_backward(model, batch)?;
        let norms = bp.norms(model, batch)?;
        let mut coef = norms.clip(self.config.max_grad_norm, &bp, model, batch)?;
        if self.fault == Some(Fault::NoClipping) {
            coef = ClipCoefficients {
                computed: bp.computed.shallow_clone(),
                overrides: torch("the fault's coefficients", || {
                    coef.overrides.as_ref().map(|c| c.f_ones_like()).transpose()
                })?,
            };
        }
        let sum = bp.clipped_sum(model, batch, &coef)?;
        let sums_finite = bp.sum_checks(model, &sum)?;
        let sigma = match self.fault {
            Some(Fault::NoiseScale(f)) => self.config.noise_multiplier * f,
            None | Some(Fault::NoClipping) | Some(Fault::RealisedBatchSize) => {
                self.config.noise_multiplier
            }
        };
        if self.noise.replicas() as i64 != model.replicas() {
            return Err(TrainError::Shape {
                what: "noise streams".into(),
                got: vec![self.noise.replicas() as i64],
                expected: format!("{} (one per replica of the model)", model.replicas()),
            });
        }
        let noisy = sum.add_noise(sigma, self.config.max_grad_norm, &mut self.noise)?;
        Ok(StepParts {
            noisy,
            backprops: bp,
            coef,
            norms_finite: norms.finite,
            sums_finite: sums_finite.0,
        })
    }

    /// One DP-SGD step. Nothing changes the parameters unless the loss, every
    /// layer's per-sample norms and every layer's clipped sum are finite: the
    /// update is gated on the device by these checks. They, and the step's
    /// report, come back from the device in one copy every
    /// [`DpSgd::read_back_every`] steps (every step by default); a failed
    /// check then stops the run with an error that names the first failing
    /// step and its layer, and every step from that one on has left the
    /// parameters unchanged.
    pub fn step(&mut self, model: &dyn Model, batch: &Batch) -> Result<StepReport> {
        let parts = self.noisy_sum_checked(model, batch)?;
        let (gate, zero) = self.read_backs.record(self.step, model, &parts)?;
        let noisy = &parts.noisy;
        let bp = &parts.backprops;
        let mut inv = Operand::new(1.0 / self.config.normaliser.value());
        let grads: Vec<Tensor> = torch("normalising the noisy sum", || {
            if self.fault == Some(Fault::RealisedBatchSize) {
                // Present slots per replica, at least 1: `[M]`.
                let realised = bp
                    .present
                    .f_sum_dim_intlist(0, false, Kind::Float)?
                    .clamp_min_f64(1.0)?;
                noisy
                    .0
                    .iter()
                    .map(|s| {
                        let mut shape = vec![-1i64];
                        shape.extend(std::iter::repeat_n(1, s.dim().saturating_sub(1)));
                        s.f_div(&realised.f_reshape(shape.as_slice())?)
                    })
                    .collect()
            } else {
                noisy.0.iter().map(|s| s.f_mul(&inv.like(s)?)).collect()
            }
        })?;
        self.sgd.step_gated(model, &grads, Some((&gate, &zero)))?;
        self.step += 1;
        let due = self.read_backs.due();
        if due {
            if let Some(report) = self.read_back()? {
                return Ok(report);
            }
        }
        Ok(StepReport {
            step: self.step.saturating_sub(1),
            steps: 0,
            loss_sum: 0.0,
            samples: 0.0,
            clipped_fraction: 0.0,
        })
    }

    /// Read the steps since the last read-back from the device: their report,
    /// or the error of the first that failed its checks (that step and every
    /// later one left the parameters unchanged). `None` when there are none.
    pub fn read_back(&mut self) -> Result<Option<StepReport>> {
        self.read_backs.read_back()
    }
}
