//! An experiment in an out-dir: claimed, resumed, sharded, merged and
//! finalized, chunk by chunk.
//!
//! The out-dir, in the order files appear:
//!
//! - `config.json` ([`Manifest`]): the format version, the experiment, its
//!   fingerprint, the shard that wrote it, the claimed ε and the canaries;
//! - `inclusion.csv`: every canary's ±1 inclusion bit, written before any
//!   training (the secret of the audit, fixed in advance), and checked
//!   against the experiment's bits whenever the out-dir is reopened or
//!   merged, and against the scores when they are finalized;
//! - `chunks/chunk-NNNNNN.csv`: the scores of one chunk of runs, checksummed,
//!   written atomically when the chunk finishes. A killed run loses at most
//!   the chunk in progress. Reopening verifies every chunk: a damaged one
//!   (edited, truncated) is named, set aside and retrained;
//! - when every chunk is there: `scores.csv`, `audit.json`, `summary.md` and
//!   `plots/*.svg`.
//!
//! Chunk `c` is a pure function of the experiment and `c`, so resumed,
//! sharded and single runs give the same scores on the same kind of device.
//! The fingerprint covers what the scores depend on — `runs`, `train`,
//! `canary` — and not the name or the `[audit]` settings, which may change
//! between finalizations without retraining anything.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::canary::canaries::inclusion_bits;
use crate::canary::settings::ExperimentConfig;
use crate::train::memory::MemoryEstimate;
use dpaudit_data::seed::RunSeed;

use crate::canary::audit_report::{
    analyse, summary_markdown, write_plots, AuditReport, Claim, DataInfo,
};
use crate::canary::book::{rows_from_csv, rows_to_csv, ScoreRow};
use crate::error::{PlanError, Result};
use dpaudit_store::outdir::{OutDir, FORMAT_VERSION};
use dpaudit_store::shard::Shard;
use dpaudit_store::store::{
    chunk_path, read_manifest_json, read_unit_file, Outcome, Store, UnitState, Work,
};
use dpaudit_store::StoreError;

pub use dpaudit_store::store::{Plan, CONFIG_FILE};

/// The inclusion bits' file name.
pub const INCLUSION_FILE: &str = "inclusion.csv";

/// The file of chunk `c`, relative to the out-dir.
pub fn chunk_file(c: u64) -> PathBuf {
    chunk_path(c, "csv")
}

/// `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the dpaudit that created the out-dir.
    pub format_version: u32,
    /// That dpaudit's version.
    pub dpaudit_version: String,
    /// [`fingerprint`] of the experiment.
    pub fingerprint: String,
    /// The shard whose chunks this out-dir was created for.
    pub shard: Shard,
    /// The experiment.
    pub experiment: ExperimentConfig,
    /// The accountant's ε for one canary.
    pub claimed_epsilon: f64,
    /// What the accountant assumed.
    pub claimed_assumption: String,
    /// False when the accounting does not match the sampler.
    pub claimed_valid_for_sampler: bool,
    /// Parameters per model.
    pub num_parameters: usize,
    /// Dirac canaries' coordinates.
    pub dirac_coordinates: Vec<usize>,
    /// Input canaries' labels as inserted.
    pub input_canary_labels: Vec<i64>,
    /// Input canaries' true labels.
    pub input_canary_true_labels: Vec<i64>,
    /// Where the training data came from.
    pub data: DataInfo,
}

