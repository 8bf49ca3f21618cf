//! A BGM experiment ([`crate::bgm_audit`]) in an out-dir: claimed, resumed,
//! sharded, merged and finalized, chunk by chunk, with the same defences as
//! `dpaudit run` ([`crate::outdir`], [`crate::shard`]).
//!
//! The out-dir:
//!
//! - `config.json` ([`BgmManifest`], `"kind": "bgm"`): the format version,
//!   the experiment, the engine, the chunk plan and its fingerprint;
//! - `chunks/chunk-NNNNNN.json`: one unit of work, checksummed, written
//!   atomically when it finishes. A unit is a slice of a setting's
//!   evaluation runs made of whole engine chunks (so slicing changes no
//!   score), or, for a partial-shuffle setting, the whole setting (the guess
//!   search decides which columns the evaluation runs score, so the two
//!   cannot be split without a second round). A scores-mode unit holds its
//!   scores; a counts-mode unit ([`crate::bgm_counts`]) holds a histogram on
//!   the fixed grid, of evaluation runs or of threshold-selection runs
//!   (`"selection": true`; slices of the selection runs, which need nothing
//!   from the evaluation units and vice versa: the threshold is chosen when
//!   the experiment is finalized). Reopening verifies every unit file: a
//!   damaged one is named, set aside as `*.damaged` and recomputed;
//! - when every unit is there: `audit.json`, `summary.md`, and
//!   `scores.csv` (the scores of the scores-mode settings) and/or
//!   `counts.csv` (the histograms of the counts-mode settings).
//!
//! The out-dir is locked and known to be writable before anything is
//! simulated. Shard `i/n` computes the units `c` with `c mod n = i`; `merge`
//! copies verified units of shard out-dirs into one and finalizes it. The
//! scores, bounds and every non-timing field of `audit.json` equal those of
//! a single-process run on the same engine; the timings
//! ([`crate::bgm_audit::TIMING_FIELDS`]) are the compute seconds summed over
//! the processes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use dpaudit_data::seed::Mode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::bgm_audit::{
    prepare_all, report_setting, search_guess, simulate_histogram, summary_markdown, BgmExperiment,
    BgmReport, GuessSearch, PreparedSetting, SettingCounts, SettingScores, SimulationClock,
};
use crate::bgm_counts::{HistogramAccumulator, ScoreHistogram};
use crate::bgm_engine::BgmEngine;
use crate::error::{invalid, ExperimentError, Result};
use crate::outdir::{read_checked, Checked, OutDir, FORMAT_VERSION};
use crate::runner::{admit_shard, Plan, CONFIG_FILE};
use crate::shard::Shard;

/// The manifest's `kind` of a BGM out-dir.
pub const BGM_KIND: &str = "bgm";

/// At most this many units per setting: enough to spread a setting over a
/// job array, few enough files for 10⁹ runs.
pub const MAX_SLICES_PER_SETTING: usize = 256;

/// At most this many units of threshold-selection runs per counts-mode
/// setting.
pub const MAX_SELECTION_SLICES: usize = 64;

/// The file of unit `c`, relative to the out-dir.
pub fn unit_file(c: u64) -> PathBuf {
    Path::new("chunks").join(format!("chunk-{c:06}.json"))
}

/// One unit of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// The setting's position.
    pub setting: usize,
    /// The engine's runs per seeding chunk for this setting.
    pub chunk_runs: usize,
    /// The first engine chunk of the slice.
    pub first_chunk: u64,
    /// Its first run (`first_chunk · chunk_runs`).
    pub first_run: usize,
    /// Runs per hypothesis in the slice.
    pub runs: usize,
    /// Partial shuffling: the unit searches the guess k first (and holds
    /// every run of the setting).
    pub guess_search: bool,
    /// Counts mode: the unit holds threshold-selection runs (its chunks are
    /// the engine's selection chunks; `first_run` counts from the first
    /// selection run), not evaluation runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub selection: bool,
}

