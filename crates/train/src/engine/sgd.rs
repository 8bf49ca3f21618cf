//! Plain SGD (momentum and weight decay optional), and the non-private step
//! that `dpaudit bench` compares against.

use tch::{Kind, TchError, Tensor};

use super::backprop::per_sample_cross_entropy;
use super::batch::Batch;
use crate::error::{torch, Result, TrainError};
use crate::layers::Tape;
use crate::models::Model;
use crate::scalar::{Operand, WithNumber};

/// Plain SGD on a model's parameters (momentum and weight decay optional), used
/// by both the DP and the non-private step.
#[derive(Debug)]
pub struct Sgd {
    /// Learning rate.
    pub learning_rate: f64,
    /// Momentum; 0 = off.
    pub momentum: f64,
    /// Weight decay; 0 = off.
    pub weight_decay: f64,
    buffers: Option<Vec<Tensor>>,
}

impl Sgd {
    /// A fresh optimiser.
    pub fn new(learning_rate: f64, momentum: f64, weight_decay: f64) -> Self {
        Self {
            learning_rate,
            momentum,
            weight_decay,
            buffers: None,
        }
    }

    /// `θ ← θ − η·(g + λθ)` (with momentum `v ← μv + g + λθ`, `θ ← θ − ηv`, as
    /// `torch.optim.SGD`), for gradients in [`Model::named_parameters`] order.
    pub fn step(&mut self, model: &dyn Model, grads: &[Tensor]) -> Result<()> {
        self.step_gated(model, grads, None)
    }

    /// [`Sgd::step`], where every parameter keeps its value unless `gate.0`
    /// (a 0-dim boolean on the device) is true; `gate.1` is a 0-dim float zero
    /// on the same device. The DP step's update is gated by its checks
    /// without reading them back.
    pub fn step_gated(
        &mut self,
        model: &dyn Model,
        grads: &[Tensor],
        gate: Option<(&Tensor, &Tensor)>,
    ) -> Result<()> {
        let params = model.named_parameters();
        // Each number is built once for all parameters.
        let mut weight_decay = Operand::new(self.weight_decay);
        let mut momentum = Operand::new(self.momentum);
        let mut learning_rate = Operand::new(self.learning_rate);
        torch("the SGD update", || {
            tch::no_grad(|| {
                let mut updates: Vec<Tensor> = params
                    .iter()
                    .zip(grads)
                    .map(|((_, p), g)| {
                        if self.weight_decay != 0.0 {
                            g.f_add(&p.f_mul(&weight_decay.like(p)?)?)
                        } else {
                            Ok(g.shallow_clone())
                        }
                    })
                    .collect::<Result<_, TchError>>()?;
                if self.momentum != 0.0 {
                    match &mut self.buffers {
                        None => {
                            let copies = updates
                                .iter()
                                .map(|u| {
                                    let mut copy = u.f_zeros_like()?;
                                    match gate {
                                        Some((g, zero)) => {
                                            copy.f_copy_(&u.f_where_self(g, zero)?)?
                                        }
                                        None => copy.f_copy_(u)?,
                                    }
                                    Ok(copy)
                                })
                                .collect::<Result<_, TchError>>()?;
                            self.buffers = Some(copies);
                        }
                        Some(bufs) => {
                            for (buf, u) in bufs.iter_mut().zip(&updates) {
                                match gate {
                                    // A gated-off step keeps the momentum too.
                                    Some((g, _)) => {
                                        let next = buf.f_mul(&momentum.like(buf)?)?.f_add(u)?;
                                        buf.f_copy_(&next.f_where_self(g, buf)?)?;
                                    }
                                    None => {
                                        let factor = momentum.like(buf)?;
                                        let _ = buf.f_mul_(&factor)?;
                                        let _ = buf.f_add_(u)?;
                                    }
                                }
                            }
                        }
                    }
                    if let Some(bufs) = &self.buffers {
                        updates = bufs.iter().map(|b| b.shallow_clone()).collect();
                    }
                }
                // A gated-off step subtracts an exact 0 (`where`, not a
                // product: the update may hold NaN).
                for ((_, p), u) in params.iter().zip(&updates) {
                    let mut p = p.shallow_clone();
                    let delta = u.f_mul(&learning_rate.like(u)?)?;
                    let delta = match gate {
                        Some((g, zero)) => delta.f_where_self(g, zero)?,
                        None => delta,
                    };
                    let _ = p.f_sub_(&delta)?;
                }
                Ok(())
            })
        })
    }
}

/// One non-private step with the same model and optimiser (mean loss over
/// present slots of each replica, ordinary autograd): the baseline of `dpaudit
/// bench`.
pub fn non_private_step(model: &dyn Model, sgd: &mut Sgd, batch: &Batch) -> Result<f64> {
    let logits = model.forward(&batch.inputs, &mut Tape::off())?;
    let losses = per_sample_cross_entropy(&logits, &batch.targets)?;
    let b = losses.size().first().copied().unwrap_or(0).max(1) as f64;
    let total = torch("the mean loss", || losses.f_sum(Kind::Float)?.div_f64(b))?;
    let params: Vec<Tensor> = model
        .named_parameters()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let grads = Tensor::f_run_backward(&[&total], &params, false, false)
        .map_err(TrainError::torch("non-private backward"))?;
    sgd.step(model, &grads)?;
    torch("reading the loss", || total.f_double_value(&[]))
}
