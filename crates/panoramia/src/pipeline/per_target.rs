//! Stage `target <name>`, per target: its model `f`, the MIA on
//! `(x, loss_f(x))`, the measurement (`c_lb`, `{c+ε}_lb`, ε̃) against the
//! baseline, and the one-run audit on real members against real
//! non-members (`targets/<name>.json`).

use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::observations::Observations;
use dpaudit_audit::one_run::{one_run_lower_bound, GuessFamily, OneRunConfig};
use dpaudit_audit::panoramia::{panoramia, PanoramiaConfig as MeasureConfig, PanoramiaMeasurement};
use dpaudit_train::checkpoint::CheckpointMeta;
use dpaudit_train::models::Model;

use super::artifacts::{ScoresFile, TargetResult};
use super::baseline::membership_scores;
use super::context::Run;
use super::game::{Game, O1Game};
use super::store::{found, save, Artifact, Stage};
use super::targets::{self, Resolved};
use super::Progress;
use crate::error::{out_err, Result};
use crate::task;

/// Every target's result, each found in the out-dir or measured.
pub(super) fn all(
    run: &Run<'_>,
    game: &Game,
    o1: &O1Game,
    baseline: &ScoresFile,
    resolved: &mut [Resolved],
    shape: [i64; 3],
    progress: &mut dyn Progress,
) -> Result<Vec<TargetResult>> {
    let baseline_obs = Observations::new(baseline.scores.clone(), game.coins.clone())?;
    let dir = run.out.join("targets");
    let mut results = Vec::new();
    std::fs::create_dir_all(&dir).map_err(|e| out_err(&dir, e))?;
    for t in resolved.iter_mut() {
        let name = t.cfg.name.clone();
        let stage = Stage::Target(name.clone());
        // `found` checks the fingerprint and that there is a score per audit
        // record (`split.audit`).
        if let Some(Artifact::Target(r)) = found(run.store, &stage)? {
            progress.stage(&format!("target {name}"), "found in the out-dir");
            results.push(*r);
            continue;
        }
        let (model, meta) = targets::model(run, t, progress)?;
        progress.stage(
            &format!("target {name}"),
            "MIA on (x, loss of f), one-run audit",
        );
        let audit = Audit {
            game,
            o1,
            baseline_obs: &baseline_obs,
            shape,
        };
        let r = measure(run, &audit, t, model.as_ref(), &meta, progress)?;
        save(run.store, &stage, &r)?;
        results.push(r);
    }
    Ok(results)
}

/// What every target is measured against.
struct Audit<'a> {
    game: &'a Game,
    o1: &'a O1Game,
    baseline_obs: &'a Observations<'a>,
    shape: [i64; 3],
}

/// The MIA, the measurement and the one-run audit of one target.
fn measure(
    run: &Run<'_>,
    audit: &Audit<'_>,
    t: &Resolved,
    model: &dyn Model,
    meta: &CheckpointMeta,
    progress: &mut dyn Progress,
) -> Result<TargetResult> {
    let (config, device, game, o1) = (run.config, run.device, audit.game, audit.o1);
    let name = t.cfg.name.clone();
    let result_path = run.out.join("targets").join(format!("{name}.json"));
    let measure_cfg = MeasureConfig {
        confidence: config.confidence,
        selection: config.threshold_selection(),
    };
    let train_accuracy = task::accuracy(model, &o1.d_f_n, device)?;
    let test_accuracy = task::accuracy(model, &o1.test_n, device)?;
    let (mia_fit, mia_scores) = membership_scores(
        run,
        &format!("MIA {name}"),
        model,
        game,
        audit.shape,
        progress,
    )?;
    let mia_obs = Observations::new(mia_scores.clone(), game.coins.clone())?;
    let measurement: PanoramiaMeasurement = panoramia(audit.baseline_obs, &mia_obs, &measure_cfg)?;
    // O(1), real members vs real non-members, score = −loss.
    let o1_scores: Vec<f64> = task::losses(model, &o1.set_n, device)?
        .into_iter()
        .map(|l| -l)
        .collect();
    let o1_bound: EpsilonLowerBound = one_run_lower_bound(
        &Observations::new(o1_scores, o1.coins.clone())?,
        &OneRunConfig::new(config.confidence, 0.0, config.threshold_selection())
            .with_guesses(GuessFamily::WithOneSided),
    )?;
    Ok(TargetResult {
        name: name.clone(),
        source: t.checkpoint.as_ref().map_or_else(
            || "trained by this run".to_string(),
            |p| p.display().to_string(),
        ),
        model: format!("{:?}", meta.config.model),
        target_mode: meta.mode.name().to_string(),
        noise_multiplier: meta.config.dp.noise_multiplier,
        requested_epsilon: t.requested_epsilon,
        accountant_epsilon: meta.epsilon,
        delta: meta.config.delta,
        accounting: meta.accounting.clone(),
        train_accuracy,
        test_accuracy,
        mia_fit,
        mia_scores,
        epsilon_tilde: measurement.epsilon_tilde.value,
        c_lb: measurement.c_lb,
        c_plus_epsilon_lb: measurement.c_plus_epsilon_lb,
        measurement: serde_json::to_value(&measurement).map_err(|e| out_err(&result_path, e))?,
        o1_epsilon: o1_bound.epsilon,
        o1: serde_json::to_value(&o1_bound).map_err(|e| out_err(&result_path, e))?,
        o1_pairs: o1.pairs,
        fingerprint: run.fp.to_string(),
    })
}
