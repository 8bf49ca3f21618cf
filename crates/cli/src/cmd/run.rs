//! `dpaudit run FILE.toml --out-dir DIR`: a canary audit end to end, plus `dpaudit merge` (shards) and `dpaudit compare` (several
//! audits side by side).
//!
//! The out-dir, in the order files appear:
//! - `config.json`: the experiment as parsed, its fingerprint, the claimed ε,
//!   the canaries (Dirac coordinates, input-canary labels);
//! - `inclusion.csv`: every canary's ±1 inclusion bit, written before any
//!   training (the secret of the audit, fixed in advance);
//! - `chunks/chunk-NNNNNN.csv`: the scores of one chunk of runs, written
//!   atomically when the chunk finishes. A killed run loses at most the chunk
//!   in progress; running the same command again skips finished chunks, so no
//!   run is lost or duplicated. `--shard i/n` trains chunks `c ≡ i (mod n)`;
//! - when every chunk exists: `scores.csv`, `audit.json`, `summary.md` and
//!   `plots/*.svg`.
//!
//! Chunk `c` depends only on the config and `c` (bits, schedules and data
//! order are derived per run, the noise per chunk), so resumed, sharded and
//! single runs give the same scores on the same kind of device. The chunk size
//! (`train.replicas`) is part of the experiment's fingerprint: with another
//! chunk size the noise draws, hence the scores, differ.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use dpaudit_audit::bound::{BoundedOn, EpsilonLowerBound, Evidence};
use dpaudit_audit::metrics::Metrics;
use dpaudit_audit::one_run::{one_run_lower_bound, OneRunConfig};
use dpaudit_audit::one_run_fdp::{one_run_fdp_lower_bound, OneRunFdpConfig, TradeoffFamily};
use dpaudit_audit::plots::{epsilon_bars_svg, histogram_auto, EpsilonBar};
use dpaudit_audit::policy::{default_selection, DEFAULT_SPLITS};
use dpaudit_audit::region::{eps_delta_lower_bound, gdp_lower_bound, RegionConfig};
use dpaudit_audit::report::{one_run_plot, tradeoff_plot};
use dpaudit_audit::scores::{Method, Observations, Selection};
use dpaudit_data::seed::{Mode, RunSeed, Stream};
use dpaudit_train::canary::{inclusion_bits, ScoreKind};
use dpaudit_train::experiment::{
    ChunkScores, ClaimedBound, ExperimentConfig, MethodChoice, Prepared, SelectionChoice,
};
use dpaudit_train::trainer::Observer;
use dpaudit_train::{Fault, StepReport};

use super::out::{fingerprint, write_atomic};

/// Arguments of `dpaudit run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment file (see `experiments/seed001-*.toml`).
    pub config: PathBuf,
    /// Where results go; an existing out-dir of the same experiment is resumed.
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Train only chunks `c ≡ i (mod n)`, e.g. `--shard 0/4`; combine the
    /// out-dirs with `dpaudit merge`.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("`{s}`: expected i/n with 0 ≤ i < n, e.g. 0/4");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u64, u64) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// One canary of one run, as stored in `scores.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreRow {
    /// Run index.
    pub run: u64,
    /// Canary index within the run.
    pub canary: usize,
    /// The inclusion bit.
    pub member: bool,
    /// The run's test accuracy.
    pub test_accuracy: f64,
    /// One value per configured score, in config order.
    pub scores: Vec<f64>,
}

fn rows_of(chunk: &ChunkScores) -> Vec<ScoreRow> {
    let mut out = Vec::new();
    for (r, bits) in chunk.bits.iter().enumerate() {
        for (j, &member) in bits.iter().enumerate() {
            out.push(ScoreRow {
                run: chunk.first_run + r as u64,
                canary: j,
                member,
                test_accuracy: chunk.test_accuracy[r],
                scores: chunk.scores.iter().map(|k| k[r][j]).collect(),
            });
        }
    }
    out
}

fn csv_header(kinds: &[ScoreKind]) -> String {
    let mut h = String::from("run,canary,member,test_accuracy");
    for k in kinds {
        h.push(',');
        h.push_str(k.name());
    }
    h
}

/// Rows as CSV (Rust's shortest round-trip float formatting).
pub fn rows_to_csv(kinds: &[ScoreKind], rows: &[ScoreRow]) -> String {
    let mut s = csv_header(kinds);
    s.push('\n');
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{}",
            r.run,
            r.canary,
            u8::from(r.member),
            r.test_accuracy
        ));
        for v in &r.scores {
            s.push_str(&format!(",{v}"));
        }
        s.push('\n');
    }
    s
}

