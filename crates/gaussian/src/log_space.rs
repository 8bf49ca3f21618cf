//! Arithmetic on numbers kept as their logarithms: the workspace's one
//! log-add-exp, shared by the accountants (`dpaudit-accounting`'s PLD and RDP)
//! and open to the attacks and audit crates without weight.

/// `ln(eᵃ + eᵇ)`, with `−∞` as the additive identity on either side.
///
/// Factors out the larger argument, `m + ln(e^{a−m} + e^{b−m})`, so no
/// exponential overflows; the operation order is fixed (callers' outputs are
/// compared byte for byte).
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_add_exp_closed_forms() {
        // ln(1 + 1) = ln 2; ln(e^1000 + e^1000) = 1000 + ln 2 without overflow.
        assert!((log_add_exp(0.0, 0.0) - std::f64::consts::LN_2).abs() < 1e-15);
        assert!((log_add_exp(1000.0, 1000.0) - (1000.0 + std::f64::consts::LN_2)).abs() < 1e-12);
        // −∞ is the identity; e^{−800} vanishes against e^0 in f64.
        assert_eq!(log_add_exp(f64::NEG_INFINITY, -3.5), -3.5);
        assert_eq!(log_add_exp(2.0, f64::NEG_INFINITY), 2.0);
        assert_eq!(log_add_exp(0.0, -800.0), 0.0);
        // ln(e² + e³) = 3 + ln(1 + e⁻¹).
        assert!((log_add_exp(2.0, 3.0) - (3.0 + (-1.0f64).exp().ln_1p())).abs() < 1e-15);
    }
}
