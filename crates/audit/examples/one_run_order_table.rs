//! The one-run methods side by side on Gaussian canaries (μ-GDP, unit
//! noise, each included with probability ½): the order-statistics audit of
//! Xiang et al. 2025 (Gaussian family) with its default selection and with
//! `same-data`, the f-DP one-run audit of Mahloujifar et al. 2024 (Gaussian
//! family, default selection) and the one-run audit of Steinke et al. 2023
//! (default selection); ε at δ = 1e-5, confidence 0.95, one draw per case
//! (not a test; the table in `docs/audit-statistics.md`):
//!
//! `cargo run --release -p dpaudit-audit --example one_run_order_table -- [SEED] [M...]`
//!
//! With `--npy DIR` it also writes each case's scores as
//! `DIR/gauss_mu{μ}_m{m}.npy` (`(m, 2)` float64, `[score, member]`), for
//! comparisons with other implementations on the same scores.

use std::time::Instant;

use dpaudit_audit::bound::{EpsilonLowerBound, Evidence};
use dpaudit_audit::gaussian::gdp_epsilon;
use dpaudit_audit::observations::{Method, Observations, Selection};
use dpaudit_audit::one_run::{one_run_lower_bound, OneRunConfig};
use dpaudit_audit::one_run_fdp::{one_run_fdp_lower_bound, TradeoffFamily};
use dpaudit_audit::one_run_order::one_run_order_lower_bound;
use dpaudit_audit::policy::default_selection;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const DELTA: f64 = 1e-5;

fn mu_of(b: &EpsilonLowerBound) -> f64 {
    match &b.evidence {
        Evidence::OneRun(ev) => ev.mu_lower.unwrap_or(f64::NAN),
        Evidence::Threshold(ev) => ev.mu_lower.unwrap_or(f64::NAN),
        Evidence::GaussianScores(ev) => ev.mu_lower,
    }
}

fn write_npy(path: &std::path::Path, obs: &Observations) -> std::io::Result<()> {
    let header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, 2), }}",
        obs.len()
    );
    let mut h = header.into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(&h);
    for (s, m) in obs.scores().iter().zip(obs.members()) {
        out.extend_from_slice(&s.to_le_bytes());
        out.extend_from_slice(&(if *m { 1.0_f64 } else { 0.0 }).to_le_bytes());
    }
    std::fs::write(path, out)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let npy_dir = match args.iter().position(|a| a == "--npy") {
        Some(i) if i + 1 < args.len() => {
            let dir = args.remove(i + 1);
            args.remove(i);
            Some(std::path::PathBuf::from(dir))
        }
        _ => None,
    };
    let seed: u64 = args.first().map_or(Ok(1), |s| s.parse())?;
    let ms: Vec<usize> = if args.len() > 1 {
        args[1..]
            .iter()
            .map(|s| s.parse())
            .collect::<Result<_, _>>()?
    } else {
        vec![1000, 10_000, 1_000_000]
    };
    println!(
        "| μ (true ε) | m | order, default: ε (μ⁻) | order, same-data: ε (μ⁻) | f-DP Gaussian, default: ε (μ⁻) | Steinke, default: ε | order time (s) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for mu in [0.5_f64, 1.0, 2.0, 3.0] {
        for &m in &ms {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (m as u64) ^ mu.to_bits());
            let members: Vec<bool> = (0..m).map(|_| rng.gen()).collect();
            let scores: Vec<f64> = members
                .iter()
                .map(|&inc| {
                    let z: f64 = rng.sample(StandardNormal);
                    z + if inc { mu } else { 0.0 }
                })
                .collect();
            let obs = Observations::new(scores, members)?;
            if let Some(dir) = &npy_dir {
                write_npy(&dir.join(format!("gauss_mu{mu}_m{m}.npy")), &obs)?;
            }
            let cfg =
                |method: Method| OneRunConfig::new(0.95, DELTA, default_selection(method, m, seed));
            let started = Instant::now();
            let order = one_run_order_lower_bound(
                &obs,
                &cfg(Method::OneRunOrderGaussian),
                TradeoffFamily::Gaussian,
            )?;
            let took = started.elapsed().as_secs_f64();
            let same = one_run_order_lower_bound(
                &obs,
                &OneRunConfig::new(0.95, DELTA, Selection::SameData),
                TradeoffFamily::Gaussian,
            )?;
            let fdp = one_run_fdp_lower_bound(
                &obs,
                &cfg(Method::OneRunFdpGaussian),
                TradeoffFamily::Gaussian,
            )?;
            let steinke = one_run_lower_bound(&obs, &cfg(Method::OneRun))?;
            println!(
                "| {mu} ({:.2}) | {m} | {:.2} ({:.3}) | {:.2} ({:.3}) | {:.2} ({:.3}) | {:.2} | {took:.2} |",
                gdp_epsilon(mu, DELTA),
                order.epsilon,
                mu_of(&order),
                same.epsilon,
                mu_of(&same),
                fdp.epsilon,
                mu_of(&fdp),
                steinke.epsilon,
            );
        }
    }
    Ok(())
}
