//! Where the time of one DP-SGD step goes, phase by phase and layer by layer,
//! for LeNet-5 (or the MLP, or WRN-16-4) on a random batch, with the convolutions' squared
//! norms computed each way (ghost, materialised, and the automatic choice).
//!
//! `cargo run --release -p dpaudit-train --example dp_profile -- [lenet5|mlp|wrn16_4] [batch] [iters] [auto|ghost|materialise] [replicas] [auto|contiguous|channels-last] [auto|direct|grouped|unfold]`
//!
//! The sixth argument sets the convolutions' memory layout (`layers::conv2d::set_conv_layout`), the
//! seventh LeNet-5's per-sample formulation where its convolutions materialise
//! (`layers::conv2d::PerSampleMethod`).
//!
//! Each figure is the best of `iters` repetitions, in milliseconds; CPU only.

// An example may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)]

use std::time::Instant;

use dpaudit_train::engine::{
    forward_backward, non_private_step, Batch, DpSgd, DpSgdConfig, Normaliser, Sgd,
};
use dpaudit_train::layers::conv2d::{set_conv_layout, ConvLayout, NormStrategy, PerSampleMethod};
use dpaudit_train::models::{LeNet5, Mlp, WideResNet};
use dpaudit_train::runtime::retain_freed_host_memory;
use dpaudit_train::testing::random_batch;
use dpaudit_train::{Init, Model, NoiseStreams};

fn best(iters: usize, mut f: impl FnMut()) -> f64 {
    (0..iters)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn profile(model: &dyn Model, batch: &Batch, iters: usize, label: &str) {
    let fb = best(iters, || {
        forward_backward(model, batch).unwrap();
    });
    let bp = forward_backward(model, batch).unwrap();
    let mut per_layer = Vec::new();
    for ((name, layer), (rec, d)) in model
        .layers()
        .iter()
        .zip(bp.records.iter().zip(&bp.backprops))
    {
        let norms = best(iters, || {
            let _ = layer.per_sample_sq_norms(rec, d).unwrap();
        });
        let coef = bp.computed.shallow_clone();
        let sum = best(iters, || {
            layer.clipped_sum(rec, d, &coef).unwrap();
        });
        per_layer.push(format!("{name}: norms {norms:.2}, sum {sum:.2}"));
    }
    let norms = best(iters, || {
        bp.norms(model, batch).unwrap();
    });
    let n = bp.norms(model, batch).unwrap();
    let coef = n.clip(1.0, &bp, model, batch).unwrap();
    let sum = best(iters, || {
        bp.clipped_sum(model, batch, &coef).unwrap();
    });
    let params: Vec<_> = model
        .named_parameters()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let mut noise = NoiseStreams::replayable(1, model.replicas() as usize);
    let draw = best(iters, || {
        noise.next_step(1.0, &params, tch::Device::Cpu).unwrap();
    });
    let mut sgd = Sgd::new(0.0, 0.0, 0.0);
    let np = best(iters, || {
        non_private_step(model, &mut sgd, batch).unwrap();
    });
    let b = batch.inputs.size()[0];
    let mut dp = DpSgd::new(
        DpSgdConfig {
            noise_multiplier: 1.0,
            max_grad_norm: 1.0,
            learning_rate: 1e-9,
            normaliser: Normaliser::FixedBatchSize(b as u64),
            momentum: 0.0,
            weight_decay: 0.0,
        },
        NoiseStreams::replayable(2, model.replicas() as usize),
    )
    .unwrap();
    let step = best(iters, || {
        dp.step(model, batch).unwrap();
    });
    println!(
        "{label}: forward+backward {fb:.2} | all norms {norms:.2} | clipped sum {sum:.2} | noise {draw:.2} | \
         whole DP step {step:.2} | non-private step {np:.2}\n    {}",
        per_layer.join("; ")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("lenet5", String::as_str);
    let b: i64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let iters: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let memory = retain_freed_host_memory();
    set_conv_layout(args.get(6).map(|s| s.parse::<ConvLayout>().unwrap()));
    let method = match args.get(7).map(String::as_str) {
        Some("direct") => PerSampleMethod::Direct,
        Some("grouped") => PerSampleMethod::GroupedConvolution,
        Some("unfold") => PerSampleMethod::Unfold,
        _ => PerSampleMethod::Auto,
    };
    println!(
        "{which}, B = {b}, {} threads, best of {iters}, ms; host memory {memory}; convolution layout {}; \
         per-sample method {method:?}",
        tch::get_num_threads(),
        args.get(6).map_or("auto", String::as_str)
    );
    match which {
        "wrn16_4" => {
            let model = WideResNet::new(
                &mut Init::new(0, 1, tch::Device::Cpu),
                16,
                4,
                10,
                16,
                [3, 32, 32],
            )
            .unwrap();
            let (x, y) = random_batch(&model, b, 0).unwrap();
            profile(&model, &Batch::new(x, y), iters, "wrn16_4 auto");
        }
        "mlp" => {
            let model = Mlp::new(&mut Init::new(0, 1, tch::Device::Cpu), &[600, 256, 100]).unwrap();
            let (x, y) = random_batch(&model, b, 0).unwrap();
            profile(&model, &Batch::new(x, y), iters, "mlp");
        }
        _ => {
            for (label, strategy) in [
                ("auto", NormStrategy::Auto),
                ("ghost", NormStrategy::Ghost),
                ("materialise", NormStrategy::Materialise),
            ] {
                if args.get(4).is_some_and(|only| only != label) {
                    continue;
                }
                let replicas = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(1);
                let mut model =
                    LeNet5::new(&mut Init::new(0, replicas, tch::Device::Cpu), 10).unwrap();
                model.conv1.norm_strategy = strategy;
                model.conv2.norm_strategy = strategy;
                model.conv1.per_sample_method = method;
                model.conv2.per_sample_method = method;
                let (x, y) = random_batch(&model, b, 0).unwrap();
                profile(&model, &Batch::new(x, y), iters, label);
            }
        }
    }
}
