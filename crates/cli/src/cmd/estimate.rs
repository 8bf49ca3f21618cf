//! `dpaudit estimate`: ε lower bounds (or PANORAMIA's ε̃) from a scores file.
//!
//! Input (see `dpaudit_audit::io`): CSV with a header naming a `score` and a
//! `member` column (1 = the target/canary was included, 0 = not; other
//! columns ignored), or NPY: a little-endian float64 array of shape (N, 2),
//! column 0 = score, column 1 = member. Higher score means "member".
//!
//! For `--method one-run` each row is one canary and `member` is its
//! inclusion coin (1 = S_i = +1); the canaries are the rows, so `m` = number
//! of rows. For `--method panoramia`, `--scores` holds the MIA scores and
//! `--baseline-scores` the baseline classifier's scores on the same audit set.

use std::path::PathBuf;

use anyhow::{bail, Context};
use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::curves::{eps_delta_curve, gdp_curve, TradeoffPlot};
use dpaudit_audit::io::read_scores;
use dpaudit_audit::one_run::{one_run_lower_bound, OneRunConfig};
use dpaudit_audit::panoramia::{panoramia, PanoramiaConfig, PanoramiaMeasurement};
use dpaudit_audit::region::{
    empirical_points, eps_delta_lower_bound, gdp_lower_bound, RegionConfig,
};
use dpaudit_audit::scores::{Observations, Selection};

/// Statistical method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// Clopper–Pearson (ε,δ) region over thresholds (spec 000 Alg. 5).
    EpsDelta,
    /// GDP audit: μ lower bound, then ε at δ (spec 001 §4, lecture 004).
    Gdp,
    /// One-run audit from canary scores (Steinke et al. 2023 Thm 3.1).
    OneRun,
    /// PANORAMIA's ε̃ (a measurement, not a lower bound; spec 003).
    Panoramia,
}

/// Threshold / guess-count selection policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SelectionArg {
    /// Choose on a random half (seeded by --seed), bound on the other half (valid).
    Split,
    /// Choose and bound on the same data, as the papers do (NOT valid at the stated confidence).
    SameData,
    /// Same data, every candidate tested at level/K (valid; one-run and panoramia).
    Bonferroni,
    /// One-run with --k-plus/--k-minus fixed in advance (valid).
    Fixed,
}

/// Arguments of `dpaudit estimate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Statistical method.
    #[arg(long, value_enum)]
    pub method: MethodArg,
    /// Scores: CSV with `score` and `member` (1/0) columns, or NPY (N, 2) float64 [score, member].
    #[arg(long)]
    pub scores: PathBuf,
    /// PANORAMIA only: baseline classifier scores on the same audit set (same format).
    #[arg(long)]
    pub baseline_scores: Option<PathBuf>,
    /// δ of the (ε, δ) statement; required by eps-delta, gdp and one-run (e.g. 1e-5).
    #[arg(long)]
    pub delta: Option<f64>,
    /// Confidence of the bound.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// How the threshold (or one-run's k+, k−) is chosen.
    #[arg(long, value_enum, default_value = "split")]
    pub selection: SelectionArg,
    /// Seed of the random split used by `--selection split`; fix it before looking at the scores.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
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
    /// Write the trade-off plot (SVG) here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

fn selection(args: &Args) -> Selection {
    match args.selection {
        SelectionArg::Split => Selection::Split { seed: args.seed },
        SelectionArg::SameData => Selection::SameData,
        SelectionArg::Bonferroni => Selection::Bonferroni,
        SelectionArg::Fixed => Selection::Fixed,
    }
}

fn require_delta(args: &Args) -> anyhow::Result<f64> {
    args.delta.with_context(|| {
        format!(
            "--delta is required for --method {} (the δ of the guarantee being audited, e.g. 1e-5)",
            method_name(args.method)
        )
    })
}

fn method_name(m: MethodArg) -> &'static str {
    match m {
        MethodArg::EpsDelta => "eps-delta",
        MethodArg::Gdp => "gdp",
        MethodArg::OneRun => "one-run",
        MethodArg::Panoramia => "panoramia",
    }
}

/// Runs `dpaudit estimate`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let obs = read_scores(&args.scores)
        .with_context(|| format!("reading scores from {}", args.scores.display()))?;
    let sel = selection(&args);
    if args.selection != SelectionArg::Fixed && (args.k_plus.is_some() || args.k_minus.is_some()) {
        bail!("--k-plus/--k-minus are only used with --selection fixed (and --method one-run)");
    }
    match args.method {
        MethodArg::EpsDelta | MethodArg::Gdp => {
            let delta = require_delta(&args)?;
            let cfg = RegionConfig {
                confidence: args.confidence,
                delta,
                selection: sel,
            };
            let bound = if args.method == MethodArg::EpsDelta {
                eps_delta_lower_bound(&obs, &cfg)
            } else {
                gdp_lower_bound(&obs, &cfg)
            }
            .with_context(|| format!("estimating ε from {}", args.scores.display()))?;
            let plot = build_plot(&args, &obs, &bound)?;
            report_bound(&args, &bound, plot)
        }
        MethodArg::OneRun => {
            let delta = require_delta(&args)?;
            let fixed_guesses = match (args.selection, args.k_plus, args.k_minus) {
                (SelectionArg::Fixed, Some(kp), Some(km)) => Some((kp, km)),
                (SelectionArg::Fixed, _, _) => {
                    bail!("--selection fixed needs both --k-plus and --k-minus")
                }
                _ => None,
            };
            let cfg = OneRunConfig {
                confidence: args.confidence,
                delta,
                selection: sel,
                fixed_guesses,
            };
            let bound = one_run_lower_bound(&obs, &cfg)
                .with_context(|| format!("one-run audit of {}", args.scores.display()))?;
            let plot = build_plot(&args, &obs, &bound)?;
            report_bound(&args, &bound, plot)
        }
        MethodArg::Panoramia => {
            let path = args
                .baseline_scores
                .as_ref()
                .context("--method panoramia needs --baseline-scores FILE (the baseline classifier's scores)")?;
            let baseline = read_scores(path)
                .with_context(|| format!("reading baseline scores from {}", path.display()))?;
            let cfg = PanoramiaConfig {
                confidence: args.confidence,
                selection: sel,
            };
            let m = panoramia(&baseline, &obs, &cfg).context("PANORAMIA measurement")?;
            report_panoramia(&args, &m)
        }
    }
}

