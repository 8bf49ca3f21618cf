//! `dpaudit doctor`.

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}
