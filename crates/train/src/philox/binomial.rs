//! The CDF of a binomial law, tabulated on the host for
//! [`Philox::binomial`](super::Philox::binomial).

/// `F(0), F(1), …` of Binomial(`n`, `p`) in float64, stopping once
/// the mass beyond `k` is below 2⁻⁶⁰ (or at `k = n`); the last entry is set
/// to 1.
pub fn binomial_cdf(n: u64, p: f64) -> Result<Vec<f64>, String> {
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("binomial p = {p}: expected 0 ≤ p ≤ 1"));
    }
    if p == 0.0 || n == 0 {
        return Ok(vec![1.0]);
    }
    if p == 1.0 {
        let mut cdf = vec![0.0; n as usize];
        cdf.push(1.0);
        return Ok(cdf);
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    // log C(n, k) by the recurrence log C(n, k+1) = log C(n, k) + ln((n−k)/(k+1)).
    let mut log_choose = 0.0f64;
    let mut pmf = Vec::new();
    for k in 0..=n {
        if k > 0 {
            log_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        let v = (log_choose + k as f64 * lp + (n - k) as f64 * lq).exp();
        pmf.push(v);
        // Past the mode the pmf falls at least geometrically with ratio
        // r = (n−k)p / ((k+1)(1−p)) < 1, so the mass beyond k is at most
        // v·r/(1−r): stop once that is below 2⁻⁶⁰.
        let r = (n - k) as f64 * p / ((k + 1) as f64 * (1.0 - p));
        if r < 1.0 && v * r / (1.0 - r) < 2f64.powi(-60) {
            break;
        }
        if pmf.len() > 50_000_000 {
            return Err(format!(
                "binomial({n}, {p}): the CDF table would exceed 5·10⁷ entries"
            ));
        }
    }
    let mut cdf = Vec::with_capacity(pmf.len());
    let mut acc = 0.0;
    for v in pmf {
        acc += v;
        cdf.push(acc.min(1.0));
    }
    if let Some(last) = cdf.last_mut() {
        *last = 1.0;
    }
    Ok(cdf)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, clippy::arithmetic_side_effects)] // tests may panic
mod tests {
    use super::*;

    #[test]
    fn binomial_cdf_matches_closed_forms() {
        // Binomial(3, 1/2): 1/8, 4/8, 7/8, 1 (to the rounding of exp/ln).
        let cdf = binomial_cdf(3, 0.5).unwrap();
        for (got, want) in cdf.iter().zip([0.125, 0.5, 0.875, 1.0]) {
            assert!((got - want).abs() < 1e-15, "{cdf:?}");
        }
        assert_eq!(cdf.len(), 4);
        assert_eq!(binomial_cdf(5, 0.0).unwrap(), vec![1.0]);
        assert_eq!(binomial_cdf(2, 1.0).unwrap(), vec![0.0, 0.0, 1.0]);
        assert!(binomial_cdf(5, 1.5).is_err());
        // Large n: F(0) = (1 − p)^n.
        let cdf = binomial_cdf(60_000, 1e-3).unwrap();
        assert!((cdf[0] - (1.0f64 - 1e-3).powi(60_000)).abs() < 1e-30);
        assert!(cdf.len() < 200, "{} entries", cdf.len());
    }
}
