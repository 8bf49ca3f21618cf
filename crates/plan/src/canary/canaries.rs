//! The `[canary]` table of an experiment file, the scores (one threat
//! model's view of a canary each) and when a canary is in a batch.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use dpaudit_data::sampler::{BatchSampler, Sampler};
use dpaudit_data::seed::{RunSeed, Stream};

/// The scores, one threat model's view of a canary each (in `dpaudit-attacks`,
/// so that readers of `audit.json` need no libtorch).
pub use dpaudit_attacks::ScoreKind;

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

    /// Whether `score` is defined for this canary kind.
    pub fn admits(self, score: ScoreKind) -> bool {
        match score {
            ScoreKind::Dirac => self == CanaryKind::Dirac,
            ScoreKind::InnerProduct
            | ScoreKind::Cosine
            | ScoreKind::NaturalLr
            | ScoreKind::PartiallyInformedLr => self.is_gradient(),
            ScoreKind::Iterates | ScoreKind::UpdateNorm => true,
            ScoreKind::Loss | ScoreKind::LossDifference => !self.is_gradient(),
        }
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
            .then(|| dpaudit_data::sampler::claim::insertions(steps, self.every))
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
                // Once per epoch, like a record at position 0: uniformly
                // among the steps that can hold it. Every sampler answers
                // here (no catch-all arm: a new one must decide).
                Sampler::Shuffle(_)
                | Sampler::PartialShuffle(_)
                | Sampler::BatchThenShuffle(_)
                | Sampler::FixedSequence(_) => {
                    let per_epoch = sampler.steps_per_epoch().max(1) as u64;
                    let reach = sampler.first_record_reach();
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
