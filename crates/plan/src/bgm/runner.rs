//! A BGM experiment ([`crate::bgm::audit`]) in an out-dir: claimed, resumed,
//! sharded, merged and finalized, chunk by chunk, with the same defences as
//! `dpaudit run` ([`dpaudit_store::outdir`], [`dpaudit_store::shard`]).
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
//!   scores; a counts-mode unit ([`crate::bgm::counts`]) holds a histogram on
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
//! ([`crate::bgm::audit::TIMING_FIELDS`]) are the compute seconds summed over
//! the processes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use dpaudit_data::seed::Mode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::bgm::audit::{
    prepare_all, report_setting, search_guess_if, simulate_histogram, summary_markdown,
    BgmExperiment, BgmReport, GuessSearch, PreparedSetting, SettingCounts, SettingScores,
    SimulationClock,
};
use crate::bgm::counts::HistogramAccumulator;
use crate::bgm::engine::BgmEngine;
use crate::bgm::reader::{COUNTS_HEADER, SCORES_HEADER, STREAMS};
use crate::bgm::unit::{read_unit, setting_of, UnitCounts, UnitData, UnitScores};
use crate::error::{invalid_value as invalid, PlanError, Result};
use dpaudit_store::outdir::{OutDir, FORMAT_VERSION};
use dpaudit_store::shard::Shard;
use dpaudit_store::store::{read_manifest_json, Outcome, Store, UnitState, Work, CONFIG_FILE};
use dpaudit_store::StoreError;

pub use crate::bgm::unit::{
    plan_units, unit_file, Unit, MAX_SELECTION_SLICES, MAX_SLICES_PER_SETTING,
};
pub use dpaudit_store::store::Plan;

/// The manifest's `kind` of a BGM out-dir.
pub const BGM_KIND: &str = "bgm";

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
        let (path, value) = read_manifest_json(dir)?;
        if value.get("kind").and_then(|v| v.as_str()) != Some(BGM_KIND) {
            return Err(PlanError::Store(StoreError::Inconsistent {
                path,
                reason: "not the out-dir of a `dpaudit bgm` experiment (no \"kind\": \"bgm\"); use another --out-dir"
                    .into(),
            }));
        }
        let version = value.get("format_version").and_then(|v| v.as_u64());
        if version != Some(u64::from(FORMAT_VERSION)) {
            return Err(PlanError::Store(StoreError::Inconsistent {
                path,
                reason: format!(
                    "written by out-dir format {}; this dpaudit reads and writes format {FORMAT_VERSION}: use a new --out-dir",
                    version.map_or("unknown".to_string(), |v| v.to_string()),
                ),
            }));
        }
        serde_json::from_value(value).map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path,
                reason: format!("not a dpaudit BGM manifest: {e}"),
            })
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
        PlanError::Store(StoreError::Inconsistent {
            path: PathBuf::from(CONFIG_FILE),
            reason: format!("serialising the experiment: {e}"),
        })
    })?;
    Ok(hex::encode(&Sha256::digest(json.as_bytes())[..8]))
}

impl dpaudit_store::store::Manifest for BgmManifest {
    type Error = PlanError;
    const WHAT: &'static str = "experiment or engine";

    fn read(dir: &Path) -> Result<Self> {
        BgmManifest::read(dir)
    }

    dpaudit_store::manifest_fields!();
}

/// The units of a BGM experiment ([`Unit`]) over its prepared settings
/// (borrowed by a run, owned by a merge).
#[derive(Debug)]
pub struct BgmWork<S> {
    /// The prepared settings.
    pub settings: S,
    /// The units, as the manifest lists them.
    pub units: Vec<Unit>,
    /// The manifest, named in errors.
    pub manifest_path: PathBuf,
}

impl<S: AsRef<[PreparedSetting]>> Work for BgmWork<S> {
    type Data = UnitData;
    type Error = PlanError;
    const MADE: &'static str = "simulated";

    fn units(&self) -> u64 {
        self.units.len() as u64
    }

    fn unit_file(&self, c: u64) -> PathBuf {
        unit_file(c)
    }

    fn read_unit(&self, dir: &Path, c: u64) -> Result<UnitState<UnitData>> {
        let unit = &self.units[c as usize];
        let p = setting_of(self.settings.as_ref(), unit, c, &self.manifest_path)?;
        read_unit(dir, c, unit, p)
    }

    fn encode(&self, data: &UnitData, path: &Path) -> Result<Vec<u8>> {
        data.to_json().map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path: path.to_path_buf(),
                reason: format!("serialising: {e}"),
            })
        })
    }

    fn same(&self, a: &UnitData, b: &UnitData) -> bool {
        a.same(b)
    }
}

/// How finalizing ended: [`Outcome::Complete`] with the report, or the units
/// still missing (other shards own them).
pub type BgmFinalized = Outcome<BgmReport>;

