//! `dpaudit data info|fetch` (owned by the data work).

#[derive(Debug, clap::Subcommand)]
pub enum DataCommand {
    /// Counts, class histogram, source path and checksum of a dataset.
    Info {},
}

pub fn run(_cmd: DataCommand) -> anyhow::Result<()> {
    anyhow::bail!("`dpaudit data` is not implemented yet")
}
