//! The Chua et al. shuffle lower bound over several epochs (Annamalai et al. 2024 §6.1: "Multi-epoch: compose
//! the single-epoch PLD of this pair").

use dpaudit_accounting::{dpsgd_epsilon, shuffle_lower_bound, Accountant};

#[test]
fn three_epochs_match_an_independent_convolution() {
    // tests/reference/chua_composition_check.py (numpy convolution of the same bucketed pair,
    // losses rounded down / up to 1e-3): σ = 1.0, T = 100, E = 3, δ = 1e-5 → ε ∈ [5.885025, 5.888025].
    let lb = shuffle_lower_bound(1.0, 100, 3, 1e-5).unwrap();
    assert!(
        lb.epsilon >= 5.885025 - 2e-3 && lb.epsilon <= 5.888025,
        "{}",
        lb.epsilon
    );
    assert_eq!((lb.steps_per_epoch, lb.epochs), (100, 3));
}

#[test]
fn monotone_in_epochs_and_noise() {
    let e1 = shuffle_lower_bound(1.5, 100, 1, 1e-5).unwrap().epsilon;
    let e2 = shuffle_lower_bound(1.5, 100, 2, 1e-5).unwrap().epsilon;
    let e4 = shuffle_lower_bound(1.5, 100, 4, 1e-5).unwrap().epsilon;
    assert!(e1 < e2 && e2 < e4, "{e1} {e2} {e4}");
    let noisier = shuffle_lower_bound(2.0, 100, 2, 1e-5).unwrap().epsilon;
    assert!(noisier < e2);
}

#[test]
fn several_epochs_exceed_the_poisson_epsilon() {
    // Annamalai et al. 2024 §6.2.2, Table 1 (Table 1 style): shuffled training with E epochs is compared against the
    // Poisson ε with q = 1/T and T·E steps; in these regimes the lower bound already exceeds it.
    let (sigma, t, epochs) = (1.0, 100u64, 5u64);
    let shuffle = shuffle_lower_bound(sigma, t, epochs, 1e-5).unwrap().epsilon;
    let poisson = dpsgd_epsilon(1.0 / t as f64, sigma, t * epochs, 1e-5, Accountant::Pld)
        .unwrap()
        .epsilon;
    assert!(shuffle > poisson, "{shuffle} vs {poisson}");
}
