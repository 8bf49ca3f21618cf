//! Membership scores for the black-box, hidden-state and all-iterates threat
//! models, on host data.
//!
//! # Sign convention
//! Every score here is oriented so that **a higher score means "the canary was
//! included" (member)**. The audit crate can then threshold `score > τ ⇒ member`
//! without an orientation flag. Where a paper states the opposite orientation
//! the function says so and returns the negation:
//! - losses: a member has a *lower* loss, so the score is `−loss` (Steinke, Nasr & Jagielski 2023 §4);
//! - hidden state: DP-SGD descends, so inserting the canary gradient g moves
//!   θ *against* g and lowers `θ_T[d]` for a Dirac canary C·e_d (Cebere et al. 2024 App. D, Algorithm 4
//!   "Sign and label conventions", §8.8). The scores therefore use the descent
//!   displacement θ₀ − θ_T, i.e. the negation of Cebere et al.'s `θ_T[d]` − `θ₀[d]` and
//!   of its cosine cos(∇*, θ_T − θ₀);
//! - all iterates: Σ_t ⟨θ_{t−1} − θ_t, g⟩ is positive for a member, as in
//!   Steinke, Nasr & Jagielski 2023 §4 "Sign convention"; no negation needed.

use crate::error::{check_finite, check_len, AttacksError, Result};

/// Black-box loss score `−loss(θ_T; x)` (Steinke, Nasr & Jagielski 2023 §4 "Black-box"; Cebere et al. 2024
/// §3.5 A_L). Higher ⇒ member.
pub fn loss_score(loss_final: f64) -> Result<f64> {
    check_finite("loss_final", &[loss_final])?;
    Ok(-loss_final)
}

/// Black-box calibrated loss score `loss(θ₀; x) − loss(θ_T; x)`: how much
/// training lowered the canary's loss ("loss minus loss at θ₀",
/// negated so that higher ⇒ member).
pub fn loss_difference_score(loss_final: f64, loss_initial: f64) -> Result<f64> {
    check_finite("loss_final", &[loss_final])?;
    check_finite("loss_initial", &[loss_initial])?;
    Ok(loss_initial - loss_final)
}

/// Element-wise [`loss_score`] for a batch of canaries.
pub fn loss_scores(losses_final: &[f32]) -> Result<Vec<f64>> {
    check_finite("losses_final", losses_final)?;
    Ok(losses_final.iter().map(|&l| -f64::from(l)).collect())
}

/// Element-wise [`loss_difference_score`] for a batch of canaries.
pub fn loss_difference_scores(losses_final: &[f32], losses_initial: &[f32]) -> Result<Vec<f64>> {
    check_len("losses_initial", losses_final.len(), losses_initial.len())?;
    check_finite("losses_final", losses_final)?;
    check_finite("losses_initial", losses_initial)?;
    Ok(losses_final
        .iter()
        .zip(losses_initial)
        .map(|(&f, &i)| f64::from(i) - f64::from(f))
        .collect())
}

fn check_params(theta_initial: &[f32], theta_final: &[f32]) -> Result<()> {
    if theta_initial.is_empty() {
        return Err(AttacksError::Empty {
            what: "theta_initial",
        });
    }
    check_len("theta_final", theta_initial.len(), theta_final.len())?;
    check_finite("theta_initial", theta_initial)?;
    check_finite("theta_final", theta_final)
}

/// Hidden-state Dirac-canary score `θ₀[d] − θ_T[d]` for a canary gradient
/// `c·e_d` with `c > 0` (Cebere et al. 2024 App. C, Algorithm 2 A_GC-R / §3.3 A_GC-S; Steinke et al.'s Dirac
/// canary, Steinke, Nasr & Jagielski 2023 §4). This is the negation of Cebere et al.'s `θ_T[d] − θ₀[d]`
/// (see the module's sign convention). Higher ⇒ member.
pub fn dirac_score(theta_initial: &[f32], theta_final: &[f32], coordinate: usize) -> Result<f64> {
    check_params(theta_initial, theta_final)?;
    if coordinate >= theta_initial.len() {
        return Err(AttacksError::IndexOutOfRange {
            what: "coordinate",
            index: coordinate,
            len: theta_initial.len(),
        });
    }
    Ok(f64::from(theta_initial[coordinate]) - f64::from(theta_final[coordinate]))
}

