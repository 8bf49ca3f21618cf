//! The fixed-threshold excess: a lower-variance companion of ε̃ for
//! comparing targets. ε̃ subtracts two maxima over every threshold, each
//! resting on the few dozen to few hundred most confident predictions,
//! where the generated records' realness decides and the target's leakage
//! hardly shows; between classifier seeds those maxima move by more than
//! the targets differ. Here the thresholds are fixed in advance as counts
//! of predictions, `r = f · m/2` for the fractions [`BAND`] of the expected
//! members: at each, `c_r = logit(p̲)` of the top `r` scores is the
//! one-sided bound of Proposition 1 / 2 at level `β/2` (Kazmi et al. 2024,
//! §4.1; one fixed threshold, so no selection), floored at 0 like `c_lb`.
//! The excess is the mean over the band of `c_r(MIA) − c_r(b)`. Like ε̃ it
//! is a measurement, not a bound.

use dpaudit_audit::panoramia::logit_precision_lower_bound;

use crate::error::Result;

/// Fractions of the expected number of members `m/2` at which the band's
/// thresholds sit (for m = 10,000: the top 250, 500, 1,000 and 2,000).
pub const BAND: [f64; 4] = [0.05, 0.1, 0.2, 0.4];

/// `c_r` at every `r` of `rs` for the `r` highest scores (ties by
/// index), floored at 0.
fn c_at(scores: &[f64], coins: &[bool], rs: &[usize], level: f64) -> Result<Vec<f64>> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    rs.iter()
        .map(|&r| {
            let tp = order[..r].iter().filter(|&&i| coins[i]).count() as u64;
            Ok(logit_precision_lower_bound(tp, r as u64, level)?.max(0.0))
        })
        .collect()
}

/// The mean over [`BAND`] of `c_r(mia) − c_r(baseline)` on the audit set
/// with coins `coins`, each bound at `level`.
pub fn excess(baseline: &[f64], mia: &[f64], coins: &[bool], level: f64) -> Result<f64> {
    let m = coins.len();
    let rs: Vec<usize> = BAND
        .iter()
        .map(|f| ((f * m as f64 / 2.0).round() as usize).clamp(1, m))
        .collect();
    let (a, b) = (
        c_at(mia, coins, &rs, level)?,
        c_at(baseline, coins, &rs, level)?,
    );
    Ok(a.iter().zip(&b).map(|(x, y)| x - y).sum::<f64>() / rs.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// m = 400, so r = 10, 20, 40, 80. Scores that put every member first
    /// give tp = r at each r: c_r = logit(level^{1/r}) (the closed form of
    /// the paper's all-correct case); a score that ranks at random gives
    /// less at every r, so the excess of the perfect ranking over it is
    /// positive and the excess of a ranking over itself is 0.
    #[test]
    fn excess_of_a_perfect_ranking_is_the_closed_form_gap() {
        let coins: Vec<bool> = (0..400).map(|i| i % 2 == 0).collect();
        let perfect: Vec<f64> = coins.iter().map(|&c| if c { 1.0 } else { 0.0 }).collect();
        let level = 0.025f64;
        let closed = |r: f64| {
            let p = level.powf(1.0 / r);
            (p / (1.0 - p)).ln()
        };
        let want = [10.0, 20.0, 40.0, 80.0]
            .iter()
            .map(|&r| closed(r))
            .sum::<f64>()
            / 4.0;
        // The reverse ranking has no true positive in its top 80: c = 0.
        let reverse: Vec<f64> = perfect.iter().map(|v| -v).collect();
        let got = excess(&reverse, &perfect, &coins, level).unwrap();
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        assert_eq!(excess(&perfect, &perfect, &coins, level).unwrap(), 0.0);
    }
}
