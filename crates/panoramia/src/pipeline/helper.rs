//! Stages "labeler" and "helper": the labeler (trained on `D_G`) labels
//! generated records; the helper `h` (the target's architecture) is trained
//! on generated data only. Both resume from the out-dir.

use dpaudit_data::seed::Stream;
use dpaudit_train::models::Model;

use super::context::{keys, Run};
use super::data::{Data, Pools};
use super::Progress;
use crate::error::Result;
use crate::records::Records;
use crate::task::{self, TaskMeta};

/// What labelling the generated pools measured (both None without a
/// generator), and the labeler itself.
pub(super) struct Labels {
    /// The labeler (a model of the target's architecture trained on the
    /// real records `D_G`, none of them audit members): the stacked MIA's
    /// reference model.
    pub labeler: Option<Box<dyn Model>>,
    /// Accuracy of the labeler on the test split.
    pub labeler_accuracy: Option<f64>,
    /// Share of generated records the labeler gives the class the
    /// conditional generator drew them for.
    pub agreement: Option<f64>,
}

/// Train or resume a task model (labeler, helper).
fn task_model(
    run: &Run<'_>,
    role: &str,
    data: &Records,
    classes: i64,
    key: u64,
    progress: &mut dyn Progress,
) -> Result<Box<dyn Model>> {
    let config = run.config;
    let path = run.out.join(format!("{role}.safetensors"));
    let meta = TaskMeta {
        format: "dpaudit-task-model/1".into(),
        role: role.into(),
        model: config.helper.model.clone(),
        sample_shape: data.shape.clone(),
        classes,
        fingerprint: run.fp.into(),
    };
    if let Some(m) = task::load_model(&path, &meta, run.device)? {
        progress.stage(role, "found in the out-dir, not retrained");
        return Ok(m);
    }
    progress.stage(role, &format!("training on {} records", data.len()));
    let model = task::new_model(
        &config.helper.model,
        &data.shape,
        classes,
        run.rnd.stream(Stream::Init).child(key),
        run.device,
    )?;
    let fit = config.helper.fit();
    let epochs = fit.epochs;
    task::fit_model(
        model.as_ref(),
        data,
        &fit,
        run.rnd.stream(Stream::Sampler).child(key),
        run.device,
        role,
        &mut |e, l| progress.epoch(role, e, epochs, "loss", l),
    )?;
    task::save_model(model.as_ref(), &path, &meta)?;
    Ok(model)
}

/// With a generator: train the labeler on `D_G`, measure it, and (unless
/// the generator's own labels are kept) relabel the generated pools.
pub(super) fn label_pools(
    run: &Run<'_>,
    data: &Data,
    generated: bool,
    pools: &mut Pools,
    progress: &mut dyn Progress,
) -> Result<Labels> {
    let mut labels = Labels {
        labeler: None,
        labeler_accuracy: None,
        agreement: None,
    };
    if !generated {
        return Ok(labels);
    }
    let norm = data.norm.as_ref();
    let d_g_norm = data.d_g.normalized(norm);
    let labeler = task_model(
        run,
        "labeler",
        &d_g_norm,
        data.classes,
        keys::LABELER,
        progress,
    )?;
    labels.labeler_accuracy = Some(task::accuracy(
        labeler.as_ref(),
        &data.test.normalized(norm),
        run.device,
    )?);
    let (mut agree, mut drawn) = (0usize, 0usize);
    for pool in [
        &mut pools.helper,
        &mut pools.out_tr,
        &mut pools.out_val,
        &mut pools.out_te,
    ] {
        let predicted = task::predict(labeler.as_ref(), &pool.normalized(norm), run.device)?;
        for (&given, &seen) in pool.y.iter().zip(&predicted) {
            if given >= 0 {
                drawn += 1;
                agree += usize::from(given == seen);
            }
        }
        if !run.config.generator.labels_from_generator() {
            pool.y = predicted;
        }
    }
    if drawn > 0 {
        labels.agreement = Some(agree as f64 / drawn as f64);
    }
    labels.labeler = Some(labeler);
    Ok(labels)
}

/// The helper `h`, trained on the generated helper pool.
pub(super) fn helper(
    run: &Run<'_>,
    data: &Data,
    pools: &Pools,
    progress: &mut dyn Progress,
) -> Result<Box<dyn Model>> {
    task_model(
        run,
        "helper",
        &pools.helper.normalized(data.norm.as_ref()),
        data.classes,
        keys::HELPER,
        progress,
    )
}