/// Parse rows written by [`rows_to_csv`]; errors name the file and line.
pub fn rows_from_csv(
    path: &Path,
    text: &str,
    kinds: &[ScoreKind],
) -> anyhow::Result<Vec<ScoreRow>> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    if header != csv_header(kinds) {
        bail!(
            "{}: header `{header}` does not match this experiment's `{}`",
            path.display(),
            csv_header(kinds)
        );
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let at = || format!("{} line {}", path.display(), i + 2);
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 4 + kinds.len() {
            bail!("{}: {} fields, expected {}", at(), f.len(), 4 + kinds.len());
        }
        let member = match f[2] {
            "1" => true,
            "0" => false,
            other => bail!("{}: member `{other}`, expected 1 or 0", at()),
        };
        let num = |s: &str| -> anyhow::Result<f64> {
            s.parse::<f64>()
                .with_context(|| format!("{}: `{s}` is not a number", at()))
        };
        out.push(ScoreRow {
            run: f[0]
                .parse()
                .with_context(|| format!("{}: run `{}`", at(), f[0]))?,
            canary: f[1]
                .parse()
                .with_context(|| format!("{}: canary `{}`", at(), f[1]))?,
            member,
            test_accuracy: num(f[3])?,
            scores: f[4..]
                .iter()
                .map(|s| num(s))
                .collect::<anyhow::Result<_>>()?,
        });
    }
    Ok(out)
}

/// One lower bound in `audit.json`.
#[derive(Debug, Clone, Serialize)]
pub struct LowerBoundEntry {
    /// `eps-delta`, `gdp`, `one-run` or `one-run-fdp`.
    pub method: String,
    /// The score (threat model's statistic).
    pub score: String,
    /// The threat model, in words.
    pub threat_model: String,
    /// The ε lower bound.
    pub epsilon: f64,
    /// Its confidence.
    pub confidence: f64,
    /// Selection policy name.
    pub selection: String,
    /// False for `same_data`: not a valid bound at `confidence`.
    pub valid_at_confidence: bool,
    /// Whether it is above the claimed ε (a failed audit: a bug or a broken
    /// analysis, if the bound is valid).
    pub exceeds_upper: bool,
    /// One-run: the run this bound is from (run 0, fixed in advance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<u64>,
    /// One-run with several runs: every run's bound (each valid on its own;
    /// their maximum is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_run: Option<Vec<f64>>,
    /// Which observations the bound was computed on.
    pub bounded_on: BoundedOn,
    /// AUC and TPR at low FPR of the scores the bound used (all runs; one-run:
    /// the canaries of the reported run).
    pub metrics: Metrics,
    /// What produced it.
    pub evidence: Evidence,
    /// The bound itself, for the plots.
    #[serde(skip)]
    pub bound: EpsilonLowerBound,
}

/// `audit.json`.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// Experiment name.
    pub name: String,
    /// Trained models.
    pub runs: u64,
    /// Canaries per run.
    pub canaries_per_run: usize,
    /// Canary kind, insertion and schedule in words.
    pub canary: String,
    /// The accountant's ε for one canary.
    pub epsilon_upper: f64,
    /// δ of every bound.
    pub delta: f64,
    /// What the accountant assumed.
    pub upper_assumption: String,
    /// False when the accounting does not match the sampler.
    pub upper_valid_for_sampler: bool,
    /// The lower bounds.
    pub lower_bounds: Vec<LowerBoundEntry>,
    /// Mean test accuracy over runs.
    pub test_accuracy_mean: f64,
    /// Things a reader must know.
    pub notes: Vec<String>,
    /// Experiments are replayable: every draw follows from the seed.
    pub randomness: Mode,
    /// What that means, in one sentence.
    pub randomness_meaning: String,
}

/// The selection policy of `method` on `n` observations (runs, or the
/// canaries of a run).
fn selection_for(config: &ExperimentConfig, method: Method, n: usize) -> Selection {
    let seed = RunSeed(config.train.seed)
        .stream(Stream::Split)
        .child(0xA0D1)
        .to_u64();
    match config.audit.selection {
        SelectionChoice::Auto => default_selection(method, n, seed),
        SelectionChoice::Split => Selection::Split { seed },
        SelectionChoice::MultiSplit => Selection::MultiSplit {
            seed,
            splits: DEFAULT_SPLITS,
        },
        SelectionChoice::SameData => Selection::SameData,
        SelectionChoice::Bonferroni => Selection::Bonferroni,
    }
}

fn entry(
    bound: &EpsilonLowerBound,
    kind: ScoreKind,
    epsilon_upper: f64,
    run: Option<u64>,
    per_run: Option<Vec<f64>>,
) -> LowerBoundEntry {
    LowerBoundEntry {
        method: bound.method.name().to_string(),
        score: kind.name().to_string(),
        threat_model: kind.threat_model().to_string(),
        epsilon: bound.epsilon,
        confidence: bound.confidence,
        selection: bound.selection.name().to_string(),
        valid_at_confidence: bound.valid_at_confidence,
        exceeds_upper: bound.epsilon > epsilon_upper,
        run,
        per_run,
        bounded_on: bound.bounded_on,
        metrics: bound.metrics.clone(),
        evidence: bound.evidence.clone(),
        bound: bound.clone(),
    }
}

