//! The engine's invariants are enforced, not assumed: each test here fails
//! when its guard is removed from `engine.rs`.
//!
//! * clip coefficients keep `c·‖g‖ ≤ C` exactly, also one ulp above `C`;
//! * a layer's squared norms that round below 0 are clamped, not NaN;
//! * a non-finite norm or clipped sum stops the step before the update and
//!   names the step and the layer;
//! * records are matched to layers by identity: order does not matter, a
//!   missing, repeated or unlisted layer is an error.

// Tests may panic: the fallible-API guard (crates/train/clippy.toml) is for library code.
#![allow(clippy::disallowed_methods)]

use dpaudit_train::engine::clip_coefficients;
use dpaudit_train::layers::{Linear, LinearConfig, PerSampleGrad, Recorded, Tape};
use dpaudit_train::testing::{flat_parameters, random_batch};
use dpaudit_train::{Batch, DpSgd, DpSgdConfig, Init, Model, NoiseStreams, Normaliser, TrainError};
use tch::{Device, Kind, Tensor};

/// Float32 values `n` just above and around `C` (the first 64 ulps above
/// it, then a spread over `[C, 4C]`), as squared norms `n²` in float32.
fn norms_near(c: f32) -> Vec<f32> {
    let mut out = Vec::new();
    let mut n = c;
    for _ in 0..64 {
        n = f32::from_bits(n.to_bits() + 1);
        out.push(n);
    }
    for i in 0..20_000 {
        out.push(c * (1.0 + 3.0 * i as f32 / 20_000.0));
    }
    out
}

#[test]
fn clip_coefficients_keep_every_clipped_norm_at_most_c() {
    for c in [1.0f32, 0.1, 3.7, 1e-3] {
        let norms = norms_near(c);
        let sq: Vec<f32> = norms.iter().map(|n| n * n).collect();
        let coef = clip_coefficients(&Tensor::from_slice(&sq), f64::from(c)).unwrap();
        let coef = Vec::<f32>::try_from(&coef).unwrap();
        let mut naive_violations = 0;
        for (&s, &k) in sq.iter().zip(&coef) {
            // The engine's norm: √sq in float64 (sq is the float32 the layers sum).
            let norm = f64::from(s).sqrt();
            assert!(
                f64::from(k) * norm <= f64::from(c),
                "C = {c}, ‖g‖ = {norm}: c·‖g‖ = {} > C",
                f64::from(k) * norm
            );
            // The unguarded formula min(1, C/‖g‖) in float32 exceeds C on
            // some of these inputs: the guard is not vacuous.
            let naive = (c / s.sqrt()).min(1.0);
            if f64::from(naive) * norm > f64::from(c) {
                naive_violations += 1;
            }
        }
        assert!(
            naive_violations > 0,
            "C = {c}: no input where the naive coefficient overshoots"
        );
    }
}

#[test]
fn norms_at_most_c_pass_unchanged() {
    // Norms whose squares are exact in float32, so that √sq is exactly C.
    for c in [1.0f32, 0.5, 3.0, 1.5] {
        let sq = [c * c, (0.5 * c) * (0.5 * c), 0.0];
        let coef = clip_coefficients(&Tensor::from_slice(&sq), f64::from(c)).unwrap();
        assert_eq!(Vec::<f32>::try_from(&coef).unwrap(), vec![1.0; 3]);
    }
}

#[test]
fn zero_and_nan_norms_give_coefficient_one_and_nan() {
    let c = clip_coefficients(&Tensor::from_slice(&[0f32, f32::NAN, 4.0]), 1.0).unwrap();
    let c = Vec::<f32>::try_from(&c).unwrap();
    assert_eq!(c[0], 1.0);
    assert!(c[1].is_nan());
    // ‖g‖ = 2, C = 1: 1/2 exactly.
    assert_eq!(c[2], 0.5);
}

