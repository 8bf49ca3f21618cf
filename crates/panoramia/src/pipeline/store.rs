//! The out-dir as the store crate's [`Store`]: `config.json` is the
//! manifest (the config and its fingerprint; an out-dir of another config is
//! refused), and each stage's JSON artifact (`quality.json`,
//! `baseline.json`, `targets/<name>.json`) is a unit of work, read back and
//! checked before the stage is skipped. The model files (`generator`,
//! `labeler`, `helper`, `targets/<name>.safetensors`) are checked by their
//! own loaders, which need the data's shape and the device.
//!
//! A PANORAMIA audit is one model's: it has no shards ([`Shard::ALL`]) and
//! is never merged.

use std::path::{Path, PathBuf};

use dpaudit_store::outdir::OutDir;
use dpaudit_store::shard::Shard;
use dpaudit_store::store::{self, read_manifest_json, Manifest, Store, UnitState, Work};
use dpaudit_store::StoreError;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::artifacts::{Quality, ScoresFile, TargetResult, FORMAT};
use crate::config::PanoramiaConfig;
use crate::error::{PanoramiaError, Result};

/// The out-dir of a run.
pub(super) type PanoramiaStore = Store<PanoramiaManifest, PanoramiaWork>;

/// `config.json`: the config (its keys sorted, as `serde_json::Value`
/// writes them), its fingerprint and the format tag. Fields in this order,
/// which is also the sorted order: the file is the same as before the store.
#[derive(Debug, Clone, Serialize)]
pub(super) struct PanoramiaManifest {
    config: serde_json::Value,
    fingerprint: String,
    format: String,
}

impl PanoramiaManifest {
    pub(super) fn new(config: &PanoramiaConfig, fingerprint: &str) -> Result<Self> {
        let config = serde_json::to_value(config).map_err(|e| PanoramiaError::OutDir {
            path: store::CONFIG_FILE.into(),
            reason: format!("serialising the config: {e}"),
        })?;
        Ok(Self {
            config,
            fingerprint: fingerprint.to_string(),
            format: FORMAT.to_string(),
        })
    }
}

impl Manifest for PanoramiaManifest {
    type Error = StoreError;
    const WHAT: &'static str = "config";

    fn read(dir: &Path) -> dpaudit_store::Result<Self> {
        let (path, mut value) = read_manifest_json(dir)?;
        let mut text = |key: &str| {
            match value.get_mut(key).map(serde_json::Value::take) {
            Some(serde_json::Value::String(s)) => Ok(s),
            _ => Err(StoreError::Inconsistent {
                path: path.clone(),
                reason: format!(
                    "no `{key}`: not the config.json of a PANORAMIA out-dir ({FORMAT}); use another --out-dir"
                ),
            }),
        }
        };
        let (fingerprint, format) = (text("fingerprint")?, text("format")?);
        let config = value.get_mut("config").map(serde_json::Value::take);
        Ok(Self {
            config: config.unwrap_or_default(),
            fingerprint,
            format,
        })
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn shard(&self) -> Shard {
        Shard::ALL
    }

    fn with_shard(self, _shard: Shard) -> Self {
        self
    }
}

/// A stage whose artifact is a unit of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stage {
    /// `quality.json`.
    Quality,
    /// `baseline.json`.
    Baseline,
    /// `targets/<name>.json`.
    Target(String),
}

/// A stage's artifact, read back.
#[derive(Debug, Clone)]
pub(super) enum Artifact {
    Quality(Quality),
    Baseline(ScoresFile),
    Target(Box<TargetResult>),
}

/// The stages of a config, and what their artifacts must say to be kept.
#[derive(Debug, Clone)]
pub(super) struct PanoramiaWork {
    units: Vec<Stage>,
    fingerprint: String,
    /// Scores each classifier gives (the audit set's size).
    m: usize,
    /// Trainings of each classifier (`classifier.seeds`).
    seeds: usize,
    /// Validation scores each baseline seed must keep (the stacked MIA's
    /// fitting set; 0 for the other MIAs).
    validation: usize,
}

impl PanoramiaWork {
    pub(super) fn new(config: &PanoramiaConfig, fingerprint: &str) -> Self {
        let mut units = vec![Stage::Quality, Stage::Baseline];
        units.extend(config.targets.iter().map(|t| Stage::Target(t.name.clone())));
        Self {
            units,
            fingerprint: fingerprint.to_string(),
            m: config.split.audit,
            seeds: config.classifier.seeds as usize,
            validation: if config.classifier.mia_losses == crate::config::MiaLosses::Stacked {
                2 * config.split.classifier_validation
            } else {
                0
            },
        }
    }

    fn unit(&self, stage: &Stage) -> u64 {
        let i = self.units.iter().position(|s| s == stage);
        i.expect("every stage of the config is a unit") as u64
    }
}

/// Parse `bytes` as JSON of `T` (None: not one).
fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    serde_json::from_slice(bytes).ok()
}

impl Work for PanoramiaWork {
    type Data = Artifact;
    type Error = StoreError;

    fn units(&self) -> u64 {
        self.units.len() as u64
    }

    fn unit_file(&self, c: u64) -> PathBuf {
        match &self.units[c as usize] {
            Stage::Quality => "quality.json".into(),
            Stage::Baseline => "baseline.json".into(),
            Stage::Target(name) => Path::new("targets").join(format!("{name}.json")),
        }
    }

