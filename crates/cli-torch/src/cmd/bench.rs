//! `dpaudit bench`: the DP step against our own non-private step, same run,
//! same model, same random batch; with `--end-to-end`, the real training
//! loop against the engine alone; with `--overhead`, the loop's own cost per
//! step as the number of replicas grows.

use anyhow::Context;
use dpaudit_cli::args::bench::Args;
use dpaudit_data::seed::Mode;
use dpaudit_experiment::canary::throughput::{
    measure, LoopModel, LoopRow, LoopSpec, Timing, END_TO_END_ROWS, OVERHEAD_REPLICAS,
};
use dpaudit_train::bench::{run_row, BenchModel, BenchSpec, STANDARD_ROWS};
use dpaudit_train::layers::conv2d::{set_conv_layout, ConvLayout};
use dpaudit_train::noise::NoiseGenerator;
use dpaudit_train::op_count::NamedCount;

/// Apply `--conv-layout` to the process and say what is in effect.
fn apply_conv_layout(choice: &str) -> anyhow::Result<&'static str> {
    let layout: ConvLayout = choice.parse().map_err(anyhow::Error::msg)?;
    set_conv_layout(Some(layout));
    Ok(match layout {
        ConvLayout::Contiguous => "contiguous",
        ConvLayout::ChannelsLast => "channels last",
        ConvLayout::Auto => {
            "auto (channels last for replica-stacked convolutions with under 16 inputs per group on the CPU)"
        }
    })
}

fn name(m: BenchModel) -> &'static str {
    match m {
        BenchModel::Wrn16x4 => "wrn16_4",
        BenchModel::LeNet5 => "lenet5",
        BenchModel::Mlp => "mlp",
    }
}

fn run_oracle(device: tch::Device, json: bool) -> anyhow::Result<()> {
    let rows = dpaudit_train::bench::oracle(device).context("the microbatch oracle")?;
    let failed = rows.iter().filter(|r| r.failure.is_some()).count();
    for r in &rows {
        if json {
            println!("{}", serde_json::to_string(r)?);
        } else {
            println!(
                "oracle {:<12} M={} B={}: {}",
                r.model,
                r.replicas,
                r.batch,
                r.failure.as_deref().unwrap_or("ok")
            );
        }
    }
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {} oracle cases differ from one-sample-at-a-time autograd on {device:?} (tolerance {:e})",
            rows.len(),
            dpaudit_train::bench::ORACLE_TOL
        );
    }
    if !json {
        println!(
            "oracle: all {} cases match on {device:?} (relative tolerance {:e})",
            rows.len(),
            dpaudit_train::bench::ORACLE_TOL
        );
    }
    Ok(())
}

fn parse_row(text: &str) -> anyhow::Result<BenchSpec> {
    let parts: Vec<&str> = text.split(':').collect();
    let model = match parts.first().copied() {
        Some("wrn16_4") => BenchModel::Wrn16x4,
        Some("lenet5") => BenchModel::LeNet5,
        Some("mlp") => BenchModel::Mlp,
        _ => anyhow::bail!(
            "--rows {text}: expected model:batch[:replicas] with model wrn16_4, lenet5 or mlp"
        ),
    };
    let number =
        |i: usize, default: Option<i64>| -> anyhow::Result<i64> {
            match (parts.get(i), default) {
                (Some(v), _) => v.parse::<i64>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    anyhow::anyhow!("--rows {text}: {v:?} is not a positive integer")
                }),
                (None, Some(d)) => Ok(d),
                (None, None) => anyhow::bail!("--rows {text}: expected model:batch[:replicas]"),
            }
        };
    if parts.len() > 3 {
        anyhow::bail!("--rows {text}: expected model:batch[:replicas]");
    }
    Ok(BenchSpec {
        model,
        batch: number(1, None)?,
        replicas: number(2, Some(1))? as usize,
    })
}

fn parse_loop_row(text: &str) -> anyhow::Result<LoopSpec> {
    let (model, rest) = text.split_once(':').unwrap_or((text, ""));
    let model = match model {
        "lenet5" => LoopModel::LeNet5,
        "mlp" => LoopModel::Mlp,
        "tiny" => LoopModel::Tiny,
        _ => anyhow::bail!(
            "--rows {text}: expected model:batch[:replicas] with model lenet5, mlp or tiny"
        ),
    };
    // The batch and replica syntax is the engine rows'.
    let spec = parse_row(&format!("mlp:{rest}")).with_context(|| format!("--rows {text}"))?;
    Ok(LoopSpec {
        model,
        batch: spec.batch as usize,
        replicas: spec.replicas,
    })
}

