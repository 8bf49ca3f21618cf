//! `dpaudit slurm EXPERIMENT --out-dir D --tasks N [--submit]`: an audit
//! (`dpaudit run` of a `kind = "canary"` file, `dpaudit bgm` of a
//! `kind = "bgm"` one) as a
//! Slurm job array (one task per shard) plus a merge-and-finalize job that
//! runs once every task succeeded. The scripts are written into `D/slurm/`;
//! `--submit` hands them to `sbatch`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use dpaudit_experiment::job_array::{submit, write_scripts, SlurmPlan};
use dpaudit_experiment::kind::ExperimentFile;

/// Arguments of `dpaudit slurm`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The experiment file, as for `dpaudit run` (`kind = "canary"` or `"bgm"`).
    pub experiment: PathBuf,
    /// The out-dir of the finished audit; shards go to `<out-dir>/shards/`.
    #[arg(long)]
    pub out_dir: PathBuf,
    /// Array tasks (shards); at most the experiment's number of chunks.
    #[arg(long)]
    pub tasks: u64,
    /// `#SBATCH --partition`.
    #[arg(long)]
    pub partition: Option<String>,
    /// `#SBATCH --gres`, e.g. `gpu:1`.
    #[arg(long)]
    pub gres: Option<String>,
    /// `#SBATCH --time`, e.g. `04:00:00`.
    #[arg(long)]
    pub time: Option<String>,
    /// `#SBATCH --cpus-per-task`.
    #[arg(long)]
    pub cpus_per_task: Option<u32>,
    /// Submit both jobs with `sbatch` (the merge held until the array succeeded).
    #[arg(long)]
    pub submit: bool,
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .context("reading the current directory")?
            .join(p)
    })
}

/// `dpaudit slurm`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let file = ExperimentFile::read(&args.experiment)?;
    let (command, units, what) = super::run::shard_units(&file)?;
    anyhow::ensure!(
        args.tasks >= 1 && args.tasks <= units,
        "--tasks {}: expected 1 to {units} (the experiment has {what}; a task computes whole chunks)",
        args.tasks,
    );
    let extra_args = if command == "run" {
        vec!["--quiet".into()]
    } else {
        Vec::new()
    };
    let plan = SlurmPlan {
        binary: std::env::current_exe().context("locating the dpaudit binary")?,
        command: command.into(),
        experiment: absolute(&args.experiment)?
            .canonicalize()
            .with_context(|| format!("resolving {}", args.experiment.display()))?,
        out_dir: absolute(&args.out_dir)?,
        tasks: args.tasks,
        partition: args.partition,
        gres: args.gres,
        time: args.time,
        cpus_per_task: args.cpus_per_task,
        extra_args,
    };
    let (shards, merge) = write_scripts(&plan)?;
    println!("wrote {} ({} array tasks)", shards.display(), plan.tasks);
    println!(
        "wrote {} (merge and finalize into {})",
        merge.display(),
        plan.out_dir.display()
    );
    if args.submit {
        let ids = submit(&shards, &merge)?;
        println!(
            "submitted array job {} and merge job {} (runs after every task succeeded)",
            ids.shards, ids.merge
        );
    } else {
        println!(
            "submit with: id=$(sbatch --parsable {}) && sbatch --dependency=afterok:$id {}",
            shards.display(),
            merge.display()
        );
    }
    Ok(())
}