/// What a [`Faulty`] layer does to its squared norms or clipped sum.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Squared norms as computed (a correct layer).
    None,
    /// Slot (0, 0)'s squared norm replaced by −10³: a ghost norm that came
    /// out below 0 (rounding does that to a near-zero gradient; the value is
    /// exaggerated so that the sum over layers goes negative too).
    NegativeNorm,
    /// Slot (0, 0)'s squared norm replaced by NaN.
    NanNorm,
    /// The clipped sum of the weight replaced by +∞ at one coordinate.
    InfiniteSum,
    /// The clipped sum of the bias (the layer's second parameter) replaced
    /// by NaN at one coordinate.
    NanBiasSum,
}

/// A linear layer with an injected fault; records itself under its own
/// identity.
#[derive(Debug)]
struct Faulty {
    inner: Linear,
    fault: Fault,
}

impl PerSampleGrad for Faulty {
    fn parameters(&self) -> Vec<(&'static str, &Tensor)> {
        self.inner.parameters()
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor, TrainError> {
        let mut own = Tape::recording();
        let y = self.inner.forward(x, &mut own)?;
        let rec = own.into_records().pop().unwrap();
        tape.record(
            dpaudit_train::layers::LayerId::of(self),
            &rec.input,
            &rec.output,
        )?;
        Ok(y)
    }
    fn per_sample_grads(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
    ) -> Result<Vec<Tensor>, TrainError> {
        self.inner.per_sample_grads(rec, backprop)
    }
    fn per_sample_sq_norms(&self, rec: &Recorded, backprop: &Tensor) -> Result<Tensor, TrainError> {
        let sq = self.inner.per_sample_sq_norms(rec, backprop)?;
        let value = match self.fault {
            Fault::NegativeNorm => -1e3,
            Fault::NanNorm => f64::NAN,
            Fault::None | Fault::InfiniteSum | Fault::NanBiasSum => return Ok(sq),
        };
        let _ = sq.get(0).get(0).fill_(value);
        Ok(sq)
    }
    fn clipped_sum(
        &self,
        rec: &Recorded,
        backprop: &Tensor,
        coef: &Tensor,
    ) -> Result<Vec<Tensor>, TrainError> {
        let sums = self.inner.clipped_sum(rec, backprop, coef)?;
        match self.fault {
            Fault::InfiniteSum => {
                let _ = sums[0].reshape([-1]).get(0).fill_(f64::INFINITY);
            }
            Fault::NanBiasSum => {
                let _ = sums[1].reshape([-1]).get(0).fill_(f64::NAN);
            }
            _ => {}
        }
        Ok(sums)
    }
}

/// A two-layer network `first → tanh → second`; `listed` says which layers
/// `Model::layers` lists and in which order (indices into [first, second]),
/// `calls` which layers the forward pass calls, in order.
#[derive(Debug)]
struct TwoLayer {
    layers: [Faulty; 2],
    listed: Vec<usize>,
    calls: Vec<usize>,
}

impl TwoLayer {
    fn new(seed: u64, fault: Fault) -> Self {
        let mut init = Init::new(seed, 1, Device::Cpu);
        let cfg = |i, o| LinearConfig {
            in_features: i,
            out_features: o,
            bias: true,
        };
        let first = Linear::new(&mut init, cfg(4, 4)).unwrap();
        let second = Linear::new(&mut init, cfg(4, 3)).unwrap();
        Self {
            layers: [
                Faulty {
                    inner: first,
                    fault,
                },
                Faulty {
                    inner: second,
                    fault: Fault::None,
                },
            ],
            listed: vec![0, 1],
            calls: vec![0, 1],
        }
    }
}

impl Model for TwoLayer {
    fn replicas(&self) -> i64 {
        1
    }
    fn sample_shape(&self) -> Vec<i64> {
        vec![4]
    }
    fn num_classes(&self) -> i64 {
        3
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor, TrainError> {
        let mut h = x.shallow_clone();
        for &i in &self.calls {
            // Layer 1 maps 4 → 3; when it is called first (a test of call
            // order), pad its output back to width 4 for layer 0.
            h = self.layers[i].forward(&h, tape)?;
            if h.size()[2] == 3 && i == 1 && self.calls.last() != Some(&1) {
                h = Tensor::cat(&[&h, &h.narrow(2, 0, 1)], 2);
            }
            h = h.tanh();
        }
        if h.size()[2] == 4 {
            h = h.narrow(2, 0, 3);
        }
        Ok(h)
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        let names = ["first", "second"];
        self.listed
            .iter()
            .map(|&i| (names[i].to_string(), &self.layers[i] as &dyn PerSampleGrad))
            .collect()
    }
}

fn dp(noise_multiplier: f64) -> DpSgd {
    DpSgd::new(
        DpSgdConfig {
            noise_multiplier,
            max_grad_norm: 1.0,
            learning_rate: 0.1,
            normaliser: Normaliser::FixedBatchSize(3),
            momentum: 0.0,
            weight_decay: 0.0,
        },
        NoiseStreams::replayable(1, 1),
    )
    .unwrap()
}

fn flat(model: &dyn Model) -> Tensor {
    flat_parameters(model).unwrap()
}

#[test]
fn a_norm_that_rounds_below_zero_is_clamped() {
    let model = TwoLayer::new(3, Fault::NegativeNorm);
    let (x, y) = random_batch(&model, 3, 7).unwrap();
    let report = dp(1.0).step(&model, &Batch::new(x, y)).unwrap();
    assert_eq!(report.samples, 3.0);
}

#[test]
fn a_nan_norm_stops_the_step_naming_step_and_layer() {
    let model = TwoLayer::new(3, Fault::NanNorm);
    let (x, y) = random_batch(&model, 3, 7).unwrap();
    let before = flat(&model);
    let err = dp(1.0).step(&model, &Batch::new(x, y)).unwrap_err();
    match &err {
        TrainError::NonFinite { step, layer, what } => {
            assert_eq!((*step, layer.as_str()), (0, "first"));
            assert!(what.contains("norm"), "{err}");
        }
        other => panic!("expected NonFinite, got {other}"),
    }
    assert!(flat(&model).equal(&before), "parameters changed");
}

#[test]
fn a_non_finite_clipped_sum_stops_the_step_naming_step_and_layer() {
    // In a layer's first parameter (the weight) and in its second (the
    // bias): every parameter of a layer is checked.
    for fault in [Fault::InfiniteSum, Fault::NanBiasSum] {
        a_non_finite_clipped_sum_stops_the_step(fault);
    }
}

fn a_non_finite_clipped_sum_stops_the_step(fault: Fault) {
    let model = TwoLayer::new(3, fault);
    let mut opt = dp(0.0);
    // One good step first, so that the step index in the message is not 0.
    let healthy = TwoLayer::new(3, Fault::None);
    let (x, y) = random_batch(&model, 3, 8).unwrap();
    opt.step(&healthy, &Batch::new(x.shallow_clone(), y.shallow_clone()))
        .unwrap();
    let before = flat(&model);
    let err = opt.step(&model, &Batch::new(x, y)).unwrap_err();
    match &err {
        TrainError::NonFinite { step, layer, what } => {
            assert_eq!((*step, layer.as_str()), (1, "first"));
            assert!(what.contains("clipped sum"), "{err}");
        }
        other => panic!("expected NonFinite, got {other}"),
    }
    assert!(flat(&model).equal(&before), "parameters changed");
}

/// The same network listed in reverse order: the records are matched by
/// identity, so the clipped sums per parameter are the same tensors (in the
/// listed order).
#[test]
fn records_are_matched_to_layers_by_identity_not_position() {
    let forward = TwoLayer::new(5, Fault::None);
    let mut reversed = TwoLayer::new(5, Fault::None);
    reversed.listed = vec![1, 0];
    let (x, y) = random_batch(&forward, 4, 9).unwrap();
    let batch = Batch::new(x, y);
    let (a, _, _) = dp(0.0).noisy_sum(&forward, &batch).unwrap();
    let (b, _, _) = dp(0.0).noisy_sum(&reversed, &batch).unwrap();
    // forward lists [first.weight, first.bias, second.weight, second.bias];
    // reversed lists the second layer's two parameters first.
    assert_eq!(a.0.len(), 4);
    for (i, j) in [(0, 2), (1, 3), (2, 0), (3, 1)] {
        assert!(a.0[i].equal(&b.0[j]), "parameter {i} differs");
    }
}

#[test]
fn a_missing_repeated_or_unlisted_layer_is_an_error() {
    let (x, y) = {
        let m = TwoLayer::new(5, Fault::None);
        random_batch(&m, 2, 10).unwrap()
    };
    let batch = Batch::new(x, y);
    let mut listed_only_first = TwoLayer::new(5, Fault::None);
    listed_only_first.listed = vec![0];
    let mut called_twice = TwoLayer::new(5, Fault::None);
    called_twice.calls = vec![0, 0, 1];
    let mut never_called = TwoLayer::new(5, Fault::None);
    never_called.calls = vec![1];
    never_called.layers[1].inner = Linear::new(
        &mut Init::new(6, 1, Device::Cpu),
        LinearConfig {
            in_features: 4,
            out_features: 3,
            bias: true,
        },
    )
    .unwrap();
    for (model, expected) in [
        (&listed_only_first, "does not list"),
        (&called_twice, "twice"),
        (&never_called, "did not record"),
    ] {
        let err = dp(0.0).noisy_sum(model, &batch).unwrap_err();
        assert!(
            matches!(err, TrainError::LayerRecords { .. }) && err.to_string().contains(expected),
            "{err}"
        );
    }
}

/// Momentum and weight decay against `torch.optim.SGD`'s update written out
/// by hand on plain autograd gradients (σ = 0, C large enough that nothing
/// is clipped, so the DP step's gradient is the mean over the batch).
#[test]
fn momentum_and_weight_decay_follow_torch_sgd() {
    let (lr, mu, wd, b) = (0.2, 0.9, 0.01, 4i64);
    let model = TwoLayer::new(11, Fault::None);
    let reference = TwoLayer::new(11, Fault::None);
    let mut opt = DpSgd::new(
        DpSgdConfig {
            noise_multiplier: 0.0,
            max_grad_norm: 1e6,
            learning_rate: lr,
            normaliser: Normaliser::FixedBatchSize(b as u64),
            momentum: mu,
            weight_decay: wd,
        },
        NoiseStreams::replayable(0, 1),
    )
    .unwrap();
    let mut buffers: Option<Vec<Tensor>> = None;
    for step in 0..4 {
        let (x, y) = random_batch(&model, b, 100 + step).unwrap();
        opt.step(&model, &Batch::new(x.shallow_clone(), y.shallow_clone()))
            .unwrap();
        // Reference: mean cross-entropy, autograd, then SGD with momentum
        // (dampening 0, not Nesterov): v ← μv + (g + λθ), θ ← θ − ηv; the first
        // step sets v = g + λθ.
        let params: Vec<Tensor> = reference
            .named_parameters()
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        let logits = reference.forward(&x, &mut Tape::off()).unwrap();
        let loss = dpaudit_train::engine::per_sample_cross_entropy(&logits, &y)
            .unwrap()
            .sum(Kind::Float)
            / b as f64;
        let grads = Tensor::run_backward(&[&loss], &params, false, false);
        tch::no_grad(|| {
            let updates: Vec<Tensor> = params.iter().zip(&grads).map(|(p, g)| g + p * wd).collect();
            let v: Vec<Tensor> = match buffers.take() {
                None => updates.iter().map(|u| u.copy()).collect(),
                Some(old) => old.iter().zip(&updates).map(|(o, u)| o * mu + u).collect(),
            };
            for (p, v) in params.iter().zip(&v) {
                let _ = p.shallow_clone().f_sub_(&(v * lr)).unwrap();
            }
            buffers = Some(v);
        });
        for ((name, a), (_, r)) in model
            .named_parameters()
            .iter()
            .zip(reference.named_parameters())
        {
            dpaudit_train::testing::close(&format!("{name} after step {step}"), a, &r, 1e-5)
                .unwrap();
        }
    }
}
