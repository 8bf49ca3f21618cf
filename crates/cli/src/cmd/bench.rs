//! `dpaudit bench`.

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`dpaudit bench` is not implemented yet")
}
