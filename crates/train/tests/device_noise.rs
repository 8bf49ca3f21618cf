//! The replayable DP noise drawn on the device (`NoiseGenerator::DevicePhilox`,
//! the default of replayable runs on a GPU; run here on the CPU): each
//! replica's row is its own Philox stream, so it depends on the run's key, the
//! run index and the step alone; its values are standard normals scaled by
//! the std; and secure runs never use it.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_data::seed::{Mode, Randomness, Stream};
use dpaudit_train::noise::{NoiseGenerator, NoiseStreams};
use dpaudit_train::philox::{Philox, RowKeys};
use tch::{Device, Kind, Tensor};

fn device_streams(seed: u64, runs: &[u64]) -> NoiseStreams {
    NoiseStreams::new(&Randomness::replayable(seed), runs)
        .with_generator(NoiseGenerator::DevicePhilox)
        .unwrap()
}

/// One parameter per replica shaped `[M, 3, 5]` and one `[M, 7]`: P = 22.
fn params(m: i64) -> Vec<Tensor> {
    vec![
        Tensor::zeros([m, 3, 5], (Kind::Float, Device::Cpu)),
        Tensor::zeros([m, 7], (Kind::Float, Device::Cpu)),
    ]
}

fn flat(noise: &[Tensor]) -> Tensor {
    Tensor::cat(
        &noise.iter().map(|t| t.flatten(1, -1)).collect::<Vec<_>>(),
        1,
    )
}

#[test]
fn every_row_is_its_own_keys_philox_stream() {
    let root = Randomness::replayable(5).stream(Stream::Noise);
    let keys: Vec<_> = (0..3u64).map(|r| root.child(r)).collect();
    let rows = RowKeys::new(&keys, Device::Cpu).unwrap();
    let tag = [7, 0, 9];
    // 13 values: an odd count, so the last block's second value is dropped.
    let all = rows.normal(13, tag).unwrap();
    assert_eq!(all.size(), [3, 13]);
    for (r, key) in keys.iter().enumerate() {
        let alone = Philox::new(*key, Device::Cpu).normal(&[13], tag).unwrap();
        assert!(all.get(r as i64).equal(&alone), "row {r}");
    }
    // Scaled in float64, then rounded once to float32.
    let scaled = rows.scaled_normal(13, tag, 2.5, Kind::Float).unwrap();
    assert!(scaled.equal(&(all * 2.5).to_kind(Kind::Float)));
}

#[test]
fn a_runs_noise_depends_on_its_run_and_step_only() {
    let (mut three, mut one) = (device_streams(11, &[4, 5, 6]), device_streams(11, &[5]));
    let step0 = flat(&three.next_step(1.5, &params(3), Device::Cpu).unwrap());
    let alone0 = flat(&one.next_step(1.5, &params(1), Device::Cpu).unwrap());
    assert!(step0.get(1).equal(&alone0.get(0)), "run 5 differs by stack");
    let step1 = flat(&three.next_step(1.5, &params(3), Device::Cpu).unwrap());
    let alone1 = flat(&one.next_step(1.5, &params(1), Device::Cpu).unwrap());
    assert!(step1.get(1).equal(&alone1.get(0)));
    assert!(!step0.equal(&step1), "two steps drew the same noise");
    assert!(
        !step0.get(0).equal(&step0.get(2)),
        "two runs drew the same noise"
    );
    // Replay: the same seed and runs give the same draws.
    let again = flat(
        &device_streams(11, &[4, 5, 6])
            .next_step(1.5, &params(3), Device::Cpu)
            .unwrap(),
    );
    assert!(again.equal(&step0));
    let other_seed = flat(
        &device_streams(12, &[4, 5, 6])
            .next_step(1.5, &params(3), Device::Cpu)
            .unwrap(),
    );
    assert!(!other_seed.equal(&step0));
}

/// Kolmogorov–Smirnov against N(0, std²) for each of 3 rows of n = 40,000
/// draws: √n·D converges to the Kolmogorov distribution, whose 0.999 quantile
/// is 1.949 (Kolmogorov 1933; Smirnov 1948's table), so a correct generator
/// fails a row with probability about 10⁻³ (the draws are fixed by the seed,
/// so the outcome is too). A std off by 5 % moves the CDF by up to
/// φ(1)·0.05 ≈ 0.012 > 1.949/√n ≈ 0.0097 and fails (the std itself is checked
/// to 1.5 % in `clipping_noise.rs`).
#[test]
fn device_noise_is_normal_with_the_requested_std() {
    let (m, n, std) = (3i64, 40_000i64, 2.5);
    let mut streams = device_streams(21, &[0, 1, 2]);
    let p = [Tensor::zeros([m, n], (Kind::Float, Device::Cpu))];
    let noise = streams.next_step(std, &p, Device::Cpu).unwrap();
    assert_eq!(noise[0].kind(), Kind::Float);
    for r in 0..m {
        let mut v: Vec<f64> = Vec::<f64>::try_from(noise[0].get(r).to_kind(Kind::Double)).unwrap();
        v.sort_by(f64::total_cmp);
        let nf = n as f64;
        let d = v
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = dpaudit_gaussian::cdf(x / std);
                (f - i as f64 / nf)
                    .abs()
                    .max(((i + 1) as f64 / nf - f).abs())
            })
            .fold(0.0f64, f64::max);
        assert!(d < 1.95 / nf.sqrt(), "row {r}: KS statistic {d}");
    }
}

#[test]
fn secure_runs_never_draw_on_the_device() {
    let secure = Randomness::secure(1).unwrap();
    assert_eq!(secure.mode(), Mode::Secure);
    let streams = NoiseStreams::new(&secure, &[0]);
    assert_eq!(
        streams.generator(Device::Cuda(0)),
        NoiseGenerator::HostChaCha20
    );
    assert!(streams
        .with_generator(NoiseGenerator::DevicePhilox)
        .is_err());
    let replayable = NoiseStreams::replayable(1, 1);
    assert_eq!(
        replayable.generator(Device::Cuda(0)),
        NoiseGenerator::DevicePhilox
    );
    assert_eq!(
        replayable.generator(Device::Cpu),
        NoiseGenerator::HostChaCha20
    );
}
