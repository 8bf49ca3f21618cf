//! The realised canaries on the device: their gradients or records, the
//! batches they join, and their losses and clipped gradients under a model.

use rand::seq::index::sample;
use rand::Rng;
use tch::{Device, Kind, TchError, Tensor};

use dpaudit_data::dataset::Dataset;
use dpaudit_data::seed::{RunSeed, Stream};
use dpaudit_train::engine::{forward_backward, per_sample_cross_entropy, Batch};
use dpaudit_train::error::{invalid, torch, Result};
use dpaudit_train::gather::{gather_slots, Extra};
use dpaudit_train::layers::Tape;
use dpaudit_train::models::Model;
use dpaudit_train::scalar::WithNumber;

use dpaudit_plan::canary::canaries::{CanaryConfig, CanaryKind};

/// The realised canaries of an experiment: the same for every run.
#[derive(Debug)]
pub struct Canaries {
    /// What they are.
    pub config: CanaryConfig,
    /// Gradient canaries: `[m, P]` on the device (norm `scale·C` each).
    pub gradients: Option<Tensor>,
    /// Dirac canaries: the coordinates, in flat parameter order.
    pub coordinates: Vec<usize>,
    /// Input canaries: `m` records (labels already changed for mislabeled ones).
    pub records: Option<Dataset>,
    /// Input canaries: the labels the records had in the test set.
    pub true_labels: Vec<i64>,
}

impl Canaries {
    /// Number of canaries `m`.
    pub fn count(&self) -> usize {
        self.config.count
    }

    /// Gradient canaries with given coordinates (Dirac) or random directions.
    /// `num_parameters` = `P`. The coordinates, when given, must be distinct
    /// and `< P`.
    pub fn gradient(
        config: &CanaryConfig,
        num_parameters: usize,
        max_grad_norm: f64,
        coordinates: Option<Vec<usize>>,
        seed: RunSeed,
        device: Device,
    ) -> Result<Self> {
        let m = config.count;
        let p = num_parameters;
        let norm = config.scale * max_grad_norm;
        let (gradients, coordinates) = match config.kind {
            CanaryKind::Dirac => {
                if m > p {
                    return Err(invalid(
                        "canary.count",
                        m,
                        format!(
                            "at most the number of parameters ({p}): Dirac canaries need distinct coordinates"
                        ),
                    ));
                }
                let coords = match coordinates {
                    Some(c) => c,
                    None => {
                        let mut rng = seed.stream(Stream::Canary).child(0).rng();
                        sample(&mut rng, p, m).into_vec()
                    }
                };
                let mut host = vec![0f32; m * p];
                for (j, &d) in coords.iter().enumerate() {
                    host[j * p + d] = norm as f32;
                }
                (upload_rows(&host, m, p, device)?, coords)
            }
            CanaryKind::RandomDirection => {
                let mut rng = seed.stream(Stream::Canary).child(0).rng();
                let mut host = vec![0f32; m * p];
                for row in host.chunks_mut(p.max(1)) {
                    let mut sq = 0f64;
                    for v in row.iter_mut() {
                        let z: f64 = rng.sample(rand_distr_normal());
                        *v = z as f32;
                        sq += z * z;
                    }
                    let k = norm / sq.sqrt();
                    for v in row.iter_mut() {
                        *v = (*v as f64 * k) as f32;
                    }
                }
                (upload_rows(&host, m, p, device)?, Vec::new())
            }
            _ => {
                return Err(invalid(
                    "canary.kind",
                    format!("{:?}", config.kind),
                    "a gradient canary kind (dirac, random_direction)",
                ))
            }
        };
        Ok(Self {
            config: config.clone(),
            gradients: Some(gradients),
            coordinates,
            records: None,
            true_labels: Vec::new(),
        })
    }

