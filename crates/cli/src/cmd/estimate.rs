//! `dpaudit estimate`: ε lower bounds (or PANORAMIA's ε̃) from a scores file.
//!
//! Input (see `dpaudit_audit::io`): CSV with a header naming a `score` and a
//! `member` column (1 = the target/canary was included, 0 = not; other
//! columns ignored), or NPY: a little-endian float64 array of shape (N, 2),
//! column 0 = score, column 1 = member. Higher score means "member".
//!
//! For `--method one-run` and `one-run-fdp` each row is one canary and
//! `member` is its inclusion coin (1 = S_i = +1); the canaries are the rows,
//! so `m` = number of rows. For `--method panoramia`, `--scores` holds the
//! MIA scores and `--baseline-scores` the baseline classifier's scores on the
//! same audit set.
//!
//! Every bound is printed with what it assumes, the metrics of the scores
//! (AUC, TPR at FPR = 10⁻³ and 10⁻² with Clopper–Pearson intervals), the
//! observations it was computed on and the selection policy; `--selection
//! auto` (the default) picks the policy from the method and the number of
//! rows (`dpaudit_audit::policy::default_selection`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use dpaudit_audit::bound::{
    describe_bounded_on, EpsilonLowerBound, Evidence, MechanismAssumption, ThresholdTest,
};
use dpaudit_audit::estimate::lower_bound;
use dpaudit_audit::estimate::options::{BoundOptions, Spelling, TieBreakChoice};
use dpaudit_audit::figures::bound_plots::{one_run_plot, tradeoff_plot};
use dpaudit_audit::figures::plots::histogram_auto;
use dpaudit_audit::io::read_scores;
use dpaudit_audit::method::{Method, SelectionChoice};
use dpaudit_audit::observations::Observations;
use dpaudit_audit::one_run::GuessFamily;
use dpaudit_audit::one_run_fdp::TradeoffFamily;
use dpaudit_audit::panoramia::{panoramia, PanoramiaConfig, PanoramiaMeasurement};
use dpaudit_audit::policy::DEFAULT_SPLITS;
use dpaudit_audit::report::{assumptions, bound_json, panoramia_json};

/// Arguments of `dpaudit estimate`. The method, the selection and the
/// option values are the audit crate's enums (clap's `ValueEnum` through its
/// `clap` feature); [`BoundOptions`] turns them into settings.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Statistical method.
    #[arg(long, value_enum)]
    pub method: Method,
    /// Scores: CSV with `score` and `member` (1/0) columns, or NPY (N, 2) float64 [score, member].
    #[arg(long)]
    pub scores: PathBuf,
    /// PANORAMIA only: baseline classifier scores on the same audit set (same format).
    #[arg(long)]
    pub baseline_scores: Option<PathBuf>,
    /// δ of the (ε, δ) statement; required by all but panoramia (e.g. 1e-5; > 0 for gdp).
    #[arg(long)]
    pub delta: Option<f64>,
    /// Confidence of the bound.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// How the threshold (or one-run's k+, k−) is chosen.
    #[arg(long, value_enum, default_value = "auto")]
    pub selection: SelectionChoice,
    /// Seed of the random split(s) of `split` and `multi-split` and of the seeded tie-break;
    /// fix it before looking at the scores.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Number of random halvings of `--selection multi-split`.
    #[arg(long, default_value_t = DEFAULT_SPLITS)]
    pub splits: u32,
    /// one-run-fdp, one-run-order: the trade-off family tested (eps-delta: valid for
    /// any mechanism; gaussian: μ⁻, and an ε that assumes a Gaussian trade-off curve;
    /// for one-run-order also canaries that do not interact).
    #[arg(long, value_enum, default_value = "eps-delta")]
    pub family: TradeoffFamily,
    /// one-run, one-run-fdp, one-run-order: the (k+, k−) candidates searched (not with
    /// --selection fixed).
    #[arg(long, value_enum, default_value = "symmetric")]
    pub guesses: GuessFamily,
    /// one-run, one-run-fdp, one-run-fdp-gaussian: how tied scores are ordered (seeded: a
    /// random order keyed by --seed, at the full level, so a bound on tied scores depends on
    /// the seed and the row order; quantile: order-free, every test at 95 % of the level).
    #[arg(long, value_enum, default_value = "seeded")]
    pub tie_break: TieBreakChoice,
    /// One-run with `--selection fixed`: number of positive guesses (largest scores).
    #[arg(long)]
    pub k_plus: Option<u64>,
    /// One-run with `--selection fixed`: number of negative guesses (smallest scores).
    #[arg(long)]
    pub k_minus: Option<u64>,
    /// A claimed ε (at --delta) to draw in the plot for comparison.
    #[arg(long)]
    pub claimed_epsilon: Option<f64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the plot (SVG) here: the trade-off plot of a threshold method
    /// (with FILE-roc.svg beside it) or the one-run plot; FILE-hist.svg holds
    /// the score histogram.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// The options as given: a flag left at its default is not given, so a
