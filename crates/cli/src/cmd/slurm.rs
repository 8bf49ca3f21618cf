//! `dpaudit slurm EXPERIMENT --out-dir D --tasks N [--submit]`: an audit
//! (`dpaudit run` of a `kind = "canary"` file, `dpaudit bgm` of a
//! `kind = "bgm"` one) as a
//! Slurm job array (one task per shard) plus a merge-and-finalize job that
//! runs once every task succeeded. The scripts are written into `D/slurm/`;
//! `--submit` hands them to `sbatch`. Planning the units reads the experiment
//! file (`dpaudit_plan`), which needs no libtorch.

use std::path::{Path, PathBuf};

use anyhow::Context;
use dpaudit_plan::bgm::audit::{prepare_all, BgmExperiment};
use dpaudit_plan::bgm::engine::CpuBgmEngine;
use dpaudit_plan::bgm::runner::plan_units;
use dpaudit_plan::canary::settings::ExperimentConfig;
use dpaudit_store::job_array::{submit, write_scripts, SlurmPlan};
use dpaudit_store::kind::{ExperimentFile, ExperimentKind};

use crate::args::slurm::Args;

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
/// commands over to `dpaudit-torch`), else this binary itself.
fn job_binary() -> anyhow::Result<PathBuf> {
    let this = std::env::current_exe().context("locating the dpaudit binary")?;
    let dispatcher = this.with_file_name("dpaudit");
    Ok(if dispatcher.is_file() {
        dispatcher
    } else {
        this
    })
}

/// For `dpaudit slurm`: the subcommand an array task runs, the experiment's
/// units (shards can own) and what they are, in words.
pub fn shard_units(file: &ExperimentFile) -> anyhow::Result<(&'static str, u64, String)> {
    Ok(match file.kind {
        ExperimentKind::Bgm => {
            let experiment = BgmExperiment::from_toml(&file.path, &file.text)?;
            let settings = prepare_all(&file.path, &experiment)?;
            let units = plan_units(&settings, &CpuBgmEngine { threads: 0 })?.len() as u64;
            (
                "bgm",
                units,
                format!("{units} chunks of simulated runs (the Rust engine's)"),
            )
        }
        ExperimentKind::Canary => {
            let config =
                ExperimentConfig::from_toml(&file.text, &file.path.display().to_string())
                    .with_context(|| format!("loading {}", file.path.display()))?;
            (
                "run",
                config.chunks(),
                format!(
                    "{} chunks of train.replicas = {} runs",
                    config.chunks(),
                    config.chunk_size()
                ),
            )
        }
        ExperimentKind::Panoramia => anyhow::bail!(
            "{}: `kind = \"panoramia\"`: a PANORAMIA audit runs in one process (its stages resume), not as a job \
             array; run it with `dpaudit run`",
            file.path.display()
        ),
    })
}

/// `dpaudit slurm`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let file = ExperimentFile::read(&args.experiment)?;
    let (command, units, what) = shard_units(&file)?;
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
