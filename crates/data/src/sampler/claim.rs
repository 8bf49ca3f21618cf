//! What a run claims: the mechanism one record (or one canary) goes through,
//! in the accountant's terms, and the ε the accountant gives for it.
//!
//! Defined once here, beside the samplers, so that `dpaudit train` (a
//! record's guarantee) and an audit experiment (a canary's claimed ε) can
//! never disagree on a DP fact, and a new sampler does not compile until its
//! accounting is written down ([`mechanism`] has no catch-all arm). Pure: it
//! needs the samplers and the accountant, not libtorch (`dpaudit_train::claim`
//! re-exports it).
//!
//! * Poisson sampling at rate `q` over `T` steps is DP-SGD's subsampled
//!   Gaussian composed `T` times (Abadi et al. 2016, §3.1).
//! * A fixed public batch sequence: a record is in a known set of batches, so
//!   only those steps are composed, without subsampling (an adversary who
//!   knows the mini-batches gets no amplification; Cebere, Bellet & Papernot
//!   2025, §4, threat model); the most frequent record bounds every record.
//! * A canary inserted every `k`-th step is in `⌊T/k⌋` known steps: the
//!   composition of that many Gaussian mechanisms (the same paper, §5.3,
//!   periodicity `k`).
//! * Shuffle-type samplers are accounted as Poisson with `q = B/n`, the
//!   common practice that is not a valid bound for shuffled batches
//!   (Annamalai et al. 2024, "To shuffle or not to shuffle", §1 and §4); the
//!   claim says so and is flagged.

use super::placement::InsertionSchedule;
use super::{BatchSampler, Sampler};
use crate::seed::SeedKey;
use dpaudit_accounting::{
    calibrate_event, Accountant, AccountingError, Calibration, EpsilonUpperBound, MechanismEvent,
    NeighbouringRelation,
};

/// How the record or canary a claim is about takes part in training.
#[derive(Debug, Clone, Copy)]
pub enum Participation<'a> {
    /// Sampled like any record by this sampler.
    Sampled {
        /// The sampler.
        sampler: &'a Sampler,
        /// Its key (a fixed public sequence does not depend on it).
        key: SeedKey,
    },
    /// Inserted in every `every`-th step (a canary the adversary knows the
    /// steps of).
    EveryKth {
        /// `k`.
        every: u64,
    },
}

/// The mechanism and what it assumes.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The event the accountant composes.
    pub event: MechanismEvent,
    /// What was accounted, in words.
    pub assumption: String,
    /// False when the accounting does not match how the record is sampled.
    pub valid_for_sampler: bool,
}

/// The number of steps a canary inserted every `every`-th of `steps` steps
/// is in: `⌊T/k⌋` (steps `k, 2k, …`), as the sampler's
/// [`InsertionSchedule`] places it. `every` is at least 1 (configs refuse 0;
/// 0 is read as 1).
pub fn insertions(steps: u64, every: u64) -> u64 {
    InsertionSchedule::every(every.max(1))
        .map(|s| s.insertions(steps))
        .unwrap_or(steps)
}

/// The mechanism of `participation` over `steps` steps at noise multiplier
/// `sigma`.
pub fn mechanism(participation: Participation<'_>, sigma: f64, steps: u64) -> Claim {
    match participation {
        Participation::EveryKth { every } => {
            let p = insertions(steps, every);
            Claim {
                event: MechanismEvent::fixed_batches(sigma, p),
                assumption: format!(
                    "inserted in {p} known steps (every {every} of {steps}): composition of {p} Gaussian \
                     mechanisms, σ = {sigma}, no subsampling"
                ),
                valid_for_sampler: true,
            }
        }
        // Every sampler's accounting is written down here: a new sampler does
        // not compile until it has one (no catch-all arm).
        Participation::Sampled { sampler, key } => match sampler {
            Sampler::Poisson(s) => Claim {
                event: MechanismEvent::dpsgd(s.sample_rate(), sigma, steps),
                assumption: format!(
                    "Poisson sampling, q = {}, {steps} steps, σ = {sigma}",
                    s.sample_rate()
                ),
                valid_for_sampler: true,
            },
            Sampler::FixedSequence(_) => fixed_public_batches(sampler, key, sigma, steps),
            Sampler::Shuffle(_) | Sampler::PartialShuffle(_) | Sampler::BatchThenShuffle(_) => {
                shuffled_as_poisson(sampler, sigma, steps)
            }
        },
    }
}

/// A fixed public batch sequence: the most frequent record's steps,
/// composed without subsampling.
fn fixed_public_batches(sampler: &Sampler, key: SeedKey, sigma: f64, steps: u64) -> Claim {
    let mut count = vec![0u64; sampler.num_records()];
    for step in sampler.steps(key, 0).take(steps as usize) {
        for i in step.batch {
            if let Some(c) = count.get_mut(i) {
                *c += 1;
            }
        }
    }
    let p = count.into_iter().max().unwrap_or(0).max(1);
    Claim {
        event: MechanismEvent::fixed_batches(sigma, p),
        assumption: format!(
            "fixed public batches: the most frequent record is in {p} of {steps} steps, composition of \
             {p} Gaussian mechanisms, σ = {sigma}, no subsampling"
        ),
        valid_for_sampler: true,
    }
}