impl Manifest {
    /// The accountant's claim, as the report takes it.
    pub fn claim(&self) -> Claim<'_> {
        Claim {
            epsilon: self.claimed_epsilon,
            assumption: &self.claimed_assumption,
            valid_for_sampler: self.claimed_valid_for_sampler,
        }
    }

    /// Read and check `dir/config.json`: JSON, a manifest, of this format.
    pub fn read(dir: &Path) -> Result<Self> {
        let (path, value) = read_manifest_json(dir)?;
        let version = value.get("format_version").and_then(|v| v.as_u64());
        if version != Some(u64::from(FORMAT_VERSION)) {
            return Err(PlanError::Store(StoreError::Inconsistent {
                path,
                reason: format!(
                    "written by out-dir format {} (dpaudit {}); this dpaudit reads and writes format {FORMAT_VERSION}, \
                     whose scores differ: results of two formats cannot be mixed, so use a new --out-dir",
                    version.map_or("1".to_string(), |v| v.to_string()),
                    value
                        .get("dpaudit_version")
                        .and_then(|v| v.as_str())
                        .unwrap_or("unknown")
                ),
            }));
        }
        serde_json::from_value(value).map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path,
                reason: format!("not a dpaudit manifest: {e}"),
            })
        })
    }
}

/// What the scores depend on — `runs`, `train`, `canary` — hashed (SHA-256
/// of their JSON, the first 16 hex digits).
pub fn fingerprint(config: &ExperimentConfig) -> Result<String> {
    let json =
        serde_json::to_string(&(&config.runs, &config.train, &config.canary)).map_err(|e| {
            PlanError::Store(StoreError::Inconsistent {
                path: PathBuf::from(CONFIG_FILE),
                reason: format!("serialising the experiment: {e}"),
            })
        })?;
    Ok(hex::encode(&Sha256::digest(json.as_bytes())[..8]))
}

/// `inclusion.csv` of an experiment: every canary's bit as ±1.
pub fn inclusion_csv(config: &ExperimentConfig) -> String {
    let seed = RunSeed(config.train.seed);
    let mut inc = format!("{INCLUSION_HEADER}\n");
    for run in 0..config.runs {
        for (j, b) in inclusion_bits(seed, run, config.canary.count)
            .into_iter()
            .enumerate()
        {
            inc.push_str(&format!("{run},{j},{}\n", if b { 1 } else { -1 }));
        }
    }
    inc
}

/// The header of `inclusion.csv`.
pub const INCLUSION_HEADER: &str = "run,canary,included";

/// Which process a [`results_memory`] estimate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsHolder {
    /// One shard of several: it writes the whole `inclusion.csv` (its own
    /// chunks' rows come on top, a share that depends on the shard count).
    Shard,
    /// An out-dir that is finalized (an unsharded run, a merge): it holds
    /// every score row, the inclusion bits they are checked against and the
    /// text of `scores.csv` at once.
    OutDir,
    /// An experiment in memory (`dpaudit_experiment::run_in_memory`): every score row and the
    /// observations of one score.
    Memory,
}

/// A lower bound on the host memory the runs of `config` need beyond the
/// training of one chunk (which `dpaudit_experiment::canary::chunk::Prepared` checks): what grows with `runs`
/// × `canary.count` × the number of scores. Each part counts only the
/// bytes of the values it holds (no allocator overhead, the shortest text),
/// so refusing on it never refuses an experiment that would fit.
pub fn results_memory(config: &ExperimentConfig, holder: ResultsHolder) -> MemoryEstimate {
    let runs = config.runs;
    let m = config.canary.count as u64;
    let rows = runs.saturating_mul(m);
    let k = config.audit.scores.len() as u64;
    // Each part reads "what: count × bytes =" before its size; text is
    // counted at its shortest line.
    let part = |what: &str, at_least: &str, bytes: u64| {
        (
            format!("{what}: {runs} runs × {m} canaries × {at_least}{bytes} bytes ="),
            rows.saturating_mul(bytes),
        )
    };
    let score_rows = part(
        &format!("score rows of {k} score(s)"),
        "",
        std::mem::size_of::<ScoreRow>() as u64 + 8 * k,
    );
    let mut parts = match holder {
        ResultsHolder::Shard => vec![part("inclusion.csv", "at least ", 6)],
        ResultsHolder::OutDir => vec![
            score_rows,
            part(
                "the inclusion bits they are checked against",
                "",
                std::mem::size_of::<(u64, usize, bool)>() as u64,
            ),
            part("scores.csv", "at least ", 8 + 2 * k),
            (
                format!("the chunk list: {} chunks × 8 bytes =", config.chunks()),
                config.chunks().saturating_mul(8),
            ),
        ],
        ResultsHolder::Memory => vec![score_rows, part("the observations of one score", "", 9)],
    };
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    MemoryEstimate { parts }
}

