//! `dpaudit demo`.

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`dpaudit demo` is not implemented yet")
}
