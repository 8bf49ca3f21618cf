//! `dpaudit-torch`: the `dpaudit` commands that need libtorch. `dpaudit`
//! replaces itself with this binary for them, passing the command line on
//! unchanged; it parses the same command line ([`dpaudit_cli::Cli`]) and
//! runs the pure commands too, so it is a whole `dpaudit` by itself.

use clap::Parser;
use dpaudit_cli::{exit_on_error, quiet_on_closed_stdout, run_pure, Cli, Command, Outcome};

mod cmd;

fn main() {
    quiet_on_closed_stdout();
    // Before any tensor exists: large host blocks are reused, not remapped.
    dpaudit_train::runtime::retain_freed_host_memory();
    let cli = Cli::parse();
    exit_on_error(match run_pure(cli.command) {
        Outcome::Ran(result) => result,
        Outcome::NeedsTorch(command) => run(command),
    });
}

/// A command that needs libtorch. The pure ones were run by
/// [`run_pure`]; they cannot reach here.
fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Train(a) => cmd::train::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Bgm(a) => cmd::bgm::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Selftest(a) => cmd::selftest::run(a),
        Command::Slurm(a) => cmd::slurm::run(a),
        Command::Panoramia(a) => cmd::panoramia::run(a),
        Command::Data(_)
        | Command::Account(_)
        | Command::Calibrate(_)
        | Command::Estimate(_)
        | Command::Counts(_)
        | Command::Compare(_)
        | Command::Merge(_) => anyhow::bail!(
            "internal error: `{command:?}` is a pure command, run by `dpaudit` itself"
        ),
    }
}
