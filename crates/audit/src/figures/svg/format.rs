//! Axis ticks and number formatting for figures: 1-2-5 tick steps, round
//! axis ends, tick and value labels (never `NaN` or `inf`), powers of ten.

/// Multiples of a 1-2-5 step that lie in `[lo, hi]` (about `target` of
/// them), and the step. Falls back to the two ends (step 0) when no step
/// fits.
pub fn ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let raw = hi / target as f64 - lo / target as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return (vec![lo, hi], 0.0);
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let step = mag
        * if norm < 1.5 {
            1.0
        } else if norm < 3.5 {
            2.0
        } else if norm < 7.5 {
            5.0
        } else {
            10.0
        };
    let (k0, k1) = ((lo / step).ceil(), (hi / step).floor());
    if !(step > 0.0 && k0.is_finite() && k1.is_finite() && k1 >= k0 && k1 - k0 <= 50.0) {
        return (vec![lo, hi], 0.0);
    }
    let ticks = (0..=(k1 - k0) as usize)
        // `+ 0.0` turns −0 into 0.
        .map(|i| (k0 + i as f64) * step + 0.0)
        .collect();
    (ticks, step)
}

/// The smallest multiple of a 1-2-5 step at or above `hi` (finite, > 0),
/// so that an axis `[0, nice_ceil(hi)]` ends on a tick.
pub fn nice_ceil(hi: f64) -> f64 {
    let (t, step) = ticks(0.0, hi, 5);
    let last = t.last().copied().unwrap_or(hi);
    if step > 0.0 && last < hi {
        last + step
    } else {
        last.max(hi)
    }
}

/// A tick label with as many decimals as the tick step needs.
pub fn fmt_tick(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let decimals = if step > 0.0 && step < 1.0 {
        (-step.log10().floor()).max(0.0) as usize
    } else {
        0
    };
    if v.abs() >= 1e6 || decimals > 6 || step == 0.0 && v.abs() < 1e-3 {
        format!("{v:.3e}")
    } else if step == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.decimals$}")
    }
}

/// A value label: three decimals, scientific when very large or small,
/// `n/a` when not finite.
pub fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        "n/a".to_string()
    } else if v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:.3e}")
    } else {
        format!("{v:.3}")
    }
}

/// A round tick value in few characters: `0`, `20`, `0.5`, `2e-4`, `1e6`.
pub fn fmt_round(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-2..1e5).contains(&a) {
        format!("{v:e}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// `10^k` as `1`, `10`, `0.1` for |k| ≤ 1, else `10⁻³`-style.
pub fn pow10_label(k: i32) -> String {
    match k {
        0 => "1".into(),
        1 => "10".into(),
        -1 => "0.1".into(),
        _ => {
            let sup: String = k
                .to_string()
                .chars()
                .map(|c| match c {
                    '-' => '⁻',
                    '0' => '⁰',
                    '1' => '¹',
                    '2' => '²',
                    '3' => '³',
                    '4' => '⁴',
                    '5' => '⁵',
                    '6' => '⁶',
                    '7' => '⁷',
                    '8' => '⁸',
                    _ => '⁹',
                })
                .collect();
            format!("10{sup}")
        }
    }
}

/// Decade ticks `(10^k, label)` for `k` in `k0..=k1`.
pub fn decade_ticks(k0: i32, k1: i32) -> Vec<(f64, String)> {
    (k0..=k1).map(|k| (10f64.powi(k), pow10_label(k))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_helpers() {
        // 1-2-5 steps: [0, 10] in ~5 → step 2; [0, 1] in ~6 → raw 0.1667 → 0.2.
        assert_eq!(
            ticks(0.0, 10.0, 5),
            (vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0], 2.0)
        );
        let (t, step) = ticks(0.0, 1.0, 6);
        assert_eq!(step, 0.2);
        assert_eq!(t.len(), 6);
        assert_eq!(fmt_tick(t[3], step), "0.6");
        assert_eq!(nice_ceil(9.2), 10.0);
        assert_eq!(nice_ceil(13.8), 14.0);
        assert_eq!(nice_ceil(2.0), 2.0);
        assert_eq!(fmt_value(f64::NAN), "n/a");
        assert_eq!(fmt_value(2.0e7), "2.000e7");
    }
}