/// method that does not take it does not refuse it.
fn options(args: &Args) -> BoundOptions {
    fn given<T: PartialEq>(value: T, default: T) -> Option<T> {
        (value != default).then_some(value)
    }
    BoundOptions {
        confidence: Some(args.confidence),
        delta: args.delta,
        selection: args.selection,
        seed: args.seed,
        splits: given(args.splits, DEFAULT_SPLITS),
        family: given(args.family, TradeoffFamily::EpsDelta),
        guesses: given(args.guesses, GuessFamily::Symmetric),
        k_plus: args.k_plus,
        k_minus: args.k_minus,
        tie_break: given(args.tie_break, TieBreakChoice::Seeded),
    }
}

/// Runs `dpaudit estimate`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let obs = read_scores(&args.scores)
        .with_context(|| format!("reading scores from {}", args.scores.display()))?;
    let read = started.elapsed();
    let options = options(&args);
    options.check(args.method, Spelling::Flags)?;
    if args.method == Method::Panoramia {
        let path = args.baseline_scores.as_ref().context(
            "--method panoramia needs --baseline-scores FILE (the baseline classifier's scores)",
        )?;
        let baseline = read_scores(path)
            .with_context(|| format!("reading baseline scores from {}", path.display()))?;
        let cfg = PanoramiaConfig {
            confidence: args.confidence,
            selection: options.selection(args.method, obs.len()),
        };
        let m = panoramia(&baseline, &obs, &cfg).context("PANORAMIA measurement")?;
        return report_panoramia(&args, &m);
    }
    let settings = options.resolve(args.method, obs.len(), Spelling::Flags)?;
    let what = match args.method {
        Method::OneRun => "one-run audit of",
        Method::OneRunFdp | Method::OneRunFdpGaussian => "f-DP one-run audit of",
        Method::OneRunGaussianScores => "Gaussian-scores one-run audit of",
        Method::OneRunOrder | Method::OneRunOrderGaussian => "order-statistics one-run audit of",
        _ => "estimating ε from",
    };
    let bound = lower_bound(args.method, &obs, &settings)
        .with_context(|| format!("{what} {}", args.scores.display()))?;
    if std::env::var_os("DPAUDIT_TIMINGS").is_some() {
        // A measurement hook (benches/python_bench.py): wall time of reading
        // the file and of computing the bound, on stderr.
        eprintln!(
            "timings: read {:.6} s, bound {:.6} s",
            read.as_secs_f64(),
            (started.elapsed() - read).as_secs_f64()
        );
    }
    if !bound.epsilon.is_finite() {
        // Never happens for valid input; never print a non-number as the bound.
        bail!(
            "the bound is not a finite number ({}); please report this input",
            bound.epsilon
        );
    }
    let plots = write_plots(&args, &obs, &bound)?;
    report_bound(&args, &bound, &assumptions(&bound), &plots)
}

/// `FILE.svg` → `FILE-suffix.svg`, beside it.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plot".into());
    path.with_file_name(format!("{stem}-{suffix}.svg"))
}

fn write_file(path: &Path, svg: &str) -> anyhow::Result<()> {
    std::fs::write(path, svg).with_context(|| format!("writing plot to {}", path.display()))
}