/// Observations of score `k` over all rows (one canary per run) or over the
/// canaries of one run.
fn observations(rows: &[ScoreRow], k: usize) -> anyhow::Result<Observations> {
    Observations::new(
        rows.iter().map(|r| r.scores[k]).collect(),
        rows.iter().map(|r| r.member).collect(),
    )
    .context("building observations from the scores")
}

/// The claimed guarantee an audit is compared with: from the accountant
/// ([`ClaimedBound`]) when training, from `config.json` when merging.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    /// The accountant's ε.
    pub epsilon: f64,
    /// What the accountant assumed, in words.
    pub assumption: &'a str,
    /// False when the accounting does not match the sampler.
    pub valid_for_sampler: bool,
}

impl<'a> From<&'a ClaimedBound> for Claim<'a> {
    fn from(c: &'a ClaimedBound) -> Self {
        Claim {
            epsilon: c.bound.epsilon,
            assumption: &c.assumption,
            valid_for_sampler: c.valid_for_sampler,
        }
    }
}

/// The statistics of a finished experiment.
pub fn analyse(
    config: &ExperimentConfig,
    claim: Claim<'_>,
    rows: &[ScoreRow],
) -> anyhow::Result<AuditReport> {
    let Claim {
        epsilon: epsilon_upper,
        assumption: upper_assumption,
        valid_for_sampler: upper_valid,
    } = claim;
    let delta = config.train.delta;
    // Deterministic insertion composes Gaussian mechanisms: a Gaussian trade-off.
    let gaussian_shaped = config.canary.insertion == dpaudit_train::canary::Insertion::Every;
    let mut lower_bounds = Vec::new();
    let mut notes = Vec::new();
    for (k, &kind) in config.audit.scores.iter().enumerate() {
        for method in &config.audit.methods {
            match method {
                MethodChoice::EpsDelta | MethodChoice::Gdp => {
                    let obs = observations(rows, k)?;
                    let m = if *method == MethodChoice::Gdp {
                        Method::Gdp
                    } else {
                        Method::EpsDelta
                    };
                    let cfg = RegionConfig {
                        confidence: config.audit.confidence,
                        delta,
                        selection: selection_for(config, m, obs.len()),
                    };
                    let bound = if *method == MethodChoice::EpsDelta {
                        eps_delta_lower_bound(&obs, &cfg)
                    } else {
                        gdp_lower_bound(&obs, &cfg)
                    };
                    match bound {
                        Ok(b) => {
                            let mut e = entry(&b, kind, epsilon_upper, None, None);
                            if *method == MethodChoice::Gdp && !gaussian_shaped {
                                // Cebere et al. 2025 Remark 3: the GDP conversion
                                // assumes a Gaussian trade-off; sampled canaries
                                // are not.
                                e.valid_at_confidence = false;
                            }
                            lower_bounds.push(e);
                        }
                        // Too few runs (e.g. a split half without non-members):
                        // say so instead of losing the finished scores.
                        Err(e) => notes.push(format!(
                            "{method:?} bound for score {} not computed: {e} (train more runs)",
                            kind.name()
                        )),
                    }
                }
                MethodChoice::OneRun | MethodChoice::OneRunFdp => {
                    let mut by_run: BTreeMap<u64, Vec<ScoreRow>> = BTreeMap::new();
                    for r in rows {
                        by_run.entry(r.run).or_default().push(r.clone());
                    }
                    let fdp = *method == MethodChoice::OneRunFdp;
                    let m = if fdp {
                        Method::OneRunFdp
                    } else {
                        Method::OneRun
                    };
                    let bound_of = |obs: &Observations| {
                        let selection = selection_for(config, m, obs.len());
                        if fdp {
                            let cfg = OneRunFdpConfig {
                                confidence: config.audit.confidence,
                                delta,
                                family: TradeoffFamily::Gaussian,
                                selection,
                                fixed_guesses: None,
                            };
                            one_run_fdp_lower_bound(obs, &cfg)
                        } else {
                            let cfg = OneRunConfig {
                                confidence: config.audit.confidence,
                                delta,
                                selection,
                                fixed_guesses: None,
                            };
                            one_run_lower_bound(obs, &cfg)
                        }
                    };
                    let mut first = None;
                    let mut all = Vec::new();
                    let reported = by_run.keys().next().copied();
                    for (run, rs) in &by_run {
                        let b = match bound_of(&observations(rs, k)?) {
                            Ok(b) => b,
                            Err(e) => {
                                notes.push(format!(
                                    "{} bound of run {run}, score {} not computed: {e}",
                                    m.name(),
                                    kind.name()
                                ));
                                continue;
                            }
                        };
                        all.push(b.epsilon);
                        if Some(*run) == reported {
                            first = Some((*run, b));
                        }
                    }
                    if let Some((run, b)) = first {
                        let per_run = (all.len() > 1).then_some(all);
                        let mut e = entry(&b, kind, epsilon_upper, Some(run), per_run);
                        if fdp && !gaussian_shaped {
                            // As for gdp: ε from μ assumes a Gaussian trade-off.
                            e.valid_at_confidence = false;
                        }
                        lower_bounds.push(e);
                    }
                }
            }
        }
    }
    if config.audit.selection == SelectionChoice::SameData {
        notes.push(
            "selection same_data: thresholds/guess counts were chosen on the evaluation scores, as the papers do; \
             these numbers are NOT lower bounds valid at the stated confidence"
                .into(),
        );
    }
    let one_run = [MethodChoice::OneRun, MethodChoice::OneRunFdp];
    if config.audit.methods.iter().any(|m| one_run.contains(m)) && config.runs > 1 {
        notes.push(
            "one-run: the reported bound is run 0's (fixed before training); `per_run` lists every run's bound, \
             each valid on its own — their maximum is not"
                .into(),
        );
    }
    let gaussian_methods = [MethodChoice::Gdp, MethodChoice::OneRunFdp];
    if config
        .audit
        .methods
        .iter()
        .any(|m| gaussian_methods.contains(m))
    {
        notes.push(if gaussian_shaped {
            "gdp, one_run_fdp: μ⁻ is always valid; the ε derived from it is a lower bound when the mechanism's \
             trade-off curve is Gaussian-shaped, as here (Cebere et al. 2025, Remark 3)"
                .into()
        } else {
            "gdp, one_run_fdp: the canary is sampled (subsampling or shuffling), so the mechanism's trade-off \
             curve is not Gaussian and the ε derived from μ⁻ is NOT a valid lower bound (Cebere et al. 2025, \
             Remark 3); use eps_delta or one_run"
                .into()
        });
    }
    if !upper_valid {
        notes.push(format!(
            "the claimed ε is not a valid upper bound for this sampler: {upper_assumption}"
        ));
    }
    let acc: Vec<f64> = {
        let mut by_run = BTreeMap::new();
        for r in rows {
            by_run.insert(r.run, r.test_accuracy);
        }
        by_run.into_values().collect()
    };
    Ok(AuditReport {
        name: config.name.clone(),
        runs: config.runs,
        canaries_per_run: config.canary.count,
        canary: describe_canary(config),
        epsilon_upper,
        delta,
        upper_assumption: upper_assumption.to_string(),
        upper_valid_for_sampler: upper_valid,
        lower_bounds,
        test_accuracy_mean: acc.iter().sum::<f64>() / acc.len().max(1) as f64,
        notes,
        randomness: Mode::Replayable,
        randomness_meaning: Mode::Replayable.describe().to_string(),
    })
}

