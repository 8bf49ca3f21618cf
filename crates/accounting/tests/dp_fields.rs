//! The one validation of the DP fields (`dpaudit_accounting::dp_fields`):
//! every context × field at the boundary values, and the accountant's
//! refusals going through it.

use dpaudit_accounting::dp_fields::{check, check_steps, expected, DpContext, DpField};
use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant, AccountingError,
};

use DpContext::{Calibrated, Claimed, Training};
use DpField::*;

/// The boundary values of every row, in this order.
const VALUES: [f64; 9] = [
    0.0,
    -0.0,
    -1.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    5e-324, // the smallest positive f64
    1.0,
    2.0,
];

/// Whether each of [`VALUES`] is admitted (1) or refused (0), per field and
/// context. The rules are stated in the module documentation.
const TABLE: &[(DpField, DpContext, [u8; 9])] = &[
    //                             0  -0  -1 NaN  ∞  -∞ tiny 1  2
    (NoiseMultiplier, Training, [1, 1, 0, 0, 0, 0, 1, 1, 1]),
    (NoiseMultiplier, Claimed, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (NoiseMultiplier, Calibrated, [1, 1, 0, 0, 0, 0, 0, 0, 0]),
    (MaxGradNorm, Training, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (MaxGradNorm, Claimed, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (MaxGradNorm, Calibrated, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (SampleRate, Training, [0, 0, 0, 0, 0, 0, 1, 1, 0]),
    (SampleRate, Claimed, [0, 0, 0, 0, 0, 0, 1, 1, 0]),
    (SampleRate, Calibrated, [0, 0, 0, 0, 0, 0, 1, 1, 0]),
    (ExpectedBatchSize, Training, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (ExpectedBatchSize, Claimed, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (ExpectedBatchSize, Calibrated, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (Steps, Training, [0, 0, 0, 0, 0, 0, 0, 1, 1]),
    (Steps, Claimed, [0, 0, 0, 0, 0, 0, 0, 1, 1]),
    (Steps, Calibrated, [0, 0, 0, 0, 0, 0, 0, 1, 1]),
    (Delta, Training, [0, 0, 0, 0, 0, 0, 1, 0, 0]),
    (Delta, Claimed, [0, 0, 0, 0, 0, 0, 1, 0, 0]),
    (Delta, Calibrated, [0, 0, 0, 0, 0, 0, 1, 0, 0]),
    (TargetEpsilon, Training, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (TargetEpsilon, Claimed, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
    (TargetEpsilon, Calibrated, [0, 0, 0, 0, 0, 0, 1, 1, 1]),
];

#[test]
fn every_context_and_field_at_the_boundaries() {
    for field in DpField::ALL {
        for context in DpContext::ALL {
            let row = TABLE
                .iter()
                .find(|(f, c, _)| *f == field && *c == context)
                .unwrap_or_else(|| panic!("no row for {field:?} in {context:?}"));
            for (value, &admitted) in VALUES.iter().zip(&row.2) {
                let got = check(context, field, *value);
                match (admitted, got) {
                    (1, Ok(v)) => {
                        assert!(v == *value, "{field:?} {context:?} {value} returned {v}")
                    }
                    (0, Err(e)) => {
                        assert_eq!(e.field, field);
                        assert_eq!(e.context, context);
                        assert!(e.value.to_bits() == value.to_bits());
                        assert_eq!(e.expected, expected(context, field));
                        assert!(e.to_string().contains(field.name()), "{e}");
                    }
                    (want, got) => {
                        panic!("{field:?} in {context:?} at {value}: want admitted = {want}, got {got:?}")
                    }
                }
            }
        }
    }
}

#[test]
fn the_rules_in_between_the_boundaries() {
    // Steps: integers only; δ: open at 1; q: closed at 1.
    assert!(check(Training, Steps, 2.5).is_err());
    assert!(check(Claimed, Delta, 1.0 - f64::EPSILON).is_ok());
    assert!(check(Claimed, SampleRate, 1.0 + f64::EPSILON).is_err());
    assert_eq!(check_steps(1), Ok(1));
    assert_eq!(check_steps(u64::MAX), Ok(u64::MAX));
    assert_eq!(check_steps(0).map_err(|e| e.field), Err(Steps));
    for field in DpField::ALL {
        assert_eq!(DpField::from_name(field.name()), Some(field));
    }
}

/// The accountant's refusals are the validator's, in [`DpContext::Claimed`]
/// (σ) and [`DpContext::Calibrated`] (the target ε).
#[test]
fn the_accountant_refuses_through_the_validator() {
    let refused =
        |name: &'static str, value: f64, context, field| AccountingError::InvalidParameter {
            name,
            value,
            expected: expected(context, field),
        };
    for sigma in [0.0, -1.0, f64::INFINITY] {
        assert_eq!(
            dpsgd_epsilon(0.01, sigma, 10, 1e-5, Accountant::Rdp).unwrap_err(),
            refused("noise_multiplier", sigma, Claimed, NoiseMultiplier)
        );
        assert_eq!(
            shuffle_lower_bound(sigma, 10, 1, 1e-5).unwrap_err(),
            refused("noise_multiplier", sigma, Claimed, NoiseMultiplier)
        );
    }
    assert_eq!(
        dpsgd_epsilon(1.5, 1.0, 10, 1e-5, Accountant::Rdp).unwrap_err(),
        refused("sample_rate", 1.5, Claimed, SampleRate)
    );
    assert_eq!(
        dpsgd_epsilon(0.01, 1.0, 10, 1.0, Accountant::Rdp).unwrap_err(),
        refused("delta", 1.0, Claimed, Delta)
    );
    assert_eq!(
        dpsgd_epsilon(0.01, 1.0, 0, 1e-5, Accountant::Rdp).unwrap_err(),
        AccountingError::ZeroCount { name: "steps" }
    );
    assert_eq!(
        calibrate_noise_multiplier(0.01, 10, 1e-5, 0.0, Accountant::Rdp, 1e-3).unwrap_err(),
        refused("target_epsilon", 0.0, Calibrated, TargetEpsilon)
    );
}
