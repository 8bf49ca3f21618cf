//! Library code never panics on a libtorch error (ARCHITECTURE.md): a shape
//! that libtorch refuses and an allocation that cannot succeed come back as a
//! typed [`TrainError`] naming what the engine was doing; and the guard that
//! keeps it so (clippy's `disallowed_methods` and `arithmetic_side_effects`,
//! configured in `crates/train/clippy.toml`) is in place.
//!
//! The guard itself runs in clippy (CI: `cargo clippy --workspace
//! --all-targets -- -D warnings`), which sees types; the tests below check
//! its configuration: both lints denied in `src/lib.rs`, allowed only on
//! `#[cfg(test)]` modules, and every `f_x` the library calls has its
//! panicking `x` in the list. What the lints cannot see is in clippy.toml's
//! header.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dpaudit_train::layers::{Conv2d, Conv2dConfig, Linear, LinearConfig, PerSampleGrad, Tape};
use dpaudit_train::models::{LeNet5, Mlp};
use dpaudit_train::testing::{normal_tensor, random_batch, SingleLayer};
use dpaudit_train::{Batch, DpSgd, DpSgdConfig, Init, Model, NoiseStreams, Normaliser, TrainError};
use tch::{Device, Kind, Tensor};

fn dp() -> DpSgd {
    DpSgd::new(
        DpSgdConfig {
            noise_multiplier: 1.0,
            max_grad_norm: 1.0,
            learning_rate: 0.1,
            normaliser: Normaliser::FixedBatchSize(3),
            momentum: 0.0,
            weight_decay: 0.0,
        },
        NoiseStreams::replayable(0, 1),
    )
    .unwrap()
}

/// The context and message of a [`TrainError::Torch`]; anything else fails.
fn torch_error(e: TrainError) -> (String, String) {
    let message = e.to_string();
    match e {
        TrainError::Torch { context, .. } => (context, message),
        other => panic!("expected TrainError::Torch, got {other:?}"),
    }
}

#[test]
fn a_batch_with_the_wrong_feature_count_is_a_shape_error() {
    let model = Mlp::new(&mut Init::new(0, 1, Device::Cpu), &[4, 3, 2]).unwrap();
    let x = Tensor::zeros([3, 1, 5], (Kind::Float, Device::Cpu));
    let y = Tensor::zeros([3, 1], (Kind::Int64, Device::Cpu));
    let e = dp().step(&model, &Batch::new(x, y)).unwrap_err();
    assert!(
        matches!(&e, TrainError::Shape { what, got, .. } if what == "batch inputs" && got == &[3, 1, 5]),
        "{e:?}"
    );
}

/// A model whose declared sample shape passes the engine's own check but
/// whose layer expects another width: libtorch refuses the matmul inside
/// `DpSgd::step`, and the step returns the error instead of panicking.
#[test]
fn a_shape_libtorch_refuses_inside_a_step_is_a_torch_error_naming_the_layer_op() {
    let mut init = Init::new(1, 1, Device::Cpu);
    let layer = Linear::new(
        &mut init,
        LinearConfig {
            in_features: 4,
            out_features: 3,
            bias: true,
        },
    )
    .unwrap();
    let model = SingleLayer {
        layer,
        sample_shape: vec![5],
        outputs: 3,
        replicas: 1,
    };
    let (x, y) = random_batch(&model, 3, 2).unwrap();
    let mut dp = dp();
    let (context, message) = torch_error(dp.step(&model, &Batch::new(x, y)).unwrap_err());
    assert_eq!(context, "the forward pass of a Linear layer");
    assert!(
        message.contains("libtorch error in the forward pass of a Linear layer"),
        "{message}"
    );
    // Nothing was stepped.
    assert_eq!(dp.steps_taken(), 0);
}

