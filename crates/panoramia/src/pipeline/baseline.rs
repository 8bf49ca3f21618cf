//! Stage "baseline": the baseline `b` on `(x, loss_h(x))`, and the
//! membership classifier it shares with every target's MIA (same
//! architecture, data, budget and seed; only the side loss differs).

use dpaudit_data::seed::Stream;
use dpaudit_train::models::Model;

use super::artifacts::{ScoresFile, FORMAT};
use super::context::{keys, Run};
use super::game::Game;
use super::store::{found, save, Artifact, Stage};
use super::Progress;
use crate::classifier::{self, loss_features, FitReport, Labelled, MembershipNet};
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
            progress.stage("baseline", "training b on (x, loss of h)");
            let (fit, scores) = membership_scores(run, "baseline", helper, game, shape, progress)?;
            let b = ScoresFile {
                format: FORMAT.into(),
                fingerprint: run.fp.to_string(),
                fit,
                scores,
            };
            save(run.store, &Stage::Baseline, &b)?;
            Ok(b)
        }
    }
}

/// Train a membership classifier (baseline or MIA) on `(x, loss of
/// model(x))` and score the audit set.
pub(super) fn membership_scores(
    run: &Run<'_>,
    name: &str,
    model: &dyn Model,
    game: &Game,
    shape: [i64; 3],
    progress: &mut dyn Progress,
) -> Result<(FitReport, Vec<f64>)> {
    let device = run.device;
    let side = |r: &Records| -> Result<Vec<[f64; 2]>> {
        Ok(loss_features(&task::losses(model, r, device)?))
    };
    let (train_side, val_side, audit_side) = (
        side(&game.train_n)?,
        side(&game.val_n)?,
        side(&game.audit_n)?,
    );
    let mut init = HostInit::new(run.rnd.stream(Stream::Init).child(keys::CLASSIFIER), device);
    let mut net = MembershipNet::new(&mut init, shape, true)?;
    let epochs = run.config.classifier.epochs;
    let fit = classifier::fit(
        &mut net,
        &Labelled {
            data: &game.train_set,
            labels: &game.y_train,
            side: Some(&train_side),
        },
        &Labelled {
            data: &game.val_set,
            labels: &game.y_val,
            side: Some(&val_side),
        },
        &run.config.classifier,
        run.rnd.stream(Stream::Sampler).child(keys::CLASSIFIER),
        device,
        name,
        &mut |e, a| progress.epoch(name, e, epochs, "validation accuracy", a),
    )?;
    let scores = net.scores(&game.audit, Some(&audit_side), device)?;
    Ok((fit, scores))
}
