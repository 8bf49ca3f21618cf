//! `dpaudit bgm --config FILE.toml`: shuffling audits of the Batched
//! Gaussian Mechanism (Annamalai et al. 2024 §4.1), setting by setting. The
//! experiment, its engines, its out-dir, shards and merges are library code
//! (`dpaudit_experiment::bgm::{audit, engine, runner}`); this module
//! parses the flags, picks the engine, and prints.

use std::path::Path;

use anyhow::Context;
use dpaudit_cli::args::bgm::Args;
use dpaudit_cli::args::experiment::{EngineChoice, SimArgs};
use dpaudit_cli::cmd::merge::print_bgm_report;
use dpaudit_experiment::bgm::audit::{prepare_all, throughput_line, BgmExperiment};
use dpaudit_experiment::bgm::engine::{BgmEngine, CpuBgmEngine, TensorBgmEngine};
use dpaudit_experiment::bgm::runner::{BgmDir, BgmFinalized};
use dpaudit_store::kind::{ExperimentFile, ExperimentKind};
use dpaudit_store::{OutDir, Shard};

use super::experiment::{command_line, open};

/// The engine of the command-line flags; refuses `--engine rust --device
/// cuda`, `--chunk-runs` without the tensor engine, and CUDA when none is
/// present.
pub fn engine_from_flags(
    device: &str,
    engine: Option<EngineChoice>,
    chunk_runs: Option<usize>,
    threads: usize,
) -> anyhow::Result<Box<dyn BgmEngine>> {
    let device = match device {
        "cpu" => tch::Device::Cpu,
        "cuda" if tch::Cuda::is_available() => tch::Device::Cuda(0),
        "cuda" => {
            anyhow::bail!("--device cuda: no CUDA device is available (see `dpaudit doctor`)")
        }
        other => anyhow::bail!("--device {other}: expected `cpu` or `cuda`"),
    };
    match (engine, device) {
        (Some(EngineChoice::Rust), tch::Device::Cpu) | (None, tch::Device::Cpu) => {
            anyhow::ensure!(
                chunk_runs.is_none(),
                "--chunk-runs applies to --engine tensor only"
            );
            Ok(Box::new(CpuBgmEngine { threads }))
        }
        (Some(EngineChoice::Rust), _) => anyhow::bail!(
            "--engine rust runs on the CPU only; use --engine tensor (the default) with --device cuda"
        ),
        (Some(EngineChoice::Tensor), device) | (None, device) => {
            if threads > 0 && device == tch::Device::Cpu {
                tch::set_num_threads(i32::try_from(threads).unwrap_or(i32::MAX));
            }
            Ok(Box::new(TensorBgmEngine::new(device, chunk_runs)?))
        }
    }
}

/// `dpaudit bgm`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (file, out_dir) = open(&args.file, ExperimentKind::Bgm, "runs")?;
    run_file(&file, &out_dir, args.shard.as_deref(), &args.sim)
}

/// A `kind = "bgm"` experiment file into `out_dir`.
pub fn run_file(
    file: &ExperimentFile,
    out_dir: &Path,
    shard: Option<&str>,
    sim: &SimArgs,
) -> anyhow::Result<()> {
    let experiment = BgmExperiment::from_toml(&file.path, &file.text)?;
    // Validate every setting before simulating any, and before the out-dir exists.
    let settings = prepare_all(&file.path, &experiment)?;
    let engine = engine_from_flags(
        sim.device.as_deref().unwrap_or("cpu"),
        sim.engine,
        sim.chunk_runs,
        sim.threads,
    )?;
    let shard = match shard {
        Some(s) => Shard::parse(s, |k| std::env::var(k).ok())?,
        None => Shard::ALL,
    };
    // Locked, and known to be writable, before anything is simulated.
    let out = OutDir::open(out_dir, &command_line())?;
    if let Some(stale) = out.took_over() {
        eprintln!("note: took over {stale}");
    }
    let label = file.path.display().to_string();
    let dir = BgmDir::claim(out, &label, &experiment, &settings, engine.as_ref(), shard)?;
    let plan = dir.plan()?;
    for (c, why) in &plan.damaged {
        eprintln!("chunk {c} is damaged ({why}): set aside as .damaged, recomputing it");
    }
    if !plan.done.is_empty() {
        eprintln!(
            "resuming: {} chunk(s) already on disk, {} to simulate",
            plan.done.len(),
            plan.todo.len()
        );
    }
    for &c in &plan.todo {
        let unit = &dir.units()[c as usize];
        dir.run_unit(c).with_context(|| {
            format!(
                "simulating chunk {c} (setting {:?}, runs {}..{})",
                settings[unit.setting].setting.name,
                unit.first_run,
                unit.first_run + unit.runs
            )
        })?;
    }
    match dir.finalize()? {
        BgmFinalized::Complete(report) => {
            for s in &report.settings {
                eprintln!(
                    "{}: Poisson ε {:.3}, ε_emp {:.3} ({}{}; {:.1} s; {})",
                    s.name,
                    s.epsilon_poisson_pld,
                    s.epsilon_emp(),
                    s.selection_name(),
                    s.same_data_epsilon()
                        .map_or_else(String::new, |e| format!("; same-data {e:.3}, NOT valid")),
                    s.wall_seconds,
                    throughput_line(s, &report)
                );
            }
            print_bgm_report(&report, sim.json, out_dir)
        }
        BgmFinalized::Incomplete(missing) => {
            println!(
                "shard {shard} done; {} chunk(s) belong to other shards — combine the out-dirs with `dpaudit merge`",
                missing.len()
            );
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_flags_are_checked() {
        let e = engine_from_flags("cpu", None, None, 0).unwrap();
        assert_eq!((e.name(), e.device_label().as_str()), ("rust", "cpu"));
        let e = engine_from_flags("cpu", Some(EngineChoice::Tensor), Some(64), 0).unwrap();
        assert_eq!(
            (e.name(), e.identity().as_str()),
            ("tensor", "tensor on cpu")
        );
        let refused = |device, engine, chunk_runs| {
            format!(
                "{:#}",
                engine_from_flags(device, engine, chunk_runs, 0).unwrap_err()
            )
        };
        assert!(refused("gpu", None, None).contains("expected `cpu` or `cuda`"));
        assert!(refused("cpu", Some(EngineChoice::Rust), Some(8)).contains("--chunk-runs"));
        assert!(refused("cpu", Some(EngineChoice::Tensor), Some(0)).contains("at least 1"));
        // Without a GPU: no CUDA device; with one: the Rust engine is CPU-only.
        assert!(refused("cuda", Some(EngineChoice::Rust), None).contains("cuda"));
    }
}