/// A shuffle-type sampler accounted as Poisson with `q = B/n`: the common
/// practice, flagged as not a valid bound.
fn shuffled_as_poisson(sampler: &Sampler, sigma: f64, steps: u64) -> Claim {
    let q = sampler.batch_size().unwrap_or(1) as f64 / sampler.num_records().max(1) as f64;
    Claim {
        event: MechanismEvent::dpsgd(q, sigma, steps),
        assumption: format!(
            "{} sampler accounted as Poisson with q = B/n = {q:.6}, {steps} steps, σ = {sigma} (common \
             practice; NOT a valid bound for shuffled batches)",
            sampler.kind()
        ),
        valid_for_sampler: false,
    }
}

/// The claimed ε at `delta`: PLD accounting under add/remove neighbours.
pub fn claimed_epsilon(
    claim: &Claim,
    delta: f64,
) -> std::result::Result<EpsilonUpperBound, AccountingError> {
    dpaudit_accounting::epsilon(
        &claim.event,
        delta,
        Accountant::Pld,
        NeighbouringRelation::AddOrRemove,
    )
}

/// The smallest noise multiplier (within `relative_tolerance`) at which the
/// mechanism of `participation` over `steps` steps reaches (`target_epsilon`,
/// `delta`) under PLD accounting, add/remove neighbours — the claim
/// [`claimed_epsilon`] reports, so a calibrated run's own claim meets its
/// target. Returns the calibration and the claim at the calibrated σ (its
/// `valid_for_sampler` says whether the accounting matches the sampler).
pub fn calibrate(
    participation: Participation<'_>,
    steps: u64,
    delta: f64,
    target_epsilon: f64,
    relative_tolerance: f64,
) -> std::result::Result<(Calibration, Claim), AccountingError> {
    let at_one = mechanism(participation, 1.0, steps);
    let cal = calibrate_event(
        &at_one.event,
        delta,
        target_epsilon,
        Accountant::Pld,
        relative_tolerance,
    )?;
    Ok((cal, mechanism(participation, cal.noise_multiplier, steps)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insertions_are_the_floor_of_steps_over_k() {
        assert_eq!(insertions(100, 1), 100);
        assert_eq!(insertions(100, 3), 33);
        assert_eq!(insertions(2, 3), 0);
    }

    #[test]
    fn every_kth_composes_the_insertions_without_subsampling() {
        // One Gaussian mechanism at σ = 1 (sensitivity 1): δ(ε) = Φ(−ε + 1/2) − e^ε Φ(−ε − 1/2)
        // (Balle & Wang 2018, Thm. 8), so at ε = 1: Φ(−0.5) − e·Φ(−1.5) = 0.308538 − 2.718282·0.066807
        // = 0.126936.
        let c = mechanism(Participation::EveryKth { every: 100 }, 1.0, 100);
        assert!(c.valid_for_sampler);
        let eps = claimed_epsilon(&c, 0.126936).unwrap();
        assert!((eps.epsilon - 1.0).abs() < 2e-3, "{}", eps.epsilon);
    }

    #[test]
    fn calibration_meets_its_own_claim() {
        // One Gaussian mechanism: δ(ε = 1) = 0.126936 at σ = 1 (the vector
        // above), so calibrating one insertion to ε = 1 at that δ gives σ ≈ 1.
        let (cal, claim) = calibrate(
            Participation::EveryKth { every: 100 },
            100,
            0.126936,
            1.0,
            1e-4,
        )
        .unwrap();
        assert!(
            (cal.noise_multiplier - 1.0).abs() < 5e-3,
            "{}",
            cal.noise_multiplier
        );
        let eps = claimed_epsilon(&claim, 0.126936).unwrap().epsilon;
        assert!(eps <= 1.0 + 1e-9 && eps > 0.99, "{eps}");
        // Poisson sampling: the same σ as the DP-SGD calibration.
        let config = super::super::PoissonConfig {
            sample_rate: 0.01,
            steps_per_epoch: None,
        };
        let sampler = Sampler::Poisson(super::super::PoissonSampler::new(10_000, &config).unwrap());
        let key = crate::seed::RunSeed(1).stream(crate::seed::Stream::Sampler);
        let (cal, claim) = calibrate(
            Participation::Sampled {
                sampler: &sampler,
                key,
            },
            1000,
            1e-5,
            2.0,
            1e-4,
        )
        .unwrap();
        let direct = dpaudit_accounting::calibrate_noise_multiplier(
            0.01,
            1000,
            1e-5,
            2.0,
            Accountant::Pld,
            1e-4,
        )
        .unwrap();
        assert_eq!(cal.noise_multiplier, direct.noise_multiplier);
        assert!(claim.valid_for_sampler);
    }
}
