//! Mechanism events as values, and the neighbouring relation.
//!
//! Any accountant interprets the same [`MechanismEvent`] tree (the design of Google's
//! `dp_accounting` `DpEvent`s).

use serde::{Deserialize, Serialize};

use crate::error::{
    check_count, check_noise_multiplier, check_sample_rate, AccountingError, Result,
};

/// Which datasets count as neighbours.
///
/// For the events of this crate (sums of clipped contributions plus Gaussian noise) both
/// relations give the same privacy loss pair, (1−q)·N(0,σ²) + q·N(1,σ²) against N(0,σ²),
/// in both orders: replacing a record by ⊥ whose contribution is identically zero is the same
/// as removing it (Annamalai et al. 2024 §2.1 (zero-out adjacency), "zero-out adjacency"). They are kept apart so that every
/// reported number says which relation it is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NeighbouringRelation {
    /// D′ is D with one record added or removed.
    #[default]
    AddOrRemove,
    /// D′ is D with one record replaced by the zero-out record ⊥ (gradient identically 0).
    ReplaceWithZeroOut,
}

/// A privacy mechanism, described as a value that any accountant can interpret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MechanismEvent {
    /// The Gaussian mechanism with sensitivity 1 and noise standard deviation `noise_multiplier`
    /// (one non-subsampled DP-SGD step: noise std `noise_multiplier · max_grad_norm`).
    Gaussian {
        /// σ, noise standard deviation in units of the sensitivity.
        noise_multiplier: f64,
    },
    /// `event` run on a Poisson subsample: every record is included independently with
    /// probability `sample_rate`. Only a Gaussian inner event is supported.
    PoissonSampled {
        /// q in (0, 1]; 1 means no subsampling.
        sample_rate: f64,
        /// The mechanism run on the subsample.
        event: Box<MechanismEvent>,
    },
    /// `event` composed with itself `count` times.
    SelfComposed {
        /// The composed mechanism.
        event: Box<MechanismEvent>,
        /// How many times (at least 1).
        count: u64,
    },
    /// Sequential composition of several events (an empty list is the mechanism that reveals nothing).
    Composed(Vec<MechanismEvent>),
    /// Deterministic participation: the record is in `participations` fixed, known batches
    /// (e.g. Cebere et al.'s canary inserted every k-th step). No amplification applies: this is
    /// `participations` non-subsampled Gaussian mechanisms (Cebere et al. 2024 §5.1).
    FixedBatches {
        /// σ of every step.
        noise_multiplier: f64,
        /// The number of batches the record is in (at least 1).
        participations: u64,
    },
}

impl MechanismEvent {
    /// One Gaussian mechanism.
    pub fn gaussian(noise_multiplier: f64) -> Self {
        Self::Gaussian { noise_multiplier }
    }

    /// DP-SGD with Poisson sampling: `steps` compositions of the Poisson-subsampled Gaussian.
    /// A `sample_rate` of 1 means no subsampling.
    pub fn dpsgd(sample_rate: f64, noise_multiplier: f64, steps: u64) -> Self {
        Self::SelfComposed {
            event: Box::new(Self::PoissonSampled {
                sample_rate,
                event: Box::new(Self::gaussian(noise_multiplier)),
            }),
            count: steps,
        }
    }

    /// A record in `participations` fixed, known batches.
    pub fn fixed_batches(noise_multiplier: f64, participations: u64) -> Self {
        Self::FixedBatches {
            noise_multiplier,
            participations,
        }
    }

    /// The same event with every Gaussian's noise multiplier set to
    /// `noise_multiplier` (what a calibration varies; sampling rates, counts
    /// and structure are kept).
    pub fn with_noise_multiplier(&self, noise_multiplier: f64) -> Self {
        match self {
            Self::Gaussian { .. } => Self::gaussian(noise_multiplier),
            Self::PoissonSampled { sample_rate, event } => Self::PoissonSampled {
                sample_rate: *sample_rate,
                event: Box::new(event.with_noise_multiplier(noise_multiplier)),
            },
            Self::SelfComposed { event, count } => Self::SelfComposed {
                event: Box::new(event.with_noise_multiplier(noise_multiplier)),
                count: *count,
            },
            Self::Composed(events) => Self::Composed(
                events
                    .iter()
                    .map(|e| e.with_noise_multiplier(noise_multiplier))
                    .collect(),
            ),
            Self::FixedBatches { participations, .. } => Self::FixedBatches {
                noise_multiplier,
                participations: *participations,
            },
        }
    }

    /// Flattens the event into subsampled-Gaussian components with their multiplicities,
    /// validating every parameter on the way. Components with equal (q, σ) are merged.
    pub fn components(&self) -> Result<Vec<Component>> {
        let mut out: Vec<Component> = Vec::new();
        self.collect(1, &mut out)?;
        Ok(out)
    }

