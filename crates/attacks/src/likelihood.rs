//! Neyman–Pearson likelihood-ratio scores over E×T observation matrices
//! (Annamalai et al. 2024 §4.1–4.2, §5.3), computed in log space with log-sum-exp so that they stay
//! finite for any T and E.
//!
//! An observation matrix `o[epoch][step]` holds one scalar per DP-SGD step:
//! `o = B⟨g̃, ĝ⟩/C²` for DP-SGD with a gradient canary ĝ of norm C (Annamalai et al. 2024
//! §2.4, [`dpsgd_observation`]), or the raw noisy sum for the Batched Gaussian
//! Mechanism (Annamalai et al. 2024 §4, Algorithm 4). Under both normalisations a step holding the
//! target contributes +1 and the noise has standard deviation σ (the noise
//! multiplier). Higher score ⇒ more likely trained with the target.

use crate::error::{check_finite, check_len, check_positive, AttacksError, Result};
use serde::{Deserialize, Serialize};

/// An E×T matrix of per-step observations, row-major by epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationMatrix {
    epochs: usize,
    steps: usize,
    values: Vec<f64>,
}

impl ObservationMatrix {
    /// Wraps `values` (row `i` = epoch `i`, `steps` values per row). Fails on
    /// zero dimensions, a length other than `epochs·steps`, or non-finite values.
    pub fn new(epochs: usize, steps: usize, values: Vec<f64>) -> Result<Self> {
        if epochs == 0 {
            return Err(invalid("epochs", 0, "at least 1"));
        }
        if steps == 0 {
            return Err(invalid("steps", 0, "at least 1"));
        }
        check_len("observations", epochs * steps, values.len())?;
        check_finite("observations", &values)?;
        Ok(Self {
            epochs,
            steps,
            values,
        })
    }

    /// Like [`ObservationMatrix::new`] from single-precision values (as
    /// recorded on the device).
    pub fn from_f32(epochs: usize, steps: usize, values: &[f32]) -> Result<Self> {
        Self::new(
            epochs,
            steps,
            values.iter().map(|&v| f64::from(v)).collect(),
        )
    }

    /// Number of epochs E (rows).
    pub fn epochs(&self) -> usize {
        self.epochs
    }

    /// Number of steps per epoch T (columns).
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Row `epoch` (T values).
    pub fn row(&self, epoch: usize) -> &[f64] {
        &self.values[epoch * self.steps..(epoch + 1) * self.steps]
    }

    /// All values, row-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
}

fn invalid(parameter: &'static str, value: impl std::fmt::Display, expected: &str) -> AttacksError {
    AttacksError::InvalidParameter {
        parameter,
        value: value.to_string(),
        expected: expected.to_owned(),
    }
}

/// The DP-SGD observation `o = B⟨g̃, ĝ⟩/C²` of one step (Annamalai et al. 2024 §5.2, Algorithm 1,
/// "Normalisation of o"): with ‖ĝ‖ = C the canary contributes ±1 and the
/// noise has standard deviation σ. `noisy_gradient` is g̃ = (Σ clipped + noise)/B.
pub fn dpsgd_observation(
    noisy_gradient: &[f32],
    canary: &[f32],
    expected_batch_size: usize,
    max_grad_norm: f64,
) -> Result<f64> {
    if noisy_gradient.is_empty() {
        return Err(AttacksError::Empty {
            what: "noisy_gradient",
        });
    }
    check_len("canary", noisy_gradient.len(), canary.len())?;
    if expected_batch_size == 0 {
        return Err(invalid("expected_batch_size", 0, "at least 1"));
    }
    check_positive("max_grad_norm", max_grad_norm)?;
    let dot: f64 = noisy_gradient
        .iter()
        .zip(canary)
        .map(|(&a, &b)| f64::from(a) * f64::from(b))
        .sum();
    let o = expected_batch_size as f64 * dot / (max_grad_norm * max_grad_norm);
    check_finite("observation", &[o])?;
    Ok(o)
}