    fn read_unit(&self, dir: &Path, c: u64) -> dpaudit_store::Result<UnitState<Artifact>> {
        let path = dir.join(self.unit_file(c));
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(UnitState::Missing),
            Err(source) => {
                return Err(StoreError::Io {
                    path,
                    action: "reading",
                    source,
                })
            }
        };
        let damaged = |why: &str| Ok(UnitState::Damaged(why.to_string()));
        let (fp, m, more) = (self.fingerprint.as_str(), self.m, self.seeds - 1);
        let all_m = |runs: &[super::artifacts::ClassifierRun]| {
            runs.len() == more && runs.iter().all(|r| r.scores.len() == m)
        };
        match &self.units[c as usize] {
            Stage::Quality => match parse::<Quality>(&bytes) {
                Some(q) => Ok(UnitState::Intact(Artifact::Quality(q))),
                None => damaged("not a quality check's JSON"),
            },
            Stage::Baseline => match parse::<ScoresFile>(&bytes) {
                Some(b)
                    if b.fingerprint == fp
                        && b.scores.len() == m
                        && all_m(&b.more_seeds)
                        && b.runs()
                            .iter()
                            .all(|r| r.validation_scores.len() == self.validation) =>
                {
                    Ok(UnitState::Intact(Artifact::Baseline(b)))
                }
                Some(_) => damaged("another config's baseline"),
                None => damaged("not a baseline's JSON"),
            },
            Stage::Target(_) => match parse::<TargetResult>(&bytes) {
                Some(r)
                    if r.fingerprint == fp
                        && r.mia_scores.len() == m
                        && all_m(&r.mia_more_seeds)
                        && r.per_seed.len() == more + 1 =>
                {
                    Ok(UnitState::Intact(Artifact::Target(Box::new(r))))
                }
                // Written before classifier seeds existed: measured again.
                Some(r) if r.fingerprint == fp && r.per_seed.is_empty() => {
                    damaged("a target result without the per-seed measurement (written before classifier seeds)")
                }
                Some(_) => damaged("another config's target result"),
                None => damaged("not a target result's JSON"),
            },
        }
    }

    fn encode(&self, data: &Artifact, path: &Path) -> dpaudit_store::Result<Vec<u8>> {
        match data {
            Artifact::Quality(q) => pretty(q, path),
            Artifact::Baseline(b) => pretty(b, path),
            Artifact::Target(r) => pretty(r, path),
        }
    }

    fn same(&self, a: &Artifact, b: &Artifact) -> bool {
        let path = Path::new("");
        matches!((self.encode(a, path), self.encode(b, path)), (Ok(x), Ok(y)) if x == y)
    }
}

/// Lock the out-dir `out` (for `command`), create its `config.json` or check
/// that it is this config's, and set damaged stage artifacts aside.
pub(super) fn claim(
    config: &PanoramiaConfig,
    fingerprint: &str,
    out: &Path,
    command: &str,
) -> Result<PanoramiaStore> {
    let dir = OutDir::open(out, command)?;
    let manifest = PanoramiaManifest::new(config, fingerprint)?;
    let work = PanoramiaWork::new(config, fingerprint);
    let store = Store::claim(dir, manifest, work).map_err(|e| match e {
        StoreError::Inconsistent { path, reason } => PanoramiaError::OutDir {
            path: path.display().to_string(),
            reason,
        },
        e => e.into(),
    })?;
    store.plan()?;
    Ok(store)
}

/// The artifact of `stage` in the out-dir, if it is there and intact.
pub(super) fn found(store: &PanoramiaStore, stage: &Stage) -> Result<Option<Artifact>> {
    let work = store.work();
    Ok(
        match work.read_unit(store.out_dir().root(), work.unit(stage))? {
            UnitState::Intact(a) => Some(a),
            UnitState::Missing | UnitState::Damaged(_) => None,
        },
    )
}

/// `value` as pretty JSON (`path` names it in errors).
fn pretty<T: Serialize>(value: &T, path: &Path) -> dpaudit_store::Result<Vec<u8>> {
    serde_json::to_string_pretty(value)
        .map(String::into_bytes)
        .map_err(|e| StoreError::Inconsistent {
            path: path.to_path_buf(),
            reason: format!("serialising: {e}"),
        })
}

/// Write the artifact `value` of `stage` (pretty JSON, atomically, with no
/// checksum trailer: the files are the same as before the store).
pub(super) fn save<T: Serialize>(store: &PanoramiaStore, stage: &Stage, value: &T) -> Result<()> {
    let work = store.work();
    let file = work.unit_file(work.unit(stage));
    let bytes = pretty(value, &store.out_dir().path(&file))?;
    Ok(store.out_dir().write(file, &bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `config.json` is written as it was before the store: `json!` of the
    /// three keys (sorted), the config's keys sorted too.
    #[test]
    fn the_manifest_is_the_json_of_before() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../experiments/panoramia/fmnist-lenet-dcgan.toml");
        let config = PanoramiaConfig::load(&path).unwrap();
        let fp = config.fingerprint();
        let before = serde_json::json!({"format": FORMAT, "fingerprint": fp, "config": config});
        let manifest = PanoramiaManifest::new(&config, &fp).unwrap();
        assert_eq!(
            serde_json::to_string_pretty(&manifest).unwrap(),
            serde_json::to_string_pretty(&before).unwrap()
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(store::CONFIG_FILE),
            serde_json::to_string_pretty(&before).unwrap(),
        )
        .unwrap();
        let read = PanoramiaManifest::read(dir.path()).unwrap();
        assert_eq!(
            (read.fingerprint(), read.format.as_str()),
            (fp.as_str(), FORMAT)
        );
        assert_eq!(read.config, manifest.config);
        std::fs::write(
            dir.path().join(store::CONFIG_FILE),
            "{\"format_version\": 2}",
        )
        .unwrap();
        let e = PanoramiaManifest::read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("config.json") && e.contains("`fingerprint`"),
            "{e}"
        );
    }
}