fn print_loop_row(row: &LoopRow, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(row)?);
    } else {
        let samples = (row.spec.batch * row.spec.replicas) as f64;
        println!(
            "{:<8} {:>6} {:>9} {:>12.3} {:>12.3} {:>12.0} {:>12.0} {:>7.3} {:>10.3} {:>9.3} {}",
            row.spec.model.name(),
            row.spec.batch,
            row.spec.replicas,
            row.end_to_end * 1e3,
            row.engine * 1e3,
            samples / row.end_to_end,
            samples / row.engine,
            row.ratio,
            row.noise * 1e3,
            row.draw * 1e3,
            op_columns(row),
        );
    }
    Ok(())
}

/// Operators per step (top-level / all) of the loop and the engine, their
/// milliseconds per step outside libtorch operators (host work, on the CPU)
/// and their waits for the device per step (`OpCounts::waits`); dashes when
/// this build cannot count operators.
fn op_columns(row: &LoopRow) -> String {
    match (&row.loop_ops, &row.engine_ops) {
        (Some(l), Some(e)) => format!(
            "{:>12} {:>12} {:>10.3} {:>10.3} {:>11}",
            format!("{}/{}", l.top_level, l.all),
            format!("{}/{}", e.top_level, e.all),
            l.outside() * 1e3,
            e.outside() * 1e3,
            format!("{:.2}/{:.2}", l.waits, e.waits)
        ),
        _ => format!(
            "{:>12} {:>12} {:>10} {:>10} {:>11}",
            "-", "-", "-", "-", "-"
        ),
    }
}

fn run_loop(args: &Args, device: tch::Device, layout: &str) -> anyhow::Result<()> {
    let specs: Vec<LoopSpec> = if args.overhead {
        OVERHEAD_REPLICAS
            .iter()
            .filter(|&&m| m <= args.max_replicas)
            .map(|&replicas| LoopSpec {
                model: LoopModel::Tiny,
                batch: 2,
                replicas,
            })
            .collect()
    } else if !args.rows.is_empty() {
        args.rows
            .iter()
            .map(|r| parse_loop_row(r))
            .collect::<anyhow::Result<Vec<_>>>()?
    } else {
        END_TO_END_ROWS
            .into_iter()
            .filter(|s| args.models.is_empty() || args.models.iter().any(|m| m == s.model.name()))
            .filter(|s| !args.replicas_only || s.replicas > 1)
            .collect()
    };
    let noise = match args.noise.as_str() {
        "host" => Some(NoiseGenerator::HostChaCha20),
        "device" => Some(NoiseGenerator::DevicePhilox),
        _ => None,
    };
    if !args.json {
        println!(
            "device {:?}, {} threads, best of {} rounds of {} steps after {} warm-up; the loop and the engine interleaved; the loop reads its reports back every {} steps, the engine every step; noise generator {}; ops = libtorch operators per step (top-level/all); draw ms = the samplers' epoch draw for all replicas per step, amortised over an epoch (drawn ahead on a helper thread, so in neither timing); host ms, eng host = loop and engine time per step outside them (the best of as many counted rounds); waits = points per step (mean over the counted rounds) where a GPU run makes the host wait for the device, loop/engine; convolution layout {}",
            device,
            tch::get_num_threads(),
            args.rounds,
            args.iters,
            args.warmup,
            args.read_back_every,
            noise
                .unwrap_or_else(|| NoiseGenerator::default_for(Mode::Replayable, device))
                .name(),
            layout
        );
        println!(
            "{:<8} {:>6} {:>9} {:>12} {:>12} {:>12} {:>12} {:>7} {:>10} {:>9} {:>12} {:>12} {:>10} {:>10} {:>11}",
            "model",
            "batch",
            "replicas",
            "loop ms",
            "engine ms",
            "loop/s",
            "engine/s",
            "ratio",
            "noise ms",
            "draw ms",
            "loop ops",
            "engine ops",
            "host ms",
            "eng host",
            "waits"
        );
    }
    for spec in specs {
        let timing = Timing {
            iters: args.iters,
            rounds: args.rounds,
            warmup: args.warmup,
            read_back_every: args.read_back_every,
            name_operators: args.op_names,
        };
        let row = measure(spec, device, timing, noise).with_context(|| {
            format!(
                "loop benchmark {} B={} M={}",
                spec.model.name(),
                spec.batch,
                spec.replicas
            )
        })?;
        print_loop_row(&row, args.json)?;
        if args.op_names && !args.json {
            print_op_names(&row);
        }
    }
    Ok(())
}