fn describe_canary(config: &ExperimentConfig) -> String {
    let c = &config.canary;
    let when = match c.insertion {
        dpaudit_train::canary::Insertion::Every if c.every == 1 => {
            "inserted at every step".to_string()
        }
        dpaudit_train::canary::Insertion::Every => format!("inserted every {} steps", c.every),
        dpaudit_train::canary::Insertion::Sampled => "sampled like a record".to_string(),
    };
    let mut s = format!(
        "{} × {:?}, {when}, {} steps",
        c.count,
        c.kind,
        config.steps()
    );
    if c.kind == dpaudit_train::canary::CanaryKind::Dirac {
        s.push_str(&format!(", coordinate {:?}", c.coordinate));
    }
    if c.scale != 1.0 {
        s.push_str(&format!(", norm {}·C", c.scale));
    }
    s
}

/// `summary.md`.
pub fn summary_markdown(report: &AuditReport) -> String {
    let mut s = format!(
        "# Audit: {}\n\n",
        if report.name.is_empty() {
            "(unnamed)"
        } else {
            &report.name
        }
    );
    s.push_str(&format!(
        "- runs: {}, canaries per run: {} ({})\n- claimed ε (accountant, δ = {:e}): **{:.4}** — {}\n- mean test accuracy: {:.4}\n- randomness: {}\n\n",
        report.runs, report.canaries_per_run, report.canary, report.delta, report.epsilon_upper, report.upper_assumption,
        report.test_accuracy_mean, report.randomness_meaning
    ));
    s.push_str("| score | threat model | method | selection | ε lower bound | confidence | valid | above claimed ε | n (members + non-members) | AUC | TPR at FPR 10⁻³ | TPR at FPR 10⁻² |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for b in &report.lower_bounds {
        let m = &b.metrics;
        let tpr = |i: usize| {
            m.tpr_at_fpr.get(i).map_or("-".to_string(), |t| {
                format!(
                    "{:.3} [{:.3}, {:.3}]{}",
                    t.tpr,
                    t.tpr_interval.lower,
                    t.tpr_interval.upper,
                    if t.resolvable { "" } else { " (FPR 0)" }
                )
            })
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.4} | {} | {} | {} | {} + {} | {:.4} | {} | {} |\n",
            b.score,
            b.threat_model,
            b.method,
            b.selection,
            b.epsilon,
            b.confidence,
            if b.valid_at_confidence { "yes" } else { "NO" },
            if b.exceeds_upper { "**YES**" } else { "no" },
            m.members,
            m.nonmembers,
            m.auc,
            tpr(0),
            tpr(1)
        ));
    }
    s.push_str(
        "\nAUC and TPR (with two-sided Clopper–Pearson intervals at the bound's confidence) describe the scores \
         the bound used: all runs for the threshold methods, the canaries of the reported run for one-run. \
         \"(FPR 0)\": too few non-members to allow one false positive at that rate.\n",
    );
    for b in &report.lower_bounds {
        if let Some(per) = &b.per_run {
            let min = per.iter().copied().fold(f64::INFINITY, f64::min);
            let max = per.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            s.push_str(&format!(
                "\n{} / {}: run {} reported; over {} runs the bounds range {min:.4} … {max:.4}.\n",
                b.score,
                b.method,
                b.run.unwrap_or(0),
                per.len()
            ));
        }
    }
    if !report.notes.is_empty() {
        s.push_str("\nNotes:\n");
        for n in &report.notes {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s.push_str(
        "\nPlots: `plots/epsilon.svg`, `plots/hist-<score>.svg`; per threshold bound \
         `plots/tradeoff-<score>-<method>.svg` and `plots/roc-<score>-<method>.svg`; per one-run bound \
         `plots/one-run-<score>-<method>.svg`.\n",
    );
    s
}

fn write_plots(
    dir: &Path,
    config: &ExperimentConfig,
    report: &AuditReport,
    rows: &[ScoreRow],
) -> anyhow::Result<()> {
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots).with_context(|| format!("creating {}", plots.display()))?;
    let gaussian_shaped = config.canary.insertion == dpaudit_train::canary::Insertion::Every;
    for (k, kind) in config.audit.scores.iter().enumerate() {
        let members: Vec<f64> = rows
            .iter()
            .filter(|r| r.member)
            .map(|r| r.scores[k])
            .collect();
        let nonmembers: Vec<f64> = rows
            .iter()
            .filter(|r| !r.member)
            .map(|r| r.scores[k])
            .collect();
        if let Ok(h) = histogram_auto(&members, &nonmembers) {
            let svg = h.to_svg(
                &format!("{} scores ({})", kind.name(), kind.threat_model()),
                kind.name(),
            );
            write_atomic(
                &plots.join(format!("hist-{}.svg", kind.name())),
                svg.as_bytes(),
            )?;
        }
        for b in report
            .lower_bounds
            .iter()
            .filter(|b| b.score == kind.name())
        {
            // Not valid for a sampled canary: ε from μ assumes a Gaussian curve.
            let extra = (!gaussian_shaped
                && matches!(b.bound.method, Method::Gdp | Method::OneRunFdp))
            .then_some("ε from μ assumes a Gaussian trade-off curve; the canary is sampled");
            let stem = format!("{}-{}", kind.name(), b.method);
            match &b.bound.evidence {
                Evidence::Threshold(_) => {
                    let obs = observations(rows, k)?;
                    let plot = tradeoff_plot(&obs, &b.bound, Some(report.epsilon_upper), extra)
                        .context("trade-off plot")?;
                    write_atomic(
                        &plots.join(format!("tradeoff-{stem}.svg")),
                        plot.to_svg().as_bytes(),
                    )?;
                    write_atomic(
                        &plots.join(format!("roc-{stem}.svg")),
                        plot.to_roc_svg().as_bytes(),
                    )?;
                }
                Evidence::OneRun(_) => {
                    let run: Vec<ScoreRow> = rows
                        .iter()
                        .filter(|r| Some(r.run) == b.run)
                        .cloned()
                        .collect();
                    let obs = observations(&run, k)?;
                    let plot = one_run_plot(&obs, &b.bound, extra).context("one-run plot")?;
                    write_atomic(
                        &plots.join(format!("one-run-{stem}.svg")),
                        plot.to_svg().as_bytes(),
                    )?;
                }
            }
        }
    }
    let bars: Vec<EpsilonBar> = report
        .lower_bounds
        .iter()
        .map(|b| EpsilonBar {
            label: format!("{} / {}", b.score, b.method),
            lower: b.epsilon,
            valid: b.valid_at_confidence,
        })
        .collect();
    let svg = epsilon_bars_svg(
        &format!("ε lower bounds vs the claimed ε ({})", report.name),
        &bars,
        Some(report.epsilon_upper),
    );
    write_atomic(&plots.join("epsilon.svg"), svg.as_bytes())
}

