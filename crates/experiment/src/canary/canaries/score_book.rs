//! The scores of every replica and canary, accumulated over a run on the
//! device.

use tch::{Device, Kind, Tensor};

use dpaudit_train::error::{invalid, torch, Result};
use dpaudit_train::models::Model;
use dpaudit_train::scalar::WithNumber;

use super::realised::{canary_gradients, canary_losses, flat_parameters, Canaries};
use dpaudit_plan::canary::canaries::ScoreKind;

/// Accumulates the scores of every replica and canary over a run.
#[derive(Debug)]
pub struct ScoreBook {
    kinds: Vec<ScoreKind>,
    theta0: Tensor,
    loss0: Option<Tensor>,
    iterates: Option<Tensor>,
    pending: Option<(Tensor, Tensor)>,
    max_grad_norm: f64,
    observations: Option<ObservationSetup>,
    per_step: Vec<Tensor>,
}

/// How per-step inner products become the observations of Annamalai et al. 2024 (§5.3)
/// `o_t = normaliser·⟨θ_t − θ_{t+1}, ĝ⟩/(η·C²)`: with plain SGD (no momentum,
/// no weight decay) `θ_t − θ_{t+1} = η·g̃`, and `normaliser·g̃` is the noisy
/// sum, so a step holding `±ĝ` (‖ĝ‖ = C) contributes `±1` and the noise has
/// std exactly σ (the normalisation of Annamalai et al. 2024, Alg. 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObservationSetup {
    /// The public constant the noisy sum is divided by.
    pub normaliser: f64,
    /// η.
    pub learning_rate: f64,
    /// σ.
    pub noise_multiplier: f64,
    /// T: steps per epoch (the observation matrix has `steps / T` rows).
    pub steps_per_epoch: usize,
}

impl ScoreBook {
    /// Start at θ₀ (call before the first step).
    pub fn start(
        model: &dyn Model,
        canaries: &Canaries,
        kinds: &[ScoreKind],
        max_grad_norm: f64,
    ) -> Result<Self> {
        for &k in kinds {
            if !canaries.config.kind.admits(k) {
                return Err(invalid(
                    "audit.scores",
                    k.name(),
                    format!("a score defined for {:?} canaries", canaries.config.kind),
                ));
            }
        }
        let theta0 = flat_parameters(model)?;
        let loss0 = match kinds.contains(&ScoreKind::LossDifference) {
            true => canary_losses(model, canaries)?,
            false => None,
        };
        let iterates = match kinds.contains(&ScoreKind::Iterates) {
            true => Some(torch("allocating the iterates scores", || {
                Tensor::f_zeros(
                    [model.replicas(), canaries.count() as i64],
                    (Kind::Double, theta0.device()),
                )
            })?),
            false => None,
        };
        Ok(Self {
            kinds: kinds.to_vec(),
            theta0,
            loss0,
            iterates,
            pending: None,
            max_grad_norm,
            observations: None,
            per_step: Vec::new(),
        })
    }

    /// Record per-step observations for the likelihood-ratio scores.
    pub fn with_observations(mut self, setup: ObservationSetup) -> Self {
        self.observations = Some(setup);
        self
    }

    fn records_steps(&self) -> bool {
        self.iterates.is_some()
            || (self.observations.is_some()
                && self
                    .kinds
                    .iter()
                    .any(|k| matches!(k, ScoreKind::NaturalLr | ScoreKind::PartiallyInformedLr)))
    }

    /// Call before each step (records θ_t and the canary gradients at θ_t).
    pub fn before_step(&mut self, model: &dyn Model, canaries: &Canaries) -> Result<()> {
        if self.records_steps() {
            let g = canary_gradients(model, canaries, self.max_grad_norm)?;
            self.pending = Some((flat_parameters(model)?, g));
        }
        Ok(())
    }