/// Hidden-state scores of `m` Dirac canaries at once (one-run audits, Steinke, Nasr & Jagielski 2023 §4:
/// distinct coordinates, one score per canary), each `θ₀[d_i] − θ_T[d_i]`.
pub fn dirac_scores(
    theta_initial: &[f32],
    theta_final: &[f32],
    coordinates: &[usize],
) -> Result<Vec<f64>> {
    coordinates
        .iter()
        .map(|&d| dirac_score(theta_initial, theta_final, d))
        .collect()
}

fn dot_displacement(theta_initial: &[f32], theta_final: &[f32], canary: &[f32]) -> (f64, f64, f64) {
    // Returns (⟨θ₀ − θ_T, g⟩, ‖θ₀ − θ_T‖², ‖g‖²), accumulated in f64.
    let mut dot = 0.0;
    let mut nu = 0.0;
    let mut ng = 0.0;
    for ((&a, &b), &g) in theta_initial.iter().zip(theta_final).zip(canary) {
        let u = f64::from(a) - f64::from(b);
        let g = f64::from(g);
        dot += u * g;
        nu += u * u;
        ng += g * g;
    }
    (dot, nu, ng)
}

/// Hidden-state inner-product score `⟨θ₀ − θ_T, g⟩` for a canary gradient `g`
/// (the telescoped form of Steinke, Nasr & Jagielski 2023 §4's white-box score for a
/// fixed canary). Higher ⇒ member.
pub fn inner_product_score(
    theta_initial: &[f32],
    theta_final: &[f32],
    canary: &[f32],
) -> Result<f64> {
    check_params(theta_initial, theta_final)?;
    check_len("canary", theta_initial.len(), canary.len())?;
    check_finite("canary", canary)?;
    Ok(dot_displacement(theta_initial, theta_final, canary).0)
}

/// Hidden-state cosine score `cos(g, θ₀ − θ_T)` (Cebere et al. 2024 App. G, Algorithms 7–8 A_CotS,
/// Algorithm 7, negated so that higher ⇒ member). Returns 0 when θ_T = θ₀
/// (no direction to compare). A zero canary is refused.
pub fn cosine_score(theta_initial: &[f32], theta_final: &[f32], canary: &[f32]) -> Result<f64> {
    check_params(theta_initial, theta_final)?;
    check_len("canary", theta_initial.len(), canary.len())?;
    check_finite("canary", canary)?;
    let (dot, nu, ng) = dot_displacement(theta_initial, theta_final, canary);
    if ng == 0.0 {
        return Err(AttacksError::InvalidParameter {
            parameter: "canary",
            value: "the zero vector".to_owned(),
            expected: "a canary gradient with nonzero norm".to_owned(),
        });
    }
    if nu == 0.0 {
        return Ok(0.0);
    }
    Ok(dot / (nu.sqrt() * ng.sqrt()))
}

/// Streaming all-iterates score `Σ_t ⟨θ_{t−1} − θ_t, g_t⟩` (Steinke, Nasr & Jagielski 2023 §4
/// "White-box" §2), fed once per optimisation step so the iterates
/// are never stored.
///
/// `g_t` is either a fixed canary gradient given at construction (Dirac or
/// random-direction gradient canaries; then the sum telescopes to
/// `⟨θ₀ − θ_T, g⟩`) or, for input-space canaries whose gradient depends on the
/// parameters, the canary's clipped gradient at θ_{t−1}, passed per step.
///
/// Sign: with plain SGD, θ_{t−1} − θ_t = η·(noisy mean clipped gradient), so a
/// step that contained the canary adds about η·‖g‖²/B > 0. Higher ⇒ member.
#[derive(Debug, Clone)]
pub struct IterateScore {
    dim: usize,
    canary: Option<Vec<f32>>,
    sum: f64,
    steps: usize,
}