struct Bar {
    bar: ProgressBar,
    chunk: String,
}

impl Observer for Bar {
    fn on_step(&mut self, r: &StepReport) {
        self.bar.inc(1);
        if r.samples > 0.0 {
            self.bar.set_message(format!(
                "{}  loss {:.4}",
                self.chunk,
                r.loss_sum / r.samples
            ));
        }
    }
}

fn chunk_path(dir: &Path, c: u64) -> PathBuf {
    dir.join("chunks").join(format!("chunk-{c:06}.csv"))
}

#[derive(Serialize)]
struct ConfigFile<'a> {
    dpaudit_version: &'static str,
    fingerprint: String,
    experiment: &'a ExperimentConfig,
    claimed_epsilon: f64,
    claimed_assumption: &'a str,
    claimed_valid_for_sampler: bool,
    num_parameters: usize,
    dirac_coordinates: &'a [usize],
    input_canary_labels: Vec<i64>,
    input_canary_true_labels: &'a [i64],
}

fn experiment_fingerprint(config: &ExperimentConfig) -> anyhow::Result<String> {
    Ok(fingerprint(
        &serde_json::to_string(config).context("serialising the experiment")?,
    ))
}

/// A JSON file of an out-dir, with errors that name it.
fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

/// Check `dir/config.json` belongs to this experiment, or create it.
fn claim_dir(dir: &Path, prepared: &Prepared) -> anyhow::Result<()> {
    let config = &prepared.config;
    let fp = experiment_fingerprint(config)?;
    let path = dir.join("config.json");
    if path.exists() {
        let v = read_json(&path)?;
        if v.get("fingerprint").and_then(|f| f.as_str()) != Some(fp.as_str()) {
            bail!(
                "{} belongs to a different experiment (fingerprint {} vs this file's {fp}); use another --out-dir",
                path.display(),
                v.get("fingerprint").and_then(|f| f.as_str()).unwrap_or("missing")
            );
        }
        return Ok(());
    }
    std::fs::create_dir_all(dir.join("chunks"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let file = ConfigFile {
        dpaudit_version: env!("CARGO_PKG_VERSION"),
        fingerprint: fp,
        experiment: config,
        claimed_epsilon: prepared.claimed.bound.epsilon,
        claimed_assumption: &prepared.claimed.assumption,
        claimed_valid_for_sampler: prepared.claimed.valid_for_sampler,
        num_parameters: prepared.num_parameters,
        dirac_coordinates: &prepared.canaries.coordinates,
        input_canary_labels: prepared
            .canaries
            .records
            .as_ref()
            .map(|r| r.labels().to_vec())
            .unwrap_or_default(),
        input_canary_true_labels: &prepared.canaries.true_labels,
    };
    // The inclusion bits first: fixed before any training.
    let seed = RunSeed(config.train.seed);
    let mut inc = String::from("run,canary,included\n");
    for run in 0..config.runs {
        for (j, b) in inclusion_bits(seed, run, config.canary.count)
            .into_iter()
            .enumerate()
        {
            inc.push_str(&format!("{run},{j},{}\n", if b { 1 } else { -1 }));
        }
    }
    write_atomic(&dir.join("inclusion.csv"), inc.as_bytes())?;
    write_atomic(&path, serde_json::to_string_pretty(&file)?.as_bytes())
}

fn read_chunk(dir: &Path, c: u64, kinds: &[ScoreKind]) -> anyhow::Result<Option<Vec<ScoreRow>>> {
    let p = chunk_path(dir, c);
    if !p.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    Ok(Some(rows_from_csv(&p, &text, kinds)?))
}

/// Train the chunks this process owns that are not on disk yet.
fn train_missing(
    dir: &Path,
    prepared: &Prepared,
    shard: (u64, u64),
    quiet: bool,
) -> anyhow::Result<u64> {
    let config = &prepared.config;
    let kinds = &config.audit.scores;
    let todo: Vec<u64> = (0..config.chunks())
        .filter(|c| c % shard.1 == shard.0)
        .filter(|&c| !chunk_path(dir, c).exists())
        .collect();
    let done = (0..config.chunks())
        .filter(|c| c % shard.1 == shard.0)
        .count()
        - todo.len();
    if done > 0 && !quiet {
        eprintln!(
            "resuming: {done} chunk(s) already on disk, {} to train",
            todo.len()
        );
    }
    let bar = if quiet {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new(todo.len() as u64 * config.steps())
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} steps  ETA {eta}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    for (i, &c) in todo.iter().enumerate() {
        let mut obs = Bar {
            bar: bar.clone(),
            chunk: format!("chunk {}/{} (#{c})", i + 1, todo.len()),
        };
        let scores = prepared
            .run_chunk(c, &mut obs)
            .with_context(|| format!("training chunk {c}"))?;
        let rows = rows_of(&scores);
        write_atomic(&chunk_path(dir, c), rows_to_csv(kinds, &rows).as_bytes())?;
    }
    bar.finish_and_clear();
    Ok(todo
        .iter()
        .map(|&c| (config.runs - c * config.chunk_size()).min(config.chunk_size()))
        .sum())
}

/// If every chunk is on disk: write `scores.csv`, `audit.json`, `summary.md`
/// and the plots; returns the report, or the missing chunks.
fn finalize(
    dir: &Path,
    config: &ExperimentConfig,
    claim: Claim<'_>,
) -> anyhow::Result<Result<AuditReport, Vec<u64>>> {
    let kinds = &config.audit.scores;
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    for c in 0..config.chunks() {
        match read_chunk(dir, c, kinds)? {
            Some(r) => rows.extend(r),
            None => missing.push(c),
        }
    }
    if !missing.is_empty() {
        return Ok(Err(missing));
    }
    rows.sort_by_key(|r| (r.run, r.canary));
    let expected = config.runs as usize * config.canary.count;
    if rows.len() != expected {
        bail!(
            "{}: the chunks hold {} scores, expected {expected} (runs × canaries); a chunk file was edited",
            dir.display(),
            rows.len()
        );
    }
    write_atomic(
        &dir.join("scores.csv"),
        rows_to_csv(kinds, &rows).as_bytes(),
    )?;
    let report = analyse(config, claim, &rows)?;
    write_atomic(
        &dir.join("audit.json"),
        serde_json::to_string_pretty(&report)?.as_bytes(),
    )?;
    write_atomic(
        &dir.join("summary.md"),
        summary_markdown(&report).as_bytes(),
    )?;
    write_plots(dir, config, &report, &rows)?;
    Ok(Ok(report))
}

fn print_report(report: &AuditReport) {
    println!("randomness: {}", report.randomness_meaning);
    println!(
        "claimed ε = {:.4} (δ = {:e}; {})",
        report.epsilon_upper, report.delta, report.upper_assumption
    );
    for b in &report.lower_bounds {
        println!(
            "  {:<16} {:<10} ε_lb = {:.4}  ({} confidence, {} selection{}){}",
            b.score,
            b.method,
            b.epsilon,
            b.confidence,
            b.selection,
            if b.valid_at_confidence {
                ""
            } else {
                ", NOT valid"
            },
            if b.exceeds_upper {
                "  ABOVE THE CLAIMED ε"
            } else {
                ""
            }
        );
    }
    for n in &report.notes {
        println!("  note: {n}");
    }
}

/// `dpaudit run`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let config = ExperimentConfig::load(&args.config)
        .with_context(|| format!("loading {}", args.config.display()))?;
    let prepared = Prepared::new(&config, None)
        .with_context(|| format!("preparing {}", args.config.display()))?;
    claim_dir(&args.out_dir, &prepared)?;
    let start = std::time::Instant::now();
    let trained = train_missing(
        &args.out_dir,
        &prepared,
        args.shard.unwrap_or((0, 1)),
        args.quiet,
    )?;
    let train_seconds = start.elapsed().as_secs_f64();
    if trained > 0 {
        println!(
            "trained {trained} runs (one observation each) in {train_seconds:.1} s: {:.2} runs/s on {:?}",
            trained as f64 / train_seconds,
            prepared.device
        );
    }
    match finalize(&args.out_dir, &config, (&prepared.claimed).into())? {
        Ok(report) => {
            print_report(&report);
            println!(
                "wrote {} (audit.json, summary.md, scores.csv, plots/) in {:.1} s",
                args.out_dir.display(),
                start.elapsed().as_secs_f64()
            );
        }
        Err(missing) => println!(
            "shard done in {:.1} s; {} chunk(s) belong to other shards — combine the out-dirs with `dpaudit merge`",
            start.elapsed().as_secs_f64(),
            missing.len()
        ),
    }
    Ok(())
}

/// Run an experiment in memory (no files): for `selftest` and `demo`.
pub fn run_in_memory(
    config: &ExperimentConfig,
    fault: Option<Fault>,
    quiet: bool,
) -> anyhow::Result<AuditReport> {
    let prepared = Prepared::new(config, fault)?;
    let bar = if quiet {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
    } else {
        ProgressBar::new(config.chunks() * config.steps())
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} steps  ETA {eta}  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rows = Vec::new();
    for c in 0..config.chunks() {
        let mut obs = Bar {
            bar: bar.clone(),
            chunk: format!("chunk {}/{}", c + 1, config.chunks()),
        };
        rows.extend(rows_of(&prepared.run_chunk(c, &mut obs)?));
    }
    bar.finish_and_clear();
    analyse(config, (&prepared.claimed).into(), &rows)
}

/// Arguments of `dpaudit merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The out-dir to complete (created if missing).
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Shard out-dirs of the same experiment.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
}