/// The top-level operators per step of a row's loop and engine by name, with
/// the host time before them (µs per step, the time outside operators charged
/// to the operator that ends it), the loop's most frequent first, then those
/// only the engine runs.
fn print_op_names(row: &LoopRow) {
    let iters = row.iters.max(1) as f64;
    let per = |n: Option<&NamedCount>| {
        n.map_or((0.0, 0.0), |n| {
            (n.count as f64 / iters, n.before * 1e6 / iters)
        })
    };
    let engine_of = |name: &str| row.engine_names.iter().find(|e| e.name == name);
    println!(
        "  top-level operators per step by name, {} M={}: calls, and host µs before them (loop / engine):",
        row.spec.model.name(),
        row.spec.replicas
    );
    let line = |name: &str, l: (f64, f64), e: (f64, f64)| {
        println!(
            "  {:>8.2} {:>8.2}  {:>8.1} {:>8.1}  {}",
            l.0, e.0, l.1, e.1, name
        )
    };
    for n in &row.loop_names {
        line(&n.name, per(Some(n)), per(engine_of(&n.name)));
    }
    for e in row
        .engine_names
        .iter()
        .filter(|e| !row.loop_names.iter().any(|n| n.name == e.name))
    {
        line(&e.name, per(None), per(Some(e)));
    }
    let total = |names: &[NamedCount]| names.iter().map(|n| n.before).sum::<f64>() * 1e6 / iters;
    println!(
        "  {:>8} {:>8}  {:>8.1} {:>8.1}  (host µs before operators, in all)",
        "",
        "",
        total(&row.loop_names),
        total(&row.engine_names)
    );
    // The host code between two operators runs between them: the longest
    // gaps by pair point at it.
    for (what, gaps) in [("loop", &row.loop_gaps), ("engine-only", &row.engine_gaps)] {
        println!(
            "  host time between operators, {what} step, the {GAPS_SHOWN} longest by the pair around it: calls, µs per step"
        );
        for g in gaps.iter().take(GAPS_SHOWN) {
            let (calls, us) = per(Some(g));
            println!("  {calls:>8.2} {us:>8.1}  {}", g.name);
        }
    }
}

/// Pairs of operators listed by `--op-names` with the host time between them.
const GAPS_SHOWN: usize = 12;

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
    if args.op_names && !(args.end_to_end || args.overhead) {
        anyhow::bail!(
            "--op-names: names the operators of --end-to-end or --overhead rows; add one of them"
        );
    }
    let layout = apply_conv_layout(&args.conv_layout)?;
    if args.oracle {
        return run_oracle(device, args.json);
    }
    if args.end_to_end || args.overhead {
        return run_loop(&args, device, layout);
    }
    if !args.json {
        println!(
            "device {:?}, {} threads, best of {} rounds of {} steps per kind after {} warm-up; host memory {}; convolution layout {}",
            device,
            tch::get_num_threads(),
            args.rounds,
            args.iters,
            args.warmup,
            dpaudit_train::runtime::retain_freed_host_memory(),
            layout
        );
        println!(
            "{:<8} {:>6} {:>9} {:>16} {:>16} {:>8}",
            "model", "batch", "replicas", "non-private/s", "DP/s", "DP/np"
        );
    }
    let rows = match args.rows.is_empty() {
        true => STANDARD_ROWS.to_vec(),
        false => args
            .rows
            .iter()
            .map(|r| parse_row(r))
            .collect::<anyhow::Result<Vec<_>>>()?,
    };
    for spec in rows {
        if !args.models.is_empty() && !args.models.iter().any(|m| m == name(spec.model)) {
            continue;
        }
        if args.replicas_only && spec.replicas == 1 {
            continue;
        }
        let row =
            run_row(spec, device, args.iters, args.rounds, args.warmup).with_context(|| {
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_read_back_default_is_the_training_loops() {
        assert_eq!(
            dpaudit_cli::args::bench::LOOP_READ_BACK_EVERY,
            dpaudit_train::engine::LOOP_READ_BACK_EVERY
        );
    }
}