/// Push the slices of `runs` runs from chunk `first_chunk` as units.
fn push_slices(
    units: &mut Vec<Unit>,
    setting: usize,
    chunk_runs: usize,
    first_chunk: u64,
    runs: usize,
    max_slices: usize,
    selection: bool,
) {
    let chunks = runs.div_ceil(chunk_runs);
    let per_slice = chunks.div_ceil(max_slices).max(1);
    let mut c = 0;
    while c < chunks {
        let first_run = c * chunk_runs;
        units.push(Unit {
            setting,
            chunk_runs,
            first_chunk: first_chunk + c as u64,
            first_run,
            runs: (per_slice * chunk_runs).min(runs - first_run),
            guess_search: false,
            selection,
        });
        c += per_slice;
    }
}

/// The units of `settings` on `engine`, in setting order.
pub fn plan_units(settings: &[PreparedSetting], engine: &dyn BgmEngine) -> Result<Vec<Unit>> {
    let mut units = Vec::new();
    for (i, p) in settings.iter().enumerate() {
        let runs = p.setting.runs;
        let chunk_runs = engine.chunk_runs(&p.config)?;
        if p.searches_guess() {
            units.push(Unit {
                setting: i,
                chunk_runs,
                first_chunk: 0,
                first_run: 0,
                runs,
                guess_search: true,
                selection: false,
            });
            continue;
        }
        if let Some(selection_runs) = p.selection_runs() {
            let first = p.threshold_selection_first_chunk(engine, chunk_runs);
            push_slices(
                &mut units,
                i,
                chunk_runs,
                first,
                selection_runs,
                MAX_SELECTION_SLICES,
                true,
            );
        }
        push_slices(
            &mut units,
            i,
            chunk_runs,
            0,
            runs,
            MAX_SLICES_PER_SETTING,
            false,
        );
    }
    Ok(units)
}

/// `config.json` of a BGM out-dir.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BgmManifest {
    /// [`BGM_KIND`].
    pub kind: String,
    /// [`FORMAT_VERSION`] of the dpaudit that created the out-dir.
    pub format_version: u32,
    /// That dpaudit's version.
    pub dpaudit_version: String,
    /// SHA-256 (first 16 hex digits) of the settings, the engine identity
    /// and the units: what the scores depend on.
    pub fingerprint: String,
    /// The shard whose units this out-dir was created for.
    pub shard: Shard,
    /// The experiment file, as given.
    pub config: String,
    /// The experiment.
    pub experiment: BgmExperiment,
    /// `rust` or `tensor`.
    pub engine: String,
    /// `cpu` or `cuda:N`.
    pub device: String,
    /// CPU threads simulating (0 on a GPU).
    pub threads: usize,
    /// [`BgmEngine::identity`].
    pub engine_identity: String,
    /// The units.
    pub units: Vec<Unit>,
}

impl BgmManifest {
    /// Read and check `dir/config.json`: JSON, a BGM manifest, of this format.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| ExperimentError::Io {
            path: path.clone(),
            action: "reading",
            source,
        })?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ExperimentError::Inconsistent {
                path: path.clone(),
                reason: format!("not JSON ({e})"),
            })?;
        if value.get("kind").and_then(|v| v.as_str()) != Some(BGM_KIND) {
            return Err(ExperimentError::Inconsistent {
                path,
                reason: "not the out-dir of a `dpaudit bgm` experiment (no \"kind\": \"bgm\"); use another --out-dir"
                    .into(),
            });
        }
        let version = value.get("format_version").and_then(|v| v.as_u64());
        if version != Some(u64::from(FORMAT_VERSION)) {
            return Err(ExperimentError::Inconsistent {
                path,
                reason: format!(
                    "written by out-dir format {}; this dpaudit reads and writes format {FORMAT_VERSION}: use a new --out-dir",
                    version.map_or("unknown".to_string(), |v| v.to_string()),
                ),
            });
        }
        serde_json::from_value(value).map_err(|e| ExperimentError::Inconsistent {
            path,
            reason: format!("not a dpaudit BGM manifest: {e}"),
        })
    }
}

