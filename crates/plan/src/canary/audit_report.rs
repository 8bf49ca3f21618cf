//! The statistics of a finished experiment: the typed audit report
//! (`audit.json`), `summary.md` and the plots.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::canary::canaries::ScoreKind;
use crate::canary::settings::{ClaimedBound, ExperimentConfig};
use dpaudit_audit::bound::{
    BoundedOn, EpsilonLowerBound, Evidence, MechanismAssumption, TradeoffShape,
};
use dpaudit_audit::estimate::lower_bound;
use dpaudit_audit::estimate::options::Spelling;
use dpaudit_audit::figures::bound_plots::{one_run_plot, tradeoff_plot};
use dpaudit_audit::figures::plots::{epsilon_bars_svg, histogram_auto, EpsilonBar};
use dpaudit_audit::method::{Method, Observed, Selection, SelectionChoice};
use dpaudit_audit::metrics::Metrics;
use dpaudit_audit::observations::Observations;
use dpaudit_data::seed::Mode;

use dpaudit_attacks::ThreatModel;

use crate::canary::book::ScoreRow;
use crate::error::{PlanError, Result};
use dpaudit_store::outdir::OutDir;

/// One lower bound in `audit.json`.
#[derive(Debug, Clone, Serialize)]
pub struct LowerBoundEntry {
    /// `eps-delta`, `gdp`, `one-run`, `one-run-fdp` or `one-run-fdp-gaussian`
    /// ([`EpsilonLowerBound::label`]).
    pub method: String,
    /// The score (threat model's statistic).
    pub score: String,
    /// The threat model, in words ([`ThreatModel::describe`]).
    #[serde(with = "dpaudit_attacks::threat::words")]
    pub threat_model: ThreatModel,
    /// The ε lower bound.
    pub epsilon: f64,
    /// Its confidence.
    pub confidence: f64,
    /// Selection policy name.
    pub selection: String,
    /// False for `same_data`: not a valid bound at `confidence`.
    pub valid_at_confidence: bool,
    /// What the bound assumes of the mechanism (`nothing`, or
    /// `gaussian-tradeoff` for the ε of gdp and one-run-fdp-gaussian).
    pub assumes: MechanismAssumption,
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
    /// The training data.
    pub data: DataInfo,
    /// Things a reader must know.
    pub notes: Vec<String>,
    /// Experiments are replayable: every draw follows from the seed.
    pub randomness: Mode,
    /// What that means, in one sentence.
    pub randomness_meaning: String,
}

/// The selection policy of `method` on `n` observations (runs, or the
/// canaries of a run).
pub fn selection_for(config: &ExperimentConfig, method: Method, n: usize) -> Selection {
    config.bound_options(method).selection(method, n)
}

fn entry(
    bound: &EpsilonLowerBound,
    kind: ScoreKind,
    epsilon_upper: f64,
    run: Option<u64>,
    per_run: Option<Vec<f64>>,
) -> LowerBoundEntry {
    LowerBoundEntry {
        method: bound.label().to_string(),
        score: kind.name().to_string(),
        threat_model: kind.threat_model(),
        epsilon: bound.epsilon,
        confidence: bound.confidence,
        selection: bound.selection.name().to_string(),
        valid_at_confidence: bound.valid_at_confidence,
        assumes: bound.assumes,
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
fn observations(rows: &[ScoreRow], k: usize) -> Result<Observations<'static>> {
    Observations::new(
        rows.iter().map(|r| r.scores[k]).collect(),
        rows.iter().map(|r| r.member).collect(),
    )
    .map_err(|e| PlanError::Audit {
        context: "building observations from the scores".into(),
        source: e,
    })
}

/// Where the training data came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DataInfo {
    /// The source in words (a directory of real files, or the synthetic
    /// stand-in and its seed).
    pub source: String,
    /// True when the records are a synthetic stand-in, not the real dataset.
    pub synthetic: bool,
}

