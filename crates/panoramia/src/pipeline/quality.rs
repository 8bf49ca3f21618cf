//! Stage "quality": the generator's quality check, a classifier separating
//! real `D_G` records from generated ones, scored on held-out records of
//! both (`quality.json`).

use dpaudit_data::seed::Stream;

use super::artifacts::Quality;
use super::context::{keys, Run};
use super::data::{Data, Pools};
use super::store::{found, save, Artifact, Stage};
use super::Progress;
use crate::classifier;
use crate::error::Result;

/// The quality check, found in the out-dir or run.
pub(super) fn stage(
    run: &Run<'_>,
    data: &Data,
    pools: &Pools,
    shape: [i64; 3],
    progress: &mut dyn Progress,
) -> Result<Quality> {
    if let Some(Artifact::Quality(q)) = found(run.store, &Stage::Quality)? {
        progress.stage("quality", "found in the out-dir");
        return Ok(q);
    }
    progress.stage("quality", "real D_G vs generated, held-out accuracy");
    let n = data.d_g.len().min(pools.quality.len());
    let n_test = held_out(n);
    let n_train = n - n_test;
    let epochs = run.config.quality.epochs;
    let (_, fit) = classifier::fit_real_vs_generated(
        [
            &data.d_g.range(0, n_train),
            &pools.quality.range(0, n_train),
        ],
        [
            &data.d_g.range(n_train, n_test),
            &pools.quality.range(n_train, n_test),
        ],
        shape,
        &run.config.quality,
        (
            run.rnd.stream(Stream::Init).child(keys::QUALITY),
            run.rnd.stream(Stream::Sampler).child(keys::QUALITY),
        ),
        run.device,
        "quality check",
        &mut |e, a| progress.epoch("quality check", e, epochs, "held-out accuracy", a),
    )?;
    let q = Quality {
        // The last epoch's held-out accuracy: no selection on the held-out set.
        accuracy: fit.validation_accuracy.last().copied().unwrap_or(f64::NAN),
        train_per_class: n_train,
        test_per_class: n_test,
        accuracy_per_epoch: fit.validation_accuracy,
    };
    save(run.store, &Stage::Quality, &q)?;
    Ok(q)
}

/// Records of each class the quality check holds out of `n` (a fifth, at
/// least 1 and at most `n − 1`); the filter never trains on them.
pub(super) fn held_out(n: usize) -> usize {
    (n / 5).max(1).min(n.saturating_sub(1))
}
