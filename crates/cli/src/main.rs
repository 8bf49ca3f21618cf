//! `dpaudit`: train with DP-SGD, account, and audit. This binary runs the
//! commands that need no libtorch itself and hands the others to
//! `dpaudit-torch` (see the crate's documentation).

use clap::{CommandFactory, FromArgMatches};
use dpaudit_cli::{companion, exit_on_error, quiet_on_closed_stdout, run_pure, Cli, Outcome};

fn main() {
    quiet_on_closed_stdout();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match run_pure(cli.command) {
        Outcome::Ran(result) => exit_on_error(result),
        Outcome::NeedsTorch(_) => {
            let subcommand = matches.subcommand_name().unwrap_or_default();
            exit_on_error(Err(companion::exec(subcommand)));
        }
    }
}
