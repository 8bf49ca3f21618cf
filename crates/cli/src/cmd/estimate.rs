//! `dpaudit estimate`.

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`dpaudit estimate` is not implemented yet")
}