/// `dpaudit merge`: copy the chunks of shard out-dirs into one and finish it.
pub fn run_merge(args: MergeArgs) -> anyhow::Result<()> {
    let mut config: Option<(serde_json::Value, ExperimentConfig)> = None;
    for s in &args.shards {
        let p = s.join("config.json");
        let v = read_json(&p)?;
        let exp: ExperimentConfig = serde_json::from_value(v["experiment"].clone())
            .with_context(|| format!("{}: field `experiment`", p.display()))?;
        match &config {
            None => config = Some((v, exp)),
            Some((v0, _)) if v0["fingerprint"] != v["fingerprint"] => bail!(
                "{} is a different experiment (fingerprint {} vs {})",
                s.display(),
                v["fingerprint"],
                v0["fingerprint"]
            ),
            _ => {}
        }
    }
    let (v, exp) = config.context("no shard given")?;
    std::fs::create_dir_all(args.out_dir.join("chunks"))
        .with_context(|| format!("creating {}", args.out_dir.display()))?;
    let own = args.out_dir.join("config.json");
    if own.exists() {
        let mine = read_json(&own)?;
        if mine["fingerprint"] != v["fingerprint"] {
            bail!("{} belongs to a different experiment", own.display());
        }
    } else {
        write_atomic(&own, serde_json::to_string_pretty(&v)?.as_bytes())?;
        for s in &args.shards {
            let inc = s.join("inclusion.csv");
            if inc.exists() {
                std::fs::copy(&inc, args.out_dir.join("inclusion.csv"))
                    .with_context(|| format!("copying {}", inc.display()))?;
                break;
            }
        }
    }
    let kinds = &exp.audit.scores;
    let mut copied = 0;
    for s in &args.shards {
        for c in 0..exp.chunks() {
            let Some(rows) = read_chunk(s, c, kinds)? else {
                continue;
            };
            let dest = chunk_path(&args.out_dir, c);
            match read_chunk(&args.out_dir, c, kinds)? {
                Some(existing) if existing != rows => bail!(
                    "chunk {c} differs between {} and {}: the shards were not trained from the same experiment",
                    s.display(),
                    args.out_dir.display()
                ),
                Some(_) => {}
                None => {
                    write_atomic(&dest, rows_to_csv(kinds, &rows).as_bytes())?;
                    copied += 1;
                }
            }
        }
    }
    let eps = v["claimed_epsilon"]
        .as_f64()
        .context("config.json: claimed_epsilon")?;
    let assumption = v["claimed_assumption"].as_str().unwrap_or("").to_string();
    let valid = v["claimed_valid_for_sampler"]
        .as_bool()
        .context("config.json: claimed_valid_for_sampler")?;
    let claim = Claim {
        epsilon: eps,
        assumption: &assumption,
        valid_for_sampler: valid,
    };
    match finalize(&args.out_dir, &exp, claim)? {
        Ok(report) => {
            println!("merged {copied} chunk(s) into {}", args.out_dir.display());
            print_report(&report);
            Ok(())
        }
        Err(missing) => bail!(
            "merged {copied} chunk(s), but {} chunk(s) are still missing: {:?} — run their shards",
            missing.len(),
            missing
        ),
    }
}