fn build_plot(
    args: &Args,
    obs: &Observations,
    bound: &EpsilonLowerBound,
) -> anyhow::Result<Option<TradeoffPlot>> {
    if args.plot.is_none() {
        return Ok(None);
    }
    let points =
        empirical_points(obs, bound.confidence, 200).context("computing trade-off points")?;
    let mut curves = vec![eps_delta_curve(
        bound.epsilon,
        bound.delta,
        200,
        &format!("({:.3}, {:e})-DP: lower bound", bound.epsilon, bound.delta),
    )];
    if let Evidence::Threshold(ev) = &bound.evidence {
        if let Some(mu) = ev.mu_lower {
            curves.push(gdp_curve(mu, 200, &format!("{mu:.3}-GDP: lower bound")));
        }
    }
    if let Some(claimed) = args.claimed_epsilon {
        curves.push(eps_delta_curve(
            claimed,
            bound.delta,
            200,
            &format!("({claimed}, {:e})-DP: claimed", bound.delta),
        ));
    }
    Ok(Some(TradeoffPlot {
        title: format!(
            "{} audit, {} selection, confidence {}",
            bound.method.name(),
            bound.selection.name(),
            bound.confidence
        ),
        curves,
        points,
    }))
}

fn write_plot(args: &Args, plot: &Option<TradeoffPlot>) -> anyhow::Result<()> {
    if let (Some(path), Some(plot)) = (&args.plot, plot) {
        std::fs::write(path, plot.to_svg())
            .with_context(|| format!("writing plot to {}", path.display()))?;
    }
    Ok(())
}

fn report_bound(
    args: &Args,
    bound: &EpsilonLowerBound,
    plot: Option<TradeoffPlot>,
) -> anyhow::Result<()> {
    write_plot(args, &plot)?;
    if args.json {
        let mut v = serde_json::to_value(bound).context("serializing the bound")?;
        v["selection"] = serde_json::Value::from(bound.selection.name());
        if let Selection::Split { seed } = bound.selection {
            v["seed"] = serde_json::Value::from(seed);
        }
        v["bound"] = serde_json::Value::from("lower");
        if args.plot.is_some() {
            v["tradeoff"] =
                serde_json::to_value(&plot).context("serializing the trade-off data")?;
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let validity = if bound.valid_at_confidence {
        "valid at this confidence"
    } else {
        "NOT a valid bound at this confidence: same-data selection (papers' practice)"
    };
    println!("method:     {}", bound.method.name());
    println!(
        "epsilon:    >= {:.4}  (lower bound at delta = {:e})",
        bound.epsilon, bound.delta
    );
    println!("confidence: {}  ({validity})", bound.confidence);
    println!("selection:  {}", bound.selection);
    match &bound.evidence {
        Evidence::Threshold(ev) => {
            println!(
                "threshold:  member iff score > {}  ({} candidate thresholds searched)",
                ev.threshold, ev.candidates
            );
            println!(
                "counts:     FP {} of {} non-members (FPR <= {:.6}), FN {} of {} members (FNR <= {:.6}); each bound at tail {:.3e}",
                ev.false_positives, ev.nonmembers, ev.fpr_upper, ev.false_negatives, ev.members, ev.fnr_upper, ev.tail_per_rate
            );
            if let Some(mu) = ev.mu_lower {
                println!("mu:         >= {mu:.4}  (GDP lower bound)");
            }
        }
        Evidence::OneRun(ev) => {
            println!(
                "guesses:    k+ = {}, k- = {} (r = {}) on m = {} canaries; {} correct; tested at level {:.3e} ({} candidates)",
                ev.k_plus, ev.k_minus, ev.guesses, ev.canaries, ev.correct, ev.level, ev.candidates
            );
        }
    }
    if let Some(path) = &args.plot {
        println!("plot:       {}", path.display());
    }
    Ok(())
}

fn report_panoramia(args: &Args, m: &PanoramiaMeasurement) -> anyhow::Result<()> {
    if args.plot.is_some() {
        bail!("--plot is not available for --method panoramia (it has no error-rate trade-off)");
    }
    if args.json {
        let mut v = serde_json::to_value(m).context("serializing the measurement")?;
        v["epsilon"] = serde_json::Value::from(m.epsilon_tilde.value);
        v["bound"] = serde_json::Value::from(
            "none: PANORAMIA's epsilon_tilde is a measurement, not a lower bound",
        );
        v["method"] = serde_json::Value::from("panoramia");
        v["selection"] = serde_json::Value::from(m.selection.name());
        if let Selection::Split { seed } = m.selection {
            v["seed"] = serde_json::Value::from(seed);
        }
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
