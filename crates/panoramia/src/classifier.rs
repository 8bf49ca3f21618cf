//! The baseline `b` and the MIA (one architecture, Kazmi et al. 2024 §5.1
//! and Appendix B.1), and the real-vs-generated quality check.
//!
//! A small CNN reads the image: conv(C→16, 3, pad 1) → ReLU → max-pool 2 →
//! conv(16→32, 3, pad 1) → ReLU → max-pool 2 → linear(→64) → ReLU. The side
//! information — the helper's loss for the baseline, the target's loss for
//! the MIA — enters a small loss module, linear(2→16) → ReLU, on the
//! features `(ℓ, ln(ℓ + 10⁻⁶))` standardised with the training set's mean
//! and standard deviation. With `mia_losses = "target_and_helper"` the
//! module reads four features, linear(4→16): the MIA gets the helper's loss
//! and the target's, the baseline the helper's and two zero columns. The two representations are concatenated before
//! the last layer, linear(80→1), which gives the membership logit (the
//! paper concatenates the loss to the final representation before the last
//! layer; it stacks two modules with a logistic regression for images, one
//! network here). Without side information (the quality check) the last
//! layer is linear(64→1).
//!
//! Training: binary cross-entropy, Adam, shuffled minibatches; after every
//! epoch the validation accuracy is measured and the weights of the best
//! epoch are kept (the paper's model selection on a validation split, never
//! on the audit set). Scores are the logits: any increasing transform gives
//! the same thresholds.

use dpaudit_data::seed::SeedKey;
use tch::{Device, Reduction, Tensor};

use crate::error::{PanoramiaError, Result};
use crate::nn::Direction::Forward;
use crate::nn::{
    restore, snapshot, to_host, to_tensor, Adam, Conv2d, HostInit, Linear, Parameters,
};
use crate::records::{epoch_batches, Records};

type TResult<T> = std::result::Result<T, tch::TchError>;

/// Side-information features of one loss: `(ℓ, ln(ℓ + 10⁻⁶))`.
pub const LOSS_FEATURES: usize = 2;

/// Most side features per record: two losses.
pub const SIDE_FEATURES: usize = 2 * LOSS_FEATURES;

/// Side features of one record; a classifier reads the first
/// `side_width` of them.
pub type Side = [f64; SIDE_FEATURES];

/// The features `(ℓ, ln(ℓ + 10⁻⁶))` of a loss.
pub fn loss_features(losses: &[f64]) -> Vec<[f64; LOSS_FEATURES]> {
    losses
        .iter()
        .map(|&l| [l, (l.max(0.0) + 1e-6).ln()])
        .collect()
}

/// The classifier.
#[derive(Debug)]
pub struct MembershipNet {
    conv1: Conv2d,
    conv2: Conv2d,
    fc: Linear,
    side: Option<Linear>,
    head: Linear,
    /// Mean and std of each side feature (fitted on the training set).
    side_scale: Vec<(f64, f64)>,
}

impl Parameters for MembershipNet {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = vec![
            (
                "conv1.weight".to_string(),
                self.conv1.weight.shallow_clone(),
            ),
            ("conv1.bias".to_string(), self.conv1.bias.shallow_clone()),
            (
                "conv2.weight".to_string(),
                self.conv2.weight.shallow_clone(),
            ),
            ("conv2.bias".to_string(), self.conv2.bias.shallow_clone()),
            ("fc.weight".to_string(), self.fc.weight.shallow_clone()),
            ("fc.bias".to_string(), self.fc.bias.shallow_clone()),
        ];
        if let Some(s) = &self.side {
            out.push(("side.weight".to_string(), s.weight.shallow_clone()));
            out.push(("side.bias".to_string(), s.bias.shallow_clone()));
        }
        out.push(("head.weight".to_string(), self.head.weight.shallow_clone()));
        out.push(("head.bias".to_string(), self.head.bias.shallow_clone()));
        out
    }
}