/// Whether `dir` holds a BGM out-dir (its `config.json` says `"kind": "bgm"`).
pub fn is_bgm_out_dir(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(CONFIG_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some(BGM_KIND))
}

fn fingerprint(experiment: &BgmExperiment, identity: &str, units: &[Unit]) -> Result<String> {
    let json = serde_json::to_string(&(&experiment.settings, identity, units)).map_err(|e| {
        ExperimentError::Inconsistent {
            path: PathBuf::from(CONFIG_FILE),
            reason: format!("serialising the experiment: {e}"),
        }
    })?;
    Ok(hex::encode(&Sha256::digest(json.as_bytes())[..8]))
}

/// The content of a unit file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UnitScores {
    unit: Unit,
    /// The columns the evaluation runs were scored on.
    score_columns: usize,
    guess_search: Option<GuessSearch>,
    /// Compute seconds of the unit (simulation and guess search).
    seconds: f64,
    clock: SimulationClock,
    with_target: Vec<f64>,
    without_target: Vec<f64>,
}

impl UnitScores {
    /// Everything but the timings.
    fn same_scores(&self, other: &UnitScores) -> bool {
        self.unit == other.unit
            && self.score_columns == other.score_columns
            && self.guess_search == other.guess_search
            && self.with_target == other.with_target
            && self.without_target == other.without_target
    }
}

/// The content of a counts-mode unit file: histograms, no scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UnitCounts {
    unit: Unit,
    /// The columns the runs were scored on.
    score_columns: usize,
    guess_search: Option<GuessSearch>,
    /// Compute seconds of the unit.
    seconds: f64,
    clock: SimulationClock,
    /// Threshold-selection runs (selection units; the partial-shuffle unit).
    selection: Option<ScoreHistogram>,
    /// Evaluation runs (evaluation units; the partial-shuffle unit).
    evaluation: Option<ScoreHistogram>,
}

impl UnitCounts {
    /// Everything but the timings.
    fn same_counts(&self, other: &UnitCounts) -> bool {
        self.unit == other.unit
            && self.score_columns == other.score_columns
            && self.guess_search == other.guess_search
            && self.selection == other.selection
            && self.evaluation == other.evaluation
    }

    /// Whether the histograms hold what the unit says: `runs` of each
    /// hypothesis in the stream the unit simulates (`selection_runs` of the
    /// partial-shuffle unit's selection histogram).
    fn consistent(&self, selection_runs: usize) -> bool {
        let holds = |h: &Option<ScoreHistogram>, n: usize| {
            h.as_ref().is_some_and(|h| {
                h.is_well_formed() && h.with_target() == n as u64 && h.without_target() == n as u64
            })
        };
        let u = &self.unit;
        if u.guess_search {
            holds(&self.selection, selection_runs) && holds(&self.evaluation, u.runs)
        } else if u.selection {
            holds(&self.selection, u.runs) && self.evaluation.is_none()
        } else {
            holds(&self.evaluation, u.runs) && self.selection.is_none()
        }
    }
}

/// A unit file read back.
enum UnitData {
    Scores(Box<UnitScores>),
    Counts(Box<UnitCounts>),
}

impl UnitData {
    fn same(&self, other: &UnitData) -> bool {
        match (self, other) {
            (UnitData::Scores(a), UnitData::Scores(b)) => a.same_scores(b),
            (UnitData::Counts(a), UnitData::Counts(b)) => a.same_counts(b),
            _ => false,
        }
    }

    fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            UnitData::Scores(u) => serde_json::to_vec(u),
            UnitData::Counts(u) => serde_json::to_vec(u),
        }
    }
}

enum UnitState {
    Missing,
    Damaged(String),
    Intact(UnitData),
}