#[test]
fn a_model_forward_on_a_wrong_shaped_input_is_a_typed_error() {
    // 20×20 images through LeNet-5 (built for 28×28): the convolutions and
    // pools run, the flattened 16·3·3 features do not fit fc1's 400 inputs.
    let model = LeNet5::new(&mut Init::new(2, 1, Device::Cpu), 2).unwrap();
    let x = Tensor::zeros([2, 1, 1, 20, 20], (Kind::Float, Device::Cpu));
    let (context, _) = torch_error(model.forward(&x, &mut Tape::off()).unwrap_err());
    assert_eq!(context, "the forward pass of a Linear layer");
    // A convolution handed a flat input: refused before libtorch is called.
    let conv = Conv2d::new(
        &mut Init::new(3, 1, Device::Cpu),
        Conv2dConfig::new(1, 2, 3),
    )
    .unwrap();
    let flat = Tensor::zeros([2, 1, 9], (Kind::Float, Device::Cpu));
    let e = conv.forward(&flat, &mut Tape::recording()).unwrap_err();
    assert!(
        matches!(&e, TrainError::Shape { what, .. } if what == "Conv2d input"),
        "{e:?}"
    );
    // A pooling window larger than the image: libtorch's refusal, typed.
    let small = Tensor::zeros([1, 1, 1, 2, 2], (Kind::Float, Device::Cpu));
    let (context, _) =
        torch_error(dpaudit_train::layers::ops::max_pool2d(&small, 3, 3).unwrap_err());
    assert_eq!(context, "max_pool2d");
}

/// The engine prefixes the layer's name to a libtorch error's context.
#[test]
fn a_layer_error_names_the_layer() {
    let e = TrainError::Torch {
        context: "the per-sample squared norms of a Linear layer".into(),
        source: tch::TchError::Torch("boom".into()),
    }
    .in_layer("fc1");
    assert_eq!(
        torch_error(e).0,
        "layer `fc1`, the per-sample squared norms of a Linear layer"
    );
}

/// A weight of 2⁴⁸ floats (1 PiB, more than any machine's address space):
/// libtorch's allocator refuses it, and the constructor returns the error.
#[test]
fn a_parameter_that_cannot_be_allocated_is_a_torch_error() {
    let mut init = Init::new(0, 1, Device::Cpu);
    let e = Mlp::new(&mut init, &[1 << 24, 1 << 24, 2]).unwrap_err();
    let (context, message) = torch_error(e);
    assert_eq!(context, "allocating and drawing an initial parameter");
    assert!(message.contains("allocate"), "{message}");
    // The same through `Init::constant` (GroupNorm's γ, β).
    let e = init.constant(&[1 << 48], 1.0).unwrap_err();
    assert_eq!(torch_error(e).0, "allocating an initial parameter");
}

/// The chunked upload of `Init::uniform` gives the same parameters as one
/// upload: replica after replica, row-major, across slice boundaries.
#[test]
fn initial_parameters_do_not_depend_on_the_upload_slices() {
    let n = dpaudit_train::init::FILL_SLICE as i64 + 3;
    let mut a = Init::new(7, 2, Device::Cpu);
    let big = a.uniform(&[n], 0.5).unwrap();
    let mut b = Init::new(7, 1, Device::Cpu);
    let first = b.uniform(&[n], 0.5).unwrap();
    let mut c = Init::with_streams(7, &[1], Device::Cpu);
    let second = c.uniform(&[n], 0.5).unwrap();
    assert_eq!(big.size(), vec![2, n]);
    assert!(big.requires_grad());
    assert!(big.get(0).equal(&first.get(0)));
    assert!(big.get(1).equal(&second.get(0)));
    assert!(big.abs().max().double_value(&[]) < 0.5);
}