    /// Input canaries: `m` records drawn without replacement from `pool` (the
    /// test split); mislabeled ones get a uniformly drawn wrong label.
    pub fn input(config: &CanaryConfig, pool: &Dataset, seed: RunSeed) -> Result<Self> {
        let m = config.count;
        if m > pool.len() {
            return Err(invalid(
                "canary.count",
                m,
                format!(
                    "at most the {} records of the test split the canaries are drawn from",
                    pool.len()
                ),
            ));
        }
        let classes = pool.num_classes() as i64;
        if config.kind == CanaryKind::Mislabeled && classes < 2 {
            return Err(invalid(
                "canary.kind",
                "mislabeled",
                "a dataset with at least 2 classes",
            ));
        }
        let mut rng = seed.stream(Stream::Canary).child(2).rng();
        let idx = sample(&mut rng, pool.len(), m).into_vec();
        let subset = pool
            .subset(&idx)
            .map_err(|e| invalid("canary", "records", e.to_string()))?;
        let true_labels = subset.labels().to_vec();
        let records = if config.kind == CanaryKind::Mislabeled {
            let labels: Vec<i64> = true_labels
                .iter()
                .map(|&y| {
                    let shift = rng.gen_range(1..classes);
                    (y + shift) % classes
                })
                .collect();
            let (features, _) = subset.clone().into_parts();
            Dataset::new(
                pool.kind(),
                features,
                labels,
                pool.shape().to_vec(),
                pool.class_names().to_vec(),
                pool.source().clone(),
            )
            .map_err(|e| invalid("canary", "records", e.to_string()))?
        } else {
            subset
        };
        Ok(Self {
            config: config.clone(),
            gradients: None,
            coordinates: Vec::new(),
            records: Some(records),
            true_labels,
        })
    }
}

/// `host` (`m` rows of `p`) as an `[m, p]` tensor on `device`.
fn upload_rows(host: &[f32], m: usize, p: usize, device: Device) -> Result<Tensor> {
    torch("uploading the gradient canaries", || {
        Tensor::f_from_slice(host)?
            .f_reshape([m as i64, p as i64])?
            .f_to_device(device)
    })
}

fn rand_distr_normal() -> impl rand::distributions::Distribution<f64> {
    // Box–Muller from two uniforms: no extra dependency for one use.
    struct Normal;
    impl rand::distributions::Distribution<f64> for Normal {
        fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
            let u1: f64 = 1.0 - rng.gen::<f64>();
            let u2: f64 = rng.gen();
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        }
    }
    Normal
}

/// All parameters of every replica as one `[M, P]` tensor (detached copy), in
/// [`Model::named_parameters`] order — the order of gradient canaries.
pub fn flat_parameters(model: &dyn Model) -> Result<Tensor> {
    let m = model.replicas();
    torch("flattening the parameters", || {
        // Under no_grad nothing is recorded and `cat` copies: the result
        // neither requires a gradient nor aliases a parameter, without a
        // `detach` per parameter (one operator each).
        tch::no_grad(|| {
            let parts = model
                .named_parameters()
                .iter()
                .map(|(_, t)| t.f_reshape([m, -1]))
                .collect::<Result<Vec<Tensor>, TchError>>()?;
            Tensor::f_cat(&parts, 1)
        })
    })
}

/// Overwrite every replica's parameters with replica 0's (a fixed θ₀).
pub fn copy_replica_zero(model: &dyn Model) -> Result<()> {
    torch("copying replica 0's parameters to every replica", || {
        tch::no_grad(|| {
            for (_, t) in model.named_parameters() {
                let first = t.f_get(0)?;
                let mut first_copy = first.f_zeros_like()?;
                first_copy.f_copy_(&first)?;
                let mut t = t.shallow_clone();
                t.f_copy_(&first_copy.f_unsqueeze(0)?.f_expand_as(&t)?)?;
            }
            Ok(())
        })
    })
}

/// Gather genuine records plus canary slots into one batch: replica `r` gets
/// `batches[r]` then `extras[r]`, padded with masked zero slots.
pub fn gather_with_canaries(
    data: &Dataset,
    batches: &[Vec<usize>],
    canaries: Option<&Canaries>,
    extras: &[Vec<Extra>],
    device: Device,
) -> Result<Batch> {
    gather_slots(
        data,
        batches,
        canaries.and_then(|c| c.records.as_ref()),
        canaries.and_then(|c| c.gradients.as_ref()),
        extras,
        device,
    )
}