/// Refuse an experiment whose [`results_memory`] exceeds the memory
/// available, with the estimate, before anything of that size is allocated
/// (as `bgm` does for its simulations).
pub fn check_results_memory(config: &ExperimentConfig, holder: ResultsHolder) -> Result<()> {
    check_results_memory_against(config, holder, crate::train::memory::available_memory())
}

/// [`check_results_memory`] against a given amount of available memory
/// (`None`: unknown, nothing is refused).
pub fn check_results_memory_against(
    config: &ExperimentConfig,
    holder: ResultsHolder,
    available: Option<u64>,
) -> Result<()> {
    let fields = match holder {
        ResultsHolder::Shard => "`runs` or `canary.count`: every shard writes the whole inclusion.csv",
        ResultsHolder::OutDir | ResultsHolder::Memory => {
            "`runs` (or `canary.count`, the number of `audit.scores`), or run shards (`--shard i/n`) and merge \
             them on a machine with more memory"
        }
    };
    crate::train::memory::check_against(
        "holding the experiment's results",
        fields,
        &results_memory(config, holder),
        available,
    )
}

impl dpaudit_store::store::Manifest for Manifest {
    type Error = PlanError;
    const WHAT: &'static str = "experiment";

    fn read(dir: &Path) -> Result<Self> {
        Manifest::read(dir)
    }

    dpaudit_store::manifest_fields!();

    /// The bits first: fixed before any training.
    fn create(&self, out: &OutDir) -> Result<()> {
        Ok(out.write(INCLUSION_FILE, inclusion_csv(&self.experiment).as_bytes())?)
    }

    fn reopen(&self, out: &OutDir, mine: Self) -> Result<()> {
        check_inclusion_of(out.root(), &self.experiment)?;
        if mine.experiment != self.experiment {
            // Same training, new name or [audit] settings: record them.
            let updated = Manifest {
                experiment: self.experiment.clone(),
                ..mine
            };
            out.write_json(CONFIG_FILE, &updated)?;
        }
        Ok(())
    }

    fn admit(&self, dir: &Path) -> Result<()> {
        check_inclusion_of(dir, &self.experiment)
    }
}

/// The units of a canary audit: chunks of `train.replicas` runs, each file
/// the score rows of its runs ([`crate::canary::book`]).
#[derive(Debug, Clone)]
pub struct CanaryWork {
    /// The experiment.
    pub config: ExperimentConfig,
}

impl Work for CanaryWork {
    type Data = Vec<ScoreRow>;
    type Error = PlanError;
    const REDO: &'static str = "retrain";
    const MADE: &'static str = "trained";

    fn units(&self) -> u64 {
        self.config.chunks()
    }

    fn unit_file(&self, c: u64) -> PathBuf {
        chunk_file(c)
    }

    fn read_unit(&self, dir: &Path, c: u64) -> Result<UnitState<Vec<ScoreRow>>> {
        let path = dir.join(chunk_file(c));
        read_unit_file(&path, |bytes| {
            let text = String::from_utf8(bytes).map_err(|_| {
                PlanError::Store(StoreError::Inconsistent {
                    path: path.clone(),
                    reason: "not UTF-8 text".into(),
                })
            })?;
            Ok(UnitState::Intact(rows_from_csv(
                &path,
                &text,
                &self.config.audit.scores,
            )?))
        })
    }

    fn encode(&self, rows: &Vec<ScoreRow>, _path: &Path) -> Result<Vec<u8>> {
        Ok(rows_to_csv(&self.config.audit.scores, rows).into_bytes())
    }

    fn same(&self, a: &Vec<ScoreRow>, b: &Vec<ScoreRow>) -> bool {
        a == b
    }
}

