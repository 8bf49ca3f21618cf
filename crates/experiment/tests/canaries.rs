//! Canary audits : scores computed on the device against
//! the host definitions of `dpaudit_attacks::scores`, the exact contribution of
//! a Dirac canary and its clipping, inclusion bits, insertion schedules, and
//! inconsistent experiment files refused before any training.
//!
//! Every test trains a 600 → 8 → 2 MLP (4,826 parameters) on the synthetic
//! Purchase-100 stand-in (no files needed) for a handful of steps.
//!
//! Every test that trains holds [`TORCH`] with one intra-op thread, so that
//! `cargo test`'s threads do not oversubscribe the cores (each run owns its
//! randomness, so concurrency cannot change a draw).

// Tests may panic: the fallible-API guard (crates/train/clippy.toml, shared by this crate) is for library code.
#![allow(clippy::disallowed_methods)]

mod common;

use std::sync::{Mutex, MutexGuard};

use common::fixtures::{with, TINY_CANARY};
use common::{canary_config, read_canary};
use dpaudit_attacks::scores::{
    cosine_score, dirac_score, inner_product_score, loss_difference_scores, loss_scores,
    IterateScore,
};
use dpaudit_data::sampler::{BatchSampler, Sampler};
use dpaudit_data::seed::{RunSeed, Stream};
use dpaudit_experiment::canary::canaries::{
    canary_gradients, copy_replica_zero, flat_parameters, gather_with_canaries, inclusion_bits,
    insertion_steps, Canaries, CanaryKind, Extra, ScoreBook, ScoreKind,
};
use dpaudit_experiment::canary::chunk::{ChunkScores, Prepared};
use dpaudit_experiment::canary::settings::ExperimentConfig;
use dpaudit_train::engine::per_sample_cross_entropy;
use dpaudit_train::layers::Tape;
use dpaudit_train::models::Mlp;
use dpaudit_train::trainer::{build_model, Silent};
use dpaudit_train::{
    Batch, DpSgd, DpSgdConfig, Fault, Init, Model, NoiseStreams, Normaliser, Override, SlotOverride,
};
use tch::{Device, Kind, Tensor};

static TORCH: Mutex<()> = Mutex::new(());

/// Holds [`TORCH`] with one intra-op thread: the training tests run one at a
/// time anyway, and on the shared 2-core machine libtorch's spinning OpenMP
/// workers made the suite 3× slower.
fn torch_lock() -> MutexGuard<'static, ()> {
    tch::set_num_threads(1);
    TORCH.lock().unwrap_or_else(|e| e.into_inner())
}

/// f32 unit roundoff `u = 2⁻²⁴` (IEEE 754 binary32, round to nearest).
const U32: f64 = 1.0 / 16_777_216.0;

const POISSON: &str = "kind = \"poisson\"\nsample_rate = 0.05";

#[derive(Clone, Copy)]
struct Shape<'a> {
    runs: u64,
    replicas: usize,
    steps: u64,
    train_size: usize,
    sampler: &'a str,
}

const SMALL: Shape = Shape {
    runs: 6,
    replicas: 3,
    steps: 4,
    train_size: 200,
    sampler: POISSON,
};

/// The training part of `tests/fixtures/tiny-canary.toml` (all before its
/// `[canary]`) in `shape` with seed 7, followed by `rest` (the `[canary]` and
/// `[audit]` of the test).
fn text(shape: Shape, rest: &str) -> String {
    let train = &TINY_CANARY[..TINY_CANARY.find("[canary]").unwrap()];
    let runs = format!("runs = {}", shape.runs);
    let replicas = format!("replicas = {}", shape.replicas);
    let steps = format!("steps = {}", shape.steps);
    let train_size = format!("train_size = {}", shape.train_size);
    let sampler = format!("[train.sampler]\n{}\n", shape.sampler);
    let mut t = with(
        train,
        &[
            ("runs = 40", &runs),
            ("seed = 5", "seed = 7"),
            ("replicas = 10", &replicas),
            ("steps = 3", &steps),
            ("train_size = 200", &train_size),
            (
                "[train.sampler]\nkind = \"fixed_sequence\"\nbatch_size = 20\n",
                &sampler,
            ),
        ],
    );
    t.push_str(rest);
    t
}

fn experiment(shape: Shape, rest: &str) -> ExperimentConfig {
    canary_config(&text(shape, rest), "test.toml")
}

fn host(t: &Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(t.to_device(Device::Cpu).to_kind(Kind::Float).reshape([-1])).unwrap()
}

/// `[M, P]` parameters as one host vector per replica.
fn per_replica(model: &dyn Model) -> Vec<Vec<f32>> {
    let flat = host(&flat_parameters(model).unwrap());
    let p = model.num_parameters() as usize;
    flat.chunks(p).map(<[f32]>::to_vec).collect()
}

fn dp_config_of(p: &Prepared) -> DpSgdConfig {
    let dp = &p.config.train.dp;
    DpSgdConfig {
        noise_multiplier: dp.noise_multiplier,
        max_grad_norm: dp.max_grad_norm,
        learning_rate: dp.learning_rate,
        normaliser: match &p.sampler {
            Sampler::Poisson(_) => Normaliser::ExpectedBatchSize(p.sampler.expected_batch_size()),
            other => Normaliser::FixedBatchSize(other.expected_batch_size() as u64),
        },
        momentum: dp.momentum,
        weight_decay: dp.weight_decay,
    }
}

/// Clipped gradient of input canary `j` at the current parameters for every
/// replica, by plain autograd on the one-record loss (the microbatch oracle of
/// `dpaudit_train::testing`, independent of the engine's book-keeping), clipped
/// on the host: `min(1, C/‖g‖)·g` (Steinke, Nasr & Jagielski 2023, §2: "(clipped) gradients").
fn autograd_canary_gradient(model: &dyn Model, p: &Prepared, j: usize) -> Vec<Vec<f32>> {
    let rec = p.canaries.records.as_ref().unwrap();
    let m = model.replicas();
    let len = rec.record_len();
    let x = Tensor::from_slice(&rec.features()[j * len..(j + 1) * len])
        .reshape([1, 1, len as i64])
        .expand([1, m, len as i64], false)
        .contiguous();
    let y = Tensor::from_slice(&[rec.labels()[j]])
        .reshape([1, 1])
        .expand([1, m], false);
    let logits = model.forward(&x, &mut Tape::off()).unwrap();
    let total = per_sample_cross_entropy(&logits, &y.contiguous())
        .unwrap()
        .sum(Kind::Float);
    let params: Vec<Tensor> = model
        .named_parameters()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let refs: Vec<&Tensor> = params.iter().collect();
    let grads = Tensor::run_backward(&[&total], &refs, false, false);
    let flat = Tensor::cat(
        &grads.iter().map(|g| g.reshape([m, -1])).collect::<Vec<_>>(),
        1,
    );
    let c = p.config.train.dp.max_grad_norm;
    let p_count = model.num_parameters() as usize;
    host(&flat)
        .chunks(p_count)
        .map(|g| {
            let norm = g.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt();
            let k = if norm > c { c / norm } else { 1.0 };
            g.iter().map(|&v| (f64::from(v) * k) as f32).collect()
        })
        .collect()
}

