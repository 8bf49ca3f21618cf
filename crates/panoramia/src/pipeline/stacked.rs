//! The stacked classifiers (`mia_losses = "stacked"`). Per seed, logistic
//! regressions fitted on the classifiers' validation sets (members against
//! generated records, never the audit set) score the audit set:
//!
//! - the **baseline**: the baseline network's score and the loss features
//!   `(ℓ, ln(ℓ + 10⁻⁶))` of a *reference model*, the labeler (the target's
//!   architecture trained on the real records `D_G`, none of them audit
//!   members, never on anything of `f`);
//! - the **MIA**: the same, plus the target's loss features.
//!
//! The paper stacks its image and loss modules with a logistic regression
//! (Kazmi et al. 2024, Appendix B.1); here the image module is the baseline
//! network itself, so the MIA differs from the baseline by exactly what
//! the target's loss adds, and no second network is trained. The reference
//! model's loss calibrates the target's per record (a record every model
//! finds easy has a low loss under `f` whether or not it was trained on;
//! membership shows as `f`'s loss being lower than the reference's), the
//! offline reference-model calibration of membership inference (Watson et
//! al. 2022; Carlini et al. 2022, LiRA); the baseline gets the reference
//! too, so that what it says about the generated records' realness is not
//! credited to `f`.

use dpaudit_train::models::Model;

use super::artifacts::ClassifierRun;
use super::context::Run;
use super::game::Game;
use crate::classifier::{accuracy, loss_features, FitReport};
use crate::error::{out_err, Result};
use crate::stack::Logistic;
use crate::task;

/// Ridge on the standardised weights: negligible against the validation
/// set's size, there to keep Newton's steps finite.
const RIDGE: f64 = 1e-3;

/// Loss features of each model on the validation and audit sets,
/// concatenated per record.
pub(super) struct Features {
    val: Vec<Vec<f64>>,
    audit: Vec<Vec<f64>>,
}

impl Features {
    /// The loss features of `models` (none: no columns).
    pub(super) fn of(run: &Run<'_>, game: &Game, models: &[&dyn Model]) -> Result<Self> {
        let device = run.device;
        let cols = |r: &crate::records::Records| -> Result<Vec<Vec<f64>>> {
            let mut out = vec![Vec::new(); r.len()];
            for m in models {
                for (o, f) in out
                    .iter_mut()
                    .zip(loss_features(&task::losses(*m, r, device)?))
                {
                    o.extend_from_slice(&f);
                }
            }
            Ok(out)
        };
        Ok(Self {
            val: cols(&game.val_n)?,
            audit: cols(&game.audit_n)?,
        })
    }

    /// These columns, then `more`'s.
    pub(super) fn and(&self, more: &Features) -> Features {
        let join = |a: &[Vec<f64>], b: &[Vec<f64>]| -> Vec<Vec<f64>> {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.iter().chain(y).copied().collect())
                .collect()
        };
        Features {
            val: join(&self.val, &more.val),
            audit: join(&self.audit, &more.audit),
        }
    }
}

/// One stacked classifier per baseline seed: a logistic regression of the
/// seed's network score and `features` (`baseline` holds each seed's audit
/// and validation scores); `name` appears in errors.
pub(super) fn runs(
    run: &Run<'_>,
    game: &Game,
    features: &Features,
    baseline: &[ClassifierRun],
    name: &str,
) -> Result<Vec<ClassifierRun>> {
    let (val, audit) = (&features.val, &features.audit);
    let row = |z: f64, l: &Vec<f64>| -> Vec<f64> {
        std::iter::once(z).chain(l.iter().copied()).collect()
    };
    baseline
        .iter()
        .map(|b| {
            if b.validation_scores.len() != val.len() {
                return Err(out_err(
                    &run.out.join("baseline.json"),
                    format!(
                        "seed {} has {} validation scores, the stacked MIA needs {} (the baseline of another \
                         mia_losses setting; remove baseline.json to retrain it)",
                        b.seed,
                        b.validation_scores.len(),
                        val.len()
                    ),
                ));
            }
            let rows: Vec<Vec<f64>> = b
                .validation_scores
                .iter()
                .zip(val.iter())
                .map(|(&z, l)| row(z, l))
                .collect();
            let what = format!("{name} seed {}", b.seed);
            let lr = Logistic::fit(&rows, &game.y_val, RIDGE, &what)?;
            let fitted: Vec<f64> = rows.iter().map(|r| lr.logit(r)).collect();
            // In-sample on the validation set (the regression has four
            // parameters for thousands of records).
            let acc = accuracy(&fitted, &game.y_val);
            let scores = b
                .scores
                .iter()
                .zip(audit.iter())
                .map(|(&z, l)| lr.logit(&row(z, l)))
                .collect();
            Ok(ClassifierRun {
                seed: b.seed,
                fit: FitReport {
                    validation_accuracy: vec![acc],
                    best_epoch: 1,
                    best_validation_accuracy: acc,
                },
                scores,
                validation_scores: Vec::new(),
            })
        })
        .collect()
}
