//! Stage `target <name>`, per target: its model `f`, the MIA on
//! `(x, loss_f(x))`, the measurement (`c_lb`, `{c+ε}_lb`, ε̃) against the
//! baseline, and the one-run audit on real members against real
//! non-members (`targets/<name>.json`).

use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::observations::Observations;
use dpaudit_audit::one_run::one_run_lower_bound;
use dpaudit_audit::panoramia::{panoramia, PanoramiaConfig as MeasureConfig, PanoramiaMeasurement};
use dpaudit_train::checkpoint::CheckpointMeta;
use dpaudit_train::models::Model;

use super::artifacts::{
    ci95_half_width, mean_sd, ClassifierRun, PaperChoice, ScoresFile, SeedMeasurement, TargetResult,
};
use super::band;
use super::baseline::{seed_runs, Sides};
use super::context::Run;
use super::game::{Game, O1Game};
use super::stacked;
use super::store::{found, save, Artifact, Stage};
use super::targets::{self, Resolved};
use super::Progress;
use crate::config::MiaLosses;
use crate::error::{out_err, Result};
use crate::task;

/// What every MIA is compared with and may read: the baseline's scores,
/// the helper `h` and the labeler (the stacked classifiers' reference
/// model; None without a generator).
pub(super) struct Reference<'a> {
    pub baseline: &'a ScoresFile,
    pub helper: &'a dyn Model,
    pub labeler: Option<&'a dyn Model>,
}

/// Every target's result, each found in the out-dir or measured.
pub(super) fn all(
    run: &Run<'_>,
    game: &Game,
    o1: &O1Game,
    reference: Reference<'_>,
    resolved: &mut [Resolved],
    shape: [i64; 3],
    progress: &mut dyn Progress,
) -> Result<Measured> {
    let (baseline, helper) = (reference.baseline, reference.helper);
    let network_runs = baseline.runs();
    // The stacked baseline: each seed's network score with the reference
    // model's loss, fitted on the validation sets; the MIAs add f's loss.
    let stacked_reference = match run.config.classifier.mia_losses {
        MiaLosses::Stacked => {
            let models: Vec<&dyn Model> = reference.labeler.into_iter().collect();
            Some(stacked::Features::of(run, game, &models)?)
        }
        _ => None,
    };
    let baseline_runs = match &stacked_reference {
        Some(f) => stacked::runs(run, game, f, &network_runs, "stacked baseline")?,
        None => network_runs.clone(),
    };
    let baseline_obs = baseline_runs
        .iter()
        .map(|r| {
            let (fit, scores) = (&r.fit, &r.scores);
            Ok((
                fit.best_validation_accuracy,
                Observations::new(scores.to_vec(), game.coins.clone())?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
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
            baseline_runs: &network_runs,
            baseline_scored: &baseline_runs,
            stacked_reference: stacked_reference.as_ref(),
            helper,
            shape,
        };
        let r = measure(run, &audit, t, model.as_ref(), &meta, progress)?;
        save(run.store, &stage, &r)?;
        results.push(r);
    }
    let baseline_scores = baseline_runs
        .into_iter()
        .next()
        .map(|r| r.scores)
        .unwrap_or_default();
    Ok(Measured {
        targets: results,
        baseline_scores,
    })
}

/// Every target's result, and the baseline's seed-0 audit scores the
/// bounds used (the stacked baseline's with `mia_losses = "stacked"`).
pub(super) struct Measured {
    pub targets: Vec<TargetResult>,
    pub baseline_scores: Vec<f64>,
}

/// What every target is measured against.
struct Audit<'a> {
    game: &'a Game,
    o1: &'a O1Game,
    /// Per seed: the baseline's best validation accuracy and its scores.
    baseline_obs: &'a [(f64, Observations<'a>)],
    /// Per seed: the baseline network's audit and validation scores (the
    /// stacked MIA is fitted on them).
    baseline_runs: &'a [ClassifierRun],
    /// Per seed: the baseline's scores the bounds use (the stacked
    /// baseline's when stacked).
    baseline_scored: &'a [ClassifierRun],
    /// The stacked classifiers' reference-model features (None: not
    /// stacked).
    stacked_reference: Option<&'a stacked::Features>,
    /// The helper `h` (its loss is a side feature of the MIA with
    /// `mia_losses = "target_and_helper"`).
    helper: &'a dyn Model,
    shape: [i64; 3],
}