/// Cross-entropy of every input canary for every replica, `[M][m]`, from the
/// logits copied to the host and evaluated in f64: `logsumexp(z) − z_y`.
fn host_losses(model: &dyn Model, p: &Prepared) -> Vec<Vec<f32>> {
    let rec = p.canaries.records.as_ref().unwrap();
    let m = model.replicas() as usize;
    let n = rec.len();
    let len = rec.record_len();
    let x = Tensor::from_slice(rec.features())
        .reshape([n as i64, 1, len as i64])
        .expand([n as i64, m as i64, len as i64], false)
        .contiguous();
    let logits = tch::no_grad(|| model.forward(&x, &mut Tape::off()).unwrap());
    let k = logits.size()[2] as usize;
    let z = host(&logits);
    (0..m)
        .map(|r| {
            (0..n)
                .map(|j| {
                    let row = &z[(j * m + r) * k..(j * m + r + 1) * k];
                    let max = row
                        .iter()
                        .fold(f64::NEG_INFINITY, |a, &v| a.max(f64::from(v)));
                    let lse = max
                        + row
                            .iter()
                            .map(|&v| (f64::from(v) - max).exp())
                            .sum::<f64>()
                            .ln();
                    (lse - f64::from(row[rec.labels()[j] as usize])) as f32
                })
                .collect()
        })
        .collect()
}

/// What the reference loop saw, on the host.
struct Trace {
    /// The device scores of the reference loop (`[kind][replica][canary]`).
    device: Vec<Vec<Vec<f64>>>,
    theta0: Vec<Vec<f32>>,
    theta_t: Vec<Vec<f32>>,
    /// `Σ_t ⟨θ_t − θ_{t+1}, g_t⟩` per replica and canary, on the host (for
    /// input canaries `g_t` is the engine's clipped gradient at θ_t, itself
    /// checked against autograd at every step).
    iterates: Vec<Vec<f64>>,
    /// A rigorous bound on the device's float32 error of the same sum:
    /// `Σ_t Σ_i |δ_ti|·|g_ti|·(P+2)u`.
    iterates_tol: Vec<Vec<f64>>,
    losses0: Option<Vec<Vec<f32>>>,
    losses_t: Option<Vec<Vec<f32>>>,
    bits: Vec<Vec<bool>>,
}

