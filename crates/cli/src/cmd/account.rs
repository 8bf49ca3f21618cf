//! `dpaudit account` and `dpaudit calibrate`: ε upper bounds of DP-SGD and the noise
//! multiplier for a target ε (issue 3; `dpaudit_accounting`).

use anyhow::Context;
use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant, EpsilonUpperBound,
};
use serde_json::json;

/// Which accountant interprets DP-SGD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AccountantArg {
    /// Privacy loss distribution: tight, with numerical error bounds (default).
    Pld,
    /// Rényi DP (Mironov et al. 2019) with the Canonne–Kamath–Steinke conversion.
    Rdp,
    /// Gaussian DP, exact; only without subsampling (sample rate 1).
    Gdp,
    /// Gaussian DP with the central-limit approximation for subsampling: APPROXIMATE, not a bound.
    GdpClt,
}

impl From<AccountantArg> for Accountant {
    fn from(a: AccountantArg) -> Self {
        match a {
            AccountantArg::Pld => Accountant::Pld,
            AccountantArg::Rdp => Accountant::Rdp,
            AccountantArg::Gdp => Accountant::Gdp,
            AccountantArg::GdpClt => Accountant::GdpClt,
        }
    }
}

/// Arguments of `dpaudit account`.
#[derive(Debug, clap::Args)]
pub struct AccountArgs {
    /// Accountant.
    #[arg(long, value_enum, default_value_t = AccountantArg::Pld)]
    pub accountant: AccountantArg,
    /// Poisson sampling rate q in (0, 1]; 1 means no subsampling.
    #[arg(long)]
    pub sample_rate: f64,
    /// Noise standard deviation in units of max_grad_norm.
    #[arg(long)]
    pub noise_multiplier: f64,
    /// Number of DP-SGD steps.
    #[arg(long)]
    pub steps: u64,
    /// δ of the (ε, δ) guarantee.
    #[arg(long)]
    pub delta: f64,
    /// Batches were shuffled, not Poisson-sampled: also report the Chua et al. lower bound
    /// (T = 1/sample_rate batches per epoch, steps/T epochs).
    #[arg(long)]
    pub shuffle: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `dpaudit calibrate`.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// Accountant.
    #[arg(long, value_enum, default_value_t = AccountantArg::Pld)]
    pub accountant: AccountantArg,
    /// Poisson sampling rate q in (0, 1]; 1 means no subsampling.
    #[arg(long)]
    pub sample_rate: f64,
    /// Number of DP-SGD steps.
    #[arg(long)]
    pub steps: u64,
    /// δ of the (ε, δ) guarantee.
    #[arg(long)]
    pub delta: f64,
    /// The ε to reach.
    #[arg(long)]
    pub target_epsilon: f64,
    /// Relative width of the final bisection bracket on the noise multiplier.
    #[arg(long, default_value_t = 1e-3)]
    pub tolerance: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn upper_bound_json(e: &EpsilonUpperBound) -> serde_json::Value {
    let n = e.numerical;
    json!({
        "accountant": e.accountant.name(),
        "relation": e.relation,
        "delta": e.delta,
        "epsilon": e.epsilon,
        "epsilon_lower": n.map(|n| n.lower),
        "epsilon_estimate": n.map(|n| n.estimate),
        "epsilon_upper": n.map(|n| n.upper),
        "approximate": e.approximate,
        "rdp_order": e.rdp_order,
        "mu": e.mu,
    })
}

fn describe(e: &EpsilonUpperBound) -> String {
    let mut s = format!(
        "epsilon = {:.6} at delta = {:e} ({} accountant",
        e.epsilon, e.delta, e.accountant
    );
    if let Some(n) = e.numerical {
        s += &format!(
            "; numerical bounds [{:.6}, {:.6}], estimate {:.6}",
            n.lower, n.upper, n.estimate
        );
    }
    if let Some(order) = e.rdp_order {
        s += &format!("; Renyi order {order}");
    }
    if let Some(mu) = e.mu {
        s += &format!("; mu = {mu:.6}");
    }
    s += ")";
    if e.approximate {
        s += "\nWARNING: approximate (central-limit theorem), not a guaranteed upper bound";
    }
    s
}

/// `dpaudit account`.
pub fn run_account(args: AccountArgs) -> anyhow::Result<()> {
    let accountant = Accountant::from(args.accountant);
    let e = dpsgd_epsilon(args.sample_rate, args.noise_multiplier, args.steps, args.delta, accountant)
        .with_context(|| {
            format!(
                "accounting sample_rate = {}, noise_multiplier = {}, steps = {}, delta = {} with {accountant}",
                args.sample_rate, args.noise_multiplier, args.steps, args.delta
            )
        })?;
    let shuffle = if args.shuffle {
        let batches = (1.0 / args.sample_rate).round();
        let steps_per_epoch = batches as u64;
        if steps_per_epoch == 0 || args.steps % steps_per_epoch != 0 {
            anyhow::bail!(
                "--shuffle needs steps ({}) to be a whole number of epochs of 1/sample_rate = {} batches",
                args.steps,
                batches
            );
        }
        let epochs = args.steps / steps_per_epoch;
        Some(
            shuffle_lower_bound(args.noise_multiplier, steps_per_epoch, epochs, args.delta)
                .context("computing the Chua et al. shuffle lower bound")?,
        )
    } else {
        None
    };
    if args.json {
        let mut v = upper_bound_json(&e);
        v["sample_rate"] = json!(args.sample_rate);
        v["noise_multiplier"] = json!(args.noise_multiplier);
        v["steps"] = json!(args.steps);
        if let Some(s) = shuffle {
            v["shuffle_lower_bound"] = json!(s);
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{}", describe(&e));
        if let Some(s) = shuffle {
            println!(
                "shuffled batches: epsilon >= {:.6} (Chua et al. lower bound, {} batches x {} epochs); the Poisson epsilon above does not hold for shuffling",
                s.epsilon, s.steps_per_epoch, s.epochs
            );
        }
    }
    Ok(())
}

/// `dpaudit calibrate`.
pub fn run_calibrate(args: CalibrateArgs) -> anyhow::Result<()> {
    let accountant = Accountant::from(args.accountant);
    let c = calibrate_noise_multiplier(
        args.sample_rate,
        args.steps,
        args.delta,
        args.target_epsilon,
        accountant,
        args.tolerance,
    )
    .with_context(|| {
        format!(
            "calibrating for target_epsilon = {}, sample_rate = {}, steps = {}, delta = {} with {accountant}",
            args.target_epsilon, args.sample_rate, args.steps, args.delta
        )
    })?;
    if args.json {
        let v = json!({
            "noise_multiplier": c.noise_multiplier,
            "noise_multiplier_lower": c.noise_multiplier_lower,
            "tolerance": c.tolerance,
            "target_epsilon": c.target_epsilon,
            "sample_rate": args.sample_rate,
            "steps": args.steps,
            "evaluations": c.evaluations,
            "result": upper_bound_json(&c.epsilon),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "noise_multiplier = {:.6} (bracket [{:.6}, {:.6}], tolerance {:.2e}); {}",
            c.noise_multiplier,
            c.noise_multiplier_lower,
            c.noise_multiplier,
            c.tolerance,
            describe(&c.epsilon)
        );
    }
    Ok(())
}