/// How finalizing ended: [`Outcome::Complete`] with the report, or the
/// chunks still missing (other shards own them).
pub type Finalized = Outcome<AuditReport>;

/// What a process working on `shard` holds of the results.
pub fn holder_of(shard: Shard) -> ResultsHolder {
    if shard == Shard::ALL {
        ResultsHolder::OutDir
    } else {
        ResultsHolder::Shard
    }
}

/// Read every chunk of `store` and, when all are there, write `scores.csv`,
/// `audit.json`, `summary.md` and the plots.
pub fn finalize(store: &Store<Manifest, CanaryWork>) -> Result<Finalized> {
    let (out, manifest) = (store.out_dir(), store.manifest());
    let config = &manifest.experiment;
    let mut rows = Vec::new();
    let missing = store.read_all(|_, r| {
        rows.extend(r);
        Ok(())
    })?;
    if !missing.is_empty() {
        return Ok(Finalized::Incomplete(missing));
    }
    rows.sort_by_key(|r| (r.run, r.canary));
    let expected = (config.runs as usize).saturating_mul(config.canary.count);
    let seed = RunSeed(config.train.seed);
    let mut bits = Vec::with_capacity(expected.min(rows.len()));
    for run in 0..config.runs {
        for (j, b) in inclusion_bits(seed, run, config.canary.count)
            .into_iter()
            .enumerate()
        {
            bits.push((run, j, b));
        }
    }
    let consistent = rows.len() == expected
        && rows
            .iter()
            .zip(&bits)
            .all(|(r, &(run, j, b))| r.run == run && r.canary == j && r.member == b);
    if !consistent {
        return Err(PlanError::Store(StoreError::Inconsistent {
            path: out.path("chunks"),
            reason: format!(
                "the chunks hold {} scores whose runs, canaries or inclusion bits do not match the experiment's {expected} \
                 (runs × canaries): a chunk was written by another experiment",
                rows.len()
            ),
        }));
    }
    out.write(
        "scores.csv",
        rows_to_csv(&config.audit.scores, &rows).as_bytes(),
    )?;
    let report = analyse(config, manifest.claim(), &manifest.data, &rows)?;
    out.write_json("audit.json", &report)?;
    out.write("summary.md", summary_markdown(&report).as_bytes())?;
    write_plots(out, config, &report, &rows)?;
    Ok(Finalized::Complete(Box::new(report)))
}

/// What [`merge`] did.
pub type Merged = dpaudit_store::store::Merged<AuditReport>;

/// Copy the verified chunks of shard out-dirs into `out_dir` and finalize it.
/// Every shard must be of the same experiment and format; a shard given
/// twice is refused as a duplicate; chunks still missing are named with the
/// shards that own them.
pub fn merge(out_dir: &Path, shards: &[PathBuf], command: &str) -> Result<Merged> {
    dpaudit_store::store::merge(
        out_dir,
        shards,
        command,
        |manifest: &Manifest| {
            check_results_memory(&manifest.experiment, ResultsHolder::OutDir)?;
            Ok(CanaryWork {
                config: manifest.experiment.clone(),
            })
        },
        finalize,
    )
}

/// `dir/inclusion.csv` must equal the experiment's bits.
fn check_inclusion_of(dir: &Path, config: &ExperimentConfig) -> Result<()> {
    let path = dir.join(INCLUSION_FILE);
    match std::fs::read(&path) {
        Ok(bytes) if bytes == inclusion_csv(config).as_bytes() => Ok(()),
        Ok(_) => Err(PlanError::Store(StoreError::Inconsistent {
            path,
            reason: "the inclusion bits differ from this experiment's: the file was edited or belongs to another \
                     experiment; the audit's secret bits cannot be trusted, use a new --out-dir"
                .into(),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(PlanError::Store(StoreError::Inconsistent {
            path,
            reason: "missing, but config.json exists: the out-dir is incomplete; use a new --out-dir".into(),
        })),
        Err(source) => Err(PlanError::Store(StoreError::Io {
            path,
            action: "reading",
            source,
        })),
    }
}