/// The store of a BGM experiment.
type BgmStore<S> = Store<BgmManifest, BgmWork<S>>;

/// A BGM experiment bound to its locked out-dir.
#[derive(Debug)]
pub struct BgmDir<'a> {
    store: BgmStore<&'a [PreparedSetting]>,
    settings: &'a [PreparedSetting],
    engine: &'a dyn BgmEngine,
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
        let work = BgmWork {
            settings,
            units: manifest.units.clone(),
            manifest_path: out.path(CONFIG_FILE),
        };
        Ok(Self {
            store: Store::claim(out, manifest, work)?,
            settings,
            engine,
        })
    }

    /// The locked out-dir.
    pub fn out_dir(&self) -> &OutDir {
        self.store.out_dir()
    }

    /// The units of the experiment (all shards').
    pub fn units(&self) -> &[Unit] {
        &self.store.manifest().units
    }

    /// Which of this shard's units are done and which to compute. Damaged
    /// unit files are renamed to `*.damaged` (kept for inspection).
    pub fn plan(&self) -> Result<Plan> {
        self.store.plan()
    }

    /// Compute unit `c` and write it.
    pub fn run_unit(&self, c: u64) -> Result<()> {
        let unit = usize::try_from(c)
            .ok()
            .and_then(|i| self.units().get(i))
            .ok_or_else(|| {
                invalid(
                    "unit",
                    c.to_string(),
                    format!("below {}", self.units().len()),
                )
            })?;
        let p = setting_of(self.settings, unit, c, &self.out_dir().path(CONFIG_FILE))?;
        let start = Instant::now();
        let mut clock = SimulationClock::default();
        let (guess_search, k) = search_guess_if(unit.guess_search, self.engine, p, &mut clock)?;
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
        let json = serde_json::to_vec(&file).map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path: self.out_dir().path(unit_file(c)),
                reason: format!("serialising the scores: {e} (a score is not finite)"),
            })
        })?;
        self.store.write_unit(c, &json)
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
        let json = serde_json::to_vec(&file).map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path: self.out_dir().path(unit_file(c)),
                reason: format!("serialising the counts: {e}"),
            })
        })?;
        self.store.write_unit(c, &json)
    }

    /// If every unit is in the out-dir, write the results.
    pub fn finalize(&self) -> Result<BgmFinalized> {
        finalize(&self.store)
    }
}
/// Read every unit of `out` and, when all are there, write `scores.csv`,
/// `audit.json` and `summary.md`.
fn finalize<S: AsRef<[PreparedSetting]>>(store: &BgmStore<S>) -> Result<BgmFinalized> {
    let (out, manifest) = (store.out_dir(), store.manifest());
    let settings = store.work().settings.as_ref();
    let config_path = out.path(CONFIG_FILE);
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
    let discontinuous = |c: u64, setting: usize| {
        PlanError::Store(StoreError::Inconsistent {
            path: config_path.clone(),
            reason: format!("unit {c} does not continue the runs of setting {setting}"),
        })
    };
    let missing = store.read_all(|c, data| {
        let unit = &manifest.units[c as usize];
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
        Ok(())
    })?;
    if !missing.is_empty() {
        return Ok(BgmFinalized::Incomplete(missing));
    }
    let mut scores_csv = format!("{SCORES_HEADER}\n");
    let mut counts_csv = format!("{COUNTS_HEADER}\n");
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
                (STREAMS[0], &counts.selection, want[0]),
                (STREAMS[1], &counts.evaluation, want[1]),
            ] {
                if h.with_target() != n || h.without_target() != n {
                    return Err(PlanError::Store(StoreError::Inconsistent {
                        path: config_path.clone(),
                        reason: format!(
                            "setting {i}: the {stream} units hold {} and {} runs, the setting asks for {n} per hypothesis",
                            h.with_target(),
                            h.without_target()
                        ),
                    }));
                }
                for &(b, w, wo) in &h.buckets {
                    let _ = writeln!(
                        counts_csv,
                        "{i},{stream},{b},{:?},{w},{wo}",
                        crate::bgm::counts::boundary(b)
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
pub type BgmMerged = dpaudit_store::store::Merged<BgmReport>;

/// Copy the verified units of BGM shard out-dirs into `out_dir` and finalize
/// it. Every shard must be of the same experiment, engine and format; a shard
/// given twice is refused as a duplicate; units still missing are named with
/// the shards that own them.
pub fn merge_bgm(out_dir: &Path, shards: &[PathBuf], command: &str) -> Result<BgmMerged> {
    dpaudit_store::store::merge(
        out_dir,
        shards,
        command,
        |manifest: &BgmManifest| {
            Ok(BgmWork {
                settings: prepare_all(Path::new(&manifest.config), &manifest.experiment)?,
                units: manifest.units.clone(),
                manifest_path: out_dir.join(CONFIG_FILE),
            })
        },
        finalize,
    )
}
