//! Bounds of the asked methods for NPY score files (`(N, 2)` float64,
//! `[score, member]`), one JSON object per file and line; the dpaudit side of
//! `benches/compare_jax_privacy.py` and `benches/compare_peers.py` (not a
//! test):
//!
//! `cargo run --release -p dpaudit-audit --example bound_npy -- [--methods LIST] DELTA FILE.npy...`
//!
//! `LIST` is comma-separated `METHOD` or `METHOD:SELECTION` (names as on the
//! command line, e.g. `one-run-fdp-gaussian`, `one-run:same-data`); without a
//! selection the method's default ([`Method::default_selection`]). The
//! one-run methods that order tied guesses use the default seeded tie-break
//! ([`TieBreak::Seeded`], seed 0); a `+quantile` suffix (`one-run+quantile`,
//! `one-run:split+quantile`) asks for the order-free quantile rule instead,
//! and `+seeded` for the seeded one by name; the key keeps the suffix. Every
//! method goes through [`lower_bound`], so a new [`Method`] variant needs no
//! change here. The default list is every lower-bound method at its default
//! selection. Each result is keyed by the method's snake-case name (and
//! `:SELECTION` when one was asked for). Confidence 0.95, seed 0, 20 splits
//! for `multi-split`; `one-run-fdp` uses the (ε, δ) family. The one-run
//! methods treat the rows as the canaries of one run (`member` = included).

use std::path::Path;
use std::time::Instant;

use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::estimate::options::default_tie_break;
use dpaudit_audit::estimate::{lower_bound, BoundSettings};
use dpaudit_audit::io::read_scores;
use dpaudit_audit::method::{Method, SelectionChoice};
use dpaudit_audit::one_run::{GuessFamily, TieBreak};
use dpaudit_audit::one_run_fdp::TradeoffFamily;

const CONFIDENCE: f64 = 0.95;
const SEED: u64 = 0;
const SPLITS: u32 = 20;
const DEFAULT_METHODS: &str = "eps-delta,gdp,one-run,one-run-fdp,one-run-fdp-gaussian";

fn summary(b: &EpsilonLowerBound, seconds: f64) -> serde_json::Value {
    let mu = match &b.evidence {
        Evidence::Threshold(ev) => ev.mu_lower,
        Evidence::OneRun(ev) => ev.mu_lower,
        Evidence::GaussianScores(ev) => Some(ev.mu_lower),
    };
    serde_json::json!({
        "epsilon": b.epsilon,
        "mu": mu,
        "selection": b.selection.name(),
        "valid_at_confidence": b.valid_at_confidence,
        "assumes": b.assumes,
        "seconds": seconds,
    })
}

/// `METHOD[:SELECTION][+seeded|+quantile]` → the method, the asked
/// selection, the tie-break rule and the JSON key.
fn parse_method(item: &str) -> Result<(Method, SelectionChoice, TieBreak, String), String> {
    let (item, asked, suffix) = if let Some(rest) = item.strip_suffix("+seeded") {
        (rest, Some(TieBreak::Seeded { seed: SEED }), "+seeded")
    } else if let Some(rest) = item.strip_suffix("+quantile") {
        (rest, Some(TieBreak::Quantile), "+quantile")
    } else {
        (item, None, "")
    };
    let (name, selection) = match item.split_once(':') {
        Some((name, selection)) => (name, Some(selection)),
        None => (item, None),
    };
    let method: Method = name.parse()?;
    let key = match selection {
        Some(s) => format!("{}:{}", method.file_name(), s),
        None => method.file_name(),
    };
    let choice = selection.map_or(Ok(SelectionChoice::Auto), str::parse)?;
    let tie_break = asked.unwrap_or_else(|| default_tie_break(method, SEED));
    Ok((method, choice, tie_break, format!("{key}{suffix}")))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut list = DEFAULT_METHODS.to_string();
    if args.first().map(String::as_str) == Some("--methods") {
        if args.len() < 2 {
            return Err("--methods needs a comma-separated list of methods".into());
        }
        list = args.remove(1);
        args.remove(0);
    }
    let methods = list
        .split(',')
        .map(parse_method)
        .collect::<Result<Vec<_>, _>>()?;
    let Some((delta, files)) = args.split_first() else {
        return Err("usage: bound_npy [--methods LIST] DELTA FILE.npy...".into());
    };
    let delta: f64 = delta
        .parse()
        .map_err(|e| format!("DELTA `{delta}` is not a number: {e}"))?;
    for file in files {
        let obs = read_scores(Path::new(file))?;
        let n = obs.len();
        let mut row = serde_json::Map::new();
        row.insert("file".into(), file.as_str().into());
        row.insert("n".into(), n.into());
        for (method, choice, tie_break, key) in &methods {
            let settings = BoundSettings {
                confidence: CONFIDENCE,
                delta,
                selection: choice.resolve(*method, n, SEED, SPLITS),
                family: TradeoffFamily::EpsDelta,
                guesses: GuessFamily::Symmetric,
                fixed_guesses: None,
                tie_break: *tie_break,
            };
            let start = Instant::now();
            let bound = lower_bound(*method, &obs, &settings)
                .map_err(|e| format!("{key} on {file}: {e}"))?;
            row.insert(key.clone(), summary(&bound, start.elapsed().as_secs_f64()));
        }
        println!("{}", serde_json::Value::Object(row));
    }
    Ok(())
}
