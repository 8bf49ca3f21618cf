//! The microbatch oracle, shared by every layer and model test (STYLE.md: "the
//! universal test"): the same batch run one sample at a time through plain
//! autograd must give the per-sample gradients the engine computes.
//!
//! Tolerance, per compared tensor: `‖a − b‖₂ ≤ tol·‖b‖₂` (a relative error
//! in norm; tests use `tol = 1e-5`, fp32 on the CPU). An absolute floor such
//! as `tol·(1 + |b|)` would let percent-level errors through on the small
//! gradients of a trained model, so there is none: an oracle of norm 0 must be
//! matched exactly.
//!
//! Random inputs come from seeded ChaCha20 streams on the host, never from
//! libtorch's process-global generator.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;
use tch::{Kind, Tensor};

use crate::engine::{forward_backward, per_sample_cross_entropy, Batch, ClipCoefficients};
use crate::layers::{PerSampleGrad, Tape};
use crate::models::Model;

/// A model made of one layer: its output, flattened per sample, is read as
/// logits. Lets a layer go through the same oracle as the models.
#[derive(Debug)]
pub struct SingleLayer<L> {
    /// The layer.
    pub layer: L,
    /// Shape of one input sample.
    pub sample_shape: Vec<i64>,
    /// Flattened output size (the number of "classes").
    pub outputs: i64,
    /// Replicas.
    pub replicas: i64,
}

impl<L: PerSampleGrad> Model for SingleLayer<L> {
    fn replicas(&self) -> i64 {
        self.replicas
    }
    fn sample_shape(&self) -> Vec<i64> {
        self.sample_shape.clone()
    }
    fn num_classes(&self) -> i64 {
        self.outputs
    }
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Tensor {
        // A tanh keeps the loss non-linear in the layer output.
        crate::layers::ops::flatten(&self.layer.forward(x, tape)).tanh()
    }
    fn layers(&self) -> Vec<(String, &dyn PerSampleGrad)> {
        vec![("layer".to_string(), &self.layer as &dyn PerSampleGrad)]
    }
}

/// `‖got − want‖₂ ≤ tol·‖want‖₂`, computed in float64.
pub fn close(what: &str, got: &Tensor, want: &Tensor, tol: f64) -> Result<(), String> {
    if got.size() != want.size() {
        return Err(format!(
            "{what}: shape {:?} != oracle {:?}",
            got.size(),
            want.size()
        ));
    }
    if got.numel() == 0 {
        return Ok(());
    }
    let got = got.to_kind(Kind::Double);
    let want = want.to_kind(Kind::Double);
    let diff = (&got - &want).norm().double_value(&[]);
    let scale = want.norm().double_value(&[]);
    // NaN fails too.
    if diff.is_nan() || diff > tol * scale {
        return Err(format!(
            "{what}: ‖engine − oracle‖ = {diff:e} exceeds {tol:e}·‖oracle‖ = {:e}",
            tol * scale
        ));
    }
    Ok(())
}

/// A float32 tensor of i.i.d. standard normals from ChaCha20 seeded with `seed`.
pub fn normal_tensor(shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let values: Vec<f32> = (0..n)
        .map(|_| rng.sample::<f64, _>(StandardNormal) as f32)
        .collect();
    Tensor::from_slice(&values).reshape(shape)
}

/// A float32 tensor of i.i.d. `U[0, 1)` values from ChaCha20 seeded with `seed`.
pub fn uniform_tensor(shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let values: Vec<f32> = (0..n).map(|_| rng.gen::<f32>()).collect();
    Tensor::from_slice(&values).reshape(shape)
}

/// Random inputs `[B, M, sample]` (standard normal) and targets `[B, M]`
/// (uniform classes), from ChaCha20 seeded with `seed`.
pub fn random_batch(model: &dyn Model, b: i64, seed: u64) -> (Tensor, Tensor) {
    let mut shape = vec![b, model.replicas()];
    shape.extend(model.sample_shape());
    let x = normal_tensor(&shape, seed);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(1);
    let classes = model.num_classes();
    let y: Vec<i64> = (0..b * model.replicas())
        .map(|_| rng.gen_range(0..classes))
        .collect();
    (x, Tensor::from_slice(&y).reshape([b, model.replicas()]))
}

/// The oracle: per-sample gradients, per-sample squared norms and a
/// random-coefficient clipped sum of the engine against one-sample-at-a-time
/// autograd, for every slot `(b, m)` of the batch.
pub fn check_against_oracle(
    model: &dyn Model,
    inputs: &Tensor,
    targets: &Tensor,
    tol: f64,
) -> Result<(), String> {
    let batch = Batch::new(inputs.shallow_clone(), targets.shallow_clone());
    let bp = forward_backward(model, &batch).map_err(|e| e.to_string())?;
    let psg = bp.per_sample_grads(model);
    let params: Vec<(String, Tensor)> = model.named_parameters();
    if psg.len() != params.len() {
        return Err(format!(
            "{} per-sample gradients for {} parameters",
            psg.len(),
            params.len()
        ));
    }
    let b = inputs.size()[0];
    let m = model.replicas();
    for (g, (name, p)) in psg.iter().zip(&params) {
        let mut want = vec![b];
        want.extend(p.size());
        if g.size() != want {
            return Err(format!(
                "{name}: per-sample gradient shape {:?}, expected {want:?}",
                g.size()
            ));
        }
    }
    let ptensors: Vec<&Tensor> = params.iter().map(|(_, t)| t).collect();
    for i in 0..b {
        let logits = model.forward(&inputs.narrow(0, i, 1), &mut Tape::off());
        let losses = per_sample_cross_entropy(&logits, &targets.narrow(0, i, 1));
        for r in 0..m {
            let loss = losses.get(0).get(r);
            let grads = Tensor::f_run_backward(&[&loss], &ptensors, true, false)
                .map_err(|e| e.to_string())?;
            for ((g, (name, _)), o) in psg.iter().zip(&params).zip(&grads) {
                close(
                    &format!("{name} slot {i} replica {r}"),
                    &g.get(i).get(r),
                    &o.get(r),
                    tol,
                )?;
            }
        }
    }
    // Squared norms (ghost or materialised, as each layer chooses) against the
    // materialised per-sample gradients.
    let mut sq = Tensor::zeros([b, m], (Kind::Float, tch::Device::Cpu));
    for g in &psg {
        sq += g.square().flatten(2, -1).sum_dim_intlist(-1, false, None);
    }
    let norms = bp.norms(model, &batch).map_err(|e| e.to_string())?;
    close("per-sample squared norms", &norms.sq, &sq, tol)?;
    // Clipped sum with arbitrary coefficients against Σ_b c_b g_b.
    let coef = uniform_tensor(&[b, m], b as u64 * 1_000 + m as u64);
    let sums = bp
        .clipped_sum(
            model,
            &batch,
            &ClipCoefficients {
                computed: coef.shallow_clone(),
                overrides: vec![],
            },
        )
        .map_err(|e| e.to_string())?;
    for ((s, g), (name, _)) in sums.0.iter().zip(&psg).zip(&params) {
        let mut cshape = vec![b, m];
        cshape.extend(std::iter::repeat_n(1, g.dim() - 2));
        let want = (g * coef.reshape(cshape.as_slice())).sum_dim_intlist(0, false, None);
        close(&format!("{name} clipped sum"), s, &want, tol)?;
    }
    Ok(())
}
