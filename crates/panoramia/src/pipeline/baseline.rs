//! Stage "baseline": the baseline `b` on `(x, loss_h(x))`, and the
//! membership classifier it shares with every target's MIA (same
//! architecture, data, budget and seed; only the side loss differs). With
//! `classifier.seeds = K` each is trained K times; seed `k` of the baseline
//! and of every MIA share initialisation and minibatch order.

use dpaudit_data::seed::Stream;
use dpaudit_train::models::Model;

use super::artifacts::{ClassifierRun, ScoresFile, FORMAT};
use super::context::{keys, Run};
use super::game::Game;
use super::store::{found, save, Artifact, Stage};
use super::Progress;
use crate::classifier::{
    self, loss_features, FitReport, Labelled, MembershipNet, Side, LOSS_FEATURES,
};
use crate::config::MiaLosses;
use crate::error::Result;
use crate::nn::HostInit;
use crate::records::Records;
use crate::task;

/// The baseline's scores, found in the out-dir or trained.
pub(super) fn stage(
    run: &Run<'_>,
    game: &Game,
    helper: &dyn Model,
    shape: [i64; 3],
    progress: &mut dyn Progress,
) -> Result<ScoresFile> {
    // `found` checks the fingerprint and that there is a score per audit
    // record (`split.audit`).
    match found(run.store, &Stage::Baseline)? {
        Some(Artifact::Baseline(b)) => {
            progress.stage("baseline", "found in the out-dir");
            Ok(b)
        }
        _ => {
            let seeds = run.config.classifier.seeds;
            progress.stage(
                "baseline",
                &format!("training b on (x, loss of h), {seeds} seed(s)"),
            );
            // The baseline reads the helper's loss; with `target_and_helper`
            // it has the MIA's network, the target's columns zero.
            let losses: &[Option<&dyn Model>] = match run.config.classifier.mia_losses {
                MiaLosses::Target | MiaLosses::Stacked => &[Some(helper)],
                MiaLosses::TargetAndHelper => &[Some(helper), None],
            };
            let sides = Sides::of(run, game, losses)?;
            // Only the stacked classifiers are fitted on the validation scores.
            let keep_validation = run.config.classifier.mia_losses == MiaLosses::Stacked;
            let mut runs = seed_runs(
                run,
                "baseline",
                &sides,
                game,
                shape,
                keep_validation,
                progress,
            )?;
            let first = runs.remove(0);
            let b = ScoresFile {
                format: FORMAT.into(),
                fingerprint: run.fp.to_string(),
                fit: first.fit,
                scores: first.scores,
                validation_scores: first.validation_scores,
                more_seeds: runs,
            };
            save(run.store, &Stage::Baseline, &b)?;
            Ok(b)
        }
    }
}

/// Seed `k`'s sub-key of a classifier stream: seed 0 is the stream's
/// `CLASSIFIER` key itself (as before seeds existed), seed `k ≥ 1` its
/// child `k`.
fn seed_key(key: dpaudit_data::seed::SeedKey, k: u32) -> dpaudit_data::seed::SeedKey {
    let base = key.child(keys::CLASSIFIER);
    if k == 0 {
        base
    } else {
        base.child(u64::from(k))
    }
}

/// Every seed of a membership classifier (baseline or MIA) on `(x,
/// sides)`, seed 0 first, with its audit scores and, when
/// `keep_validation`, its validation scores.
pub(super) fn seed_runs(
    run: &Run<'_>,
    name: &str,
    sides: &Sides,
    game: &Game,
    shape: [i64; 3],
    keep_validation: bool,
    progress: &mut dyn Progress,
) -> Result<Vec<ClassifierRun>> {
    let seeds = run.config.classifier.seeds;
    (0..seeds)
        .map(|k| {
            let label = if seeds == 1 {
                name.to_string()
            } else {
                format!("{name} seed {k}")
            };
            let (fit, net) = train_classifier(run, &label, k, sides, game, shape, progress)?;
            let scores = net.scores(&game.audit, Some(&sides.audit), run.device)?;
            let validation_scores = if keep_validation {
                net.scores(&game.val_set, Some(&sides.val), run.device)?
            } else {
                Vec::new()
            };
            Ok(ClassifierRun {
                seed: k,
                fit,
                scores,
                validation_scores,
            })
        })
        .collect()
}

/// The side features of the training, validation and audit sets.
pub(super) struct Sides {
    width: usize,
    train: Vec<Side>,
    val: Vec<Side>,
    audit: Vec<Side>,
}

impl Sides {
    /// The loss features of each model in `losses`, in order, two columns
    /// each; `None` gives two zero columns (the same network, reading
    /// nothing there).
    pub(super) fn of(run: &Run<'_>, game: &Game, losses: &[Option<&dyn Model>]) -> Result<Self> {
        let device = run.device;
        let width = LOSS_FEATURES * losses.len();
        let side = |r: &Records| -> Result<Vec<Side>> {
            let mut out = vec![[0.0; classifier::SIDE_FEATURES]; r.len()];
            for (j, model) in losses.iter().enumerate() {
                if let Some(model) = model {
                    let f = loss_features(&task::losses(*model, r, device)?);
                    for (o, f) in out.iter_mut().zip(f) {
                        o[j * LOSS_FEATURES..(j + 1) * LOSS_FEATURES].copy_from_slice(&f);
                    }
                }
            }
            Ok(out)
        };
        Ok(Self {
            width,
            train: side(&game.train_n)?,
            val: side(&game.val_n)?,
            audit: side(&game.audit_n)?,
        })
    }
}

/// Train a membership classifier at seed `k` (the epoch with the best
/// validation accuracy kept).
fn train_classifier(
    run: &Run<'_>,
    name: &str,
    k: u32,
    sides: &Sides,
    game: &Game,
    shape: [i64; 3],
    progress: &mut dyn Progress,
) -> Result<(FitReport, MembershipNet)> {
    let device = run.device;
    let (train_side, val_side) = (&sides.train, &sides.val);
    let mut init = HostInit::new(seed_key(run.rnd.stream(Stream::Init), k), device);
    let mut net = MembershipNet::new(&mut init, shape, sides.width)?;
    let epochs = run.config.classifier.epochs;
    let fit = classifier::fit(
        &mut net,
        &Labelled {
            data: &game.train_set,
            labels: &game.y_train,
            side: Some(train_side),
        },
        &Labelled {
            data: &game.val_set,
            labels: &game.y_val,
            side: Some(val_side),
        },
        &run.config.classifier.fit(),
        seed_key(run.rnd.stream(Stream::Sampler), k),
        device,
        name,
        &mut |e, a| progress.epoch(name, e, epochs, "validation accuracy", a),
    )?;
    Ok((fit, net))
}
