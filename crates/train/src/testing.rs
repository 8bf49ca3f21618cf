//! The microbatch oracle, shared by every layer and model test (ARCHITECTURE.md, "Testing"; "the
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
use tch::{Kind, TchError, Tensor};

use crate::engine::{forward_backward, per_sample_cross_entropy, Batch, ClipCoefficients};
use crate::error::{torch, Result};
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
    fn forward(&self, x: &Tensor, tape: &mut Tape) -> Result<Tensor> {
        // A tanh keeps the loss non-linear in the layer output.
        crate::layers::ops::tanh(&crate::layers::ops::flatten(&self.layer.forward(x, tape)?)?)
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
    let norms = || -> Result<(f64, f64), TchError> {
        let got = got.f_to_kind(Kind::Double)?;
        let want = want.f_to_kind(Kind::Double)?;
        let diff = got.f_sub(&want)?.f_norm()?.f_double_value(&[])?;
        let scale = want.f_norm()?.f_double_value(&[])?;
        Ok((diff, scale))
    };
    let (diff, scale) = norms().map_err(|e| format!("{what}: {e}"))?;
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
pub fn normal_tensor(shape: &[i64], seed: u64) -> Result<Tensor> {
    let n: i64 = shape.iter().product();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let values: Vec<f32> = (0..n)
        .map(|_| rng.sample::<f64, _>(StandardNormal) as f32)
        .collect();
    torch("uploading a random tensor", || {
        Tensor::f_from_slice(&values)?.f_reshape(shape)
    })
}

/// A float32 tensor of i.i.d. `U[0, 1)` values from ChaCha20 seeded with `seed`.
pub fn uniform_tensor(shape: &[i64], seed: u64) -> Result<Tensor> {
    let n: i64 = shape.iter().product();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let values: Vec<f32> = (0..n).map(|_| rng.gen::<f32>()).collect();
    torch("uploading a random tensor", || {
        Tensor::f_from_slice(&values)?.f_reshape(shape)
    })
}

/// Every parameter of `model`, detached and flattened into one vector in
/// [`Model::named_parameters`] order: to compare a model's state before and
/// after.
pub fn flat_parameters(model: &dyn Model) -> Result<Tensor> {
    torch("flattening the parameters", || {
        let parts = model
            .named_parameters()
            .iter()
            .map(|(_, t)| t.f_detach()?.f_reshape([-1]))
            .collect::<Result<Vec<_>, TchError>>()?;
        Tensor::f_cat(&parts, 0)
    })
}

/// Random inputs `[B, M, sample]` (standard normal) and targets `[B, M]`
/// (uniform classes), from ChaCha20 seeded with `seed`.
pub fn random_batch(model: &dyn Model, b: i64, seed: u64) -> Result<(Tensor, Tensor)> {
    let mut shape = vec![b, model.replicas()];
    shape.extend(model.sample_shape());
    let x = normal_tensor(&shape, seed)?;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(1);
    let classes = model.num_classes();
    let y: Vec<i64> = (0..b * model.replicas())
        .map(|_| rng.gen_range(0..classes))
        .collect();
    let y = torch("uploading random targets", || {
        Tensor::f_from_slice(&y)?.f_reshape([b, model.replicas()])
    })?;
    Ok((x, y))
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
    let text = |e: TchError| e.to_string();
    let batch = Batch::new(inputs.shallow_clone(), targets.shallow_clone());
    let bp = forward_backward(model, &batch).map_err(|e| e.to_string())?;
    let psg = bp.per_sample_grads(model).map_err(|e| e.to_string())?;
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
        let x = inputs.f_narrow(0, i, 1).map_err(text)?;
        let y = targets.f_narrow(0, i, 1).map_err(text)?;
        let logits = model
            .forward(&x, &mut Tape::off())
            .map_err(|e| e.to_string())?;
        let losses = per_sample_cross_entropy(&logits, &y).map_err(|e| e.to_string())?;
        for r in 0..m {
            let loss = losses.f_get(0).and_then(|l| l.f_get(r)).map_err(text)?;
            let grads = Tensor::f_run_backward(&[&loss], &ptensors, true, false).map_err(text)?;
            for ((g, (name, _)), o) in psg.iter().zip(&params).zip(&grads) {
                close(
                    &format!("{name} slot {i} replica {r}"),
                    &g.f_get(i).and_then(|g| g.f_get(r)).map_err(text)?,
                    &o.f_get(r).map_err(text)?,
                    tol,
                )?;
            }
        }
    }
    // Squared norms (ghost or materialised, as each layer chooses) against the
    // materialised per-sample gradients.
    let device = inputs.device();
    let mut sq = Tensor::f_zeros([b, m], (Kind::Float, device)).map_err(text)?;
    for g in &psg {
        let _ = g
            .f_square()
            .and_then(|t| t.f_flatten(2, -1))
            .and_then(|t| t.f_sum_dim_intlist(-1, false, None))
            .and_then(|t| sq.f_add_(&t))
            .map_err(text)?;
    }
    let norms = bp.norms(model, &batch).map_err(|e| e.to_string())?;
    close("per-sample squared norms", &norms.sq, &sq, tol)?;
    // Clipped sum with arbitrary coefficients against Σ_b c_b g_b.
    let coef = uniform_tensor(&[b, m], b as u64 * 1_000 + m as u64)
        .map_err(|e| e.to_string())?
        .f_to_device(device)
        .map_err(text)?;
    // Twice: first from the per-sample gradients the norms kept, then, with
    // those forgotten, from each layer's own clipped sum.
    for how in ["kept per-sample gradients", "the layers' own sums"] {
        let sums = bp
            .clipped_sum(
                model,
                &batch,
                &ClipCoefficients {
                    computed: coef.shallow_clone(),
                    overrides: None,
                },
            )
            .map_err(|e| e.to_string())?;
        bp.forget_kept_grads();
        for ((s, g), (name, _)) in sums.0.iter().zip(&psg).zip(&params) {
            let mut cshape = vec![b, m];
            cshape.extend(std::iter::repeat_n(1, g.dim().saturating_sub(2)));
            let want = coef
                .f_reshape(cshape.as_slice())
                .and_then(|c| g.f_mul(&c))
                .and_then(|t| t.f_sum_dim_intlist(0, false, None))
                .map_err(text)?;
            close(&format!("{name} clipped sum ({how})"), s, &want, tol)?;
        }
    }
    Ok(())
}