/// Read unit `c` of `dir`, which the plan says is `unit` of setting `p`.
fn read_unit(dir: &Path, c: u64, unit: &Unit, p: &PreparedSetting) -> Result<UnitState> {
    let path = dir.join(unit_file(c));
    let other = || {
        UnitState::Damaged(format!(
            "its checksum matches but it holds another unit than {unit:?} (written by another experiment)"
        ))
    };
    let not_unit = |e: serde_json::Error| {
        UnitState::Damaged(format!(
            "its checksum matches but it is not a unit file: {e}"
        ))
    };
    Ok(match read_checked(&path)? {
        Checked::Missing => UnitState::Missing,
        Checked::Damaged(why) => UnitState::Damaged(why),
        Checked::Intact(bytes) => match p.selection_runs() {
            None => match serde_json::from_slice::<UnitScores>(&bytes) {
                Ok(u)
                    if u.unit == *unit
                        && u.with_target.len() == unit.runs
                        && u.without_target.len() == unit.runs =>
                {
                    UnitState::Intact(UnitData::Scores(Box::new(u)))
                }
                Ok(_) => other(),
                Err(e) => not_unit(e),
            },
            Some(selection_runs) => match serde_json::from_slice::<UnitCounts>(&bytes) {
                Ok(u) if u.unit == *unit && u.consistent(selection_runs) => {
                    UnitState::Intact(UnitData::Counts(Box::new(u)))
                }
                Ok(_) => other(),
                Err(e) => not_unit(e),
            },
        },
    })
}

/// The prepared setting of `unit`, or an error naming the manifest.
fn setting_of<'s>(
    settings: &'s [PreparedSetting],
    unit: &Unit,
    c: u64,
    manifest: &Path,
) -> Result<&'s PreparedSetting> {
    settings
        .get(unit.setting)
        .ok_or_else(|| ExperimentError::Inconsistent {
            path: manifest.to_path_buf(),
            reason: format!(
                "unit {c} names setting {}, which does not exist",
                unit.setting
            ),
        })
}

/// How finalizing ended.
#[derive(Debug)]
pub enum BgmFinalized {
    /// Every unit was there: the files are written.
    Complete(Box<BgmReport>),
    /// These units are not in the out-dir (other shards own them).
    Incomplete(Vec<u64>),
}

/// A BGM experiment bound to its locked out-dir.
#[derive(Debug)]
pub struct BgmDir<'a> {
    out: OutDir,
    settings: &'a [PreparedSetting],
    engine: &'a dyn BgmEngine,
    manifest: BgmManifest,
    shard: Shard,
}

impl<'a> BgmDir<'a> {
    /// Bind the prepared `settings` of `experiment` (the file `file`) to the
    /// locked out-dir `out` (take the lock with [`OutDir::open`] before
    /// simulating anything): create or check its manifest.
    pub fn claim(
        out: OutDir,
        file: &str,
        experiment: &BgmExperiment,
        settings: &'a [PreparedSetting],
        engine: &'a dyn BgmEngine,
        shard: Shard,
    ) -> Result<Self> {
        let units = plan_units(settings, engine)?;
        let identity = engine.identity();
        let manifest = BgmManifest {
            kind: BGM_KIND.into(),
            format_version: FORMAT_VERSION,
            dpaudit_version: env!("CARGO_PKG_VERSION").into(),
            fingerprint: fingerprint(experiment, &identity, &units)?,
            shard,
            config: file.to_string(),
            experiment: experiment.clone(),
            engine: engine.name().into(),
            device: engine.device_label(),
            threads: engine.threads(),
            engine_identity: identity,
            units,
        };
        claim(&out, &manifest)?;
        Ok(Self {
            out,
            settings,
            engine,
            manifest,
            shard,
        })
    }

    /// The locked out-dir.
    pub fn out_dir(&self) -> &OutDir {
        &self.out
    }

    /// The units of the experiment (all shards').
    pub fn units(&self) -> &[Unit] {
        &self.manifest.units
    }