/// The `[m, M, record]` batch of all input canaries for every replica
/// (`None` for gradient canaries).
fn canary_record_batch(
    canaries: &Canaries,
    replicas: i64,
    device: Device,
) -> Result<Option<Batch>> {
    let Some(rec) = canaries.records.as_ref() else {
        return Ok(None);
    };
    let m = rec.len() as i64;
    let mut shape = vec![m, 1];
    shape.extend(rec.shape().iter().map(|&d| d as i64));
    let mut expand = vec![m, replicas];
    expand.extend(rec.shape().iter().map(|&d| d as i64));
    torch("uploading the input canaries", || {
        let x = Tensor::f_from_slice(rec.features())?
            .f_reshape(shape.as_slice())?
            .f_expand(expand.as_slice(), false)?
            .f_contiguous()?
            .f_to_device(device)?;
        let y = Tensor::f_from_slice(rec.labels())?
            .f_reshape([m, 1])?
            .f_expand([m, replicas], false)?
            .f_contiguous()?
            .f_to_device(device)?;
        Ok(Some(Batch::new(x, y)))
    })
}

/// Per-sample losses `[M, m]` of the input canaries under the current model
/// (`None` for gradient canaries).
pub fn canary_losses(model: &dyn Model, canaries: &Canaries) -> Result<Option<Tensor>> {
    let Some(batch) = canary_record_batch(canaries, model.replicas(), model_device(model))? else {
        return Ok(None);
    };
    tch::no_grad(|| {
        let logits = model.forward(&batch.inputs, &mut Tape::off())?;
        let losses = per_sample_cross_entropy(&logits, &batch.targets)?;
        torch("the losses of the input canaries", || {
            losses.f_transpose(0, 1)?.f_contiguous()
        })
        .map(Some)
    })
}

fn model_device(model: &dyn Model) -> Device {
    model
        .named_parameters()
        .first()
        .map(|(_, t)| t.device())
        .unwrap_or(Device::Cpu)
}

/// The canary gradients at the current parameters, `[M, m, P]`, clipped to
/// `C` (what the canary would contribute to a step): the fixed gradient for
/// gradient canaries, the clipped per-sample gradient for input canaries.
pub fn canary_gradients(
    model: &dyn Model,
    canaries: &Canaries,
    max_grad_norm: f64,
) -> Result<Tensor> {
    let m_rep = model.replicas();
    // Each row times min(1, C/‖row‖).
    let clip = |rows: &Tensor| -> Result<Tensor, TchError> {
        let norms = rows
            .f_square()?
            .f_sum_dim_intlist(-1, true, Kind::Float)?
            .f_sqrt()?;
        let c = norms
            .f_reciprocal()?
            .mul_f64(max_grad_norm)?
            .clamp_max_f64(1.0)?;
        rows.f_mul(&c)
    };
    if let Some(g) = &canaries.gradients {
        return torch("clipping the gradient canaries", || {
            clip(g)?.f_unsqueeze(0)?.f_expand([m_rep, -1, -1], false)
        });
    }
    let batch = canary_record_batch(canaries, m_rep, model_device(model))?
        .ok_or_else(|| invalid("canary", "none", "canaries with records or gradients"))?;
    let bp = forward_backward(model, &batch)?;
    let grads = bp.per_sample_grads(model)?;
    let m = batch.targets.size()[0];
    torch("the clipped gradients of the input canaries", || {
        let flat = grads
            .iter()
            .map(|g| g.f_reshape([m, m_rep, -1]))
            .collect::<Result<Vec<_>, TchError>>()?;
        let flat = Tensor::f_cat(&flat, 2)?.f_detach()?;
        clip(&flat)?.f_transpose(0, 1)
    })
}
