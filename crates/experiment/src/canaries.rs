//! Canaries and their scores: what an audit inserts into DP-SGD and how it
//! scores each canary afterwards.
//!
//! See `docs/canary-audits.md` for the methods in our words.
//!
//! * Gradient canaries (Cebere, Bellet & Papernot 2024, §4 and Alg. 2; the random-gradient canary A_CotS of Andrew et al. 2024; Steinke, Nasr & Jagielski 2023, §4.1): a *Dirac* canary is
//!   `s·C·e_d` (one coordinate, distinct across canaries), a *random-direction*
//!   canary is `s·C·u` with `u` uniform on the unit sphere. `s` = `scale`, 1 by
//!   default, so clipping leaves the canary unchanged; the self-test uses
//!   `s > 1` to check that clipping is applied to it. A gradient canary fills
//!   one batch slot through [`dpaudit_train::engine::Override::Gradient`], so it is clipped by the same
//!   rule as every record and the sum is divided by the same public normaliser.
//! * Input canaries (Steinke, Nasr & Jagielski 2023, §2 and §4.2; the loss-based baseline A_L of Cebere, Bellet & Papernot 2024, §5.1): test records, either
//!   mislabeled (a uniformly chosen label different from the true one) or kept
//!   as they are (in-distribution). They go through the ordinary per-sample
//!   pipeline.
//! * Insertion: every `k`-th step (steps `k−1, 2k−1, …` counted from 0, i.e.
//!   Algorithm 4's `t mod k = 0` with `t` from 1), or *sampled* like an
//!   ordinary record — with probability `q` at every step under Poisson
//!   sampling, or once per epoch as the record at stored position 0 under the
//!   shuffle samplers (a uniform step; among the first `K/B` steps under a
//!   partial shuffle with buffer `K`).
//! * Inclusion: canary `j` of run `r` is included with probability 1/2,
//!   independently (Steinke, Nasr & Jagielski 2023, Alg. 1; Cebere, Bellet & Papernot 2024, Alg. 1), from the
//!   `membership` stream, so the bits do not depend on how runs are batched.
//! * The Dirac coordinate is drawn at random (A_GC-R, Cebere, Bellet & Papernot 2024, Alg. 2) or
//!   chosen as the least-updated coordinate of a noiseless simulation of the
//!   training run without canaries (A_GC-S, Cebere, Bellet & Papernot 2024, Alg. 3, Noiseless-PS: the
//!   variant the paper found best).
//!
//! Scores are oriented "higher = member" and computed on the device for all
//! replicas at once; `dpaudit-attacks` holds the host-side definitions they are
//! tested against.

use rand::seq::index::sample;
use rand::Rng;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, TchError, Tensor};

use dpaudit_data::dataset::Dataset;
use dpaudit_data::sampler::{BatchSampler, Sampler};
use dpaudit_data::seed::{RunSeed, Stream};

use dpaudit_train::engine::{forward_backward, per_sample_cross_entropy, Batch};
use dpaudit_train::error::{invalid, torch, Result};
use dpaudit_train::gather::gather_slots;
pub use dpaudit_train::gather::Extra;
use dpaudit_train::layers::Tape;
use dpaudit_train::models::Model;
use dpaudit_train::scalar::WithNumber;

/// What kind of canary is inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CanaryKind {
    /// `s·C·e_d` at a coordinate `d` (distinct per canary).
    Dirac,
    /// `s·C·u`, `u` uniform on the unit sphere of all parameters.
    RandomDirection,
    /// A test record with a wrong label.
    Mislabeled,
    /// A test record with its own label.
    InDistribution,
}

impl CanaryKind {
    /// Whether the canary is a crafted gradient (white-box insertion).
    pub fn is_gradient(self) -> bool {
        matches!(self, CanaryKind::Dirac | CanaryKind::RandomDirection)
    }
}

/// When a canary is inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Insertion {
    /// Deterministically, every `every`-th step (the periodicity `k` of Cebere, Bellet & Papernot 2024, Alg. 4).
    Every,
    /// Like an ordinary record of the sampler: Poisson with the sampler's rate,
    /// or once per epoch at a uniform step for the shuffle samplers.
    Sampled,
}

/// How a Dirac canary's coordinate is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoordinateChoice {
    /// Uniformly at random, distinct (A_GC-R, Cebere, Bellet & Papernot 2024, Alg. 2).
    #[default]
    Random,
    /// The least-updated coordinates of a noiseless simulation without
    /// canaries, ranked by the accumulated squared per-step update (A_GC-S
    /// Noiseless-PS, Cebere, Bellet & Papernot 2024, Alg. 3).
    LeastUpdated,
}