    fn collect(&self, multiplicity: u64, out: &mut Vec<Component>) -> Result<()> {
        match self {
            Self::Gaussian { noise_multiplier } => {
                check_noise_multiplier(*noise_multiplier)?;
                push(out, 1.0, *noise_multiplier, multiplicity)
            }
            Self::PoissonSampled { sample_rate, event } => {
                check_sample_rate(*sample_rate)?;
                match event.as_ref() {
                    Self::Gaussian { noise_multiplier } => {
                        check_noise_multiplier(*noise_multiplier)?;
                        push(out, *sample_rate, *noise_multiplier, multiplicity)
                    }
                    other => Err(AccountingError::Unsupported {
                        accountant: "any",
                        what: format!("PoissonSampled of {}", other.kind()),
                        hint: "only a Gaussian event can be Poisson-subsampled; compose subsampled Gaussians instead",
                    }),
                }
            }
            Self::SelfComposed { event, count } => {
                check_count("count", *count)?;
                let m = multiplicity
                    .checked_mul(*count)
                    .ok_or_else(|| overflow(multiplicity, *count))?;
                event.collect(m, out)
            }
            Self::Composed(events) => events.iter().try_for_each(|e| e.collect(multiplicity, out)),
            Self::FixedBatches {
                noise_multiplier,
                participations,
            } => {
                check_noise_multiplier(*noise_multiplier)?;
                check_count("participations", *participations)?;
                let m = multiplicity
                    .checked_mul(*participations)
                    .ok_or_else(|| overflow(multiplicity, *participations))?;
                push(out, 1.0, *noise_multiplier, m)
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Gaussian { .. } => "Gaussian",
            Self::PoissonSampled { .. } => "PoissonSampled",
            Self::SelfComposed { .. } => "SelfComposed",
            Self::Composed(_) => "Composed",
            Self::FixedBatches { .. } => "FixedBatches",
        }
    }
}

fn overflow(a: u64, b: u64) -> AccountingError {
    AccountingError::NumericalLimit {
        method: "event flattening",
        what: format!("composition count {a} × {b} overflows u64"),
    }
}

fn push(
    out: &mut Vec<Component>,
    sample_rate: f64,
    noise_multiplier: f64,
    count: u64,
) -> Result<()> {
    if let Some(c) = out
        .iter_mut()
        .find(|c| c.sample_rate == sample_rate && c.noise_multiplier == noise_multiplier)
    {
        c.count = c
            .count
            .checked_add(count)
            .ok_or_else(|| overflow(c.count, count))?;
    } else {
        out.push(Component {
            sample_rate,
            noise_multiplier,
            count,
        });
    }
    Ok(())
}

/// `count` compositions of the Poisson-subsampled Gaussian with rate `sample_rate` (1 = not
/// subsampled) and noise multiplier `noise_multiplier`: the unit every accountant works with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Component {
    /// q in (0, 1].
    pub sample_rate: f64,
    /// σ > 0.
    pub noise_multiplier: f64,
    /// Number of compositions (≥ 1).
    pub count: u64,
}

impl Component {
    /// Whether this component is subsampled (q < 1).
    pub fn is_subsampled(&self) -> bool {
        self.sample_rate < 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattening_merges_equal_components_and_multiplies_counts() {
        let e = MechanismEvent::Composed(vec![
            MechanismEvent::dpsgd(0.01, 1.0, 100),
            MechanismEvent::SelfComposed {
                event: Box::new(MechanismEvent::dpsgd(0.01, 1.0, 10)),
                count: 3,
            },
            MechanismEvent::fixed_batches(2.0, 250),
            MechanismEvent::gaussian(2.0),
        ]);
        let c = e.components().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].count, 130);
        assert_eq!(c[1].count, 251);
        assert!(!c[1].is_subsampled());
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let e = MechanismEvent::dpsgd(1.5, 1.0, 10);
        assert!(matches!(
            e.components(),
            Err(AccountingError::InvalidParameter {
                name: "sample_rate",
                ..
            })
        ));
        let e = MechanismEvent::dpsgd(0.1, f64::NAN, 10);
        assert!(matches!(
            e.components(),
            Err(AccountingError::InvalidParameter {
                name: "noise_multiplier",
                ..
            })
        ));
        let e = MechanismEvent::dpsgd(0.1, 1.0, 0);
        assert!(matches!(
            e.components(),
            Err(AccountingError::ZeroCount { name: "count" })
        ));
        let nested = MechanismEvent::PoissonSampled {
            sample_rate: 0.1,
            event: Box::new(MechanismEvent::dpsgd(0.1, 1.0, 2)),
        };
        assert!(matches!(
            nested.components(),
            Err(AccountingError::Unsupported { .. })
        ));
    }
}
