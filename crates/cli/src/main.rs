//! `dpaudit`: train with DP-SGD, account, and audit.

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Debug, Parser)]
#[command(
    name = "dpaudit",
    version,
    about = "Train with DP-SGD and audit how much privacy it really leaks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Report the libtorch version, CUDA availability, the GPU name and the thread count.
    Doctor(cmd::doctor::Args),
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
    Train(cmd::train::Args),
    /// Benchmarks: DP step against our own non-private step.
    Bench(cmd::bench::Args),
    /// The main job: everything that exists, on the embedded default data.
    Demo(cmd::demo::Args),
    /// An experiment end to end, by its file's `kind`: a canary audit (train R runs, score the
    /// canaries, bound ε), a BGM shuffling audit, or PANORAMIA.
    Run(cmd::run::Args),
    /// Combine the out-dirs of `dpaudit run --shard` (any kind) into one finished audit.
    Merge(cmd::merge::Args),
    /// Several finished audits side by side (threat models, canaries).
    Compare(cmd::run::CompareArgs),
    /// Audit deliberately broken DP-SGD variants next to the correct one.
    Selftest(cmd::selftest::Args),
    /// Shuffling audits of the Batched Gaussian Mechanism from a TOML config (`dpaudit run` of a
    /// `kind = "bgm"` file).
    Bgm(cmd::bgm::Args),
    /// Write (and with --submit, submit) an audit as a Slurm job array plus a merge job.
    Slurm(cmd::slurm::Args),
    /// PANORAMIA: measure one trained model's leakage with generated non-members (`dpaudit run` of
    /// a `kind = "panoramia"` file).
    Panoramia(cmd::panoramia::Args),
}

/// Output to a closed pipe (`dpaudit … | head -1`) ends the program quietly
/// with status 0. The standard library ignores SIGPIPE, so a write to a
/// closed pipe fails with `BrokenPipe`, and `println!` panics on that; this
/// hook turns exactly that panic into a quiet exit and leaves every other
/// panic to the default hook.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        // std's message: "failed printing to stdout: Broken pipe (os error 32)".
        if message.starts_with("failed printing to stdout")
            && message.to_ascii_lowercase().contains("broken pipe")
        {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Errors are printed as their message and causes, without a stack trace
/// (an error is a message for the user, not a crash; `RUST_BACKTRACE` is
/// for panics), and exit with status 1.
fn main() {
    quiet_on_closed_stdout();
    // Before any tensor exists: large host blocks are reused, not remapped.
    dpaudit_train::runtime::retain_freed_host_memory();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("Error: {e}");
        let mut causes = e.chain().skip(1).peekable();
        if causes.peek().is_some() {
            eprintln!("\nCaused by:");
            for (i, c) in causes.enumerate() {
                eprintln!("    {i}: {c}");
            }
        }
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Data(c) => cmd::data::run(c),
        Command::Account(a) => cmd::account::run_account(a),
        Command::Calibrate(a) => cmd::account::run_calibrate(a),
        Command::Estimate(a) => cmd::estimate::run(a),
        Command::Train(a) => cmd::train::run(a),
        Command::Counts(a) => cmd::counts::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Bgm(a) => cmd::bgm::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Selftest(a) => cmd::selftest::run(a),
        Command::Merge(a) => cmd::merge::run(a),
        Command::Compare(a) => cmd::run::run_compare(a),
        Command::Slurm(a) => cmd::slurm::run(a),
        Command::Panoramia(a) => cmd::panoramia::run(a),
    }
}
