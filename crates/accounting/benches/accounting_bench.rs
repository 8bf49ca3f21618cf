//! Speed benchmark of the accounting crate (not a test "Done when").
//!
//! `cargo run --release -p dpaudit-accounting --example accounting_bench`
//!
//! Measures PLD ε for q = 0.01, σ = 1.0, 100 steps (`dpaudit account`'s setting in
//! benches/RESULTS.md) and 10,000 steps, δ = 1e-5, and the
//! calibration of σ for the same q, steps, δ at the ε targets of Annamalai et al. 2024 §6.

use std::time::Instant;

use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant,
};

/// CPU seconds (user + system) used by this process so far, from /proc/self/stat (Linux);
/// NaN elsewhere. The machine may be shared, so CPU time is the contention-free figure.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are at 11 and 12 after the command name.
    let ticks: f64 = fields.get(11..13).map_or(f64::NAN, |f| {
        f.iter().map(|x| x.parse::<f64>().unwrap_or(f64::NAN)).sum()
    });
    ticks / 100.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The setting of `dpaudit account` in benches/RESULTS.md: min and median wall of 50 (two
    // threads, one per order of the pair), mean CPU.
    let reps = 50;
    let mut walls = Vec::with_capacity(reps);
    let cpu0 = cpu_seconds();
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        last = Some(dpsgd_epsilon(0.01, 1.0, 100, 1e-5, Accountant::Pld)?);
        walls.push(t.elapsed().as_secs_f64());
    }
    let cpu_per_run = (cpu_seconds() - cpu0) / reps as f64;
    walls.sort_by(f64::total_cmp);
    let e = last.ok_or("no run")?;
    println!(
        "pld_epsilon q=0.01 sigma=1.0 steps=100 delta=1e-5: epsilon={:.6} numerical={:?} wall_min={:.4}s wall_median={:.4}s cpu_mean={:.4}s",
        e.epsilon, e.numerical, walls[0], walls[reps / 2], cpu_per_run
    );

    let reps = 5;
    let mut best = f64::INFINITY;
    let mut last = None;
    let cpu0 = cpu_seconds();
    for _ in 0..reps {
        let t = Instant::now();
        let e = dpsgd_epsilon(0.01, 1.0, 10_000, 1e-5, Accountant::Pld)?;
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(e);
    }
    let cpu_per_run = (cpu_seconds() - cpu0) / reps as f64;
    let e = last.ok_or("no run")?;
    println!("pld_epsilon q=0.01 sigma=1.0 steps=10000 delta=1e-5: epsilon={:.6} numerical={:?} wall_best_of_{reps}={:.3}s cpu_mean={:.3}s", e.epsilon, e.numerical, best, cpu_per_run);

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
        let cpu0 = cpu_seconds();
        let c = calibrate_noise_multiplier(q, steps, 1e-5, target, Accountant::Pld, 1e-3)?;
        println!(
            "pld_calibrate q={q} steps={steps} delta=1e-5 target_epsilon={target}: noise_multiplier={:.5} tolerance={:.2e} epsilon={:.5} evaluations={} wall={:.3}s cpu={:.3}s",
            c.noise_multiplier, c.tolerance, c.epsilon.epsilon, c.evaluations, t.elapsed().as_secs_f64(), cpu_seconds() - cpu0
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
