//! Stage "data": split the target's training records `D_f` into `D_G`,
//! `D_in^tr`, `D_in^val` and `D_in^te`, and check that every target saw the
//! members; then the non-member pools, generated (through the filter when
//! there is one) or held-out real records.

use std::collections::HashSet;

use dpaudit_data::dataset::Normalization;
use dpaudit_data::seed::{SeedKey, Stream};

use super::context::{keys, Run};
use super::targets::{raw_data, Resolved};
use super::Progress;
use crate::error::{config_err, PanoramiaError, Result};
use crate::filter::{self, Filter, Generator};
use crate::records::{permutation, Records};

/// The pipeline's real records.
pub(super) struct Data {
    pub classes: i64,
    pub d_f: Records,
    pub test: Records,
    pub norm: Option<Normalization>,
    pub source: String,
    pub synthetic: bool,
    pub d_g: Records,
    pub in_tr: Records,
    pub in_val: Records,
    pub in_te: Records,
}

/// `D_f` (target[0]'s training records) split by the `split` stream.
pub(super) fn split(
    run: &Run<'_>,
    targets: &[Resolved],
    progress: &mut dyn Progress,
) -> Result<Data> {
    let first = targets
        .first()
        .map(|t| t.train.clone())
        .ok_or_else(|| config_err(run.file, "target", "none", "at least one [[target]]"))?;
    let (train, test, norm) = raw_data(&first)?;
    let source = train.source().label();
    let classes = train.num_classes() as i64;
    let synthetic = train.source().is_synthetic();
    let d_f = Records::from_dataset(&train);
    let test = Records::from_dataset(&test);
    let s = &run.config.split;
    let g = s.generator;
    let need = g + s.classifier_train + s.classifier_validation + s.audit;
    if need > d_f.len() {
        return Err(config_err(
            run.file,
            "split",
            format!(
                "generator {g} + classifier_train {} + classifier_validation {} + audit {} = {need}",
                s.classifier_train, s.classifier_validation, s.audit
            ),
            format!(
                "at most {} records: the target's training set D_f (target[0], {source})",
                d_f.len()
            ),
        ));
    }
    let perm = permutation(
        d_f.len(),
        run.rnd.stream(Stream::Split).child(keys::SPLIT_DF),
    );
    let (d_g, in_tr, in_val, in_te) = {
        let mut take = taker(&d_f, &perm);
        (
            take(g),
            take(s.classifier_train),
            take(s.classifier_validation),
            take(s.audit),
        )
    };
    progress.stage(
        "data",
        &format!(
            "D_f = {} records ({source}), test split {} records",
            d_f.len(),
            test.len()
        ),
    );
    Ok(Data {
        classes,
        d_f,
        test,
        norm,
        source,
        synthetic,
        d_g,
        in_tr,
        in_val,
        in_te,
    })
}

/// Consecutive parts of `records` in the order of `perm`.
fn taker<'a>(records: &'a Records, perm: &'a [usize]) -> impl FnMut(usize) -> Records + 'a {
    let mut at = 0;
    move |n: usize| {
        let part = records.subset(&perm[at..at + n]);
        at += n;
        part
    }
}

/// Non-member pools (generated or held-out real): helper, train,
/// validation, audit, quality.
pub(super) struct Pools {
    pub helper: Records,
    pub out_tr: Records,
    pub out_val: Records,
    pub out_te: Records,
    pub quality: Records,
}

/// The pools and the generator in words: drawn from the generator, or
/// held-out real records when there is none (`real_holdout`).
pub(super) fn pools(
    run: &Run<'_>,
    data: &Data,
    gen: Option<&(Generator, String)>,
    filter: Option<&mut Filter>,
) -> Result<(Pools, String)> {
    let quality_n = data.d_g.len();
    Ok(match gen {
        Some((g, text)) => (
            generated_pools(run, g, filter, quality_n)?,
            text.clone(),
        ),
        None => (
            holdout_pools(run, &data.test, quality_n)?,
            "real_holdout: the data distribution itself (held-out real records with their true labels; a control, c = 0)".to_string(),
        ),
    })
}