/// Chunk `chunk` of `p` by the same public steps as `Prepared::run_chunk`
/// (inclusion bits → schedules → fixed θ₀ → per-chunk noise seed → batches
/// with canary slots → `ScoreBook`), recording θ₀, θ_T and the per-step
/// iterates on the host. The caller checks that its scores equal
/// `run_chunk`'s bit for bit, so what is checked here is what `run_chunk` does.
fn reference_chunk(p: &Prepared, chunk: u64) -> Trace {
    let cfg = &p.config;
    let seed = RunSeed(cfg.train.seed);
    let first = chunk * cfg.chunk_size();
    let replicas = (cfg.runs - first).min(cfg.chunk_size()) as usize;
    let steps = cfg.steps() as usize;
    let m = p.canaries.count();
    let bits: Vec<Vec<bool>> = (0..replicas as u64)
        .map(|r| inclusion_bits(seed, first + r, m))
        .collect();
    let mut schedule = vec![vec![Vec::new(); steps]; replicas];
    for (r, row) in bits.iter().enumerate() {
        for (j, &inc) in row.iter().enumerate() {
            if inc {
                for s in insertion_steps(
                    &cfg.canary,
                    &p.sampler,
                    seed,
                    first + r as u64,
                    j,
                    steps as u64,
                ) {
                    schedule[r][s as usize].push(j);
                }
            }
        }
    }
    let randomness = p.randomness();
    let runs: Vec<u64> = (first..first + replicas as u64).collect();
    let mut init = Init::for_runs(
        randomness.stream(Stream::Init),
        &vec![0; replicas],
        p.device,
    );
    let model = build_model(
        &cfg.train.model,
        p.train.shape(),
        p.train.num_classes() as i64,
        &mut init,
    )
    .unwrap();
    copy_replica_zero(model.as_ref()).unwrap();
    let noise = NoiseStreams::new(&randomness, &runs);
    let mut dp = DpSgd::new(dp_config_of(p), noise).unwrap();
    if let Some(f) = p.fault {
        dp = dp.with_fault(f);
    }
    let c = cfg.train.dp.max_grad_norm;
    let mut book = ScoreBook::start(model.as_ref(), &p.canaries, &cfg.audit.scores, c).unwrap();
    let gradient = p.canaries.config.kind.is_gradient();
    let fixed: Vec<Vec<f32>> = p
        .canaries
        .gradients
        .as_ref()
        .map(|g| {
            let pc = p.num_parameters;
            host(g)
                .chunks(pc)
                .map(|row| {
                    let norm = row
                        .iter()
                        .map(|&v| f64::from(v).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    let k = if norm > c { c / norm } else { 1.0 };
                    row.iter().map(|&v| (f64::from(v) * k) as f32).collect()
                })
                .collect()
        })
        .unwrap_or_default();
    let mut scorers: Vec<Vec<IterateScore>> = (0..replicas)
        .map(|_| {
            (0..m)
                .map(|j| {
                    if gradient {
                        IterateScore::with_fixed_canary(fixed[j].clone()).unwrap()
                    } else {
                        IterateScore::with_per_step_gradient(p.num_parameters).unwrap()
                    }
                })
                .collect()
        })
        .collect();
    let mut tol = vec![vec![0f64; m]; replicas];
    let pc = p.num_parameters as f64;
    let theta0 = per_replica(model.as_ref());
    let losses0 = (!gradient).then(|| host_losses(model.as_ref(), p));
    let sampler_key = randomness.stream(Stream::Sampler);
    let mut streams: Vec<_> = runs
        .iter()
        .map(|&r| p.sampler.steps(sampler_key, r))
        .collect();
    for s in 0..steps {
        let batches: Vec<Vec<usize>> = streams
            .iter_mut()
            .map(|st| st.next().map(|x| x.batch).unwrap_or_default())
            .collect();
        let extras: Vec<Vec<Extra>> = schedule
            .iter()
            .map(|sch| {
                sch[s]
                    .iter()
                    .map(|&j| {
                        if gradient {
                            Extra::Gradient(j)
                        } else {
                            Extra::Record(j)
                        }
                    })
                    .collect()
            })
            .collect();
        let batch =
            gather_with_canaries(&p.train, &batches, Some(&p.canaries), &extras, p.device).unwrap();
        let before = per_replica(model.as_ref());
        let g_t: Vec<Vec<Vec<f32>>> = if gradient {
            vec![fixed.clone(); replicas]
        } else {
            // The engine's clipped canary gradients at θ_t, `[M, m, P]`,
            // checked against plain autograd: relative error ≤ 1e-5 (the
            // tolerance of the microbatch oracle, `dpaudit_train::testing`).
            let dev = host(&canary_gradients(model.as_ref(), &p.canaries, c).unwrap());
            let dev: Vec<Vec<Vec<f32>>> = dev
                .chunks(m * p.num_parameters)
                .map(|row| row.chunks(p.num_parameters).map(<[f32]>::to_vec).collect())
                .collect();
            let oracle: Vec<Vec<Vec<f32>>> = (0..m)
                .map(|j| autograd_canary_gradient(model.as_ref(), p, j))
                .collect();
            for (r, row) in dev.iter().enumerate() {
                for (j, got) in row.iter().enumerate() {
                    let want = &oracle[j][r];
                    let err = got
                        .iter()
                        .zip(want)
                        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    let norm = want
                        .iter()
                        .map(|&b| f64::from(b).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    assert!(
                        err <= 1e-5 * norm,
                        "step {s} replica {r} canary {j}: ‖engine − autograd‖ = {err:e}, ‖g‖ = {norm:e}"
                    );
                }
            }
            dev
        };
        book.before_step(model.as_ref(), &p.canaries).unwrap();
        dp.step(model.as_ref(), &batch).unwrap();
        book.after_step(model.as_ref()).unwrap();
        let after = per_replica(model.as_ref());
        for r in 0..replicas {
            for j in 0..m {
                let g = &g_t[r][j];
                if gradient {
                    scorers[r][j].observe(&before[r], &after[r]).unwrap();
                } else {
                    scorers[r][j]
                        .observe_with_gradient(&before[r], &after[r], g)
                        .unwrap();
                }
                // Higham, "Accuracy and Stability of Numerical Algorithms",
                // §3.1: a float32 dot product of length P has error at most
                // γ_P·Σ|x_i y_i| ≤ (P+1)u·Σ|x_i y_i| in any summation order;
                // one more u for rounding δ = θ_t − θ_{t+1} to float32.
                tol[r][j] += before[r]
                    .iter()
                    .zip(&after[r])
                    .zip(g)
                    .map(|((&b, &a), &g)| {
                        (f64::from(b) - f64::from(a)).abs() * f64::from(g).abs() * (pc + 2.0) * U32
                    })
                    .sum::<f64>();
            }
        }
    }
    let device = book.finish(model.as_ref(), &p.canaries).unwrap();
    Trace {
        device,
        theta0,
        theta_t: per_replica(model.as_ref()),
        iterates: scorers
            .iter()
            .map(|row| row.iter().map(IterateScore::finish).collect())
            .collect(),
        iterates_tol: tol,
        losses0,
        losses_t: (!gradient).then(|| host_losses(model.as_ref(), p)),
        bits,
    }
}

fn close(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: device {got:e} vs host {want:e}, |diff| {:e} > tolerance {tol:e}",
        (got - want).abs()
    );
}

/// Runs chunks 0 and 1 through `run_chunk` and through [`reference_chunk`],
/// requires identical scores, then checks every configured score against its
/// host definition.
fn check_device_scores_against_host(p: &Prepared) {
    let kinds = p.config.audit.scores.clone();
    let gradients: Vec<Vec<f32>> = p
        .canaries
        .gradients
        .as_ref()
        .map(|g| {
            host(g)
                .chunks(p.num_parameters)
                .map(<[f32]>::to_vec)
                .collect()
        })
        .unwrap_or_default();
    for chunk in 0..2 {
        let ran: ChunkScores = p.run_chunk(chunk, &mut Silent).unwrap();
        let t = reference_chunk(p, chunk);
        assert_eq!(ran.bits, t.bits, "chunk {chunk}: inclusion bits");
        assert_eq!(
            ran.scores, t.device,
            "chunk {chunk}: run_chunk and the reference loop must train the same models"
        );
        for (k, kind) in kinds.iter().enumerate() {
            for (r, row) in t.device[k].iter().enumerate() {
                let (th0, tht) = (&t.theta0[r], &t.theta_t[r]);
                // Σ_i |θ₀_i − θ_T_i|·|g_i|: the scale of a rounding error in
                // ⟨θ₀ − θ_T, g⟩.
                let abs_ip = |g: &[f32]| -> f64 {
                    th0.iter()
                        .zip(tht)
                        .zip(g)
                        .map(|((&a, &b), &g)| {
                            (f64::from(a) - f64::from(b)).abs() * f64::from(g).abs()
                        })
                        .sum()
                };
                for (j, &got) in row.iter().enumerate() {
                    let what = format!("chunk {chunk} replica {r} canary {j} {}", kind.name());
                    match kind {
                        // θ₀ − θ_T is formed in float32 on the device: relative
                        // error ≤ u per coordinate (IEEE 754), 2u allowed.
                        ScoreKind::Dirac => {
                            let d = p.canaries.coordinates[j];
                            let want = dirac_score(th0, tht, d).unwrap();
                            close(&what, got, want, 2.0 * U32 * want.abs());
                        }
                        ScoreKind::InnerProduct => {
                            let want = inner_product_score(th0, tht, &gradients[j]).unwrap();
                            close(&what, got, want, 2.0 * U32 * abs_ip(&gradients[j]));
                        }
                        ScoreKind::Cosine => {
                            let want = cosine_score(th0, tht, &gradients[j]).unwrap();
                            // |cos| ≤ 1; float32 differences, float64 sums.
                            close(&what, got, want, 1e-6);
                        }
                        ScoreKind::Iterates => {
                            let want = t.iterates[r][j];
                            close(&what, got, want, t.iterates_tol[r][j] + 1e-12);
                            if let Some(g) = gradients.get(j) {
                                // Fixed canary: Σ_t ⟨θ_t − θ_{t+1}, g⟩ telescopes
                                // to ⟨θ₀ − θ_T, c·g⟩ (Steinke, Nasr & Jagielski 2023, §2
                                // "Observation"), c = min(1, C/‖g‖).
                                let norm =
                                    g.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt();
                                let c = (p.config.train.dp.max_grad_norm / norm).min(1.0);
                                let ip = c * inner_product_score(th0, tht, g).unwrap();
                                close(
                                    &format!("{what} (telescoping)"),
                                    got,
                                    ip,
                                    t.iterates_tol[r][j] + 4.0 * U32 * c * abs_ip(g),
                                );
                            }
                        }
                        ScoreKind::Loss => {
                            let want = loss_scores(&t.losses_t.as_ref().unwrap()[r]).unwrap()[j];
                            // float32 log-softmax of 2 logits against the f64
                            // evaluation of the same logits: a few ulps of the
                            // loss and of the largest logit.
                            close(&what, got, want, 1e-5 * (1.0 + want.abs()));
                        }
                        ScoreKind::NaturalLr | ScoreKind::PartiallyInformedLr => {
                            panic!("{what}: likelihood-ratio scores are checked by their own test")
                        }
                        ScoreKind::LossDifference => {
                            let want = loss_difference_scores(
                                &t.losses_t.as_ref().unwrap()[r],
                                &t.losses0.as_ref().unwrap()[r],
                            )
                            .unwrap()[j];
                            close(&what, got, want, 2e-5 * (1.0 + want.abs()));
                        }
                        ScoreKind::UpdateNorm => {
                            // −‖θ_T − θ₀‖² in f64 from the float32 iterates.
                            let want: f64 = -th0
                                .iter()
                                .zip(tht)
                                .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
                                .sum::<f64>();
                            close(&what, got, want, 4.0 * U32 * want.abs());
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn dirac_canary_scores_on_device_equal_the_host_definitions() {
    let _g = torch_lock();
    let cfg = experiment(
        SMALL,
        r#"
[canary]
kind = "dirac"
count = 3
insertion = "every"
[audit]
scores = ["dirac", "inner_product", "cosine", "iterates", "update_norm"]
methods = ["one_run"]
"#,
    );
    let p = Prepared::new(&cfg, None).unwrap();
    assert_eq!(p.num_parameters, 600 * 8 + 8 + 8 * 2 + 2);
    let mut coords = p.canaries.coordinates.clone();
    coords.sort_unstable();
    coords.dedup();
    assert_eq!(
        coords.len(),
        3,
        "Dirac coordinates must be distinct (Steinke, Nasr & Jagielski 2023, §2)"
    );
    check_device_scores_against_host(&p);
}

#[test]
fn random_direction_canary_scores_on_device_equal_the_host_definitions() {
    let _g = torch_lock();
    let cfg = experiment(
        SMALL,
        r#"
[canary]
kind = "random_direction"
count = 1
insertion = "every"
[audit]
scores = ["inner_product", "cosine", "iterates", "update_norm"]
methods = ["gdp"]
"#,
    );
    let p = Prepared::new(&cfg, None).unwrap();
    // A_CotS (Andrew et al. 2024, as in Cebere, Bellet & Papernot 2024, App.): C·u with ‖u‖ = 1.
    let g = host(p.canaries.gradients.as_ref().unwrap());
    let norm = g.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "‖g‖ = {norm}, expected C = 1");
    check_device_scores_against_host(&p);
}

#[test]
fn input_canary_scores_on_device_equal_the_host_definitions() {
    let _g = torch_lock();
    let cfg = experiment(
        SMALL,
        r#"
[canary]
kind = "mislabeled"
count = 2
insertion = "every"
[audit]
scores = ["loss", "loss_difference", "iterates", "update_norm"]
methods = ["one_run"]
"#,
    );
    let p = Prepared::new(&cfg, None).unwrap();
    let rec = p.canaries.records.as_ref().unwrap();
    for (j, (&y, &t)) in rec.labels().iter().zip(&p.canaries.true_labels).enumerate() {
        assert_ne!(
            y, t,
            "mislabeled canary {j} kept its label (Steinke, Nasr & Jagielski 2023, §2)"
        );
    }
    check_device_scores_against_host(&p);
}

/// Batch-then-shuffle with a short last batch: in one step the replicas'
/// batches differ in size (the short batch falls at a different step in each
/// run), so each replica's canary slots start at a different position, and
/// the 9 steps cross two epoch boundaries of the step table. The chunk loop
/// still trains the models of the reference loop, which draws from each
/// run's own sampler stream, for gradient and for input canaries.
#[test]
fn canary_slots_follow_batches_of_different_sizes_across_epochs() {
    let _g = torch_lock();
    let shape = Shape {
        steps: 9,
        sampler: "kind = \"batch_then_shuffle\"\nbatch_size = 60\nlast_batch = \"partial\"",
        ..SMALL
    };
    for canary in [
        "kind = \"dirac\"\ncount = 2\ninsertion = \"every\"\n[audit]\nscores = [\"dirac\", \"iterates\"]",
        "kind = \"mislabeled\"\ncount = 2\ninsertion = \"every\"\n[audit]\nscores = [\"loss\", \"iterates\"]",
    ] {
        let cfg = experiment(
            shape,
            &format!("[canary]\n{canary}\nmethods = [\"one_run\"]\n"),
        );
        let p = Prepared::new(&cfg, None).unwrap();
        assert_eq!(p.sampler.steps_per_epoch(), 4, "60 + 60 + 60 + 20 records");
        check_device_scores_against_host(&p);
    }
}

/// An MLP 5 → 4 → 3 whose input feature 0 is 0 in every record: the weights
/// `fc1.weight[h, 0]` (flat index `5h`) never receive a genuine gradient
/// (`∂ℓ/∂W[h,0] = δ_h·x_0 = 0`) and never influence the output, so a Dirac
/// canary at coordinate 0 is the only thing that moves it.
struct ZeroFeature {
    x: Tensor,
    y: Tensor,
    batch: i64,
}

impl ZeroFeature {
    fn new() -> Self {
        let batch = 6;
        let x = dpaudit_train::testing::normal_tensor(&[batch + 1, 1, 5], 11).unwrap();
        let _ = x.narrow(2, 0, 1).fill_(0.0);
        // The last slot carries the canary (or an exact zero).
        let _ = x.narrow(0, batch, 1).fill_(0.0);
        let y = dpaudit_train::testing::uniform_tensor(&[batch + 1, 1], 12)
            .unwrap()
            .multiply_scalar(3.0)
            .floor()
            .to_kind(Kind::Int64);
        Self { x, y, batch }
    }

    fn model() -> Mlp {
        Mlp::new(&mut Init::new(5, 1, Device::Cpu), &[5, 4, 3]).unwrap()
    }

    /// Trains `steps` steps from the same θ₀ and noise seed; the canary
    /// `value·e_0` fills the last slot at `insert_at` when `canary` is true,
    /// an exact zero (`Override::Zero`) otherwise, so both runs have the same
    /// batch shapes and draw the same noise.
    fn train(
        &self,
        canary: bool,
        value: f64,
        sigma: f64,
        fault: Option<Fault>,
        insert_at: &[u64],
        steps: u64,
    ) -> Vec<f32> {
        let model = Self::model();
        let p = model.num_parameters();
        let mut dp = DpSgd::new(
            DpSgdConfig {
                noise_multiplier: sigma,
                max_grad_norm: 1.0,
                learning_rate: 0.5,
                normaliser: Normaliser::FixedBatchSize(self.batch as u64),
                momentum: 0.0,
                weight_decay: 0.0,
            },
            NoiseStreams::replayable(99, 1),
        )
        .unwrap();
        if let Some(f) = fault {
            dp = dp.with_fault(f);
        }
        for s in 0..steps {
            let kind = if canary && insert_at.contains(&s) {
                let g = Tensor::zeros([p], (Kind::Float, Device::Cpu));
                let _ = g.get(0).fill_(value);
                Override::Gradient(g)
            } else {
                Override::Zero
            };
            let batch = Batch {
                inputs: self.x.shallow_clone(),
                targets: self.y.shallow_clone(),
                mask: None,
                overrides: vec![SlotOverride {
                    slot: self.batch as usize,
                    replica: 0,
                    kind,
                }],
                gradient_rows: None,
            };
            dp.step(&model, &batch).unwrap();
        }
        per_replica(&model).remove(0)
    }
}

/// Coordinate 0 of the 5 → 4 → 3 MLP is `fc1.weight[0, 0]`.
#[test]
fn zero_feature_model_has_its_first_coordinate_on_feature_zero() {
    let model = ZeroFeature::model();
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names[0], "fc1.weight");
    assert_eq!(model.named_parameters()[0].1.size(), vec![1, 4, 5]);
}

#[test]
fn dirac_canary_moves_only_its_coordinate_by_exactly_eta_c_over_b_per_insertion() {
    let _g = torch_lock();
    let z = ZeroFeature::new();
    let inserts = [0, 2, 3];
    for sigma in [0.0, 1.0] {
        let with = z.train(true, 1.0, sigma, None, &inserts, 5);
        let without = z.train(false, 1.0, sigma, None, &inserts, 5);
        // Every other coordinate: bit for bit the same run (the canary's only
        // nonzero entry never enters a forward pass or another coordinate).
        assert_eq!(with[1..], without[1..], "σ = {sigma}");
        // 3 insertions × η·C/B = 3 × 0.5 × 1 / 6 = 0.25 (Cebere, Bellet & Papernot 2024, Alg. 4: each
        // insertion lowers θ[d] by η·C/|B|). Tolerance: float32 rounding of
        // the ≤ 4 operations per step on values of magnitude ≤ 10, over 5
        // steps: 5 × 4 × 10 × 2⁻²⁴ < 1.2e-5.
        let diff = f64::from(without[0]) - f64::from(with[0]);
        assert!(
            (diff - 0.25).abs() < 1.2e-5,
            "σ = {sigma}: moved {diff}, expected 0.25"
        );
    }
    // Without noise the coordinate has no other source of change.
    let theta0 = per_replica(&ZeroFeature::model()).remove(0);
    let without = z.train(false, 1.0, 0.0, None, &inserts, 5);
    assert_eq!(
        without[0], theta0[0],
        "no genuine gradient reaches coordinate 0"
    );
}

#[test]
fn clipping_applies_to_the_canary_and_removing_it_shows_four_c() {
    let _g = torch_lock();
    let z = ZeroFeature::new();
    let inserts = [1, 4];
    // A canary of norm 4C is clipped to C: 2 insertions × 0.5 × 1 / 6.
    let with = z.train(true, 4.0, 1.0, None, &inserts, 5);
    let without = z.train(false, 4.0, 1.0, None, &inserts, 5);
    let diff = f64::from(without[0]) - f64::from(with[0]);
    assert!(
        (diff - 1.0 / 6.0).abs() < 1.2e-5,
        "clipped: moved {diff}, expected 1/6"
    );
    // `Fault::NoClipping` (the self-test's broken pipeline) lets 4C through.
    let with = z.train(true, 4.0, 1.0, Some(Fault::NoClipping), &inserts, 5);
    let without = z.train(false, 4.0, 1.0, Some(Fault::NoClipping), &inserts, 5);
    let diff = f64::from(without[0]) - f64::from(with[0]);
    assert!(
        (diff - 4.0 / 6.0).abs() < 1.2e-5,
        "unclipped: moved {diff}, expected 4/6"
    );
}

/// 60 synthetic Purchase-100 records, binary features with background rates
/// in [0.02, 0.10] (`dpaudit_data::synthetic`): some of the 600 features are 0
/// in all 60 records, so A_GC-S (Cebere, Bellet & Papernot 2024, Alg. 3, Noiseless-PS) finds
/// coordinates whose simulated update is exactly 0.
const ZERO_UPDATE: Shape = Shape {
    runs: 8,
    replicas: 8,
    steps: 6,
    train_size: 60,
    sampler: "kind = \"fixed_sequence\"\nbatch_size = 20",
};

/// Dirac scores of chunk 0 with σ set to 0 after `Prepared::new` (the
/// accountant needs σ > 0; the engine takes σ = 0 as "no noise").
fn noiseless_dirac_scores(
    shape: Shape,
    canary: &str,
    fault: Option<Fault>,
) -> (Vec<f64>, Vec<bool>) {
    let cfg = experiment(
        shape,
        &format!("{canary}\n[audit]\nscores = [\"dirac\"]\nmethods = [\"gdp\"]\n"),
    );
    let mut p = Prepared::new(&cfg, fault).unwrap();
    p.config.train.dp.noise_multiplier = 0.0;
    let s = p.run_chunk(0, &mut Silent).unwrap();
    let scores = s.scores[0].iter().map(|r| r[0]).collect();
    let bits = s.bits.iter().map(|r| r[0]).collect();
    (scores, bits)
}

#[test]
fn least_updated_dirac_score_is_insertions_times_eta_c_over_b_without_noise() {
    let _g = torch_lock();
    let canary = "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"every\"\nevery = 2\ncoordinate = \"least_updated\"";
    let (scores, bits) = noiseless_dirac_scores(ZERO_UPDATE, canary, None);
    assert!(
        bits.iter().any(|&b| b) && bits.iter().any(|&b| !b),
        "need both kinds of run: {bits:?}"
    );
    // ⌊6/2⌋ = 3 insertions (steps 1, 3, 5) × η·C/B = 3 × 0.5 × 1 / 20 = 0.075.
    for (r, (&s, &b)) in scores.iter().zip(&bits).enumerate() {
        if b {
            // float32: 3 subtractions from |θ₀[d]| ≤ 1: 3 × 2 × 2⁻²⁴ < 1e-6.
            assert!(
                (s - 0.075).abs() < 1e-6,
                "member run {r}: score {s}, expected 0.075"
            );
        } else {
            assert_eq!(
                s, 0.0,
                "non-member run {r}: the least-updated coordinate must not move"
            );
        }
    }
}

#[test]
fn experiment_clips_a_scaled_canary_and_the_no_clipping_fault_does_not() {
    let _g = torch_lock();
    // Poisson with q = 1: every run sees every record at every step, so the
    // coordinate A_GC-S finds on run 0's batches gets no genuine gradient in
    // any run (with q < 1 a feature absent from run 0's batches may be
    // present in another run's). The normaliser is q·n = 60.
    let shape = Shape {
        sampler: "kind = \"poisson\"\nsample_rate = 1.0",
        ..ZERO_UPDATE
    };
    let canary = "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"every\"\nevery = 3\nscale = 4.0\ncoordinate = \"least_updated\"";
    // ⌊6/3⌋ = 2 insertions × η·C/60 = 2 × 0.5 / 60 = 1/60 (clipped to C);
    // 4/60 without clipping.
    for (fault, want) in [(None, 1.0 / 60.0), (Some(Fault::NoClipping), 4.0 / 60.0)] {
        let (scores, bits) = noiseless_dirac_scores(shape, canary, fault);
        assert!(bits.iter().any(|&b| b), "need a member run: {bits:?}");
        for (r, (&s, &b)) in scores.iter().zip(&bits).enumerate() {
            let expected = if b { want } else { 0.0 };
            assert!(
                (s - expected).abs() < 1e-6,
                "{fault:?} run {r} (member {b}): score {s}, expected {expected}"
            );
        }
    }
}

#[test]
fn inclusion_bits_are_fair_independent_coins() {
    let seed = RunSeed(3);
    let bits: Vec<Vec<bool>> = (0..2000).map(|r| inclusion_bits(seed, r, 10)).collect();
    let n = 20_000.0;
    let ones = bits.iter().flatten().filter(|&&b| b).count() as f64;
    // Binomial(20,000, 1/2): mean 10,000, sd √(20,000/4) = 70.7; 4 sd = 283.
    assert!(
        (ones - n / 2.0).abs() < 4.0 * (n / 4.0f64).sqrt(),
        "{ones} ones in {n} bits"
    );
    // Neighbouring canaries of a run agree half the time when independent:
    // 18,000 pairs, sd √(18,000/4) = 67.1.
    let pairs = 2000.0 * 9.0;
    let agree = bits
        .iter()
        .flat_map(|row| row.windows(2).map(|w| w[0] == w[1]))
        .filter(|&a| a)
        .count() as f64;
    assert!(
        (agree - pairs / 2.0).abs() < 4.0 * (pairs / 4.0f64).sqrt(),
        "{agree} of {pairs}"
    );
    // The bits of run r are a function of (seed, r) alone.
    assert_eq!(inclusion_bits(seed, 1234, 10), bits[1234]);
    assert_ne!(
        inclusion_bits(RunSeed(4), 0, 64),
        inclusion_bits(seed, 0, 64)
    );
}

fn all_chunks(p: &Prepared, order: &[u64]) -> Vec<ChunkScores> {
    let mut out: Vec<ChunkScores> = order
        .iter()
        .map(|&c| p.run_chunk(c, &mut Silent).unwrap())
        .collect();
    out.sort_by_key(|c| c.first_run);
    out
}

/// `[run] → (bits, scores of kind 0)`.
fn by_run(chunks: &[ChunkScores]) -> (Vec<Vec<bool>>, Vec<Vec<f64>>) {
    let mut bits = Vec::new();
    let mut scores = Vec::new();
    for c in chunks {
        bits.extend(c.bits.iter().cloned());
        scores.extend(c.scores[0].iter().cloned());
    }
    (bits, scores)
}

#[test]
fn bits_do_not_depend_on_chunking_and_chunks_are_reproducible() {
    let _g = torch_lock();
    let canary = "[canary]\nkind = \"dirac\"\ncount = 2\ninsertion = \"sampled\"\n[audit]\nscores = [\"dirac\"]\nmethods = [\"one_run\"]\n";
    let shape = |replicas| Shape {
        runs: 50,
        replicas,
        steps: 3,
        ..SMALL
    };
    let p10 = Prepared::new(&experiment(shape(10), canary), None).unwrap();
    let p25 = Prepared::new(&experiment(shape(25), canary), None).unwrap();
    let c10 = all_chunks(&p10, &[0, 1, 2, 3, 4]);
    // Chunks in another order (a resumed or sharded run) give the same scores.
    let c10b = all_chunks(&p10, &[4, 2, 0, 3, 1]);
    for (a, b) in c10.iter().zip(&c10b) {
        assert_eq!(a.first_run, b.first_run);
        assert_eq!(a.bits, b.bits);
        assert_eq!(
            a.scores, b.scores,
            "chunk of run {} differs between orders",
            a.first_run
        );
    }
    let c25 = all_chunks(&p25, &[1, 0]);
    let (bits10, _) = by_run(&c10);
    let (bits25, _) = by_run(&c25);
    assert_eq!(bits10.len(), 50);
    assert_eq!(
        bits10, bits25,
        "inclusion bits must not depend on the chunk size"
    );
    let seed = RunSeed(7);
    for (r, b) in bits10.iter().enumerate() {
        assert_eq!(
            *b,
            inclusion_bits(seed, r as u64, 2),
            "run {r}: bits of run_chunk"
        );
    }
    // Without noise, run r's model depends on r alone (fixed θ₀, per-run
    // sampler stream, per-run insertion schedule), whatever the chunk size.
    // The noise is drawn per chunk, so with σ > 0 the chunk size is part of
    // the experiment (it is in the config's fingerprint).
    let mut q10 = Prepared::new(&experiment(shape(10), canary), None).unwrap();
    let mut q25 = Prepared::new(&experiment(shape(25), canary), None).unwrap();
    q10.config.train.dp.noise_multiplier = 0.0;
    q25.config.train.dp.noise_multiplier = 0.0;
    let (_, s10) = by_run(&all_chunks(&q10, &[0, 1, 2, 3, 4]));
    let (_, s25) = by_run(&all_chunks(&q25, &[0, 1]));
    for (r, (a, b)) in s10.iter().zip(&s25).enumerate() {
        for (x, y) in a.iter().zip(b) {
            // Same arithmetic in batches of 10 or 25 replicas; allow float32
            // reassociation: 3 steps × 4 roundings of values ≤ 10.
            assert!(
                (x - y).abs() <= 3.0 * 4.0 * 10.0 * U32,
                "run {r}: {x} vs {y}"
            );
        }
    }
    assert!(
        s10.iter().flatten().any(|&s| s != 0.0),
        "the runs must move the canary coordinates"
    );
}

#[test]
fn every_k_inserts_at_steps_k_minus_one_2k_minus_one() {
    let cfg = experiment(
        Shape { steps: 10, ..SMALL },
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"every\"\nevery = 3\n[audit]\nscores = [\"dirac\"]\nmethods = [\"gdp\"]\n",
    );
    let sampler = cfg.train.sampler.build(200).unwrap();
    let mut c = cfg.canary.clone();
    for t in [1u64, 7, 10, 25] {
        for k in 1..=t {
            c.every = k;
            // Algorithm 4 of Cebere, Bellet & Papernot 2024: insert when t mod k = 0, t = 1..T,
            // i.e. zero-based steps k−1, 2k−1, …, ⌊T/k⌋·k − 1.
            let want: Vec<u64> = (1..=t / k).map(|i| i * k - 1).collect();
            for run in [0, 5] {
                assert_eq!(
                    insertion_steps(&c, &sampler, RunSeed(1), run, 0, t),
                    want,
                    "T = {t}, k = {k}"
                );
            }
            assert_eq!(c.deterministic_insertions(t), Some(t / k));
        }
    }
}

#[test]
fn sampled_insertion_under_poisson_is_binomial_t_q() {
    let cfg = experiment(
        SMALL,
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"sampled\"\n[audit]\nscores = [\"dirac\"]\nmethods = [\"gdp\"]\n",
    );
    let sampler = cfg.train.sampler.build(200).unwrap();
    let (t, q) = (40u64, 0.05);
    let mut total = 0usize;
    let mut sq = 0.0;
    let n = 2000usize;
    for run in 0..(n / 4) as u64 {
        for j in 0..4 {
            let s = insertion_steps(&cfg.canary, &sampler, RunSeed(9), run, j, t);
            assert!(
                s.windows(2).all(|w| w[0] < w[1]) && s.iter().all(|&x| x < t),
                "{s:?}"
            );
            total += s.len();
            sq += (s.len() as f64).powi(2);
        }
    }
    // Each count ~ Binomial(T = 40, q = 0.05): mean Tq = 2, variance
    // Tq(1−q) = 1.9. The sum of 2,000 counts has sd √(2,000 × 1.9) = 61.6.
    let mean_sd = (n as f64 * t as f64 * q * (1.0 - q)).sqrt();
    let want = n as f64 * t as f64 * q;
    assert!(
        (total as f64 - want).abs() < 4.0 * mean_sd,
        "{total} insertions, expected {want} ± {mean_sd}"
    );
    // The sample variance estimates 1.9; its sd over 2,000 counts is about
    // √((μ₄ − σ⁴)/n) with μ₄ = σ²(1 + 3σ²·(1 − 2/T)... ) ≈ 3σ⁴ + σ² for a
    // near-Poisson count: √((3·1.9² + 1.9 − 1.9²)/2000) = 0.088; 4 sd = 0.35.
    let mean = total as f64 / n as f64;
    let var = sq / n as f64 - mean * mean;
    assert!(
        (var - 1.9).abs() < 0.35,
        "sample variance {var}, expected Tq(1−q) = 1.9"
    );
}

#[test]
fn sampled_insertion_under_shuffling_is_once_per_epoch() {
    let cfg = experiment(
        Shape {
            sampler: "kind = \"shuffle\"\nbatch_size = 20",
            ..SMALL
        },
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"sampled\"\n[audit]\nscores = [\"dirac\"]\nmethods = [\"gdp\"]\n",
    );
    // n = 200, B = 20: 10 steps per epoch; T = 35 = 3 full epochs + 5 steps.
    let sampler = cfg.train.sampler.build(200).unwrap();
    assert_eq!(sampler.steps_per_epoch(), 10);
    let t = 35;
    let mut positions = 0.0;
    let mut count = 0.0;
    let mut last_epoch = 0.0;
    let runs = 1000;
    for run in 0..runs {
        let s = insertion_steps(&cfg.canary, &sampler, RunSeed(2), run, 0, t);
        for e in 0..3 {
            let inside: Vec<u64> = s.iter().copied().filter(|&x| x / 10 == e).collect();
            assert_eq!(inside.len(), 1, "run {run}, epoch {e}: {s:?}");
            positions += (inside[0] % 10) as f64;
            count += 1.0;
        }
        let tail = s.iter().filter(|&&x| x >= 30).count();
        assert!(tail <= 1 && s.iter().all(|&x| x < t), "run {run}: {s:?}");
        last_epoch += tail as f64;
    }
    // Position in the epoch uniform on 0..9: mean 4.5, sd √(99/12) = 2.87;
    // mean of 3,000 positions has sd 0.052.
    let mean = positions / count;
    assert!(
        (mean - 4.5).abs() < 4.0 * (99.0f64 / 12.0 / count).sqrt(),
        "mean position {mean}"
    );
    // The partial last epoch (steps 30..34) holds the canary with probability
    // 5/10: 1,000 runs, sd √(1000/4) = 15.8.
    assert!(
        (last_epoch - 500.0).abs() < 4.0 * 15.82,
        "{last_epoch} runs with a last-epoch insertion"
    );
}

fn refused(text: &str) -> String {
    match read_canary(text, "exp.toml") {
        Err(e) => e,
        Ok(cfg) => Prepared::new(&cfg, None)
            .expect_err("the experiment must be refused")
            .to_string(),
    }
}

const GOOD_CANARY: &str = "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"every\"\n[audit]\nscores = [\"dirac\"]\nmethods = [\"gdp\"]\n";

#[test]
fn a_good_experiment_is_accepted() {
    let cfg = experiment(SMALL, GOOD_CANARY);
    assert_eq!(cfg.chunks(), 2);
    assert_eq!(cfg.canary.kind, CanaryKind::Dirac);
    let p = Prepared::new(&cfg, None).unwrap();
    assert!(p.claimed.bound.epsilon > 0.0);
}

#[test]
fn more_dirac_canaries_than_parameters_is_refused() {
    let e = refused(&text(
        SMALL,
        &GOOD_CANARY
            .replace("count = 1", "count = 4827")
            .replace("\"gdp\"", "\"one_run\""),
    ));
    assert!(
        e.contains("canary.count") && e.contains("4827") && e.contains("4826"),
        "{e}"
    );
}

#[test]
fn zero_canaries_are_refused_naming_canary_count() {
    let e = refused(&text(SMALL, &GOOD_CANARY.replace("count = 1", "count = 0")));
    assert!(
        e.contains("canary.count") && e.contains("at least 1"),
        "{e}"
    );
}

#[test]
fn every_larger_than_steps_is_refused() {
    let e = refused(&text(
        SMALL,
        &GOOD_CANARY.replace("insertion = \"every\"", "insertion = \"every\"\nevery = 5"),
    ));
    assert!(
        e.contains("canary.every") && e.contains('5') && e.contains("steps (4)"),
        "{e}"
    );
}

#[test]
fn delta_of_one_or_more_is_refused() {
    for d in ["1.0", "2.5"] {
        let e = refused(&text(SMALL, GOOD_CANARY).replace("delta = 1e-5", &format!("delta = {d}")));
        assert!(e.contains("delta") && e.contains("(0, 1)"), "{e}");
    }
}

#[test]
fn unknown_fields_are_refused_with_their_place() {
    let e = refused(&text(SMALL, GOOD_CANARY).replace("runs = 6", "runs = 6\nrepeats = 3"));
    assert!(e.contains("repeats") && e.contains("line 4"), "{e}");
    let e = refused(&text(
        SMALL,
        &GOOD_CANARY.replace("count = 1", "count = 1\nperiod = 2"),
    ));
    assert!(e.contains("period") && e.contains("line"), "{e}");
    let e = refused(&text(
        SMALL,
        &GOOD_CANARY.replace("methods", "confidence_level = 0.9\nmethods"),
    ));
    assert!(e.contains("confidence_level"), "{e}");
}

#[test]
fn eps_delta_with_several_canaries_is_refused() {
    let e = refused(&text(
        SMALL,
        &GOOD_CANARY
            .replace("count = 1", "count = 4")
            .replace("\"gdp\"", "\"eps_delta\""),
    ));
    assert!(
        e.contains("audit.methods") && e.contains("EpsDelta") && e.contains("canary.count = 1"),
        "{e}"
    );
}

#[test]
fn one_run_with_one_canary_is_refused() {
    let e = refused(&text(SMALL, &GOOD_CANARY.replace("\"gdp\"", "\"one_run\"")));
    assert!(
        e.contains("audit.methods") && e.contains("one_run") && e.contains("≥ 2"),
        "{e}"
    );
}

#[test]
fn a_loss_score_with_a_gradient_canary_is_refused() {
    let e = refused(&text(
        SMALL,
        &GOOD_CANARY.replace("[\"dirac\"]", "[\"loss\"]"),
    ));
    assert!(
        e.contains("audit.scores") && e.contains("loss") && e.contains("Dirac"),
        "{e}"
    );
}

#[test]
fn sampled_insertion_with_the_fixed_batch_sequence_is_refused() {
    let e = refused(&text(
        Shape {
            sampler: "kind = \"fixed_sequence\"\nbatch_size = 20",
            ..SMALL
        },
        &GOOD_CANARY.replace("\"every\"", "\"sampled\""),
    ));
    assert!(
        e.contains("canary.insertion") && e.contains("fixed batch sequence"),
        "{e}"
    );
}

/// The Partially-Informed overrides and the observation scale (Annamalai et al. 2024, Alg. 1):
/// on a coordinate no genuine record touches, with σ = 0, each step's
/// observation `o_t = B⟨θ_t − θ_{t+1}, ĝ⟩/(η C²)` is +1 where the target is,
/// 0 where the zero-out record is and −1 in every other batch (−ĝ in its last
/// slot). Over E = 2 epochs of T = 3 shuffled batches of 20:
/// members Σo = 2·(+1) + 4·(−1) = −2, non-members 2·0 + 4·(−1) = −4, so the
/// iterates score Σ_t⟨θ_t − θ_{t+1}, ĝ⟩ = (ηC²/B)·Σo = (0.5/20)·Σo is −0.05
/// and −0.1.
#[test]
fn partially_informed_overrides_give_observations_plus_one_zero_minus_one() {
    let _g = torch_lock();
    let shape = Shape {
        runs: 8,
        replicas: 8,
        steps: 6,
        train_size: 60,
        sampler: "kind = \"shuffle\"\nbatch_size = 20",
    };
    let cfg = experiment(
        shape,
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"sampled\"\ncoordinate = \"least_updated\"\n\
         partially_informed = true\n[audit]\nscores = [\"iterates\"]\nmethods = [\"eps_delta\"]\n",
    );
    let mut p = Prepared::new(&cfg, None).unwrap();
    p.config.train.dp.noise_multiplier = 0.0;
    // A coordinate no record can move, whatever the canary does to the hidden
    // units: W₁[0, f] for a feature f that is 0 in every training record
    // (flat index f: the first parameter is the [8, 600] first-layer weight).
    // A least-updated coordinate may instead sit on a unit that is only dead
    // at θ₀, which the −ĝ updates can revive.
    let len = p.train.record_len();
    let f = (0..len)
        .find(|&f| p.train.features().chunks(len).all(|x| x[f] == 0.0))
        .expect("a feature that is 0 in all 60 records");
    p.canaries = Canaries::gradient(
        &p.config.canary,
        p.num_parameters,
        1.0,
        Some(vec![f]),
        RunSeed(7),
        tch::Device::Cpu,
    )
    .unwrap();
    let s = p.run_chunk(0, &mut Silent).unwrap();
    let bits: Vec<bool> = s.bits.iter().map(|r| r[0]).collect();
    assert!(
        bits.iter().any(|&b| b) && bits.iter().any(|&b| !b),
        "{bits:?}"
    );
    for (r, &b) in bits.iter().enumerate() {
        let got = s.scores[0][r][0];
        let want = if b { -0.05 } else { -0.1 };
        // float32 parameters: 6 updates of |θ| ≤ 1, a few ulps each.
        assert!(
            (got - want).abs() < 1e-6,
            "run {r} (member {b}): {got} vs {want}"
        );
    }
}

#[test]
fn likelihood_ratio_scores_need_a_sampled_canary_of_norm_c_and_a_shuffle_sampler() {
    let shape = Shape {
        runs: 4,
        replicas: 4,
        steps: 3,
        train_size: 60,
        sampler: "kind = \"shuffle\"\nbatch_size = 20",
    };
    let every = text(
        shape,
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"every\"\n[audit]\nscores = [\"pi_lr\"]\nmethods = [\"eps_delta\"]\n",
    );
    let e = refused(&every);
    assert!(e.contains("sampled"), "{e}");
    let poisson = text(
        SMALL,
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"sampled\"\n[audit]\nscores = [\"pi_lr\"]\nmethods = [\"eps_delta\"]\n",
    );
    let e = refused(&poisson);
    assert!(e.contains("train.sampler"), "{e}");
    let scaled = text(
        shape,
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"sampled\"\nscale = 2.0\n[audit]\nscores = [\"natural_lr\"]\nmethods = [\"eps_delta\"]\n",
    );
    let e = refused(&scaled);
    assert!(e.contains("canary.scale"), "{e}");
}

#[test]
fn sampled_insertion_under_partial_shuffling_stays_in_the_first_block() {
    // n = 200, B = 20, K = 60: the canary is the record at stored position 0, so
    // it stays in the first block of K records, i.e. one of the first K/B = 3
    // batches of each of the 10-step epochs (Annamalai et al. 2024, §7.1), uniformly.
    let cfg = experiment(
        Shape {
            sampler: "kind = \"partial_shuffle\"\nbatch_size = 20\nbuffer_size = 60",
            ..SMALL
        },
        "[canary]\nkind = \"dirac\"\ncount = 1\ninsertion = \"sampled\"\n[audit]\nscores = [\"dirac\"]\nmethods = [\"gdp\"]\n",
    );
    let sampler = cfg.train.sampler.build(200).unwrap();
    let mut hist = [0u32; 3];
    for run in 0..1000 {
        let s = insertion_steps(&cfg.canary, &sampler, RunSeed(2), run, 0, 20);
        assert_eq!(s.len(), 2, "run {run}: {s:?}");
        for (e, &x) in s.iter().enumerate() {
            let within = x - 10 * e as u64;
            assert!(within < 3, "run {run}: step {x} outside the first block");
            hist[within as usize] += 1;
        }
    }
    // 2,000 insertions, each batch 1/3: mean 666.7, sd √(2000·(1/3)(2/3)) = 21.1.
    for (b, &h) in hist.iter().enumerate() {
        assert!(
            (f64::from(h) - 2000.0 / 3.0).abs() < 4.0 * 21.1,
            "batch {b}: {h}"
        );
    }
}

/// `flat_parameters` is a copy: it requires no gradient, and writing to the
/// parameters afterwards leaves it unchanged (it holds them in
/// `named_parameters` order, replica by replica).
#[test]
fn flat_parameters_is_a_detached_copy() {
    let model = Mlp::new(&mut Init::new(7, 2, Device::Cpu), &[3, 2]).unwrap();
    let flat = flat_parameters(&model).unwrap();
    assert!(!flat.requires_grad());
    let p = model.num_parameters();
    assert_eq!(flat.size(), [2, p]);
    let before = host(&flat);
    let params = model.named_parameters();
    let expected: Vec<f32> = (0..2)
        .flat_map(|r| {
            params
                .iter()
                .flat_map(move |(_, t)| host(&t.get(r)))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(before, expected);
    tch::no_grad(|| {
        for (_, t) in &params {
            let mut t = t.shallow_clone();
            let _ = t.fill_(5.0);
        }
    });
    assert_eq!(host(&flat), before);
}
