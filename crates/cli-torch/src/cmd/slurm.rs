//! `dpaudit slurm EXPERIMENT --out-dir D --tasks N [--submit]`: an audit
//! (`dpaudit run` of a `kind = "canary"` file, `dpaudit bgm` of a
//! `kind = "bgm"` one) as a
//! Slurm job array (one task per shard) plus a merge-and-finalize job that
//! runs once every task succeeded. The scripts are written into `D/slurm/`;
//! `--submit` hands them to `sbatch`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use dpaudit_cli::args::slurm::Args;
use dpaudit_store::job_array::{submit, write_scripts, SlurmPlan};
use dpaudit_store::kind::ExperimentFile;

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .context("reading the current directory")?
            .join(p)
    })
}

/// The binary the jobs run: `dpaudit` beside this one (it hands their
/// commands back to `dpaudit-torch`), else this binary itself.
fn job_binary() -> anyhow::Result<PathBuf> {
    let this = std::env::current_exe().context("locating the dpaudit binary")?;
    let dispatcher = this.with_file_name("dpaudit");
    Ok(if dispatcher.is_file() {
        dispatcher
    } else {
        this
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
        binary: job_binary()?,
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