/// Which likelihood ratio to score with (Annamalai et al. 2024 §4.1–4.2, §5.3). All assume the
/// target's batch is uniform over the scored columns and the epochs are
/// independent (product over epochs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LikelihoodRatio {
    /// Λ^N: means (0,…,+1,…,0) vs (0,…,0). As printed in the paper, the
    /// numerator has no 1/T prior, so Λ^N = T^E × the exact likelihood ratio
    /// (a constant, irrelevant for thresholding; Annamalai et al. 2024 §4.1–4.2, §5.3).
    Natural,
    /// Λ^PI: means (−1,…,+1,…,−1) vs (−1,…,0,…,−1).
    PartiallyInformed,
    /// Λ^WC = Λ^BGM: means (−B,…,−B+2,…,−B) vs (−B,…,−B+1,…,−B).
    WorstCase {
        /// Batch size B (only shifts the observations).
        batch_size: usize,
    },
    /// Λ^BtS, the batch-then-shuffle Worst-Case variant (Annamalai et al. 2024 §4.1–4.2, §5.3, Sec. 7.2):
    /// means (B,−B,…,−B) vs (B−1,−B,…,−B), the special entry in a uniform batch.
    BatchThenShuffle {
        /// Batch size B.
        batch_size: usize,
    },
    /// Poisson-subsampled Gaussian LR on the Poisson worst case D = (+1,0,…,0)
    /// vs D′ = (⊥,0,…,0) (Annamalai et al. 2024 §4, Algorithm 4): every step independently
    /// holds the target with probability q, so
    /// Λ = Π_{i,t} [(1−q)φ₀(o) + qφ₁(o)] / φ₀(o).
    Poisson {
        /// Sampling rate q ∈ (0, 1].
        sample_rate: f64,
    },
}

impl LikelihoodRatio {
    /// The threat model whose observations this ratio is designed for
    /// (Annamalai et al. 2024 §5.1): Natural and Partially-Informed score per-step DP-SGD
    /// observations (the adversary sees every step); the others score the
    /// Worst-Case BGM.
    pub fn threat_model(&self) -> crate::ThreatModel {
        match self {
            LikelihoodRatio::Natural => crate::ThreatModel::Natural,
            LikelihoodRatio::PartiallyInformed => crate::ThreatModel::PartiallyInformed,
            LikelihoodRatio::WorstCase { .. }
            | LikelihoodRatio::BatchThenShuffle { .. }
            | LikelihoodRatio::Poisson { .. } => crate::ThreatModel::WorstCase,
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        match *self {
            LikelihoodRatio::Natural | LikelihoodRatio::PartiallyInformed => Ok(()),
            LikelihoodRatio::WorstCase { batch_size }
            | LikelihoodRatio::BatchThenShuffle { batch_size } => {
                if batch_size == 0 {
                    Err(invalid("batch_size", 0, "at least 1"))
                } else {
                    Ok(())
                }
            }
            LikelihoodRatio::Poisson { sample_rate } => {
                if sample_rate.is_finite() && sample_rate > 0.0 && sample_rate <= 1.0 {
                    Ok(())
                } else {
                    Err(invalid(
                        "sample_rate",
                        sample_rate,
                        "a probability in (0, 1]",
                    ))
                }
            }
        }
    }
}

/// Numerically stable log Σ exp(x) over a slice (−∞ for an empty slice).
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m.is_infinite() {
        return m;
    }
    m + xs.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
}

/// The coefficients of a likelihood ratio's log form, per epoch row.
///
/// Every ratio of Annamalai et al. 2024 (§4.2, the Natural, Partially-Informed
/// and Worst-Case ratios; the batch-then-shuffle variant of §7.2; see
/// `docs/canary-games.md`) is, per epoch, `LSE_t(a·o_t + c) − LSE_t(a′·o_t + c′)`
/// with slopes a, a′ > 0 (the denominator absent, a′ = 0, for Λ^N). The
/// Poisson mixture is, per step, `log((1−q) + q·exp(a·o + c))`. This is the
/// one place these numbers are derived: the CPU scorer and the tensor scorer
/// (`dpaudit_experiment::bgm::tensor`) both read them from here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogRatioCoefficients {
    /// The ratio.
    pub lr: LikelihoodRatio,
    /// Numerator slope a.
    pub a: f64,
    /// Numerator intercept c.
    pub c: f64,
    /// Denominator slope a′ (0: no denominator).
    pub a_den: f64,
    /// Denominator intercept c′.
    pub c_den: f64,
    /// ln q (Poisson; 0 otherwise).
    pub log_q: f64,
    /// ln(1 − q) (Poisson; 0 otherwise; −∞ for q = 1).
    pub log_1mq: f64,
}

