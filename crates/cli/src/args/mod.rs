//! The arguments of every `dpaudit` command, parsed here for all of them so
//! that `--help`, the usage lines and the errors are the same in the
//! dispatcher and in the companion. The libtorch commands' argument structs
//! live in this module (one file per command, `experiment` for the flags
//! several of them share); the pure commands' live with their code in
//! [`crate::cmd`].

use clap::{Parser, Subcommand};

use crate::cmd;

pub mod bench;
pub mod bgm;
pub mod demo;
pub mod doctor;
pub mod experiment;
pub mod merge;
pub mod panoramia;
pub mod run;
pub mod selftest;
pub mod slurm;
pub mod train;

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "dpaudit",
    bin_name = "dpaudit",
    version,
    about = "Train with DP-SGD and audit how much privacy it really leaks"
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand, in the order of `dpaudit --help`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report the libtorch version, CUDA availability, the GPU name and the thread count.
    Doctor(doctor::Args),
    /// Inspect or download the datasets.
    #[command(subcommand)]
    Data(cmd::data::DataCommand),
    /// ε upper bound of DP-SGD from an accountant.
    Account(cmd::account::AccountArgs),
    /// The smallest noise multiplier that reaches a target (ε, δ).
    Calibrate(cmd::account::CalibrateArgs),
    /// ε lower bound from membership scores.
    Estimate(cmd::estimate::Args),
    /// ε lower bound from the error counts of a fixed-threshold audit.
    Counts(cmd::counts::Args),
    /// Train a model with DP-SGD from a TOML config.
    Train(train::Args),
    /// Benchmarks: DP step against our own non-private step.
    Bench(bench::Args),
    /// The main job: everything that exists, on the embedded default data.
    Demo(demo::Args),
    /// An experiment end to end, by its file's `kind`: a canary audit (train R runs, score the
    /// canaries, bound ε), a BGM shuffling audit, or PANORAMIA.
    Run(run::Args),
    /// Combine the out-dirs of `dpaudit run --shard` (any kind) into one finished audit.
    Merge(merge::Args),
    /// Several finished audits side by side (threat models, canaries).
    Compare(cmd::compare::Args),
    /// Audit deliberately broken DP-SGD variants next to the correct one.
    Selftest(selftest::Args),
    /// Shuffling audits of the Batched Gaussian Mechanism from a TOML config (`dpaudit run` of a
    /// `kind = "bgm"` file).
    Bgm(bgm::Args),
    /// Write (and with --submit, submit) an audit as a Slurm job array plus a merge job.
    Slurm(slurm::Args),
    /// PANORAMIA: measure one trained model's leakage with generated non-members (`dpaudit run` of
    /// a `kind = "panoramia"` file).
    Panoramia(panoramia::Args),
}

/// What [`run_pure`] did with a command.
#[derive(Debug)]
pub enum Outcome {
    /// A pure command, run in this process, and its result.
    Ran(anyhow::Result<()>),
    /// A command that needs libtorch, handed back untouched.
    NeedsTorch(Command),
}

/// Runs `command` here if it needs no libtorch, and hands it back otherwise.
/// The one place that decides which commands the `dpaudit` binary runs
/// itself: a new command does not compile until it is sorted here.
pub fn run_pure(command: Command) -> Outcome {
    match command {
        Command::Data(c) => Outcome::Ran(cmd::data::run(c)),
        Command::Account(a) => Outcome::Ran(cmd::account::run_account(a)),
        Command::Calibrate(a) => Outcome::Ran(cmd::account::run_calibrate(a)),
        Command::Estimate(a) => Outcome::Ran(cmd::estimate::run(a)),
        Command::Counts(a) => Outcome::Ran(cmd::counts::run(a)),
        Command::Compare(a) => Outcome::Ran(cmd::compare::run(a)),
        // Finalizing any out-dir simulates and trains nothing.
        Command::Merge(a) => Outcome::Ran(cmd::merge::run(a)),
        // Job arrays plan an experiment's units, which reads the
        // experiment's code that links libtorch.
        c @ (Command::Doctor(_)
        | Command::Train(_)
        | Command::Bench(_)
        | Command::Demo(_)
        | Command::Run(_)
        | Command::Selftest(_)
        | Command::Bgm(_)
        | Command::Slurm(_)
        | Command::Panoramia(_)) => Outcome::NeedsTorch(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