impl IterateScore {
    /// A score for a fixed canary gradient `g` (never changes across steps).
    pub fn with_fixed_canary(canary: Vec<f32>) -> Result<Self> {
        if canary.is_empty() {
            return Err(AttacksError::Empty { what: "canary" });
        }
        check_finite("canary", &canary)?;
        Ok(Self {
            dim: canary.len(),
            canary: Some(canary),
            sum: 0.0,
            steps: 0,
        })
    }

    /// A score whose gradient is supplied with every step (input-space canaries).
    pub fn with_per_step_gradient(dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(AttacksError::InvalidParameter {
                parameter: "dim",
                value: "0".to_owned(),
                expected: "the number of model parameters, > 0".to_owned(),
            });
        }
        Ok(Self {
            dim,
            canary: None,
            sum: 0.0,
            steps: 0,
        })
    }

    fn fixed(&self) -> Result<&[f32]> {
        self.canary
            .as_deref()
            .ok_or(AttacksError::InvalidParameter {
                parameter: "canary",
                value: "none (built with with_per_step_gradient)".to_owned(),
                expected: "a fixed canary; pass the gradient with observe_with_gradient".to_owned(),
            })
    }

    /// Adds `⟨before − after, g⟩` for one step with the fixed canary.
    pub fn observe(&mut self, before: &[f32], after: &[f32]) -> Result<()> {
        check_len("after", before.len(), after.len())?;
        let term = {
            let g = self.fixed()?;
            check_len("before", g.len(), before.len())?;
            step_term(before, after, g)
        };
        self.push(term)
    }

    /// Adds `⟨delta, g⟩` where `delta = θ_{t−1} − θ_t` (the step's descent
    /// displacement, e.g. η times the noisy gradient), with the fixed canary.
    pub fn observe_delta(&mut self, delta: &[f32]) -> Result<()> {
        let term = {
            let g = self.fixed()?;
            check_len("delta", g.len(), delta.len())?;
            delta
                .iter()
                .zip(g)
                .map(|(&d, &g)| f64::from(d) * f64::from(g))
                .sum::<f64>()
        };
        self.push(term)
    }

    /// Adds `⟨before − after, gradient⟩` where `gradient` is the canary's
    /// (clipped) gradient at `before` (Steinke, Nasr & Jagielski 2023 §4).
    pub fn observe_with_gradient(
        &mut self,
        before: &[f32],
        after: &[f32],
        gradient: &[f32],
    ) -> Result<()> {
        check_len("before", self.dim, before.len())?;
        check_len("after", self.dim, after.len())?;
        check_len("gradient", self.dim, gradient.len())?;
        check_finite("gradient", gradient)?;
        self.push(step_term(before, after, gradient))
    }

    fn push(&mut self, term: f64) -> Result<()> {
        if !term.is_finite() {
            return Err(AttacksError::NonFinite {
                what: "step inner product",
                index: self.steps,
                value: format!("{term}"),
            });
        }
        self.sum += term;
        self.steps += 1;
        Ok(())
    }

    /// Number of steps observed so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The accumulated score (0 before any step).
    pub fn finish(&self) -> f64 {
        self.sum
    }
}

