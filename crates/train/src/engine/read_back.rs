//! The step's report and checks, written to a table on the device and read
//! back every few steps.

use tch::{Kind, Tensor};

use super::backprop::Backprops;
use super::clip::ClipCoefficients;
use super::noisy::NoisySum;
use crate::error::{torch, Result, TrainError};
use crate::models::Model;
use crate::scalar::WithNumber;

/// What one step reports. The figures are sums over the steps since the
/// previous read-back from the device ([`DpSgd::set_read_back_every`](super::DpSgd::set_read_back_every)):
/// `steps` of them, ending at `step`; `steps = 0` (and zero figures) on a
/// step whose figures stay on the device.
#[derive(Debug, Clone)]
pub struct StepReport {
    /// Zero-based index of the step just taken.
    pub step: u64,
    /// How many steps the figures cover (`1` when every step is read back).
    pub steps: u64,
    /// Sum of the losses of present slots with computed gradients, all
    /// replicas, over those steps.
    pub loss_sum: f64,
    /// Number of slots whose computed gradient counted, over those steps.
    pub samples: f64,
    /// Fraction of those slots that were clipped (`‖g_i‖ > C`).
    pub clipped_fraction: f64,
}

impl StepReport {
    /// Whether this report carries figures read back from the device.
    pub fn is_read_back(&self) -> bool {
        self.steps > 0
    }

    /// Mean loss per counted slot over the steps covered (NaN when none).
    pub fn mean_loss(&self) -> f64 {
        if self.samples > 0.0 {
            self.loss_sum / self.samples
        } else {
            f64::NAN
        }
    }
}

/// How often the training loops (experiment chunks, `dpaudit train`) read
/// a step's report and checks back from the device: each read-back waits
/// for the device to finish everything queued, so a GPU loop that read every
/// step would idle while the host queues the next one. Figures and checks
/// accumulate on the device in between (see [`DpSgd::step`](super::DpSgd::step)).
pub const LOOP_READ_BACK_EVERY: u64 = 16;

/// The steps since the last read-back, as the device holds them.
#[derive(Debug)]
struct Pending {
    /// `[k, 3 + 1 + F]` float64 on the device, one row per step of the window
    /// (`k` = steps between read-backs): loss sum, counted slots, clipped
    /// slots, then the checks, 1 (passed) or 0: the loss is finite, then each
    /// entry of `norms_finite` and of `sums_finite`.
    table: Tensor,
    /// Boolean, 0-dim, on the device: every step so far passed its checks.
    gate: Tensor,
    /// A 0-dim float zero on the device, what a gated-off update subtracts.
    zero: Tensor,
    /// Rows of the table: the read-back interval when the window began.
    rows: u64,
    /// The step of the first row.
    first_step: u64,
    /// Rows written.
    steps: u64,
    /// Entries of `norms_finite` among the checks.
    norm_checks: usize,
    /// The model's layer names, for the error message.
    layers: Vec<String>,
}

/// Columns of [`Pending::table`] before the checks.
const FIGURES: usize = 3;

/// The steps since the last read-back, and how often to read them back: the
/// part of [`DpSgd`](super::DpSgd) that keeps each step's figures and checks
/// on the device.
#[derive(Debug)]
pub(super) struct ReadBack {
    /// Steps between read-backs (at least 1).
    pub(super) every: u64,
    /// The table being written, once a step was recorded since the last
    /// read-back.
    pending: Option<Pending>,
}

impl ReadBack {
    /// Reading back every step, nothing recorded yet.
    pub(super) fn new() -> Self {
        Self {
            every: 1,
            pending: None,
        }
    }

    /// Whether the table holds as many steps as it has rows.
    pub(super) fn due(&self) -> bool {
        self.pending.as_ref().is_some_and(|p| p.steps >= p.rows)
    }