/// Linear's forward runs `baddbmm` in place on a copy of the broadcast bias
/// (tch's out-of-place `baddbmm` takes β and α as numbers): the same values
/// and gradients as the out-of-place one, bit for bit, and the bias itself
/// is never written, also for a batch of one under `no_grad`.
#[test]
fn linear_forward_equals_the_out_of_place_baddbmm_bit_for_bit() {
    let mut init = Init::new(4, 3, Device::Cpu);
    let layer = Linear::new(
        &mut init,
        LinearConfig {
            in_features: 5,
            out_features: 4,
            bias: true,
        },
    )
    .unwrap();
    let bias = layer.bias.as_ref().unwrap();
    let bias_before = bias.detach().copy();
    for b in [1, 6] {
        let x = normal_tensor(&[b, 3, 5], 9)
            .unwrap()
            .set_requires_grad(true);
        let y = layer.forward(&x, &mut Tape::off()).unwrap();
        let want = bias
            .unsqueeze(1)
            .baddbmm(&x.transpose(0, 1), &layer.weight.transpose(1, 2), 1.0, 1.0)
            .transpose(0, 1);
        assert!(y.equal(&want), "batch {b}");
        let g = normal_tensor(&[b, 3, 4], 10).unwrap();
        let inputs = [&layer.weight, bias, &x];
        let got = Tensor::run_backward(&[&(&y * &g).sum(Kind::Float)], &inputs, false, false);
        let want = Tensor::run_backward(&[&(&want * &g).sum(Kind::Float)], &inputs, false, false);
        for (i, (a, w)) in got.iter().zip(&want).enumerate() {
            assert!(a.equal(w), "batch {b}, gradient {i}");
        }
        let _ = tch::no_grad(|| layer.forward(&x, &mut Tape::off()).unwrap());
        assert!(bias.equal(&bias_before));
    }
}

// ---------------------------------------------------------------------------
// The guard.

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The library sources, each with line comments removed.
fn library_sources() -> Vec<(PathBuf, Vec<String>)> {
    walkdir::WalkDir::new(crate_dir().join("src"))
        .sort_by_file_name()
        .into_iter()
        .map(|entry| entry.unwrap().into_path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let lines = text
                .lines()
                .map(|l| match l.find("//") {
                    Some(i) => l[..i].to_string(),
                    None => l.to_string(),
                })
                .collect();
            (p, lines)
        })
        .collect()
}

#[test]
fn the_library_denies_both_lints() {
    let lib = std::fs::read_to_string(crate_dir().join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("#![deny(clippy::disallowed_methods, clippy::arithmetic_side_effects)]"),
        "src/lib.rs must deny clippy::disallowed_methods and clippy::arithmetic_side_effects"
    );
}

/// Only `#[cfg(test)]` modules may allow the two lints: a `#[allow]` on
/// library code would silence the guard there.
#[test]
fn only_test_modules_allow_the_lints() {
    let mut bad = Vec::new();
    for (path, lines) in library_sources() {
        for (i, line) in lines.iter().enumerate() {
            let allows = line.contains("allow(")
                && (line.contains("disallowed_methods")
                    || line.contains("arithmetic_side_effects"));
            if !allows {
                continue;
            }
            let before = i.checked_sub(1).map_or("", |j| lines[j].trim());
            let after = lines.get(i + 1).map_or("", |l| l.trim());
            if !(before == "#[cfg(test)]" && after.starts_with("mod tests")) {
                bad.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "the guard is allowed outside a #[cfg(test)] module:\n{}",
        bad.join("\n")
    );
}

/// Every fallible `f_x` the library calls has its panicking twin (`x`, or
/// `g_x` where `x` is an operator) in clippy.toml's disallowed methods, so
/// that the list grows with the code. (A method never used in either form
/// is not checked; see clippy.toml.)
#[test]
fn every_fallible_call_has_its_panicking_twin_disallowed() {
    let config = std::fs::read_to_string(crate_dir().join("clippy.toml")).unwrap();
    let listed: BTreeSet<String> = config
        .lines()
        .filter_map(|l| l.split("path = \"tch::Tensor::").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect();
    let mut missing = BTreeSet::new();
    for (_, lines) in library_sources() {
        for line in lines {
            let bytes = line.as_bytes();
            let mut start = 0;
            while let Some(i) = line[start..].find("f_") {
                let at = start + i;
                start = at + 2;
                let boundary =
                    at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
                let name: String = line[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let called = line[at + 2 + name.len()..].starts_with('(');
                if boundary
                    && called
                    && !listed.contains(&name)
                    && !listed.contains(&format!("g_{name}"))
                {
                    missing.insert(name);
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "add these to disallowed-methods in crates/train/clippy.toml: {missing:?}"
    );
}
