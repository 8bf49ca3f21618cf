// The coverage assertion, included (`include!`) by this folder's `mod.rs`
// and by `crates/experiment/tests/common/mod.rs`.

/// Asserts `violations / trials ≤ beta + 3·sqrt(beta(1−beta)/trials)`.
pub fn assert_coverage(violations: usize, trials: usize, beta: f64, what: &str) {
    let rate = violations as f64 / trials as f64;
    let limit = beta + 3.0 * (beta * (1.0 - beta) / trials as f64).sqrt();
    println!("{what}: P[bound > truth] = {rate:.4} (limit {limit:.4})");
    assert!(
        rate <= limit,
        "{what}: P[bound > truth] = {rate} > {limit} ({violations}/{trials})"
    );
}