/// Initial parameters of the audited runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitChoice {
    /// The same θ₀ for every run, known to the adversary (Cebere, Bellet & Papernot 2024, §2.2, the default).
    #[default]
    Fixed,
    /// A fresh θ₀ per run (Cebere, Bellet & Papernot 2024, Remark 1).
    Random,
}

fn one() -> u64 {
    1
}
fn one_f() -> f64 {
    1.0
}

/// The `[canary]` table of an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanaryConfig {
    /// What is inserted.
    pub kind: CanaryKind,
    /// `m`, canaries per run, each with its own inclusion bit.
    pub count: usize,
    /// When it is inserted.
    pub insertion: Insertion,
    /// `k` for [`Insertion::Every`] (1 = every step).
    #[serde(default = "one")]
    pub every: u64,
    /// Dirac only: how the coordinates are chosen.
    #[serde(default)]
    pub coordinate: CoordinateChoice,
    /// Gradient canaries only: the canary norm in units of `max_grad_norm`.
    #[serde(default = "one_f")]
    pub scale: f64,
    /// Fixed or per-run θ₀.
    #[serde(default)]
    pub init: InitChoice,
    /// The Partially-Informed overrides of Annamalai et al. 2024 (§5.1): in every step whose batch
    /// holds neither the canary nor (in runs without it) the zero-out record,
    /// the last genuine slot's gradient becomes `−ĝ` (Annamalai et al. 2024, Alg. 1).
    /// Applied to every run alike, so the guarantee is unchanged.
    #[serde(default)]
    pub partially_informed: bool,
}

/// A score: one threat model's view of a canary. Higher = member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreKind {
    /// Hidden state, Dirac: `θ₀[d] − θ_T[d]` (Cebere, Bellet & Papernot 2024, Alg. 2, with the descent
    /// sign flipped so that members score high).
    Dirac,
    /// Hidden state: `⟨θ₀ − θ_T, g⟩`.
    InnerProduct,
    /// Hidden state: `cos(θ₀ − θ_T, g)` (A_CotS, Andrew et al. 2024).
    Cosine,
    /// All intermediate iterates: `Σ_t ⟨θ_t − θ_{t+1}, g_t⟩`, with `g_t` the
    /// canary gradient (clipped, at `θ_t` for input canaries) (Steinke, Nasr & Jagielski 2023, §2).
    Iterates,
    /// Black box: `−ℓ(θ_T; x)` (Steinke, Nasr & Jagielski 2023, §2; A_L of Cebere, Bellet & Papernot 2024, §5.1).
    Loss,
    /// Black box with θ₀: `ℓ(θ₀; x) − ℓ(θ_T; x)`.
    LossDifference,
    /// Every step (the Natural threat model of Annamalai et al. 2024, §5.1): `log Λ^N` of the per-step
    /// observations `o_t = normaliser·⟨θ_t − θ_{t+1}, ĝ⟩/(η·C²)` (Annamalai et al.
    /// 2024, Alg. 1 and §5.3), per epoch of the sampler.
    NaturalLr,
    /// Every step, with the Partially-Informed overrides (`−ĝ` in every batch
    /// without the target): `log Λ^PI` of the same observations.
    #[serde(rename = "pi_lr")]
    PartiallyInformedLr,
    /// Hidden state, any canary: `−‖θ_T − θ₀‖²`. It detects a canary that
    /// changes the noise scale (the realised-batch-size normaliser); on a
    /// correct pipeline it carries almost no signal.
    UpdateNorm,
}

impl ScoreKind {
    /// Name in files.
    pub fn name(self) -> &'static str {
        match self {
            ScoreKind::Dirac => "dirac",
            ScoreKind::InnerProduct => "inner_product",
            ScoreKind::Cosine => "cosine",
            ScoreKind::Iterates => "iterates",
            ScoreKind::Loss => "loss",
            ScoreKind::LossDifference => "loss_difference",
            ScoreKind::UpdateNorm => "update_norm",
            ScoreKind::NaturalLr => "natural_lr",
            ScoreKind::PartiallyInformedLr => "pi_lr",
        }
    }

    /// The threat model the score belongs to, in words.
    pub fn threat_model(self) -> &'static str {
        match self {
            ScoreKind::Dirac
            | ScoreKind::InnerProduct
            | ScoreKind::Cosine
            | ScoreKind::UpdateNorm => "hidden state (final model θ_T and θ₀)",
            ScoreKind::Iterates => "white box (all intermediate iterates)",
            ScoreKind::NaturalLr => "every step, Natural (Annamalai et al. 2024)",
            ScoreKind::PartiallyInformedLr => {
                "every step, Partially-Informed (Annamalai et al. 2024)"
            }
            ScoreKind::Loss => "black box (loss of the final model)",
            ScoreKind::LossDifference => "black box with θ₀ (loss difference)",
        }
    }

    /// Whether the score is defined for this canary kind.
    pub fn applies_to(self, kind: CanaryKind) -> bool {
        match self {
            ScoreKind::Dirac => kind == CanaryKind::Dirac,
            ScoreKind::InnerProduct
            | ScoreKind::Cosine
            | ScoreKind::NaturalLr
            | ScoreKind::PartiallyInformedLr => kind.is_gradient(),
            ScoreKind::Iterates | ScoreKind::UpdateNorm => true,
            ScoreKind::Loss | ScoreKind::LossDifference => !kind.is_gradient(),
        }
    }
}