/// Writes the plots for `--plot`; returns their paths.
fn write_plots(
    args: &Args,
    obs: &Observations,
    bound: &EpsilonLowerBound,
) -> anyhow::Result<Vec<PathBuf>> {
    let Some(path) = &args.plot else {
        return Ok(Vec::new());
    };
    let mut written = Vec::new();
    match &bound.evidence {
        Evidence::Threshold(_) => {
            let plot = tradeoff_plot(obs, bound, args.claimed_epsilon, None)
                .context("building the trade-off plot")?;
            write_file(path, &plot.to_svg())?;
            let roc = sibling(path, "roc");
            write_file(&roc, &plot.to_roc_svg())?;
            written.extend([path.clone(), roc]);
        }
        Evidence::OneRun(_) => {
            let plot = one_run_plot(obs, bound, None).context("building the one-run plot")?;
            write_file(path, &plot.to_svg())?;
            written.push(path.clone());
        }
        // No threshold or guesses to draw: the score histogram below is its plot.
        Evidence::GaussianScores(_) => {}
    }
    let (members, nonmembers) = obs.classes();
    let hist = histogram_auto(&members, &nonmembers).context("binning the scores")?;
    let hist_path = sibling(path, "hist");
    write_file(
        &hist_path,
        &hist.to_svg(
            &format!("scores of {}", args.scores.display()),
            "score (higher = member)",
        ),
    )?;
    written.push(hist_path);
    Ok(written)
}

