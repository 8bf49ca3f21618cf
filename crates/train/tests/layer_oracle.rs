//! The microbatch oracle (`dpaudit_train::testing`) for every layer: per-sample gradients,
//! squared norms and clipped sums equal one-sample-at-a-time autograd within a
//! relative error of 1e-5 per tensor (`‖engine − oracle‖ ≤ 1e-5·‖oracle‖`,
//! fp32, CPU), for batches of 0, 1 and several samples, with 1 and 3 replicas.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::layers::conv2d::{ConvLayout, NormStrategy, PerSampleMethod};
use dpaudit_train::layers::{
    Conv2d, Conv2dConfig, GroupNorm, GroupNormConfig, Linear, LinearConfig,
};
use dpaudit_train::testing::{check_against_oracle, normal_tensor, random_batch, SingleLayer};
use dpaudit_train::{Init, Model};
use tch::Device;

const TOL: f64 = 1e-5;
const BATCHES: [i64; 3] = [0, 1, 4];
const REPLICAS: [usize; 2] = [1, 3];

fn run(model: &dyn Model, what: &str, seed: u64) {
    for b in BATCHES {
        let (x, y) = random_batch(model, b, seed + b as u64).unwrap();
        if let Err(e) = check_against_oracle(model, &x, &y, TOL) {
            panic!("{what}, batch {b}, {} replicas: {e}", model.replicas());
        }
    }
}

#[test]
fn linear_matches_oracle() {
    for m in REPLICAS {
        for bias in [true, false] {
            let mut init = Init::new(7, m, Device::Cpu);
            let layer = Linear::new(
                &mut init,
                LinearConfig {
                    in_features: 5,
                    out_features: 4,
                    bias,
                },
            )
            .unwrap();
            let model = SingleLayer {
                layer,
                sample_shape: vec![5],
                outputs: 4,
                replicas: m as i64,
            };
            run(&model, &format!("linear bias={bias}"), 100);
        }
    }
}

fn conv_case(
    m: usize,
    cfg: Conv2dConfig,
    hw: i64,
    strategy: NormStrategy,
    method: PerSampleMethod,
    layout: ConvLayout,
) -> SingleLayer<Conv2d> {
    let mut init = Init::new(11, m, Device::Cpu);
    let mut layer = Conv2d::new(&mut init, cfg).unwrap();
    layer.norm_strategy = strategy;
    layer.per_sample_method = method;
    layer.layout = layout;
    let (oh, ow) = layer.output_size(hw, hw).unwrap();
    SingleLayer {
        layer,
        sample_shape: vec![cfg.in_channels, hw, hw],
        outputs: cfg.out_channels * oh * ow,
        replicas: m as i64,
    }
}

#[test]
fn conv2d_matches_oracle() {
    let configs = [
        Conv2dConfig::new(2, 3, 3),
        Conv2dConfig::new(2, 4, 3).padding(1).stride(2),
        Conv2dConfig::new(4, 6, 3).padding(1).groups(2),
        Conv2dConfig::new(3, 2, 1).stride(2).no_bias(),
        // Stride 2 over 6 rows reaches rows 0–4 only: the grouped
        // convolution's output has 4 rows for a kernel of 3 and is cut.
        Conv2dConfig::new(2, 3, 3).stride(2),
        // Depthwise, stride 3 (row 5 unused).
        Conv2dConfig::new(4, 4, 2).stride(3).groups(4),
        // Stride 1 with the direct kernel's output blocks of 6 + 6 + 4
        // channels and an even number of kernel offsets (2 · 3 · 3), and of
        // 6 + 4 + 1 with an odd one (1 · 3 · 3).
        Conv2dConfig::new(2, 16, 3).padding(1),
        Conv2dConfig::new(1, 11, 3).padding(1),
    ];
    for m in REPLICAS {
        for cfg in configs {
            for strategy in [
                NormStrategy::Materialise,
                NormStrategy::Ghost,
                NormStrategy::Auto,
            ] {
                for method in [
                    PerSampleMethod::ExpandedWeights,
                    PerSampleMethod::GroupedConvolution,
                    PerSampleMethod::Unfold,
                    PerSampleMethod::Direct,
                    PerSampleMethod::Auto,
                ] {
                    for layout in [ConvLayout::Contiguous, ConvLayout::ChannelsLast] {
                        let model = conv_case(m, cfg, 6, strategy, method, layout);
                        run(
                            &model,
                            &format!("conv2d {cfg:?} {strategy:?} {method:?} {layout:?}"),
                            200,
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn group_norm_matches_oracle() {
    for m in REPLICAS {
        let mut init = Init::new(13, m, Device::Cpu);
        let mut layer = GroupNorm::new(
            &mut init,
            GroupNormConfig {
                num_groups: 2,
                num_channels: 4,
                eps: 1e-5,
            },
        )
        .unwrap();
        // Move γ, β away from 1, 0 so that their gradients are generic.
        tch::no_grad(|| {
            let _ = layer
                .weight
                .f_add_(&(normal_tensor(&layer.weight.size(), 301).unwrap() * 0.5));
            let _ = layer
                .bias
                .f_add_(&(normal_tensor(&layer.bias.size(), 302).unwrap() * 0.5));
        });
        layer.weight = layer.weight.detach().set_requires_grad(true);
        layer.bias = layer.bias.detach().set_requires_grad(true);
        let model = SingleLayer {
            layer,
            sample_shape: vec![4, 3, 3],
            outputs: 36,
            replicas: m as i64,
        };
        run(&model, "group_norm", 300);
    }
}

/// The direct kernel replaces the grouped convolution where it applies (stride
/// 1, CPU, float32), so the oracle cases above run it under `Auto` too.
#[test]
fn auto_uses_the_direct_kernel_where_it_applies() {
    let lenet_conv2 = conv_case(
        3,
        Conv2dConfig::new(6, 16, 5),
        14,
        NormStrategy::Auto,
        PerSampleMethod::Auto,
        ConvLayout::Auto,
    );
    let layer = &lenet_conv2.layer;
    assert_eq!(
        layer.per_sample_method_for(100, 100, Device::Cpu),
        PerSampleMethod::Direct
    );
    assert_eq!(
        layer.per_sample_method_for(100, 100, Device::Cuda(0)),
        PerSampleMethod::GroupedConvolution
    );
    let strided = conv_case(
        3,
        Conv2dConfig::new(2, 4, 3).padding(1).stride(2),
        6,
        NormStrategy::Materialise,
        PerSampleMethod::Direct,
        ConvLayout::Auto,
    );
    assert_eq!(
        strided.layer.per_sample_method_for(4, 9, Device::Cpu),
        PerSampleMethod::GroupedConvolution
    );
}