/// Arguments of `dpaudit compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Finished out-dirs (each with `audit.json`).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Write `compare.md` and `compare.svg` here.
    #[arg(long)]
    pub out_dir: PathBuf,
}

/// `dpaudit compare`: several audits side by side. One
/// experiment with several `audit.scores` is already a comparison of threat
/// models on the same runs; this command puts different canaries (different
/// trainings) next to each other.
pub fn run_compare(args: CompareArgs) -> anyhow::Result<()> {
    let mut md = String::from(
        "# Comparison\n\n| experiment | canary | score | threat model | method | selection | ε lower bound | claimed ε | ratio |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut bars = Vec::new();
    let mut upper: Option<f64> = None;
    for d in &args.dirs {
        let p = d.join("audit.json");
        let v = read_json(&p)?;
        let eps_up = v["epsilon_upper"]
            .as_f64()
            .with_context(|| format!("{}: epsilon_upper", p.display()))?;
        upper = Some(upper.map_or(eps_up, |u: f64| u.max(eps_up)));
        let name = v["name"].as_str().unwrap_or_default().to_string();
        let lbs = v["lower_bounds"]
            .as_array()
            .with_context(|| format!("{}: lower_bounds", p.display()))?;
        for b in lbs {
            let eps = b["epsilon"].as_f64().unwrap_or(0.0);
            md.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {eps:.4} | {eps_up:.4} | {:.3} |\n",
                v["canary"].as_str().unwrap_or_default(),
                b["score"].as_str().unwrap_or_default(),
                b["threat_model"].as_str().unwrap_or_default(),
                b["method"].as_str().unwrap_or_default(),
                b["selection"].as_str().unwrap_or_default(),
                eps / eps_up
            ));
            bars.push(EpsilonBar {
                label: format!(
                    "{name}: {} / {}",
                    b["score"].as_str().unwrap_or_default(),
                    b["method"].as_str().unwrap_or_default()
                ),
                lower: eps,
                valid: b["valid_at_confidence"].as_bool().unwrap_or(false),
            });
        }
    }
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("creating {}", args.out_dir.display()))?;
    write_atomic(&args.out_dir.join("compare.md"), md.as_bytes())?;
    write_atomic(
        &args.out_dir.join("compare.svg"),
        epsilon_bars_svg("ε lower bounds by threat model / canary", &bars, upper).as_bytes(),
    )?;
    print!("{md}");
    Ok(())
}