/// The key of every generated draw.
pub(super) fn pool_key(run: &Run<'_>) -> SeedKey {
    run.rnd.stream(Stream::Generator).child(keys::GENERATOR + 1)
}

/// Every generated pool, each an independent draw (through the filter
/// when there is one).
fn generated_pools(
    run: &Run<'_>,
    gen: &Generator,
    mut filter: Option<&mut Filter>,
    quality: usize,
) -> Result<Pools> {
    let s = &run.config.split;
    let key = pool_key(run);
    let mut draw = |pool: &str, n: usize, purpose: u32| -> Result<Records> {
        filter::draw(
            gen,
            filter.as_deref_mut(),
            pool,
            n,
            key,
            purpose,
            run.file,
            run.device,
        )
    };
    Ok(Pools {
        helper: draw("helper", s.helper, keys::POOL_HELPER)?,
        out_tr: draw("classifier_train", s.classifier_train, keys::POOL_TRAIN)?,
        out_val: draw(
            "classifier_validation",
            s.classifier_validation,
            keys::POOL_VALIDATION,
        )?,
        out_te: draw("audit", s.audit, keys::POOL_AUDIT)?,
        quality: draw("quality", quality, keys::POOL_QUALITY)?,
    })
}

/// Held-out real records of the test split, permuted by the `split` stream.
fn holdout_pools(run: &Run<'_>, test: &Records, quality: usize) -> Result<Pools> {
    let s = &run.config.split;
    let need = s.helper + s.classifier_train + s.classifier_validation + s.audit + quality;
    if need > test.len() {
        return Err(config_err(
            run.file,
            "generator",
            "real_holdout",
            format!(
                "a test split of at least {need} records (helper + classifier_train + classifier_validation + audit \
                 + quality {quality}); it has {}",
                test.len()
            ),
        ));
    }
    let perm = permutation(
        test.len(),
        run.rnd.stream(Stream::Split).child(keys::SPLIT_HOLDOUT),
    );
    let mut take = taker(test, &perm);
    Ok(Pools {
        helper: take(s.helper),
        out_tr: take(s.classifier_train),
        out_val: take(s.classifier_validation),
        out_te: take(s.audit),
        quality: take(quality),
    })
}

fn keyset(r: &Records) -> HashSet<u64> {
    (0..r.len()).map(|i| r.record_hash(i)).collect()
}

/// Every target after the first trained on records of `D_f`'s shape that
/// include every member (`D_in^tr`, `D_in^val`, `D_in^te`).
pub(super) fn check_members(targets: &[Resolved], data: &Data) -> Result<()> {
    let members = data.in_tr.concat(&data.in_val).concat(&data.in_te);
    for t in targets.iter().skip(1) {
        let (train, _, _) = raw_data(&t.train)?;
        let theirs = Records::from_dataset(&train);
        if theirs.shape != data.d_f.shape {
            return Err(PanoramiaError::Checkpoint {
                path: t
                    .checkpoint
                    .as_ref()
                    .map_or_else(|| format!("target `{}`", t.cfg.name), |p| p.display().to_string()),
                reason: format!(
                    "trained on records of shape {:?}: expected {:?}, the shape of target[0]'s data",
                    theirs.shape, data.d_f.shape
                ),
            });
        }
        let set = keyset(&theirs);
        let missing = (0..members.len())
            .filter(|&i| !set.contains(&members.record_hash(i)))
            .count();
        if missing > 0 {
            return Err(PanoramiaError::NotMembers {
                target: t.cfg.name.clone(),
                missing,
                members: members.len(),
                detail: format!(
                    "it was trained on {} records of {:?} (train_size {:?}, seed {}), the members come from target[0]'s training set",
                    theirs.len(),
                    t.train.data.dataset,
                    t.train.data.train_size,
                    t.train.seed
                ),
            });
        }
    }
    Ok(())
}