    /// Which of this shard's units are done and which to compute. Damaged
    /// unit files are renamed to `*.damaged` (kept for inspection).
    pub fn plan(&self) -> Result<Plan> {
        let mut plan = Plan {
            done: Vec::new(),
            todo: Vec::new(),
            damaged: Vec::new(),
        };
        for (c, unit) in self.manifest.units.iter().enumerate() {
            let c = c as u64;
            if !self.shard.owns(c) {
                continue;
            }
            let p = setting_of(self.settings, unit, c, &self.out.path(CONFIG_FILE))?;
            match read_unit(self.out.root(), c, unit, p)? {
                UnitState::Intact(_) => plan.done.push(c),
                UnitState::Missing => plan.todo.push(c),
                UnitState::Damaged(why) => {
                    let path = self.out.path(unit_file(c));
                    let aside = path.with_extension("json.damaged");
                    std::fs::rename(&path, &aside).map_err(|source| ExperimentError::Io {
                        path: path.clone(),
                        action: "setting a damaged chunk aside",
                        source,
                    })?;
                    plan.damaged.push((c, why));
                    plan.todo.push(c);
                }
            }
        }
        Ok(plan)
    }

    /// Compute unit `c` and write it.
    pub fn run_unit(&self, c: u64) -> Result<()> {
        let unit = usize::try_from(c)
            .ok()
            .and_then(|i| self.manifest.units.get(i))
            .ok_or_else(|| {
                invalid(
                    "unit",
                    c.to_string(),
                    format!("below {}", self.manifest.units.len()),
                )
            })?;
        let p = setting_of(self.settings, unit, c, &self.out.path(CONFIG_FILE))?;
        let start = Instant::now();
        let mut clock = SimulationClock::default();
        let guess_search = if unit.guess_search {
            Some(search_guess(self.engine, p, &mut clock)?)
        } else {
            None
        };
        let k = guess_search
            .as_ref()
            .map_or(p.setting.steps, |g| g.chosen_columns);
        if let Some(selection_runs) = p.selection_runs() {
            return self.run_counts_unit(c, unit, p, k, selection_runs, guess_search, start, clock);
        }
        let sim_start = Instant::now();
        let scores =
            self.engine
                .simulate(&p.config_with_columns(k), unit.first_chunk, unit.runs)?;
        clock.seconds += sim_start.elapsed().as_secs_f64();
        clock.observations += 2 * unit.runs;
        let file = UnitScores {
            unit: unit.clone(),
            score_columns: k,
            guess_search,
            seconds: start.elapsed().as_secs_f64(),
            clock,
            with_target: scores.with_target,
            without_target: scores.without_target,
        };
        let json = serde_json::to_vec(&file).map_err(|e| ExperimentError::Inconsistent {
            path: self.out.path(unit_file(c)),
            reason: format!("serialising the scores: {e} (a score is not finite)"),
        })?;
        self.out.write_checked(unit_file(c), &json)
    }

    /// A counts-mode unit: histograms of its runs, streamed in pieces.
    #[allow(clippy::too_many_arguments)]
    fn run_counts_unit(
        &self,
        c: u64,
        unit: &Unit,
        p: &PreparedSetting,
        k: usize,
        selection_runs: usize,
        guess_search: Option<GuessSearch>,
        start: Instant,
        mut clock: SimulationClock,
    ) -> Result<()> {
        let config = p.config_with_columns(k);
        let (mut selection, mut evaluation) = (None, None);
        if unit.guess_search {
            // The partial-shuffle unit: threshold-selection runs after the
            // guess search's, then every evaluation run.
            let first = p.threshold_selection_first_chunk(self.engine, unit.chunk_runs);
            selection = Some(simulate_histogram(
                self.engine,
                &config,
                first,
                selection_runs,
                unit.chunk_runs,
                &mut clock,
            )?);
        }
        let h = simulate_histogram(
            self.engine,
            &config,
            unit.first_chunk,
            unit.runs,
            unit.chunk_runs,
            &mut clock,
        )?;
        if unit.selection {
            selection = Some(h);
        } else {
            evaluation = Some(h);
        }
        let file = UnitCounts {
            unit: unit.clone(),
            score_columns: k,
            guess_search,
            seconds: start.elapsed().as_secs_f64(),
            clock,
            selection,
            evaluation,
        };
        let json = serde_json::to_vec(&file).map_err(|e| ExperimentError::Inconsistent {
            path: self.out.path(unit_file(c)),
            reason: format!("serialising the counts: {e}"),
        })?;
        self.out.write_checked(unit_file(c), &json)
    }

