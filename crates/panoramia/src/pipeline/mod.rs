//! PANORAMIA end to end (Kazmi et al. 2024, Algorithm 1), resumable.
//!
//! Phase 1: split the target's training records `D_f` into `D_G` (the
//! generator's), `D_in^tr`, `D_in^val` and `D_in^te` (`m` audit members);
//! train the generator on `D_G`; generate `D_out^tr`, `D_out^val`,
//! `D_out^te` and the helper's training set; label generated images with a
//! labeler trained on `D_G`; train the helper `h` on generated data only.
//! Phase 2: train the baseline `b` on `(x, loss_h(x))` and, per target, the
//! MIA on `(x, loss_f(x))` — same architecture, data, budget and seed — to
//! tell `D_in^tr` from `D_out^tr`; then the audit game: a fair coin per
//! index picks `D_in^te[i]` or `D_out^te[i]`, and both classifiers score the
//! result. `c_lb`, `{c+ε}_lb` and ε̃ follow from the scores
//! ([`dpaudit_audit::panoramia`]). Beside it, per target, the one-run audit
//! of Steinke et al. (2023) on real members against real non-members (the
//! paper's "O(1) RM;RN"), and the accountant's ε.
//!
//! Every random draw comes from the pipeline's seed ([`Randomness::replayable`];
//! outputs say so): splits from `split`, parameters from `init`, minibatch
//! orders from `sampler`, generator latents from `generator`, audit coins
//! from `membership`. Each stage writes its artifact atomically into the
//! out-dir and is skipped when a valid one is present; `config.json` holds
//! the config's fingerprint and a different config is refused (the out-dir
//! is the experiment crate's store: `store`).
//!
//! [`run`] is the sequence of stages, one module each:
//! `targets` (resolve, check, train or load `f`), `data` (split `D_f`,
//! the generated or held-out pools), `generator` (train or load `G`, the
//! filter, the sample grids), `helper` (labeler and helper `h`),
//! `quality` (real vs generated), `game` (the audit set and the
//! classifiers' training sets), `baseline` (`b`), `per_target` (the MIA,
//! the measurement, the one-run audit; `stacked` the stacked MIA), `report` (`audit.json`, plots) and
//! `summary` (`summary.md`); `store` is the out-dir: its manifest
//! (`config.json`) and the stages' JSON artifacts as units of work.

mod artifacts;
mod band;
mod baseline;
mod context;
mod data;
mod game;
mod generator;
mod helper;
mod per_target;
mod quality;
mod report;
mod stacked;
mod store;
mod summary;
mod targets;

use std::path::Path;

use dpaudit_data::seed::Randomness;
use dpaudit_train::trainer;

use crate::config::PanoramiaConfig;
use crate::error::Result;
use crate::vae;

pub use artifacts::{AuditReport, Quality, TargetResult, FORMAT};
pub use summary::summary;

pub use crate::progress::{Progress, Quiet};

/// Run the pipeline for `config` (read from `file`, named in errors) with
/// its state in `out`.
pub fn run(
    config: &PanoramiaConfig,
    file: &str,
    out: &Path,
    progress: &mut dyn Progress,
) -> Result<AuditReport> {
    config.validate(file)?;
    let fp = config.fingerprint();
    // The lock is held until the pipeline returns: a second process on this
    // out-dir is refused with the holder's pid and host, and an unwritable
    // out-dir is refused before anything is computed.
    let store = store::claim(config, &fp, out, &format!("dpaudit panoramia {file}"))?;
    let device = trainer::resolve_device(config.device, "device")?;
    let rnd = Randomness::replayable(config.seed);
    let run = context::Run {
        config,
        file,
        out,
        store: &store,
        fp: &fp,
        rnd: &rnd,
        device,
    };

    // Targets and data.
    let mut targets = targets::resolve(&run, progress)?;
    let data = data::split(&run, &targets, progress)?;
    data::check_members(&targets, &data)?;
    let shape = vae::image_shape(&data.d_f.shape, "data")?;

    // Phase 1: generator, generated pools, labels, helper, quality.
    let gen = generator::obtain(&run, &data, progress)?;
    let mut filter = generator::filter(&run, &data, gen.as_ref(), progress)?;
    let (mut pools, generator_text) = data::pools(&run, &data, gen.as_ref(), filter.as_mut())?;
    generator::sample_grids(&run, &data, gen.as_ref(), &pools, filter.is_some())?;
    let mut labels = helper::label_pools(&run, &data, gen.is_some(), &mut pools, progress)?;
    let h = helper::helper(&run, &data, &pools, progress)?;
    let quality = quality::stage(&run, &data, &pools, shape, progress)?;

    // Phase 2: the audit game, the baseline, per target the MIA and bounds.
    let game = game::Game::new(&run, &data, &pools);
    let baseline = baseline::stage(&run, &game, h.as_ref(), shape, progress)?;
    let o1 = game::O1Game::new(&run, &data);
    let labeler = labels.labeler.take();
    let measured = per_target::all(
        &run,
        &game,
        &o1,
        per_target::Reference {
            baseline: &baseline,
            helper: h.as_ref(),
            labeler: labeler.as_deref(),
        },
        &mut targets,
        shape,
        progress,
    )?;

    // Report.
    let parts = report::Parts {
        data: &data,
        generator: generator_text,
        quality,
        filter: filter.map(|f| f.report().clone()),
        labels,
        baseline_fit: baseline.fit.clone(),
        targets: measured.targets,
    };
    let report = report::assemble(&run, &game, parts);
    report::write(&run, &report, &measured.baseline_scores, &game.coins)?;
    Ok(report)
}