    /// Call after each step: adds `⟨θ_t − θ_{t+1}, g_t⟩`.
    pub fn after_step(&mut self, model: &dyn Model) -> Result<()> {
        if let Some((before, g)) = self.pending.take() {
            let after = flat_parameters(model)?;
            torch("the per-step inner products", || {
                let delta = before.f_sub(&after)?;
                // [M, m, P] · [M, P, 1] → [M, m]
                let ip = g
                    .f_bmm(&delta.f_unsqueeze(-1)?)?
                    .f_squeeze_dim(-1)?
                    .f_to_kind(Kind::Double)?;
                if self.observations.is_some() {
                    self.per_step.push(ip.shallow_clone());
                }
                if let Some(acc) = &mut self.iterates {
                    let _ = acc.f_add_(&ip)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// The scores `[M][m]` per kind, in the order given at [`ScoreBook::start`].
    pub fn finish(&self, model: &dyn Model, canaries: &Canaries) -> Result<Vec<Vec<Vec<f64>>>> {
        let theta = flat_parameters(model)?;
        // θ₀ − θ_T, [M, P]
        let diff = torch("the parameter update", || {
            self.theta0.f_sub(&theta)?.f_to_kind(Kind::Double)
        })?;
        let mut out = Vec::new();
        for &k in &self.kinds {
            let t: Tensor = match k {
                ScoreKind::Dirac => torch("the Dirac scores", || {
                    let idx: Vec<i64> = canaries.coordinates.iter().map(|&d| d as i64).collect();
                    let idx = Tensor::f_from_slice(&idx)?.f_to_device(diff.device())?;
                    diff.f_index_select(1, &idx)
                })?,
                ScoreKind::InnerProduct | ScoreKind::Cosine => {
                    let g = canaries
                        .gradients
                        .as_ref()
                        .ok_or_else(|| invalid("audit.scores", k.name(), "gradient canaries"))?;
                    torch("the inner-product and cosine scores", || {
                        let g = g.f_to_kind(Kind::Double)?;
                        let ip = diff.f_matmul(&g.f_transpose(0, 1)?)?;
                        if k == ScoreKind::Cosine {
                            let dn = diff
                                .f_square()?
                                .f_sum_dim_intlist(1, true, Kind::Double)?
                                .f_sqrt()?;
                            let gn = g
                                .f_square()?
                                .f_sum_dim_intlist(1, false, Kind::Double)?
                                .f_sqrt()?
                                .f_unsqueeze(0)?;
                            // A zero update has no direction: cosine 0.
                            ip.f_div(&dn.f_mul(&gn)?)?.f_nan_to_num(0.0, 0.0, 0.0)
                        } else {
                            Ok(ip)
                        }
                    })?
                }
                ScoreKind::Iterates => {
                    torch("the iterates scores", || match self.iterates.as_ref() {
                        Some(t) => {
                            let mut copy = t.f_zeros_like()?;
                            copy.f_copy_(t)?;
                            Ok(copy)
                        }
                        None => diff.f_zeros_like(),
                    })?
                }
                ScoreKind::Loss => {
                    let now = canary_losses(model, canaries)?
                        .ok_or_else(|| invalid("audit.scores", "loss", "input canaries"))?;
                    torch("the loss scores", || now.f_to_kind(Kind::Double)?.f_neg())?
                }
                ScoreKind::LossDifference => {
                    let now = canary_losses(model, canaries)?.ok_or_else(|| {
                        invalid("audit.scores", "loss_difference", "input canaries")
                    })?;
                    let before = self.loss0.as_ref().ok_or_else(|| {
                        invalid("audit.scores", "loss_difference", "input canaries")
                    })?;
                    torch("the loss-difference scores", || {
                        before.f_sub(&now)?.f_to_kind(Kind::Double)
                    })?
                }
                ScoreKind::NaturalLr | ScoreKind::PartiallyInformedLr => {
                    self.likelihood_ratios(k, canaries)?
                }
                ScoreKind::UpdateNorm => torch("the update-norm scores", || {
                    diff.f_square()?
                        .f_sum_dim_intlist(1, true, Kind::Double)?
                        .f_neg()?
                        .f_expand([-1, canaries.count() as i64], false)
                })?,
            };
            out.push(to_rows(&t)?);
        }
        Ok(out)
    }
}

impl ScoreBook {
    /// `log Λ` of every replica's and canary's observation matrix, `[M, m]`.
    fn likelihood_ratios(&self, kind: ScoreKind, canaries: &Canaries) -> Result<Tensor> {
        let setup = self.observations.ok_or_else(|| {
            invalid(
                "audit.scores",
                kind.name(),
                "per-step observations (shuffle-type sampler, sampled insertion)",
            )
        })?;
        let lr = match kind {
            ScoreKind::NaturalLr => dpaudit_attacks::LikelihoodRatio::Natural,
            _ => dpaudit_attacks::LikelihoodRatio::PartiallyInformed,
        };
        let c2 = self.max_grad_norm * self.max_grad_norm;
        let scale = setup.normaliser / (setup.learning_rate * c2);
        let t = setup.steps_per_epoch.max(1);
        let epochs = self.per_step.len() / t;
        if epochs == 0 {
            return Err(invalid(
                "train.steps",
                self.per_step.len(),
                format!("at least one whole epoch of {t} steps for the likelihood-ratio scores"),
            ));
        }
        // [steps, M, m] → host, o[r][j] = E×T row-major.
        let (m_rep, host) = torch("copying observations to the host", || {
            let all = Tensor::f_stack(&self.per_step[..epochs * t], 0)?.mul_f64(scale)?;
            let m_rep = all.size()[1] as usize;
            let host = all
                .f_permute([1, 2, 0])?
                .f_contiguous()?
                .f_reshape([-1])?
                .f_to_device(Device::Cpu)?;
            Ok((m_rep, Vec::<f64>::try_from(host)?))
        })?;
        let m = canaries.count();
        let mut out = vec![0f64; m_rep * m];
        for (k, o) in out.iter_mut().enumerate() {
            let row = &host[k * epochs * t..(k + 1) * epochs * t];
            let matrix = dpaudit_attacks::ObservationMatrix::new(epochs, t, row.to_vec())
                .map_err(|e| invalid("observations", kind.name(), e.to_string()))?;
            *o = dpaudit_attacks::log_likelihood_ratio(lr, &matrix, setup.noise_multiplier, t)
                .map_err(|e| invalid("observations", kind.name(), e.to_string()))?;
        }
        torch("the likelihood-ratio scores", || {
            Tensor::f_from_slice(&out)?.f_reshape([m_rep as i64, m as i64])
        })
    }
}

fn to_rows(t: &Tensor) -> Result<Vec<Vec<f64>>> {
    let (size, flat) = torch("copying scores to the host", || {
        let t = t
            .f_to_device(Device::Cpu)?
            .f_to_kind(Kind::Double)?
            .f_contiguous()?;
        Ok((t.size(), Vec::<f64>::try_from(t.f_reshape([-1])?)?))
    })?;
    let (r, c) = (size[0] as usize, size[1] as usize);
    Ok((0..r).map(|i| flat[i * c..(i + 1) * c].to_vec()).collect())
}
