//! The log-space likelihood ratios of Annamalai et al. 2024 §4.1–4.2, §5.3 against the direct
//! density-product formulas, and the T = 1 / Poisson closed forms.

mod common;

use common::normal_pdf;
use dpaudit_attacks::{log_likelihood_ratio, AttacksError, LikelihoodRatio, ObservationMatrix};

const SIGMA: f64 = 0.8;

/// Π_i [Σ_t φ_a(o_t) Π_{t'≠t} φ_base(o_t')] / [Σ_t φ_b(o_t) Π_{t'≠t} φ_base'(o_t')],
/// evaluated literally (Annamalai et al. 2024 §4.1–4.2, §5.3 displayed formulas).
fn direct(m: &ObservationMatrix, num: (f64, f64), den: Option<(f64, f64)>, den_base: f64) -> f64 {
    let mut lambda = 1.0;
    for e in 0..m.epochs() {
        let row = m.row(e);
        let mixture = |special: f64, base: f64| -> f64 {
            (0..row.len())
                .map(|t| {
                    row.iter()
                        .enumerate()
                        .map(|(s, &o)| normal_pdf(o, if s == t { special } else { base }, SIGMA))
                        .product::<f64>()
                })
                .sum()
        };
        let n = mixture(num.0, num.1);
        let d = match den {
            Some((special, base)) => mixture(special, base),
            None => row
                .iter()
                .map(|&o| normal_pdf(o, den_base, SIGMA))
                .product(),
        };
        lambda *= n / d;
    }
    lambda.ln()
}

fn matrix() -> ObservationMatrix {
    // E = 3 epochs, T = 4 steps, values spread around the relevant means.
    let values = vec![
        0.3, -1.2, 1.1, -0.4, //
        -0.9, 0.2, -1.5, 2.0, //
        0.0, 0.7, -0.1, -2.2,
    ];
    ObservationMatrix::new(3, 4, values).unwrap()
}

#[test]
fn natural_partially_informed_worst_case_and_bts_match_direct_formulas() {
    // Annamalai et al. 2024 §4.1–4.2, §5.3: the LSE forms were checked against the direct formulas to
    // 1e-12; at these magnitudes 1e-10 leaves room for the products' rounding.
    let m = matrix();
    let cases = [
        (LikelihoodRatio::Natural, direct(&m, (1.0, 0.0), None, 0.0)),
        (
            LikelihoodRatio::PartiallyInformed,
            direct(&m, (1.0, -1.0), Some((0.0, -1.0)), 0.0),
        ),
    ];
    for (lr, expected) in cases {
        let got = log_likelihood_ratio(lr, &m, SIGMA, 4).unwrap();
        assert!(
            (got - expected).abs() < 1e-10,
            "{lr:?}: {got} vs {expected}"
        );
    }
    // Λ^WC with B = 2: means −B+2 = 0 / −B+1 = −1 over base −B = −2; shift the
    // observations to that scale first.
    let b = 2.0;
    let shifted: Vec<f64> = m.values().iter().map(|o| o - b + 1.0).collect();
    let ms = ObservationMatrix::new(3, 4, shifted).unwrap();
    let expected = direct(&ms, (-b + 2.0, -b), Some((-b + 1.0, -b)), 0.0);
    let got =
        log_likelihood_ratio(LikelihoodRatio::WorstCase { batch_size: 2 }, &ms, SIGMA, 4).unwrap();
    assert!((got - expected).abs() < 1e-10, "WC: {got} vs {expected}");
    // Λ^BtS with B = 2: means B / B−1 over base −B.
    let expected = direct(&m, (b, -b), Some((b - 1.0, -b)), 0.0);
    let got = log_likelihood_ratio(
        LikelihoodRatio::BatchThenShuffle { batch_size: 2 },
        &m,
        SIGMA,
        4,
    )
    .unwrap();
    assert!((got - expected).abs() < 1e-10, "BtS: {got} vs {expected}");
}

#[test]
fn truncated_columns_equal_the_formula_on_the_first_k_columns() {
    // Annamalai et al. 2024 §7.1, Algorithm 2: Λ^PI([o_1|…|o_k]).
    let m = matrix();
    let k = 2;
    let values: Vec<f64> = (0..3).flat_map(|e| m.row(e)[..k].to_vec()).collect();
    let mk = ObservationMatrix::new(3, k, values).unwrap();
    let a = log_likelihood_ratio(LikelihoodRatio::PartiallyInformed, &m, SIGMA, k).unwrap();
    let b = log_likelihood_ratio(LikelihoodRatio::PartiallyInformed, &mk, SIGMA, k).unwrap();
    assert_eq!(a, b);
    assert!(matches!(
        log_likelihood_ratio(LikelihoodRatio::Natural, &m, SIGMA, 5),
        Err(AttacksError::InvalidParameter {
            parameter: "columns",
            ..
        })
    ));
    assert!(matches!(
        log_likelihood_ratio(LikelihoodRatio::Natural, &m, 0.0, 4),
        Err(AttacksError::InvalidParameter {
            parameter: "noise_multiplier",
            ..
        })
    ));
}

#[test]
fn worst_case_with_one_batch_is_the_gaussian_likelihood_ratio() {
    // T = 1: the target is always in the only batch, so Λ^WC = φ_{−B+2}(o)/φ_{−B+1}(o)
    // (closed form: log = ((o+B−1)² − (o+B−2)²)/(2σ²)).
    for &b in &[1usize, 7, 100] {
        for &o in &[-103.0, -98.5, -5.0, 0.0, 2.5] {
            let m = ObservationMatrix::new(1, 1, vec![o]).unwrap();
            let got =
                log_likelihood_ratio(LikelihoodRatio::WorstCase { batch_size: b }, &m, SIGMA, 1)
                    .unwrap();
            let bf = b as f64;
            let expected =
                ((o + bf - 1.0).powi(2) - (o + bf - 2.0).powi(2)) / (2.0 * SIGMA * SIGMA);
            assert!(
                (got - expected).abs() < 1e-9 * expected.abs().max(1.0),
                "B={b} o={o}: {got} vs {expected}"
            );
        }
    }
}

#[test]
fn poisson_ratio_is_the_mixture_formula() {
    // Annamalai et al. 2024 §4, Algorithm 4 Poisson worst case: each step holds the target w.p. q, so
    // Λ = Π_{i,t} [(1−q)φ₀(o) + qφ₁(o)]/φ₀(o).
    let m = matrix();
    let q = 0.1;
    let expected: f64 = m
        .values()
        .iter()
        .map(|&o| {
            (((1.0 - q) * normal_pdf(o, 0.0, SIGMA) + q * normal_pdf(o, 1.0, SIGMA))
                / normal_pdf(o, 0.0, SIGMA))
            .ln()
        })
        .sum();
    let got =
        log_likelihood_ratio(LikelihoodRatio::Poisson { sample_rate: q }, &m, SIGMA, 4).unwrap();
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    // q = 1: every step holds the target, the LR is the Gaussian one summed over steps.
    let all: f64 = m
        .values()
        .iter()
        .map(|&o| (2.0 * o - 1.0) / (2.0 * SIGMA * SIGMA))
        .sum();
    let got =
        log_likelihood_ratio(LikelihoodRatio::Poisson { sample_rate: 1.0 }, &m, SIGMA, 4).unwrap();
    assert!((got - all).abs() < 1e-12);
}