/// The first index of the largest value.
fn best_index(values: impl Iterator<Item = f64>) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in values.enumerate() {
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map_or(0, |(i, _)| i)
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
    let mut mia_runs: Vec<ClassifierRun> = match config.classifier.mia_losses {
        MiaLosses::Stacked => {
            let target = stacked::Features::of(run, game, &[model])?;
            let features = match audit.stacked_reference {
                Some(r) => r.and(&target),
                None => target,
            };
            stacked::runs(
                run,
                game,
                &features,
                audit.baseline_runs,
                &format!("MIA {name}"),
            )?
        }
        mode => {
            let losses: &[Option<&dyn Model>] = match mode {
                MiaLosses::TargetAndHelper => &[Some(audit.helper), Some(model)],
                _ => &[Some(model)],
            };
            let sides = Sides::of(run, game, losses)?;
            seed_runs(
                run,
                &format!("MIA {name}"),
                &sides,
                game,
                audit.shape,
                false,
                progress,
            )?
        }
    };
    // Baseline seed k against MIA seed k: the pairs share initialisation and
    // minibatch order, so they differ only in the side loss.
    let mut per_seed = Vec::with_capacity(mia_runs.len());
    let mut first: Option<PanoramiaMeasurement> = None;
    let level = (1.0 - config.confidence) / 2.0;
    for ((mia, (b_acc, b_obs)), b_run) in mia_runs
        .iter()
        .zip(audit.baseline_obs)
        .zip(audit.baseline_scored)
    {
        let mia_obs = Observations::new(mia.scores.clone(), game.coins.clone())?;
        let m: PanoramiaMeasurement = panoramia(b_obs, &mia_obs, &measure_cfg)?;
        let band_excess = band::excess(&b_run.scores, &mia.scores, &game.coins, level)?;
        per_seed.push(SeedMeasurement {
            seed: mia.seed,
            baseline_validation_accuracy: *b_acc,
            mia_validation_accuracy: mia.fit.best_validation_accuracy,
            c_lb: m.c_lb,
            c_plus_epsilon_lb: m.c_plus_epsilon_lb,
            epsilon_tilde: m.epsilon_tilde.value,
            band_excess,
        });
        first.get_or_insert(m);
    }
    let measurement = first.ok_or_else(|| out_err(&result_path, "no classifier seed"))?;
    let column =
        |f: fn(&SeedMeasurement) -> f64| mean_sd(&per_seed.iter().map(f).collect::<Vec<_>>());
    let (tilde, tilde_sd) = column(|p| p.epsilon_tilde);
    let tilde_ci95 = ci95_half_width(tilde_sd, per_seed.len());
    let (c_lb, c_lb_sd) = column(|p| p.c_lb);
    let (cpe, cpe_sd) = column(|p| p.c_plus_epsilon_lb);
    let (band_excess, band_excess_sd) = column(|p| p.band_excess);
    // The paper's estimator: each classifier's seed with the best validation
    // accuracy (Kazmi et al. 2024, Appendix C.1), chosen independently.
    let b_best = best_index(per_seed.iter().map(|p| p.baseline_validation_accuracy));
    let m_best = best_index(per_seed.iter().map(|p| p.mia_validation_accuracy));
    let paper_choice = PaperChoice {
        baseline_seed: per_seed[b_best].seed,
        mia_seed: per_seed[m_best].seed,
        c_lb: per_seed[b_best].c_lb,
        c_plus_epsilon_lb: per_seed[m_best].c_plus_epsilon_lb,
        epsilon_tilde: (per_seed[m_best].c_plus_epsilon_lb - per_seed[b_best].c_lb).max(0.0),
    };
    let seed0 = mia_runs.remove(0);
    // O(1), real members vs real non-members, score = −loss (crate::reference).
    let o1_scores: Vec<f64> = task::losses(model, &o1.set_n, device)?
        .into_iter()
        .map(|l| -l)
        .collect();
    let o1_bound: EpsilonLowerBound = one_run_lower_bound(
        &Observations::new(o1_scores, o1.coins.clone())?,
        &config.reference.one_run_config(config.confidence),
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
        mia_fit: seed0.fit,
        mia_scores: seed0.scores,
        mia_more_seeds: mia_runs,
        measurement: serde_json::to_value(&measurement).map_err(|e| out_err(&result_path, e))?,
        per_seed,
        epsilon_tilde: tilde,
        epsilon_tilde_sd: tilde_sd,
        epsilon_tilde_ci95: tilde_ci95,
        c_lb,
        c_lb_sd,
        c_plus_epsilon_lb: cpe,
        c_plus_epsilon_lb_sd: cpe_sd,
        band_excess,
        band_excess_sd,
        paper_choice: Some(paper_choice),
        o1_epsilon: o1_bound.epsilon,
        o1: serde_json::to_value(&o1_bound).map_err(|e| out_err(&result_path, e))?,
        o1_pairs: o1.pairs,
        fingerprint: run.fp.to_string(),
    })
}
