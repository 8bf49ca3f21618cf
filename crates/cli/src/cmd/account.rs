//! `dpaudit account` and `dpaudit calibrate`: ε upper bounds of DP-SGD and the noise
//! multiplier for a target ε (`dpaudit_accounting`).

use anyhow::Context;
use dpaudit_accounting::report::{account_json, calibration_json};
use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant, EpsilonUpperBound,
};

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
        let v = account_json(
            &e,
            args.sample_rate,
            args.noise_multiplier,
            args.steps,
            shuffle.as_ref(),
        );
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
        let v = calibration_json(&c, args.sample_rate, args.steps);
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Account {
        #[command(flatten)]
        args: AccountArgs,
    }

    #[derive(Debug, Parser)]
    struct Calibrate {
        #[command(flatten)]
        args: CalibrateArgs,
    }

    #[test]
    fn account_flags_parse_and_default_to_pld() {
        let a = Account::try_parse_from([
            "account",
            "--sample-rate",
            "0.01",
            "--noise-multiplier",
            "1.0",
            "--steps",
            "100",
            "--delta",
            "1e-5",
        ])
        .unwrap()
        .args;
        assert_eq!(a.accountant, AccountantArg::Pld);
        assert!(!a.json && !a.shuffle);
        let a = Account::try_parse_from([
            "account",
            "--accountant",
            "gdp-clt",
            "--sample-rate",
            "1",
            "--noise-multiplier",
            "1",
            "--steps",
            "1",
            "--delta",
            "1e-5",
            "--json",
        ])
        .unwrap()
        .args;
        assert_eq!(Accountant::from(a.accountant), Accountant::GdpClt);
        // DP-critical flags have no defaults.
        assert!(Account::try_parse_from([
            "account",
            "--sample-rate",
            "0.01",
            "--steps",
            "1",
            "--delta",
            "1e-5"
        ])
        .is_err());
    }

    #[test]
    fn json_carries_epsilon_and_its_bounds() {
        // docs/canary-games.md, "Reference values": q = 0.01, σ = 1.0, 100 steps, δ = 1e-5 → 0.718 (PLD).
        let e = dpsgd_epsilon(0.01, 1.0, 100, 1e-5, Accountant::Pld).unwrap();
        let v = dpaudit_accounting::report::upper_bound_json(&e);
        let eps = v["epsilon"].as_f64().unwrap();
        assert!((eps - 0.718).abs() < 1e-3);
        assert!(v["epsilon_lower"].as_f64().unwrap() <= eps);
        assert_eq!(v["epsilon_upper"].as_f64().unwrap(), eps);
        let c = Calibrate::try_parse_from([
            "calibrate",
            "--sample-rate",
            "0.01",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--target-epsilon",
            "1",
        ])
        .unwrap()
        .args;
        assert_eq!(c.tolerance, 1e-3);
    }
}
