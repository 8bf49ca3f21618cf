//! `dpaudit account` and `dpaudit calibrate` (owned by the accounting work).

#[derive(Debug, clap::Args)]
pub struct AccountArgs {}

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {}

pub fn run_account(_args: AccountArgs) -> anyhow::Result<()> {
    anyhow::bail!("`dpaudit account` is not implemented yet")
}

pub fn run_calibrate(_args: CalibrateArgs) -> anyhow::Result<()> {
    anyhow::bail!("`dpaudit calibrate` is not implemented yet")
}
