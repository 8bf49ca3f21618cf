//! Speed benchmark of the accounting crate (not a test; issue 3 "Done when").
//!
//! `cargo run --release -p dpaudit-accounting --example accounting_bench`
//!
//! Measures, on one thread: PLD ε for q = 0.01, σ = 1.0, 10,000 steps, δ = 1e-5, and the
//! calibration of σ for the same q, steps, δ at ε = the spec-000 targets.

use std::time::Instant;

use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps = 5;
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        let e = dpsgd_epsilon(0.01, 1.0, 10_000, 1e-5, Accountant::Pld)?;
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(e);
    }
    let e = last.ok_or("no run")?;
    println!("pld_epsilon q=0.01 sigma=1.0 steps=10000 delta=1e-5: epsilon={:.6} numerical={:?} best_of_{reps}={:.3}s", e.epsilon, e.numerical, best);

    let t = Instant::now();
    let e = dpsgd_epsilon(0.01, 1.0, 10_000, 1e-5, Accountant::Rdp)?;
    println!(
        "rdp_epsilon same setting: epsilon={:.6} order={:?} time={:.3}s",
        e.epsilon,
        e.rdp_order,
        t.elapsed().as_secs_f64()
    );

    for (q, steps, target) in [(0.01, 10_000u64, 6.0), (0.01, 100, 1.0), (0.1, 10, 1.0)] {
        let t = Instant::now();
        let c = calibrate_noise_multiplier(q, steps, 1e-5, target, Accountant::Pld, 1e-3)?;
        println!(
            "pld_calibrate q={q} steps={steps} delta=1e-5 target_epsilon={target}: noise_multiplier={:.5} tolerance={:.2e} epsilon={:.5} evaluations={} time={:.3}s",
            c.noise_multiplier, c.tolerance, c.epsilon.epsilon, c.evaluations, t.elapsed().as_secs_f64()
        );
    }

    for (sigma, t_steps, epochs) in [(1.0, 100u64, 1u64), (1.5, 1000, 1), (0.82, 254, 30)] {
        let t = Instant::now();
        let lb = shuffle_lower_bound(sigma, t_steps, epochs, 1e-5)?;
        println!(
            "shuffle_lower_bound sigma={sigma} T={t_steps} epochs={epochs} delta=1e-5: epsilon={:.4} time={:.3}s",
            lb.epsilon,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