impl CanaryConfig {
    /// Checks that need only the config, the run length and the sampler.
    pub fn validate(&self, steps: u64, sampler: &Sampler) -> Result<()> {
        if self.count == 0 {
            return Err(invalid("canary.count", 0, "at least 1"));
        }
        match self.insertion {
            Insertion::Every => {
                if self.every == 0 || self.every > steps {
                    return Err(invalid(
                        "canary.every",
                        self.every,
                        format!("between 1 and the number of steps ({steps}): k larger than the steps inserts nothing"),
                    ));
                }
            }
            Insertion::Sampled => {
                if self.every != 1 {
                    return Err(invalid(
                        "canary.every",
                        self.every,
                        "1 (or left out): `every` applies to insertion = \"every\" only",
                    ));
                }
                if matches!(sampler, Sampler::FixedSequence(_)) {
                    return Err(invalid(
                        "canary.insertion",
                        "sampled",
                        "\"every\" with the fixed batch sequence: its batches are public and fixed, so a canary \
                         cannot be sampled like a record (Cebere, Bellet & Papernot 2024, §2.1)",
                    ));
                }
            }
        }
        if !(self.scale > 0.0 && self.scale.is_finite()) {
            return Err(invalid("canary.scale", self.scale, "a finite number > 0"));
        }
        if self.scale != 1.0 && !self.kind.is_gradient() {
            return Err(invalid(
                "canary.scale",
                self.scale,
                "1 (or left out): only gradient canaries have a norm to set",
            ));
        }
        if self.coordinate == CoordinateChoice::LeastUpdated && self.kind != CanaryKind::Dirac {
            return Err(invalid(
                "canary.coordinate",
                "least_updated",
                "\"random\" (or left out): only Dirac canaries have a coordinate",
            ));
        }
        Ok(())
    }

    /// Insertions of an included canary over `steps` steps when they are
    /// deterministic ([`Insertion::Every`]).
    pub fn deterministic_insertions(&self, steps: u64) -> Option<u64> {
        (self.insertion == Insertion::Every)
            .then(|| dpaudit_train::claim::insertions(steps, self.every))
    }
}

/// The inclusion bits of one run: `m` independent fair coins from the
/// `membership` stream of the run (`true` = the canary is in).
pub fn inclusion_bits(seed: RunSeed, run: u64, count: usize) -> Vec<bool> {
    let mut rng = seed.stream(Stream::Membership).child(run).rng();
    (0..count).map(|_| rng.gen_bool(0.5)).collect()
}

/// The steps at which canary `j` of run `run` is in the batch, if included.
pub fn insertion_steps(
    config: &CanaryConfig,
    sampler: &Sampler,
    seed: RunSeed,
    run: u64,
    canary: usize,
    steps: u64,
) -> Vec<u64> {
    match config.insertion {
        Insertion::Every => (1..=steps / config.every)
            .map(|i| i * config.every - 1)
            .collect(),
        Insertion::Sampled => {
            let mut rng = seed
                .stream(Stream::Canary)
                .child(1)
                .child(run)
                .child(canary as u64)
                .rng();
            match sampler {
                Sampler::Poisson(s) => {
                    let q = s.sample_rate();
                    (0..steps).filter(|_| rng.gen_bool(q)).collect()
                }
                other => {
                    let per_epoch = other.steps_per_epoch().max(1) as u64;
                    // The canary is the record at stored position 0 (the target
                    // record of Annamalai et al. 2024, §5.2): shuffling and batch-then-shuffle put it in a
                    // uniform batch; a partial shuffle keeps it in the first
                    // block of K records, i.e. a uniform batch among the
                    // first K/B (Annamalai et al. 2024, §7.1).
                    let reach = match other {
                        Sampler::PartialShuffle(p) => {
                            ((p.buffer_size() / p.batch_size().max(1)) as u64).clamp(1, per_epoch)
                        }
                        _ => per_epoch,
                    };
                    let mut out = Vec::new();
                    let mut start = 0;
                    while start < steps {
                        let s = start + rng.gen_range(0..reach);
                        if s < steps {
                            out.push(s);
                        }
                        start += per_epoch;
                    }
                    out
                }
            }
        }
    }
}

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
            if !k.applies_to(canaries.config.kind) {
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