impl LogRatioCoefficients {
    /// Validates σ and the ratio's parameters, then derives the coefficients.
    pub fn new(lr: LikelihoodRatio, noise_multiplier: f64) -> Result<Self> {
        check_positive("noise_multiplier", noise_multiplier)?;
        lr.validate()?;
        let s = 1.0 / (noise_multiplier * noise_multiplier);
        if !(s.is_finite() && s > 0.0) {
            return Err(invalid(
                "noise_multiplier",
                noise_multiplier,
                "a value in [1e-150, 1e150] (1/σ² must be a finite positive number)",
            ));
        }
        // (a, c, a′, c′) from the log forms (docs/canary-games.md, "Likelihood ratios").
        let (a, c, a_den, c_den) = match lr {
            // log Λ^N = LSE_t((2o − 1)/(2σ²))
            LikelihoodRatio::Natural => (s, -0.5 * s, 0.0, 0.0),
            // log Λ^PI = LSE_t(2o/σ²) − LSE_t((2o + 1)/(2σ²))
            LikelihoodRatio::PartiallyInformed => (2.0 * s, 0.0, s, 0.5 * s),
            // u = o + B; log Λ^WC = LSE_t((2u − 2)/σ²) − LSE_t((2u − 1)/(2σ²))
            LikelihoodRatio::WorstCase { batch_size } => {
                let b = batch_size as f64;
                (2.0 * s, (2.0 * b - 2.0) * s, s, (2.0 * b - 1.0) * 0.5 * s)
            }
            // log Λ^BtS = LSE_t(2Bo/σ²) − LSE_t((2B − 1)(2o + 1)/(2σ²))
            LikelihoodRatio::BatchThenShuffle { batch_size } => {
                let b = batch_size as f64;
                (
                    2.0 * b * s,
                    0.0,
                    (2.0 * b - 1.0) * s,
                    (2.0 * b - 1.0) * 0.5 * s,
                )
            }
            // Per step: log((1−q) + q·exp((2o − 1)/(2σ²)))
            LikelihoodRatio::Poisson { .. } => (s, -0.5 * s, 0.0, 0.0),
        };
        let (log_q, log_1mq) = match lr {
            LikelihoodRatio::Poisson { sample_rate } => (sample_rate.ln(), (-sample_rate).ln_1p()),
            _ => (0.0, 0.0),
        };
        Ok(Self {
            lr,
            a,
            c,
            a_den,
            c_den,
            log_q,
            log_1mq,
        })
    }
}

impl LogRatioCoefficients {
    /// log of one epoch's factor of Λ over the row `o` (already truncated to
    /// the scored columns; non-empty): the scorer of the CPU simulator.
    ///
    /// Both maxima of `LSE_t(a·o_t + c) − LSE_t(a′·o_t + c′)` sit at
    /// `o_max = max_t o_t`, so with `y_t = exp(a′(o_t − o_max))`:
    /// `log row = (a − a′)·o_max + c − c′ + ln Σ_t exp(a(o_t − o_max)) − ln Σ_t y_t`.
    /// Each sum is ≥ 1 (its largest term is 1), so no term overflows and no
    /// logarithm sees 0. For Λ^PI and Λ^WC a = 2a′, so the numerator's terms are
    /// y_t²: one `exp` per entry.
    #[inline]
    pub(crate) fn log_row(&self, o: &[f64]) -> f64 {
        if let LikelihoodRatio::Poisson { .. } = self.lr {
            // log Λ = Σ_t log((1−q) + q·exp(a·o + c))
            //       = T·log(1−q) + Σ_t log(1 + exp(e_t)),  e_t = a·o + c + log q − log(1−q).
            // Each factor 1 + exp(e_t) is ≥ 1, so a running product cannot
            // underflow; it is folded into the log sum before it can overflow,
            // and huge e_t go straight to the log sum: one exp per step.
            if self.log_1mq == f64::NEG_INFINITY {
                // q = 1: every step holds the target; the Gaussian ratio per step.
                return o.iter().map(|&x| self.a * x + self.c).sum();
            }
            let shift = self.c + self.log_q - self.log_1mq;
            let (mut log_sum, mut product) = (0.0, 1.0);
            for &x in o {
                let e = self.a * x + shift;
                if e > 30.0 {
                    log_sum += e + (-e).exp().ln_1p();
                } else {
                    product *= 1.0 + e.exp();
                    if product > 1e250 {
                        log_sum += product.ln();
                        product = 1.0;
                    }
                }
            }
            return o.len() as f64 * self.log_1mq + log_sum + product.ln();
        }
        let o_max = o.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        match self.lr {
            LikelihoodRatio::Natural => {
                let sum: f64 = o.iter().map(|&x| (self.a * (x - o_max)).exp()).sum();
                self.a * o_max + self.c + sum.ln()
            }
            LikelihoodRatio::PartiallyInformed | LikelihoodRatio::WorstCase { .. } => {
                // a = 2a′: numerator terms are the squares of the denominator's.
                let (mut num, mut den) = (0.0, 0.0);
                for &x in o {
                    let y = (self.a_den * (x - o_max)).exp();
                    den += y;
                    num += y * y;
                }
                (self.a - self.a_den) * o_max + self.c - self.c_den + num.ln() - den.ln()
            }
            _ => {
                let (mut num, mut den) = (0.0, 0.0);
                for &x in o {
                    let d = x - o_max;
                    num += (self.a * d).exp();
                    den += (self.a_den * d).exp();
                }
                (self.a - self.a_den) * o_max + self.c - self.c_den + num.ln() - den.ln()
            }
        }
    }
}