impl DataInfo {
    /// The data of a prepared experiment.
    pub fn of(source: &dpaudit_data::Source) -> Self {
        Self {
            source: source.to_string(),
            synthetic: source.is_synthetic(),
        }
    }
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
    data: &DataInfo,
    rows: &[ScoreRow],
) -> Result<AuditReport> {
    let Claim {
        epsilon: epsilon_upper,
        assumption: upper_assumption,
        valid_for_sampler: upper_valid,
    } = claim;
    let delta = config.train.delta;
    // Deterministic insertion composes Gaussian mechanisms: a Gaussian trade-off.
    let gaussian_shaped = config.canary.insertion == crate::canary::canaries::Insertion::Every;
    let shape = if gaussian_shaped {
        TradeoffShape::Gaussian
    } else {
        TradeoffShape::NotGaussian
    };
    let mut lower_bounds = Vec::new();
    let mut notes = Vec::new();
    for (k, &kind) in config.audit.scores.iter().enumerate() {
        for &method in &config.audit.methods {
            let options = config.bound_options(method);
            let bound = |obs: &Observations| {
                options
                    .resolve(method, obs.len(), Spelling::Keywords)
                    .and_then(|settings| lower_bound(method, obs, &settings))
            };
            match method.observes() {
                Observed::Runs => {
                    let obs = observations(rows, k)?;
                    match bound(&obs) {
                        Ok(b) => {
                            // The GDP conversion assumes a Gaussian trade-off;
                            // the bound carries that condition and applies it.
                            let b = b.for_mechanism(shape);
                            lower_bounds.push(entry(&b, kind, epsilon_upper, None, None));
                        }
                        // Too few runs (e.g. a split half without non-members):
                        // say so instead of losing the finished scores.
                        Err(e) => notes.push(format!(
                            "{method:?} bound for score {} not computed: {e} (train more runs)",
                            kind.name()
                        )),
                    }
                }
                Observed::CanariesOfOneRun => {
                    let mut by_run: BTreeMap<u64, Vec<ScoreRow>> = BTreeMap::new();
                    for r in rows {
                        by_run.entry(r.run).or_default().push(r.clone());
                    }
                    let mut first = None;
                    let mut all = Vec::new();
                    let reported = by_run.keys().next().copied();
                    for (run, rs) in &by_run {
                        let obs = observations(rs, k)?;
                        let b = match bound(&obs) {
                            Ok(b) => b,
                            Err(e) => {
                                notes.push(format!(
                                    "{} bound of run {run}, score {} not computed: {e}",
                                    method.recorded_as().name(),
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
                        let b = b.for_mechanism(shape);
                        lower_bounds.push(entry(&b, kind, epsilon_upper, Some(run), per_run));
                    }
                }
                // Refused when the experiment file is read.
                Observed::Measurement => notes.push(format!(
                    "{} is a measurement, not a lower bound: not computed",
                    method.name()
                )),
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
    if config
        .audit
        .methods
        .iter()
        .any(|m| m.observes() == Observed::CanariesOfOneRun)
        && config.runs > 1
    {
        notes.push(
            "one-run: the reported bound is run 0's (fixed before training); `per_run` lists every run's bound, \
             each valid on its own — their maximum is not"
                .into(),
        );
    }
    let gaussian_methods = [Method::Gdp, Method::OneRunFdpGaussian];
    if config
        .audit
        .methods
        .iter()
        .any(|m| gaussian_methods.contains(m))
    {
        notes.push(if gaussian_shaped {
            "gdp, one_run_fdp_gaussian: μ⁻ is always valid; the ε derived from it is a lower bound when the mechanism's \
             trade-off curve is Gaussian-shaped, as here (Cebere et al. 2024, Remark 3)"
                .into()
        } else {
            "gdp, one_run_fdp_gaussian: the canary is sampled (subsampling or shuffling), so the mechanism's trade-off \
             curve is not Gaussian and the ε derived from μ⁻ is NOT a valid lower bound (Cebere et al. 2024, \
             Remark 3); use eps_delta, one_run or one_run_fdp"
                .into()
        });
    }
    if data.synthetic {
        notes.push(format!(
            "the models were trained on a synthetic stand-in ({}), not on real data",
            data.source
        ));
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
        data: data.clone(),
        notes,
        randomness: Mode::Replayable,
        randomness_meaning: Mode::Replayable.describe().to_string(),
    })
}

pub fn describe_canary(config: &ExperimentConfig) -> String {
    let c = &config.canary;
    let when = match c.insertion {
        crate::canary::canaries::Insertion::Every if c.every == 1 => {
            "inserted at every step".to_string()
        }
        crate::canary::canaries::Insertion::Every => format!("inserted every {} steps", c.every),
        crate::canary::canaries::Insertion::Sampled => "sampled like a record".to_string(),
    };
    let mut s = format!(
        "{} × {:?}, {when}, {} steps",
        c.count,
        c.kind,
        config.steps()
    );
    if c.kind == crate::canary::canaries::CanaryKind::Dirac {
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
        "- runs: {}, canaries per run: {} ({})\n- claimed ε (accountant, δ = {:e}): **{:.4}** — {}\n- mean test accuracy: {:.4}\n- data: {}\n- randomness: {}\n\n",
        report.runs, report.canaries_per_run, report.canary, report.delta, report.epsilon_upper, report.upper_assumption,
        report.test_accuracy_mean, report.data.source, report.randomness_meaning
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
            match (b.valid_at_confidence, b.assumes) {
                (false, _) => "NO",
                (true, MechanismAssumption::GaussianTradeoff) => "yes (Gaussian trade-off)",
                (true, MechanismAssumption::Nothing) => "yes",
                (true, MechanismAssumption::GaussianScores) => "yes (Gaussian scores)",
                (true, MechanismAssumption::IndependentGaussianChannels) => {
                    "yes (independent Gaussian canary channels)"
                }
            },
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

/// The plots of a finished audit into `out/plots/`.
pub fn write_plots(
    out: &OutDir,
    config: &ExperimentConfig,
    report: &AuditReport,
    rows: &[ScoreRow],
) -> Result<()> {
    let plots = Path::new("plots");
    let gaussian_shaped = config.canary.insertion == crate::canary::canaries::Insertion::Every;
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
            out.write(
                plots.join(format!("hist-{}.svg", kind.name())),
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
                && matches!(
                    b.bound.assumes,
                    MechanismAssumption::GaussianTradeoff
                        | MechanismAssumption::IndependentGaussianChannels
                ))
            .then_some("ε from μ assumes a Gaussian trade-off curve; the canary is sampled");
            let stem = format!("{}-{}", kind.name(), b.method);
            match &b.bound.evidence {
                Evidence::Threshold(_) => {
                    let obs = observations(rows, k)?;
                    let plot = tradeoff_plot(&obs, &b.bound, Some(report.epsilon_upper), extra)
                        .map_err(|e| PlanError::Audit {
                            context: "drawing the trade-off plot".into(),
                            source: e,
                        })?;
                    out.write(
                        plots.join(format!("tradeoff-{stem}.svg")),
                        plot.to_svg().as_bytes(),
                    )?;
                    out.write(
                        plots.join(format!("roc-{stem}.svg")),
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
                    let plot =
                        one_run_plot(&obs, &b.bound, extra).map_err(|e| PlanError::Audit {
                            context: "drawing the one-run plot".into(),
                            source: e,
                        })?;
                    out.write(
                        plots.join(format!("one-run-{stem}.svg")),
                        plot.to_svg().as_bytes(),
                    )?;
                }
                // No threshold or guesses to draw: the score histogram is its plot.
                Evidence::GaussianScores(_) => {}
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
    Ok(out.write(plots.join("epsilon.svg"), svg.as_bytes())?)
}