fn report_bound(
    args: &Args,
    bound: &EpsilonLowerBound,
    assumptions: &[&str],
    plots: &[PathBuf],
) -> anyhow::Result<()> {
    let by_default = args.selection == SelectionChoice::Auto;
    let default_note = by_default.then(|| {
        format!(
            "default for {} with {} rows",
            bound.method.name(),
            bound.metrics.members + bound.metrics.nonmembers
        )
    });
    if args.json {
        let mut v = bound_json(bound, by_default).context("serializing the bound")?;
        if !plots.is_empty() {
            v["plots"] = serde_json::to_value(plots)?;
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let validity = match (bound.valid_at_confidence, bound.assumes) {
        (false, _) => "NOT a valid bound at this confidence: same-data selection (papers' practice)",
        (true, MechanismAssumption::GaussianTradeoff) => {
            "valid at this confidence ONLY IF the mechanism's trade-off curve is Gaussian (see assumes)"
        }
        (true, MechanismAssumption::Nothing) => {
            "valid at this confidence, under the assumptions below"
        }
        (true, MechanismAssumption::IndependentGaussianChannels) => {
            "valid at this confidence ONLY IF the canaries do not interact and the trade-off curve is Gaussian \
             (see assumes)"
        }
        (true, MechanismAssumption::GaussianScores) => {
            "valid at this confidence ONLY IF the canary scores are Gaussian with one variance (see assumes)"
        }
    };
    println!("method:     {}", bound.label());
    println!(
        "epsilon:    >= {:.4}  (lower bound at delta = {:e})",
        bound.epsilon, bound.delta
    );
    println!("confidence: {}  ({validity})", bound.confidence);
    match &default_note {
        Some(note) => println!("selection:  {}  [{note}]", bound.selection),
        None => println!("selection:  {}", bound.selection),
    }
    if let Some(all) = &bound.split_bounds {
        let list: Vec<String> = all.iter().map(|e| format!("{e:.4}")).collect();
        println!("splits:     {}", list.join(", "));
    }
    println!("bounded on: {}", describe_bounded_on(bound));
    match &bound.evidence {
        Evidence::Threshold(ev) => {
            println!(
                "threshold:  member iff score > {}  ({} candidate thresholds searched)",
                ev.threshold, ev.candidates
            );
            match ev.test {
                ThresholdTest::Rank { class, rank, level } => {
                    println!(
                        "test:       rank test at rank {rank} of the {class} scores, level {level:.3e} \
                         ({} statement{} in the union bound)",
                        ev.statements,
                        if ev.statements == 1 { "" } else { "s" }
                    );
                    println!(
                        "counts:     FP {} of {} non-members (FPR {:.6}), FN {} of {} members (FNR {:.6})",
                        ev.false_positives,
                        ev.nonmembers,
                        ev.fpr(),
                        ev.false_negatives,
                        ev.members,
                        ev.fnr()
                    );
                }
                ThresholdTest::ClopperPearson {
                    fpr_upper,
                    fnr_upper,
                    tail_per_rate,
                } => println!(
                    "counts:     FP {} of {} non-members (FPR <= {fpr_upper:.6}), FN {} of {} members (FNR <= {fnr_upper:.6}); each bound at tail {tail_per_rate:.3e}",
                    ev.false_positives, ev.nonmembers, ev.false_negatives, ev.members
                ),
            }
            if let Some(mu) = ev.mu_lower {
                println!("mu:         >= {mu:.4}  (GDP lower bound)");
            }
        }
        Evidence::OneRun(ev) => {
            println!(
                "guesses:    k+ = {}, k- = {} (r = {}) on m = {} canaries; {} correct; tested at level {:.3e} ({} candidates)",
                ev.k_plus, ev.k_minus, ev.guesses, ev.canaries, ev.correct, ev.level, ev.candidates
            );
            if let Some(family) = ev.family {
                println!("family:     {family}");
            }
            println!("tie-break:  {}", ev.tie_break_note());
            println!(
                "candidates: {} (k+, k-) pairs, {}",
                ev.candidates,
                match ev.guess_family {
                    GuessFamily::Symmetric => "symmetric (k+ = k-; robust to a design off 1/2)",
                    GuessFamily::WithOneSided =>
                        "symmetric and one-sided (needs inclusion with probability exactly 1/2)",
                    GuessFamily::AllCounts =>
                        "every count, symmetric and one-sided (needs inclusion with probability exactly 1/2)",
                }
            );
            let d = &ev.inclusion;
            println!(
                "inclusion:  {} of {} canaries included; two-sided binomial p = {:.3e} under inclusion with \
                 probability 1/2 (one-run audits refuse below {})",
                d.included, d.canaries, d.p_value, d.level
            );
            if let Some(mu) = ev.mu_lower {
                println!("mu:         >= {mu:.4}  (GDP lower bound)");
            }
        }
        Evidence::GaussianScores(ev) => {
            println!(
                "scores:     {} members, {} non-members; mean difference {:.6}, pooled sd {:.6} \
                 (members {:.6}, non-members {:.6})",
                ev.members,
                ev.nonmembers,
                ev.mean_difference,
                ev.pooled_sd,
                ev.member_sd,
                ev.nonmember_sd
            );
            println!(
                "mu:         >= {:.4}  (estimate {:.4}; sd <= {:.6}; two independent statements at tail {:.3e} each)",
                ev.mu_lower, ev.mu_estimate, ev.sd_upper, ev.tail_per_statement
            );
        }
    }
    let m = &bound.metrics;
    let rates: Vec<String> = m
        .tpr_at_fpr
        .iter()
        .map(|t| {
            format!(
                "TPR at FPR {:e}: {:.4} [{:.4}, {:.4}]{}",
                t.target_fpr,
                t.tpr,
                t.tpr_interval.lower,
                t.tpr_interval.upper,
                if t.resolvable {
                    String::new()
                } else {
                    format!(
                        " (fewer than {:.0} non-members: at FPR 0)",
                        1.0 / t.target_fpr
                    )
                }
            )
        })
        .collect();
    println!(
        "metrics:    n = {} members + {} non-members (all rows); AUC {:.4}; {} ({} intervals)",
        m.members,
        m.nonmembers,
        m.auc,
        rates.join("; "),
        m.interval_confidence
    );
    for (i, a) in assumptions.iter().enumerate() {
        println!("{} {a}", if i == 0 { "assumes:   " } else { "           " });
    }
    for p in plots {
        println!("plot:       {}", p.display());
    }
    Ok(())
}

fn report_panoramia(args: &Args, m: &PanoramiaMeasurement) -> anyhow::Result<()> {
    if args.plot.is_some() {
        bail!("--plot is not available for --method panoramia (it has no error-rate trade-off)");
    }
    if args.json {
        let v = panoramia_json(m).context("serializing the measurement")?;
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!("method:     panoramia");
    println!("epsilon:    {:.4}  (epsilon_tilde = max(0, {{c+eps}}_lb - c_lb); a measurement, NOT a lower bound on epsilon)", m.epsilon_tilde.value);
    println!(
        "meaning:    {}",
        dpaudit_audit::panoramia::EpsilonTilde::MEANING
    );
    println!(
        "confidence: {}  (each of the two tests at level {:.3e})",
        m.confidence,
        (1.0 - m.confidence) / 2.0
    );
    println!("selection:  {}", m.selection);
    for (name, side) in [("c_lb", &m.baseline), ("{c+eps}_lb", &m.mia)] {
        println!(
            "{name:<11} {:.4}  (threshold score >= {}, {} of {} predictions correct, tested at level {:.3e}, ceiling {:.4} with {} members)",
            side.lower_bound, side.threshold, side.true_positives, side.predictions, side.level, side.ceiling, side.members
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn the_method_values_are_the_listed_methods_of_the_audit_crate() {
        let values: Vec<String> = Method::value_variants()
            .iter()
            .filter_map(|m| m.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        let listed: Vec<String> = Method::ALL
            .into_iter()
            .filter(|m| m.listed())
            .map(|m| m.name().to_string())
            .collect();
        assert_eq!(values, listed);
    }
}