    /// Write this step's figures and checks into the device's table of the
    /// steps since the last read-back; return the gate of its update (true
    /// while every step since the last read-back passed its checks) and the
    /// zero a gated-off update subtracts.
    pub(super) fn record(
        &mut self,
        step: u64,
        model: &dyn Model,
        parts: &StepParts,
    ) -> Result<(Tensor, Tensor)> {
        let bp = &parts.backprops;
        let coef = &parts.coef;
        let flags: Vec<&Tensor> = parts
            .norms_finite
            .iter()
            .chain(&parts.sums_finite)
            .collect();
        let width = (FIGURES + 1 + flags.len()) as i64;
        let mut pending = match self.pending.take() {
            Some(p) => p,
            None => {
                let device = bp.computed.device();
                let rows = self.every;
                torch("the table of the steps until the next read-back", || {
                    Ok(Pending {
                        table: Tensor::f_zeros([rows as i64, width], (Kind::Double, device))?,
                        gate: Tensor::f_ones([], (Kind::Bool, device))?,
                        zero: Tensor::f_zeros([], (Kind::Float, device))?,
                        rows,
                        first_step: step,
                        steps: 0,
                        norm_checks: parts.norms_finite.len(),
                        layers: model.layers().into_iter().map(|(n, _)| n).collect(),
                    })
                })?
            }
        };
        if pending.table.size().get(1) != Some(&width) {
            return Err(TrainError::Shape {
                what: "the table of the steps since the last read-back".into(),
                got: pending.table.size(),
                expected: format!("[k, {width}]: the same model at every step"),
            });
        }
        torch("recording the step's checks on the device", || {
            let loss_sum = bp.losses.f_mul(&bp.computed)?.f_sum(Kind::Double)?;
            let samples = bp.computed.f_sum(Kind::Double)?;
            let clipped = coef
                .computed
                .lt_f64(1.0)?
                .f_to_kind(Kind::Double)?
                .f_mul(&bp.computed)?
                .f_sum(Kind::Double)?;
            let loss_finite = loss_sum.f_isfinite()?;
            let checks = Tensor::f_stack(
                &std::iter::once(&loss_finite)
                    .chain(flags.iter().copied())
                    .collect::<Vec<_>>(),
                0,
            )?;
            let figures = Tensor::f_stack(&[&loss_sum, &samples, &clipped], 0)?;
            let row = Tensor::f_cat(&[figures, checks.f_to_kind(Kind::Double)?], 0)?;
            pending
                .table
                .f_select(0, pending.steps as i64)?
                .f_copy_(&row)?;
            let _ = pending.gate.f_logical_and_(&checks.f_all()?)?;
            Ok(())
        })?;
        pending.steps += 1;
        let gate = (pending.gate.shallow_clone(), pending.zero.shallow_clone());
        self.pending = Some(pending);
        Ok(gate)
    }

    /// Read the steps since the last read-back from the device: their report,
    /// or the error of the first that failed its checks (that step and every
    /// later one left the parameters unchanged). `None` when there are none.
    pub(super) fn read_back(&mut self) -> Result<Option<StepReport>> {
        let Some(p) = self.pending.take() else {
            return Ok(None);
        };
        crate::op_count::host_read();
        let host: Vec<f64> = torch("reading the steps' report", || {
            Vec::<f64>::try_from(
                &p.table
                    .f_narrow(0, 0, p.steps as i64)?
                    .f_to_device(tch::Device::Cpu)?
                    .f_reshape([-1])?,
            )
        })?;
        let width = host.len() / p.steps.max(1) as usize;
        let (mut loss_sum, mut samples, mut clipped) = (0.0, 0.0, 0.0);
        for (j, row) in host.chunks(width.max(1)).enumerate() {
            let step = p.first_step + j as u64;
            let (figures, checks) = row.split_at(FIGURES.min(row.len()));
            if let Some(i) = checks.iter().position(|&c| c != 1.0) {
                return Err(failure(step, figures[0], i, p.norm_checks, &p.layers));
            }
            loss_sum += figures[0];
            samples += figures[1];
            clipped += figures[2];
        }
        Ok(Some(StepReport {
            step: p.first_step + p.steps.saturating_sub(1),
            steps: p.steps,
            loss_sum,
            samples,
            clipped_fraction: if samples > 0.0 {
                clipped / samples
            } else {
                0.0
            },
        }))
    }
}

/// The error of a step whose check `check` failed: 0 is the loss, then the
/// `norm_checks` per-sample norm checks (one per layer, then the overrides),
/// then the clipped sums (one per layer).
fn failure(
    step: u64,
    loss: f64,
    check: usize,
    norm_checks: usize,
    layers: &[String],
) -> TrainError {
    let layer = |i: usize| layers.get(i).cloned().unwrap_or_else(|| "overrides".into());
    match check.checked_sub(1) {
        None => TrainError::NonFiniteLoss { step, loss },
        Some(i) if i < norm_checks => TrainError::NonFinite {
            step,
            layer: layer(i),
            what: "per-sample gradient norm".into(),
        },
        Some(i) => TrainError::NonFinite {
            step,
            layer: layer(i - norm_checks),
            what: "clipped sum".into(),
        },
    }
}

/// What [`DpSgd::step`](super::DpSgd::step) needs from the pipeline before it
/// touches the model.
pub(super) struct StepParts {
    pub(super) noisy: NoisySum,
    pub(super) backprops: Backprops,
    pub(super) coef: ClipCoefficients,
    pub(super) norms_finite: Vec<Tensor>,
    pub(super) sums_finite: Vec<Tensor>,
}
