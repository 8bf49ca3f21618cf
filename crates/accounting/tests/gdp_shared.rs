//! μ-GDP's δ(ε) is defined once (`dpaudit_gaussian::gdp_delta`): the
//! accountant's exact GDP conversion and the audit statistics' read the same
//! function, and both equal the closed form of Dong, Roth & Su 2022,
//! Corollary 2.13, `δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`.

use dpaudit_accounting::gdp::{delta_for_epsilon, epsilon_for_delta};

/// (μ, ε, δ(ε)): Cor. 2.13 evaluated in 50-digit arithmetic (mpmath 1.3).
const REFERENCE: [(f64, f64, f64); 3] = [
    (1.0, 1.0, 0.126_936_737_506_643_9),
    (2.0, 3.0, 0.183_813_076_544_472_2),
    (3.0, 10.0, 0.018_589_514_315_857_81),
];

#[test]
fn accountant_and_audit_use_the_same_delta_of_epsilon() {
    for (mu, eps, expected) in REFERENCE {
        let accountant = delta_for_epsilon(mu, eps);
        let audit = dpaudit_gaussian::gdp_delta(mu, eps);
        assert_eq!(accountant.to_bits(), audit.to_bits(), "μ={mu}, ε={eps}");
        assert!(
            (accountant - expected).abs() <= 1e-13 * expected,
            "μ={mu}, ε={eps}: {accountant} vs {expected}"
        );
    }
}

#[test]
fn upper_and_lower_epsilon_bracket_the_same_root() {
    // The accountant rounds ε(δ) up, the audit rounds it down; both within
    // 1e-12 relative of the root of Cor. 2.13 (4.377 178 095 681 22 for
    // μ = 1, δ = 1e-5, by bisection in 50-digit arithmetic).
    let root = 4.377_178_095_681_22;
    let upper = epsilon_for_delta(1.0, 1e-5).unwrap();
    let lower = dpaudit_gaussian::gdp_epsilon(1.0, 1e-5);
    assert!(lower <= upper, "{lower} > {upper}");
    assert!((upper - root).abs() < 1e-11 && (lower - root).abs() < 1e-11);
}