impl MembershipNet {
    /// A fresh classifier for images of `shape` reading `side_width` side
    /// features per record (0: none; at most [`SIDE_FEATURES`]).
    pub fn new(init: &mut HostInit, shape: [i64; 3], side_width: usize) -> Result<Self> {
        let side_width = side_width.min(SIDE_FEATURES);
        let with_side = side_width > 0;
        let [c, h, w] = shape;
        let flat = 32 * (h / 4) * (w / 4);
        let conv1 = Conv2d::new(init, Forward, c, 16, 3, 1, 1)?;
        let conv2 = Conv2d::new(init, Forward, 16, 32, 3, 1, 1)?;
        let fc = Linear::new(init, flat, 64)?;
        let side = if with_side {
            Some(Linear::new(init, side_width as i64, 16)?)
        } else {
            None
        };
        let head = Linear::new(init, if with_side { 80 } else { 64 }, 1)?;
        Ok(Self {
            conv1,
            conv2,
            fc,
            side,
            head,
            side_scale: vec![(0.0, 1.0); side_width],
        })
    }

    fn logits(&self, x: &Tensor, side: Option<&Tensor>) -> TResult<Tensor> {
        let h =
            self.conv1
                .forward(x)?
                .f_relu()?
                .f_max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], false)?;
        let h = self.conv2.forward(&h)?.f_relu()?.f_max_pool2d(
            [2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            false,
        )?;
        let h = self.fc.forward(&h.f_flatten(1, -1)?)?.f_relu()?;
        let h = match (&self.side, side) {
            (Some(layer), Some(s)) => {
                let s = layer.forward(s)?.f_relu()?;
                Tensor::f_cat(&[h, s], 1)?
            }
            _ => h,
        };
        self.head.forward(&h)?.f_reshape([-1])
    }

    fn side_tensor(&self, side: &[Side], idx: &[usize], device: Device) -> Result<Tensor> {
        let width = self.side_scale.len();
        let mut v = Vec::with_capacity(idx.len() * width);
        for &i in idx {
            for (k, &(m, s)) in self.side_scale.iter().enumerate() {
                v.push(((side[i][k] - m) / s) as f32);
            }
        }
        to_tensor(&v, idx.len(), &[width], device)
    }

    /// Logits of every record (in chunks), no gradient.
    pub fn scores(
        &self,
        data: &Records,
        side: Option<&[Side]>,
        device: Device,
    ) -> Result<Vec<f64>> {
        let mut out = Vec::with_capacity(data.len());
        tch::no_grad(|| -> Result<()> {
            for start in (0..data.len()).step_by(1024) {
                let idx: Vec<usize> = (start..(start + 1024).min(data.len())).collect();
                let x = data.batch(&idx, device)?;
                let s = match side {
                    Some(s) => Some(self.side_tensor(s, &idx, device)?),
                    None => None,
                };
                let l = self
                    .logits(&x, s.as_ref())
                    .map_err(PanoramiaError::torch("scoring with a classifier"))?;
                out.extend(to_host(&l)?);
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// One labelled set for a binary classifier: records, their 0/1 labels and
/// optional side features.
#[derive(Debug)]
pub struct Labelled<'a> {
    /// Records (images in [0, 1]).
    pub data: &'a Records,
    /// `true` = member (real).
    pub labels: &'a [bool],
    /// Side features per record.
    pub side: Option<&'a [Side]>,
}

/// What training a classifier reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FitReport {
    /// Validation accuracy of every epoch.
    pub validation_accuracy: Vec<f64>,
    /// The kept epoch (1-based).
    pub best_epoch: u64,
    /// Its validation accuracy.
    pub best_validation_accuracy: f64,
}

/// Accuracy of logits against labels (logit > 0 ⇔ member).
pub fn accuracy(logits: &[f64], labels: &[bool]) -> f64 {
    if logits.is_empty() {
        return 0.0;
    }
    let hits = logits
        .iter()
        .zip(labels)
        .filter(|(&l, &y)| (l > 0.0) == y)
        .count();
    hits as f64 / logits.len() as f64
}

/// Train `net` on `train`, keep the epoch with the best accuracy on
/// `validation`. `key` orders the minibatches; `name` appears in errors;
/// `on_epoch(epoch, validation accuracy)` reports progress.
#[allow(clippy::too_many_arguments)]
pub fn fit(
    net: &mut MembershipNet,
    train: &Labelled<'_>,
    validation: &Labelled<'_>,
    fit: &crate::config::FitConfig,
    key: SeedKey,
    device: Device,
    name: &str,
    on_epoch: &mut dyn FnMut(u64, f64),
) -> Result<FitReport> {
    if let Some(side) = train.side {
        // Standardise each side feature with the training set's statistics.
        let n = side.len().max(1) as f64;
        net.side_scale = (0..net.side_scale.len())
            .map(|k| {
                let m = side.iter().map(|s| s[k]).sum::<f64>() / n;
                let v = side.iter().map(|s| (s[k] - m).powi(2)).sum::<f64>() / n;
                let sd = v.sqrt();
                (m, if sd > 1e-12 { sd } else { 1.0 })
            })
            .collect();
    }
    let params: Vec<Tensor> = net.parameters().into_iter().map(|(_, t)| t).collect();
    let mut adam = Adam::new(fit.learning_rate);
    let mut best: Option<(f64, u64, Vec<Tensor>)> = None;
    let mut history = Vec::new();
    for epoch in 0..fit.epochs {
        let mut total = 0.0;
        for idx in epoch_batches(train.data.len(), fit.batch_size, key, epoch) {
            let x = train.data.batch(&idx, device)?;
            let y: Vec<f32> = idx
                .iter()
                .map(|&i| f32::from(u8::from(train.labels[i])))
                .collect();
            let y = Tensor::f_from_slice(&y)
                .and_then(|t| t.f_to_device(device))
                .map_err(PanoramiaError::torch("moving labels"))?;
            let side = match train.side {
                Some(s) => Some(net.side_tensor(s, &idx, device)?),
                None => None,
            };
            let loss = net
                .logits(&x, side.as_ref())
                .and_then(|l| {
                    l.f_binary_cross_entropy_with_logits::<Tensor>(&y, None, None, Reduction::Mean)
                })
                .map_err(PanoramiaError::torch(format!("the {name}'s forward pass")))?;
            loss.f_backward()
                .map_err(PanoramiaError::torch(format!("the {name}'s backward pass")))?;
            adam.step(&params)?;
            total += loss.f_double_value(&[]).unwrap_or(f64::NAN) * idx.len() as f64;
        }
        if !total.is_finite() {
            return Err(PanoramiaError::NonFinite {
                model: name.to_string(),
                epoch: epoch + 1,
                value: total,
            });
        }
        let logits = net.scores(validation.data, validation.side, device)?;
        let acc = accuracy(&logits, validation.labels);
        history.push(acc);
        on_epoch(epoch + 1, acc);
        if best.as_ref().is_none_or(|(b, _, _)| acc > *b) {
            best = Some((acc, epoch + 1, snapshot(&params)?));
        }
    }
    let (best_acc, best_epoch, saved) = best.ok_or_else(|| PanoramiaError::Config {
        file: "<config>".into(),
        field: format!("{name}.epochs"),
        value: "0".into(),
        expected: "at least 1".into(),
    })?;
    restore(&params, &saved)?;
    Ok(FitReport {
        validation_accuracy: history,
        best_epoch,
        best_validation_accuracy: best_acc,
    })
}

/// Train a real-vs-generated classifier without side information (the
/// quality check, the filter): `train` and `validation` are `[real,
/// generated]` pairs of equal sizes, real labelled `true`; parameters drawn
/// from `init`, minibatches ordered by `batches`.
#[allow(clippy::too_many_arguments)]
pub fn fit_real_vs_generated(
    train: [&Records; 2],
    validation: [&Records; 2],
    shape: [i64; 3],
    fit_cfg: &crate::config::FitConfig,
    (init, batches): (SeedKey, SeedKey),
    device: Device,
    name: &str,
    on_epoch: &mut dyn FnMut(u64, f64),
) -> Result<(MembershipNet, FitReport)> {
    let (n_train, n_val) = (train[0].len(), validation[0].len());
    let train = train[0].concat(train[1]);
    let val = validation[0].concat(validation[1]);
    let labels = |k: usize| -> Vec<bool> { (0..2 * k).map(|i| i < k).collect() };
    let (ytr, yval) = (labels(n_train), labels(n_val));
    let mut init = HostInit::new(init, device);
    let mut net = MembershipNet::new(&mut init, shape, 0)?;
    let report = fit(
        &mut net,
        &Labelled {
            data: &train,
            labels: &ytr,
            side: None,
        },
        &Labelled {
            data: &val,
            labels: &yval,
            side: None,
        },
        fit_cfg,
        batches,
        device,
        name,
        on_epoch,
    )?;
    Ok((net, report))
}