/// `log Λ(𝒪)` of the chosen likelihood ratio over the first `columns` steps
/// of every epoch (Annamalai et al. 2024 §4.1–4.2, §5.3; `columns = T` for full shuffling, the
/// adversary's guess k for partial shuffling, Annamalai et al. 2024 §7.1, Algorithm 2). Σ over epochs
/// of per-epoch log-ratios, each a difference of log-sum-exps.
pub fn log_likelihood_ratio(
    lr: LikelihoodRatio,
    observations: &ObservationMatrix,
    noise_multiplier: f64,
    columns: usize,
) -> Result<f64> {
    let scorer = LogRatioCoefficients::new(lr, noise_multiplier)?;
    if columns == 0 || columns > observations.steps {
        return Err(invalid(
            "columns",
            columns,
            &format!("1 ..= {} (the steps per epoch)", observations.steps),
        ));
    }
    let total: f64 = (0..observations.epochs)
        .map(|e| scorer.log_row(&observations.row(e)[..columns]))
        .sum();
    check_finite("log likelihood ratio", &[total])?;
    Ok(total)
}

/// [`log_likelihood_ratio`] for many observation matrices (all columns).
pub fn log_likelihood_ratios(
    lr: LikelihoodRatio,
    observations: &[ObservationMatrix],
    noise_multiplier: f64,
) -> Result<Vec<f64>> {
    observations
        .iter()
        .map(|o| log_likelihood_ratio(lr, o, noise_multiplier, o.steps))
        .collect()
}

/// The adversary's guesses k for the partial-shuffle search: Annamalai et al. 2024 uses
/// {1, 10, 20, …, 100} for T = 100 (Annamalai et al. 2024 §7.1, Algorithm 2); for general T this is 1,
/// the multiples of 10 below T, and T.
pub fn default_partial_shuffle_guesses(steps: usize) -> Vec<usize> {
    let mut guesses = vec![1];
    guesses.extend((1..).map(|i| 10 * i).take_while(|&k| k < steps));
    if steps > 1 {
        guesses.push(steps);
    }
    guesses
}

/// One guess of the partial-shuffle search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GuessResult {
    /// Number of leading batches k the adversary assumed the target can fall in.
    pub columns: usize,
    /// The ε estimate for this guess returned by the caller's estimator.
    pub epsilon: f64,
}

/// Result of [`partial_shuffle_search`]: every guess and the best one.
///
/// Selection caveat (Annamalai et al. 2024 §7.1, Algorithm 2 and docs/canary-games.md): the maximum over guesses is
/// taken on the same observations as the evaluation, as in the paper; it is
/// not by itself a valid 95% bound. Report it labelled as such, or re-evaluate
/// the chosen k on held-out observations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialShuffleSearch {
    /// Every guess, in the order given.
    pub per_guess: Vec<GuessResult>,
    /// The guess with the largest ε (first one on ties).
    pub best: GuessResult,
}