    /// If every unit is in the out-dir, write the results.
    pub fn finalize(&self) -> Result<BgmFinalized> {
        finalize(&self.out, &self.manifest, self.settings)
    }
}

/// Create or check the manifest of `out`.
fn claim(out: &OutDir, manifest: &BgmManifest) -> Result<()> {
    let path = out.path(CONFIG_FILE);
    if path.exists() {
        let mine = BgmManifest::read(out.root())?;
        if mine.fingerprint != manifest.fingerprint {
            return Err(ExperimentError::Inconsistent {
                path,
                reason: format!(
                    "belongs to a different experiment or engine (fingerprint {} vs {}); use another --out-dir",
                    mine.fingerprint, manifest.fingerprint
                ),
            });
        }
        return Ok(());
    }
    write_manifest(out, manifest)
}

fn write_manifest(out: &OutDir, manifest: &BgmManifest) -> Result<()> {
    out.write_json(CONFIG_FILE, manifest)
}

/// Read every unit of `out` and, when all are there, write `scores.csv`,
/// `audit.json` and `summary.md`.
fn finalize(
    out: &OutDir,
    manifest: &BgmManifest,
    settings: &[PreparedSetting],
) -> Result<BgmFinalized> {
    let config_path = out.path(CONFIG_FILE);
    let mut missing = Vec::new();
    let mut per_setting: Vec<SettingScores> = vec![SettingScores::default(); settings.len()];
    // Counts mode: runs of each stream folded in so far (selection,
    // evaluation), and the histograms, folded as each unit is read so that
    // memory does not grow with the units.
    let mut next_run: Vec<[usize; 2]> = vec![[0; 2]; settings.len()];
    let mut histograms: Vec<[HistogramAccumulator; 2]> = Vec::new();
    let mut slot_of: Vec<Option<usize>> = vec![None; settings.len()];
    for (i, p) in settings.iter().enumerate() {
        if p.selection_runs().is_some() {
            slot_of[i] = Some(histograms.len());
            histograms.push([HistogramAccumulator::new(), HistogramAccumulator::new()]);
        }
    }
    let discontinuous = |c: u64, setting: usize| ExperimentError::Inconsistent {
        path: config_path.clone(),
        reason: format!("unit {c} does not continue the runs of setting {setting}"),
    };
    for (c, unit) in manifest.units.iter().enumerate() {
        let c = c as u64;
        let p = setting_of(settings, unit, c, &config_path)?;
        let data = match read_unit(out.root(), c, unit, p)? {
            UnitState::Missing => {
                missing.push(c);
                continue;
            }
            UnitState::Damaged(why) => {
                return Err(ExperimentError::Inconsistent {
                    path: out.path(unit_file(c)),
                    reason: format!(
                        "damaged: {why}; run the experiment on this out-dir again to recompute this chunk"
                    ),
                })
            }
            UnitState::Intact(u) => u,
        };
        if !missing.is_empty() {
            // The results cannot be written; only look for what else is missing.
            continue;
        }
        let s = &mut per_setting[unit.setting];
        let (guess, seconds, clock) = match &data {
            UnitData::Scores(u) => {
                if s.with_target.len() != unit.first_run {
                    return Err(discontinuous(c, unit.setting));
                }
                s.with_target.extend_from_slice(&u.with_target);
                s.without_target.extend_from_slice(&u.without_target);
                (&u.guess_search, u.seconds, u.clock)
            }
            UnitData::Counts(u) => {
                let stream = usize::from(!unit.selection);
                let next = &mut next_run[unit.setting][stream];
                if *next != unit.first_run {
                    return Err(discontinuous(c, unit.setting));
                }
                *next += unit.runs;
                let slot = slot_of[unit.setting].ok_or_else(|| discontinuous(c, unit.setting))?;
                let [sel, eval] = &mut histograms[slot];
                if let Some(h) = &u.selection {
                    sel.add_histogram(h);
                }
                if let Some(h) = &u.evaluation {
                    eval.add_histogram(h);
                }
                (&u.guess_search, u.seconds, u.clock)
            }
        };
        if guess.is_some() {
            s.guess_search = guess.clone();
        }
        s.seconds += seconds;
        s.clock.seconds += clock.seconds;
        s.clock.observations += clock.observations;
    }
    if !missing.is_empty() {
        return Ok(BgmFinalized::Incomplete(missing));
    }
    let mut scores_csv = String::from("setting,run,with_target,without_target\n");
    let mut counts_csv = String::from("setting,stream,bucket,cut,with_target,without_target\n");
    let mut reports = Vec::with_capacity(settings.len());
    for (i, (p, scores)) in settings.iter().zip(per_setting.iter_mut()).enumerate() {
        if let Some(slot) = slot_of[i] {
            let [sel, eval] = &histograms[slot];
            let counts = SettingCounts {
                selection: sel.histogram(),
                evaluation: eval.histogram(),
            };
            let want = [
                p.selection_runs().unwrap_or(0) as u64,
                p.setting.runs as u64,
            ];
            for (stream, h, n) in [
                ("selection", &counts.selection, want[0]),
                ("evaluation", &counts.evaluation, want[1]),
            ] {
                if h.with_target() != n || h.without_target() != n {
                    return Err(ExperimentError::Inconsistent {
                        path: config_path.clone(),
                        reason: format!(
                            "setting {i}: the {stream} units hold {} and {} runs, the setting asks for {n} per hypothesis",
                            h.with_target(),
                            h.without_target()
                        ),
                    });
                }
                for &(b, w, wo) in &h.buckets {
                    let _ = writeln!(
                        counts_csv,
                        "{i},{stream},{b},{:?},{w},{wo}",
                        crate::bgm_counts::boundary(b)
                    );
                }
            }
            scores.counts = Some(counts);
        } else {
            for (run, (w, wo)) in scores
                .with_target
                .iter()
                .zip(&scores.without_target)
                .enumerate()
            {
                let _ = writeln!(scores_csv, "{i},{run},{w:?},{wo:?}");
            }
        }
        reports.push(report_setting(p, scores)?);
    }
    let report = BgmReport {
        config: manifest.config.clone(),
        description: manifest.experiment.description.clone(),
        engine: manifest.engine.clone(),
        device: manifest.device.clone(),
        threads: manifest.threads,
        randomness: Mode::Replayable,
        settings: reports,
    };
    if slot_of.iter().any(Option::is_none) {
        out.write("scores.csv", scores_csv.as_bytes())?;
    }
    if !histograms.is_empty() {
        out.write("counts.csv", counts_csv.as_bytes())?;
    }
    out.write_json("audit.json", &report)?;
    out.write("summary.md", summary_markdown(&report).as_bytes())?;
    Ok(BgmFinalized::Complete(Box::new(report)))
}