fn step_term(before: &[f32], after: &[f32], g: &[f32]) -> f64 {
    before
        .iter()
        .zip(after)
        .zip(g)
        .map(|((&b, &a), &g)| (f64::from(b) - f64::from(a)) * f64::from(g))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_scores_are_negated_losses() {
        assert_eq!(loss_score(0.25).unwrap(), -0.25);
        assert_eq!(loss_difference_score(0.25, 2.0).unwrap(), 1.75);
        assert_eq!(loss_scores(&[1.0, 0.5]).unwrap(), vec![-1.0, -0.5]);
        assert_eq!(
            loss_difference_scores(&[1.0, 0.5], &[2.0, 2.0]).unwrap(),
            vec![1.0, 1.5]
        );
        assert!(matches!(
            loss_score(f64::NAN),
            Err(AttacksError::NonFinite {
                what: "loss_final",
                ..
            })
        ));
        assert!(matches!(
            loss_difference_scores(&[1.0], &[1.0, 2.0]),
            Err(AttacksError::LengthMismatch {
                what: "losses_initial",
                expected: 1,
                found: 2
            })
        ));
    }

    #[test]
    fn dirac_score_is_descent_displacement_at_the_coordinate() {
        // A canary C·e_1 with C = 1 and lr 0.5 moves θ[1] from 0.2 to −0.3.
        let theta0 = [1.0, 0.2, 3.0];
        let theta_t = [1.0, -0.3, 2.0];
        assert!((dirac_score(&theta0, &theta_t, 1).unwrap() - 0.5).abs() < 1e-7);
        assert!(matches!(
            dirac_score(&theta0, &theta_t, 3),
            Err(AttacksError::IndexOutOfRange {
                what: "coordinate",
                index: 3,
                len: 3
            })
        ));
        let both = dirac_scores(&theta0, &theta_t, &[1, 2]).unwrap();
        assert!((both[1] - 1.0).abs() < 1e-7);
    }

    #[test]
    fn inner_product_and_cosine_against_hand_computation() {
        let theta0 = [0.0, 0.0, 0.0, 0.0];
        let theta_t = [-1.0, -1.0, 0.0, 0.0]; // θ₀ − θ_T = (1, 1, 0, 0)
        let g = [1.0, 0.0, 0.0, 0.0];
        assert!((inner_product_score(&theta0, &theta_t, &g).unwrap() - 1.0).abs() < 1e-12);
        // cos 45° = 1/√2.
        let cos = cosine_score(&theta0, &theta_t, &g).unwrap();
        assert!((cos - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12);
        // Unmoved parameters give 0, a zero canary is refused.
        assert_eq!(cosine_score(&theta0, &theta0, &g).unwrap(), 0.0);
        assert!(matches!(
            cosine_score(&theta0, &theta_t, &[0.0; 4]),
            Err(AttacksError::InvalidParameter {
                parameter: "canary",
                ..
            })
        ));
    }

    #[test]
    fn iterate_score_telescopes_for_a_fixed_canary() {
        // Steinke, Nasr & Jagielski 2023 §4 "Observation": for a fixed g the per-step sum equals ⟨θ₀ − θ_T, g⟩.
        let g = vec![0.5, -1.0, 2.0];
        let iterates: [[f32; 3]; 4] = [
            [0.0, 0.0, 0.0],
            [0.1, -0.2, 0.3],
            [-0.4, 0.25, 0.5],
            [1.0, 1.0, -1.0],
        ];
        let mut acc = IterateScore::with_fixed_canary(g.clone()).unwrap();
        let mut acc_delta = IterateScore::with_fixed_canary(g.clone()).unwrap();
        for w in iterates.windows(2) {
            acc.observe(&w[0], &w[1]).unwrap();
            let delta: Vec<f32> = w[0].iter().zip(&w[1]).map(|(a, b)| a - b).collect();
            acc_delta.observe_delta(&delta).unwrap();
        }
        let direct = inner_product_score(&iterates[0], &iterates[3], &g).unwrap();
        assert_eq!(acc.steps(), 3);
        assert!(
            (acc.finish() - direct).abs() < 1e-6,
            "{} vs {direct}",
            acc.finish()
        );
        assert!((acc_delta.finish() - direct).abs() < 1e-6);
    }

    #[test]
    fn iterate_score_with_per_step_gradients() {
        let mut acc = IterateScore::with_per_step_gradient(2).unwrap();
        // step 1: displacement (1, 0)·(2, 5) = 2; step 2: (0, −1)·(1, 1) = −1.
        acc.observe_with_gradient(&[1.0, 0.0], &[0.0, 0.0], &[2.0, 5.0])
            .unwrap();
        acc.observe_with_gradient(&[0.0, 0.0], &[0.0, 1.0], &[1.0, 1.0])
            .unwrap();
        assert!((acc.finish() - 1.0).abs() < 1e-12);
        assert!(matches!(
            acc.observe(&[0.0, 0.0], &[0.0, 0.0]),
            Err(AttacksError::InvalidParameter {
                parameter: "canary",
                ..
            })
        ));
        assert!(matches!(
            acc.observe_with_gradient(&[0.0], &[0.0], &[0.0]),
            Err(AttacksError::LengthMismatch {
                what: "before",
                expected: 2,
                found: 1
            })
        ));
    }
}
