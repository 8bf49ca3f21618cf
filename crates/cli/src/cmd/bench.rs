//! `dpaudit bench`: the DP step against our own non-private step, same run,
//! same model, same random batch (issue 5 benchmark table).

use anyhow::Context;
use dpaudit_train::bench::{run_row, BenchModel, STANDARD_ROWS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `cpu` or `cuda`.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Timed steps per row and step kind.
    #[arg(long, default_value_t = 3)]
    pub iters: usize,
    /// Untimed steps before timing.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Only rows whose model is one of these (`wrn16_4`, `lenet5`, `mlp`).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Only the replica rows (`M > 1`), or none of them.
    #[arg(long)]
    pub replicas_only: bool,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn name(m: BenchModel) -> &'static str {
    match m {
        BenchModel::Wrn16x4 => "wrn16_4",
        BenchModel::LeNet5 => "lenet5",
        BenchModel::Mlp => "mlp",
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let device = match args.device.as_str() {
        "cpu" => tch::Device::Cpu,
        "cuda" if tch::Cuda::is_available() => tch::Device::Cuda(0),
        "cuda" => {
            anyhow::bail!("--device cuda: no CUDA device is available (see `dpaudit doctor`)")
        }
        other => anyhow::bail!("--device {other}: expected `cpu` or `cuda`"),
    };
    if args.iters == 0 {
        anyhow::bail!("--iters 0: expected at least 1 timed step");
    }
    if !args.json {
        println!(
            "device {:?}, {} threads, {} timed steps per row after {} warm-up",
            device,
            tch::get_num_threads(),
            args.iters,
            args.warmup
        );
        println!(
            "{:<8} {:>6} {:>9} {:>16} {:>16} {:>8}",
            "model", "batch", "replicas", "non-private/s", "DP/s", "DP/np"
        );
    }
    for spec in STANDARD_ROWS {
        if !args.models.is_empty() && !args.models.iter().any(|m| m == name(spec.model)) {
            continue;
        }
        if args.replicas_only && spec.replicas == 1 {
            continue;
        }
        let row = run_row(spec, device, args.iters, args.warmup).with_context(|| {
            format!(
                "benchmark {} B={} M={}",
                name(spec.model),
                spec.batch,
                spec.replicas
            )
        })?;
        if args.json {
            println!("{}", serde_json::to_string(&row)?);
        } else {
            println!(
                "{:<8} {:>6} {:>9} {:>16.0} {:>16.0} {:>8.3}",
                name(spec.model),
                spec.batch,
                spec.replicas,
                row.non_private,
                row.dp,
                row.ratio
            );
        }
    }
    Ok(())
}