/// What [`merge_bgm`] did.
#[derive(Debug)]
pub struct BgmMerged {
    /// Unit files copied into the out-dir.
    pub copied: usize,
    /// The report.
    pub report: Box<BgmReport>,
}

/// Copy the verified units of BGM shard out-dirs into `out_dir` and finalize
/// it. Every shard must be of the same experiment, engine and format; a shard
/// given twice is refused as a duplicate; units still missing are named with
/// the shards that own them.
pub fn merge_bgm(out_dir: &Path, shards: &[PathBuf], command: &str) -> Result<BgmMerged> {
    if shards.is_empty() {
        return Err(invalid("shards", "none", "at least one shard out-dir"));
    }
    // Locked, and known to be writable, before anything is read or computed.
    let out = OutDir::open(out_dir, command)?;
    let mut manifests: Vec<(PathBuf, BgmManifest)> = Vec::new();
    for s in shards {
        let m = BgmManifest::read(s)?;
        admit_shard(
            &manifests,
            s,
            &m,
            |m| (&m.fingerprint, m.shard),
            "experiment or engine",
        )?;
        manifests.push((s.clone(), m));
    }
    let manifest = BgmManifest {
        shard: Shard::ALL,
        ..manifests[0].1.clone()
    };
    let settings = prepare_all(Path::new(&manifest.config), &manifest.experiment)?;
    claim(&out, &manifest)?;
    let mut copied = 0;
    let config_path = out.path(CONFIG_FILE);
    for (dir, _) in &manifests {
        for (c, unit) in manifest.units.iter().enumerate() {
            let c = c as u64;
            let p = setting_of(&settings, unit, c, &config_path)?;
            let scores = match read_unit(dir, c, unit, p)? {
                UnitState::Missing => continue,
                UnitState::Damaged(why) => {
                    return Err(ExperimentError::Inconsistent {
                        path: dir.join(unit_file(c)),
                        reason: format!(
                            "damaged: {why}; run that shard again to recompute it, then merge"
                        ),
                    })
                }
                UnitState::Intact(u) => u,
            };
            match read_unit(out.root(), c, unit, p)? {
                UnitState::Intact(existing) if !existing.same(&scores) => {
                    return Err(ExperimentError::Inconsistent {
                        path: dir.join(unit_file(c)),
                        reason: format!(
                            "chunk {c} differs from the one in {}: the shards were not simulated from the same experiment",
                            out_dir.display()
                        ),
                    })
                }
                UnitState::Intact(_) => {}
                UnitState::Missing | UnitState::Damaged(_) => {
                    let json = scores.to_json().map_err(|e| ExperimentError::Inconsistent {
                        path: out.path(unit_file(c)),
                        reason: format!("serialising: {e}"),
                    })?;
                    out.write_checked(unit_file(c), &json)?;
                    copied += 1;
                }
            }
        }
    }
    match finalize(&out, &manifest, &settings)? {
        BgmFinalized::Complete(report) => Ok(BgmMerged { copied, report }),
        BgmFinalized::Incomplete(missing) => {
            let mut owners: Vec<String> = manifests
                .iter()
                .map(|(_, m)| m.shard.count)
                .flat_map(|n| missing.iter().map(move |c| format!("{}/{n}", c % n)))
                .collect();
            owners.sort();
            owners.dedup();
            Err(ExperimentError::Inconsistent {
                path: out_dir.to_path_buf(),
                reason: format!(
                    "merged {copied} chunk(s), but {} chunk(s) are missing: {missing:?}, owned by shard(s) {}; run them and \
                     merge again",
                    missing.len(),
                    owners.join(", ")
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    #[test]
    fn unit_scores_read_back_bit_for_bit() {
        // A unit's scores go through JSON between simulation and the report:
        // every f64 must come back as the same bits (serde_json's
        // float_roundtrip; without it about one value in nine came back
        // one ulp off).
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let values: Vec<f64> = (0..10_000)
            .map(|i| {
                let x: f64 = rng.gen::<f64>() * 40.0 - 20.0;
                if i % 3 == 0 {
                    x.exp()
                } else {
                    x
                }
            })
            .collect();
        let text = serde_json::to_string(&values).unwrap();
        let back: Vec<f64> = serde_json::from_str(&text).unwrap();
        let off = values
            .iter()
            .zip(&back)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(off, 0, "{off} of {} values changed", values.len());
    }
}