/// The partial-shuffle search of Annamalai et al. 2024 §7.1, Algorithm 2: for
/// each guess k, score every matrix with Λ on its first k columns, hand the
/// two score vectors (with target, without target) to `estimate` (the audit
/// crate's (ε,δ) estimator) and keep the max over k.
///
/// For a BGM audit of partial shuffling there is no need to store matrices:
/// run [`crate::BgmSimulator`] once per guess with `score_columns = k`
/// (fresh observations per guess).
pub fn partial_shuffle_search<F>(
    lr: LikelihoodRatio,
    with_target: &[ObservationMatrix],
    without_target: &[ObservationMatrix],
    noise_multiplier: f64,
    guesses: &[usize],
    mut estimate: F,
) -> Result<PartialShuffleSearch>
where
    F: FnMut(&[f64], &[f64]) -> f64,
{
    if with_target.is_empty() {
        return Err(AttacksError::Empty {
            what: "with_target",
        });
    }
    if without_target.is_empty() {
        return Err(AttacksError::Empty {
            what: "without_target",
        });
    }
    if guesses.is_empty() {
        return Err(AttacksError::Empty { what: "guesses" });
    }
    let (epochs, steps) = (with_target[0].epochs, with_target[0].steps);
    for m in with_target.iter().chain(without_target) {
        check_len("observation matrix epochs", epochs, m.epochs)?;
        check_len("observation matrix steps", steps, m.steps)?;
    }
    let mut per_guess = Vec::with_capacity(guesses.len());
    for &k in guesses {
        let score = |ms: &[ObservationMatrix]| -> Result<Vec<f64>> {
            ms.iter()
                .map(|m| log_likelihood_ratio(lr, m, noise_multiplier, k))
                .collect()
        };
        let s = score(with_target)?;
        let s_prime = score(without_target)?;
        per_guess.push(GuessResult {
            columns: k,
            epsilon: estimate(&s, &s_prime),
        });
    }
    let best =
        per_guess.iter().copied().fold(
            per_guess[0],
            |b, g| if g.epsilon > b.epsilon { g } else { b },
        );
    Ok(PartialShuffleSearch { per_guess, best })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_sum_exp_is_stable() {
        assert!((log_sum_exp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((log_sum_exp(&[-1000.0, -1000.0]) - (-1000.0 + 2f64.ln())).abs() < 1e-12);
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
    }

    #[test]
    fn poisson_row_matches_termwise_log_sum_exp_in_every_branch() {
        // Reference: Σ_t LSE(log(1−q), log q + (2o − 1)/(2σ²)) term by term
        // (Annamalai et al. 2024 §4, Algorithm 4 mixture). The row mixes huge terms (e_t > 30), a run of
        // moderate ones whose product passes 1e250, and negligible ones.
        let (sigma, q) = (0.5, 0.1);
        let scorer =
            LogRatioCoefficients::new(LikelihoodRatio::Poisson { sample_rate: q }, sigma).unwrap();
        let mut row = vec![10.0, -50.0, 0.3];
        row.extend(std::iter::repeat_n(3.0, 120));
        let s = 1.0 / (sigma * sigma);
        let reference: f64 = row
            .iter()
            .map(|&x| log_sum_exp(&[(1.0 - q).ln(), q.ln() + (2.0 * x - 1.0) * 0.5 * s]))
            .sum();
        let got = scorer.log_row(&row);
        assert!(
            (got - reference).abs() < 1e-12 * reference.abs(),
            "{got} vs {reference}"
        );
    }

    #[test]
    fn default_guesses_match_seed_000_for_t_100() {
        // Annamalai et al. 2024 §7.1, Algorithm 2: k ∈ {1, 10, 20, …, 100}.
        let expected: Vec<usize> = std::iter::once(1).chain((1..=10).map(|i| 10 * i)).collect();
        assert_eq!(default_partial_shuffle_guesses(100), expected);
        assert_eq!(default_partial_shuffle_guesses(1), vec![1]);
        assert_eq!(default_partial_shuffle_guesses(25), vec![1, 10, 20, 25]);
    }

    #[test]
    fn dpsgd_observation_normalises_to_unit_signal() {
        // g̃ = ĝ/B with ‖ĝ‖ = C = 2, B = 4: B⟨g̃,ĝ⟩/C² = ⟨ĝ,ĝ⟩/C² = 1.
        let canary = [2.0f32, 0.0];
        let noisy = [0.5f32, 0.0];
        assert!((dpsgd_observation(&noisy, &canary, 4, 2.0).unwrap() - 1.0).abs() < 1e-12);
        assert!(matches!(
            dpsgd_observation(&noisy, &canary, 0, 2.0),
            Err(AttacksError::InvalidParameter {
                parameter: "expected_batch_size",
                ..
            })
        ));
        assert!(matches!(
            dpsgd_observation(&noisy, &canary, 4, 0.0),
            Err(AttacksError::InvalidParameter {
                parameter: "max_grad_norm",
                ..
            })
        ));
    }

    #[test]
    fn observation_matrix_validates_shape() {
        assert!(matches!(
            ObservationMatrix::new(2, 3, vec![0.0; 5]),
            Err(AttacksError::LengthMismatch {
                what: "observations",
                expected: 6,
                found: 5
            })
        ));
        assert!(matches!(
            ObservationMatrix::new(0, 3, vec![]),
            Err(AttacksError::InvalidParameter {
                parameter: "epochs",
                ..
            })
        ));
        assert!(matches!(
            ObservationMatrix::new(1, 2, vec![0.0, f64::INFINITY]),
            Err(AttacksError::NonFinite { index: 1, .. })
        ));
        let m = ObservationMatrix::new(2, 2, vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(m.row(1), &[3.0, 4.0]);
    }
}
