//! Generated records for the audit: the trained generator behind one
//! interface, and the optional real-vs-generated filter.
//!
//! The filter follows Kazmi et al. 2024 (Appendix B.1 for CelebA, B.3 for
//! the tabular task): a classifier learns to tell real records of the
//! generator's training data from extra generated ones, and generated
//! records it flags as generated with high confidence are discarded before
//! they are used. PANORAMIA's closeness (Definition 3) is one-sided, so
//! dropping poor samples keeps the guarantee's shape; what it changes is the
//! generated distribution `G` itself, which is then "generator followed by
//! filter" — the baseline measures the closeness of that distribution, and
//! every generated set of the run (helper, classifier training and
//! validation, audit, quality check, sample grid) comes from it.
//!
//! Data: the filter's real records are the part of `D_G` the quality check
//! trains on (its held-out real records are never shown to the filter),
//! its generated records an independent draw (purpose
//! [`FILTER_PURPOSE`]); 10 % of each is its validation set, on which its
//! best epoch is kept (the baseline's architecture without side
//! information, [`MembershipNet`]). No audit member and no generated record
//! of any pool is used to train it.
//!
//! Drawing a pool of `n`: candidates are drawn in rounds, each round an
//! independent draw under its own key, and a candidate is kept when the
//! filter's `P(generated)` is below the threshold (threshold 1 keeps every
//! candidate); with `keep_class_frequencies`, a conditional generator's pool
//! keeps `D_G`'s class frequencies (a quota per class, so the filter cannot
//! thin out the classes it finds hard). After `max_candidates · n` candidates a pool still short is
//! an error naming `filter.threshold`. The kept records are the first
//! accepted ones in draw order, so a pool is a replayable function of the
//! seed.

use dpaudit_data::seed::SeedKey;
use serde::{Deserialize, Serialize};
use tch::Device;

use crate::classifier::{self, FitReport, MembershipNet};
use crate::config::{FilterConfig, FitConfig};
use crate::dcgan::Dcgan;
use crate::error::{config_err, out_err, Result};
use crate::nn::{load_into, read_meta, save_tensors, HostInit, Parameters, Trained};
use crate::progress::Progress;
use crate::records::Records;
use crate::vae::Vae;

/// The generator's purpose tag of the filter's own generated records.
pub const FILTER_PURPOSE: u32 = 6;

/// Children of a pool key used for the filter's rounds of candidates.
const ROUND_BASE: u64 = 1 << 20;

/// Format tag of the filter's checkpoint metadata.
pub const FORMAT: &str = "dpaudit-filter/1";

/// A trained generator.
#[derive(Debug)]
pub enum Generator {
    /// The VAE ([`crate::vae`]): unlabelled samples.
    Vae(Vae),
    /// The conditional DCGAN ([`crate::dcgan`]): samples with the class
    /// they were generated for.
    Dcgan(Dcgan),
}

impl Generator {
    /// `n` generated records from `key` and `purpose` (replayable); labels
    /// are the DCGAN's classes, `-1` for the VAE.
    pub fn draw(&self, n: usize, key: SeedKey, purpose: u32, device: Device) -> Result<Records> {
        match self {
            Self::Vae(vae) => {
                let t = vae.sample(n, key, purpose, device)?;
                let x: Vec<f32> = crate::nn::to_host(&t)?
                    .into_iter()
                    .map(|v| v as f32)
                    .collect();
                Ok(Records {
                    x,
                    y: vec![-1; n],
                    shape: vae.shape().iter().map(|&d| d as usize).collect(),
                })
            }
            Self::Dcgan(gan) => gan.sample(n, key, purpose, device),
        }
    }

    /// Records per class in a pool of `n` (largest remainders of
    /// `n · frequency`), for a generator that draws classes; `None` for the
    /// VAE.
    pub fn class_quota(&self, n: usize) -> Option<Vec<usize>> {
        let Self::Dcgan(gan) = self else {
            return None;
        };
        let f = gan.class_frequencies();
        let total: f64 = f.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let exact: Vec<f64> = f.iter().map(|&p| n as f64 * p / total).collect();
        let mut quota: Vec<usize> = exact.iter().map(|&e| e.floor() as usize).collect();
        let mut order: Vec<usize> = (0..f.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
            rb.total_cmp(&ra).then(a.cmp(&b))
        });
        let short = n.saturating_sub(quota.iter().sum());
        for &c in order.iter().cycle().take(short) {
            quota[c] += 1;
        }
        Some(quota)
    }

    /// One record's shape.
    pub fn shape(&self) -> [i64; 3] {
        match self {
            Self::Vae(v) => v.shape(),
            Self::Dcgan(g) => g.shape(),
        }
    }
}

/// How one pool was drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolDraw {
    /// The pool (`helper`, `classifier_train`, …).
    pub pool: String,
    /// Candidates drawn.
    pub drawn: usize,
    /// Candidates kept (the pool's size).
    pub kept: usize,
    /// Kept records per class (empty when the generator draws no classes).
    pub classes: Vec<usize>,
}

/// What the filter did (in `audit.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterReport {
    /// Kept when `P(generated)` is below this.
    pub threshold: f64,
    /// Real (`D_G`) and generated records it was trained on, each.
    pub train_per_class: usize,
    /// Real and generated validation records, each.
    pub validation_per_class: usize,
    /// Its training report (validation accuracy per epoch, kept epoch).
    pub fit: FitReport,
    /// Per pool: drawn and kept.
    pub pools: Vec<PoolDraw>,
    /// Candidates drawn over all pools.
    pub drawn: usize,
    /// Candidates kept over all pools.
    pub kept: usize,
}

impl FilterReport {
    /// Kept over drawn.
    pub fn keep_rate(&self) -> f64 {
        self.kept as f64 / self.drawn.max(1) as f64
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterMeta {
    format: String,
    fingerprint: String,
    train_per_class: usize,
    validation_per_class: usize,
    fit: FitReport,
}

/// The trained filter.
#[derive(Debug)]
pub struct Filter {
    net: MembershipNet,
    threshold: f64,
    max_candidates: usize,
    keep_class_frequencies: bool,
    report: FilterReport,
}

impl Filter {
    /// `P(generated)` of each record, `1/(1 + e^logit)` of the classifier's
    /// real-vs-generated logit.
    pub fn p_generated(&self, r: &Records, device: Device) -> Result<Vec<f64>> {
        Ok(self
            .net
            .scores(r, None, device)?
            .into_iter()
            .map(|l| 1.0 / (1.0 + l.exp()))
            .collect())
    }

    /// Whether a record with this `P(generated)` is kept.
    pub fn keeps(&self, p_generated: f64) -> bool {
        self.threshold >= 1.0 || p_generated < self.threshold
    }

    /// The report so far (pools drawn through [`draw`] are added).
    pub fn report(&self) -> &FilterReport {
        &self.report
    }
}

/// What the filter stage needs.
#[derive(Debug)]
pub struct Stage<'a> {
    /// The config file (named in errors).
    pub file: &'a str,
    /// The `[filter]` section.
    pub config: &'a FilterConfig,
    /// Real records: the part of `D_G` the quality check trains on.
    pub real: &'a Records,
    /// The generator (unfiltered).
    pub generator: &'a Generator,
    /// The key of generated draws.
    pub pool_key: SeedKey,
    /// The filter's classifier (`filter.safetensors`).
    pub net: Trained<'a>,
}

/// Train the filter (or find it in the out-dir).
pub fn obtain(stage: &Stage<'_>, progress: &mut dyn Progress) -> Result<Filter> {
    let shape = stage.generator.shape();
    let cfg = stage.config;
    let n = stage.real.len();
    let n_val = (n / 10).max(1).min(n.saturating_sub(1));
    let n_train = n - n_val;
    let filter = |net: MembershipNet, meta: &FilterMeta| Filter {
        net,
        threshold: cfg.threshold,
        max_candidates: cfg.max_candidates,
        keep_class_frequencies: cfg.keep_class_frequencies,
        report: FilterReport {
            threshold: cfg.threshold,
            train_per_class: meta.train_per_class,
            validation_per_class: meta.validation_per_class,
            fit: meta.fit.clone(),
            pools: Vec::new(),
            drawn: 0,
            kept: 0,
        },
    };
    let saved = &stage.net;
    if saved.path.exists() {
        if let Ok((bytes, meta)) = read_meta(saved.path) {
            if let Ok(meta) = serde_json::from_str::<FilterMeta>(&meta) {
                if meta.format == FORMAT && meta.fingerprint == saved.fingerprint {
                    let mut init = HostInit::new(saved.init, saved.device);
                    let net = MembershipNet::new(&mut init, shape, 0)?;
                    load_into(saved.path, &bytes, &net.parameters())?;
                    progress.stage("filter", "found in the out-dir, not retrained");
                    return Ok(filter(net, &meta));
                }
            }
        }
    }
    if n_train == 0 {
        return Err(config_err(
            stage.file,
            "split.generator",
            n,
            "enough D_G records to train the filter (at least 2 in the quality check's training part)",
        ));
    }
    progress.stage(
        "filter",
        &format!("real D_G ({n_train}) vs generated ({n_train}), {n_val} + {n_val} validation"),
    );
    let gen = stage
        .generator
        .draw(n, stage.pool_key, FILTER_PURPOSE, saved.device)?;
    let fit_cfg = FitConfig {
        epochs: cfg.epochs,
        batch_size: cfg.batch_size,
        learning_rate: cfg.learning_rate,
    };
    let epochs = cfg.epochs;
    let (net, fit) = classifier::fit_real_vs_generated(
        [&stage.real.range(0, n_train), &gen.range(0, n_train)],
        [
            &stage.real.range(n_train, n_val),
            &gen.range(n_train, n_val),
        ],
        shape,
        &fit_cfg,
        (saved.init, saved.batches),
        saved.device,
        "filter",
        &mut |e, a| progress.epoch("filter", e, epochs, "validation accuracy", a),
    )?;
    let meta = FilterMeta {
        format: FORMAT.into(),
        fingerprint: saved.fingerprint.into(),
        train_per_class: n_train,
        validation_per_class: n_val,
        fit,
    };
    let json = serde_json::to_string(&meta).map_err(|e| out_err(saved.path, e))?;
    save_tensors(saved.path, &net.parameters(), &json)?;
    Ok(filter(net, &meta))
}

/// A pool of `n` generated records for `pool` (its name in reports and
/// errors): without a filter, one draw under `key` and `purpose`; with one,
/// rounds of candidates under `key.child(2²⁰ + round)`, keeping those the
/// filter passes (see the module docs). `file` names the config in errors.
#[allow(clippy::too_many_arguments)]
pub fn draw(
    generator: &Generator,
    filter: Option<&mut Filter>,
    pool: &str,
    n: usize,
    key: SeedKey,
    purpose: u32,
    file: &str,
    device: Device,
) -> Result<Records> {
    let Some(filter) = filter else {
        return generator.draw(n, key, purpose, device);
    };
    let shape: Vec<usize> = generator.shape().iter().map(|&d| d as usize).collect();
    let mut kept = Records {
        x: Vec::new(),
        y: Vec::new(),
        shape,
    };
    // With `keep_class_frequencies`, a conditional generator's pool keeps
    // its class frequencies: the filter passes some classes more often than
    // others, and a class it thinned out would leave its real records
    // without generated look-alikes.
    let mut quota = if filter.keep_class_frequencies {
        generator.class_quota(n)
    } else {
        None
    };
    let limit = n.saturating_mul(filter.max_candidates);
    let (mut drawn, mut round) = (0usize, 0u64);
    while kept.len() < n {
        if drawn >= limit {
            return Err(config_err(
                file,
                "filter.threshold",
                filter.threshold,
                format!(
                    "a threshold that keeps at least {n} of the {drawn} candidates drawn for the `{pool}` pool \
                     (filter.max_candidates = {} per record); it kept {} — raise filter.threshold \
                     (1 keeps every record) or filter.max_candidates, or train a better generator",
                    filter.max_candidates,
                    kept.len()
                ),
            ));
        }
        let want = n - kept.len();
        let size = want.saturating_mul(2).clamp(256, 8192).min(limit - drawn);
        let candidates = generator.draw(size, key.child(ROUND_BASE + round), purpose, device)?;
        let p = filter.p_generated(&candidates, device)?;
        let mut pass = Vec::new();
        for i in 0..size {
            if pass.len() == want || !p.get(i).is_some_and(|&q| filter.keeps(q)) {
                continue;
            }
            let class = usize::try_from(candidates.y[i]).ok();
            match (quota.as_mut(), class) {
                (Some(q), Some(c)) => {
                    if let Some(left) = q.get_mut(c).filter(|l| **l > 0) {
                        *left -= 1;
                        pass.push(i);
                    }
                }
                _ => pass.push(i),
            }
        }
        let part = candidates.subset(&pass);
        kept.x.extend_from_slice(&part.x);
        kept.y.extend_from_slice(&part.y);
        drawn += size;
        round += 1;
    }
    let r = &mut filter.report;
    r.drawn += drawn;
    r.kept += kept.len();
    let mut classes = Vec::new();
    if let Generator::Dcgan(gan) = generator {
        classes = vec![0usize; gan.classes().max(0) as usize];
        for &y in &kept.y {
            if let Some(c) = usize::try_from(y).ok().and_then(|y| classes.get_mut(y)) {
                *c += 1;
            }
        }
    }
    r.pools.push(PoolDraw {
        pool: pool.to_string(),
        drawn,
        kept: kept.len(),
        classes,
    });
    Ok(kept)
}
