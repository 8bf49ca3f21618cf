//! Bad input gives a typed error naming the parameter.

use dpaudit_accounting::{
    calibrate_noise_multiplier, dpsgd_epsilon, shuffle_lower_bound, Accountant, AccountingError,
};

fn name_of(e: AccountingError) -> &'static str {
    match e {
        AccountingError::InvalidParameter { name, .. } | AccountingError::ZeroCount { name } => {
            name
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn invalid_parameters_are_named() {
    let cases: [(f64, f64, u64, f64, &str); 12] = [
        (0.0, 1.0, 10, 1e-5, "sample_rate"),
        (1.5, 1.0, 10, 1e-5, "sample_rate"),
        (-0.1, 1.0, 10, 1e-5, "sample_rate"),
        (f64::NAN, 1.0, 10, 1e-5, "sample_rate"),
        (0.1, 0.0, 10, 1e-5, "noise_multiplier"),
        (0.1, -1.0, 10, 1e-5, "noise_multiplier"),
        (0.1, f64::NAN, 10, 1e-5, "noise_multiplier"),
        (0.1, 1.0, 0, 1e-5, "steps"),
        (0.1, 1.0, 10, 0.0, "delta"),
        (0.1, 1.0, 10, 1.0, "delta"),
        (0.1, 1.0, 10, f64::NAN, "delta"),
        (0.1, f64::INFINITY, 10, 1e-5, "noise_multiplier"),
    ];
    for acc in [
        Accountant::Pld,
        Accountant::Rdp,
        Accountant::Gdp,
        Accountant::GdpClt,
    ] {
        for (q, s, k, d, name) in cases {
            let err = dpsgd_epsilon(q, s, k, d, acc).unwrap_err();
            let message = err.to_string();
            assert_eq!(name_of(err), name, "{acc}: q={q} σ={s} k={k} δ={d}");
            assert!(message.contains(name), "{message}");
        }
    }
}

#[test]
fn exact_gdp_refuses_subsampling_with_a_hint() {
    let err = dpsgd_epsilon(0.01, 1.0, 10, 1e-5, Accountant::Gdp).unwrap_err();
    assert!(matches!(
        err,
        AccountingError::Unsupported {
            accountant: "gdp",
            ..
        }
    ));
    assert!(err.to_string().contains("gdp-clt"));
}

#[test]
fn calibration_and_shuffle_validate_too() {
    let err =
        calibrate_noise_multiplier(0.01, 100, 1e-5, f64::NAN, Accountant::Pld, 1e-3).unwrap_err();
    assert_eq!(name_of(err), "target_epsilon");
    let err = calibrate_noise_multiplier(0.01, 0, 1e-5, 1.0, Accountant::Pld, 1e-3).unwrap_err();
    assert_eq!(name_of(err), "steps");
    let err = shuffle_lower_bound(1.0, 100, 0, 1e-5).unwrap_err();
    assert_eq!(name_of(err), "epochs");
    let err = shuffle_lower_bound(1.0, 0, 1, 1e-5).unwrap_err();
    assert_eq!(name_of(err), "steps_per_epoch");
    let err = shuffle_lower_bound(-1.0, 10, 1, 1e-5).unwrap_err();
    assert_eq!(name_of(err), "noise_multiplier");
}

/// A target beyond what the PLD accountant can represent (its ε never exceeds
/// ln(f64::MAX) ≈ 709.78) is an error naming the RDP accountant, not a noise
/// multiplier whose ε is far below the target.
#[test]
fn calibration_to_an_unrepresentable_target_says_so() {
    let err =
        calibrate_noise_multiplier(0.01, 100, 1e-5, 800.0, Accountant::Pld, 1e-3).unwrap_err();
    assert!(
        matches!(err, AccountingError::CalibrationOutOfRange { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("--accountant rdp"), "{err}");
    // The same target is reachable with RDP, and a large but representable
    // target with PLD lands within the calibration gap of it.
    let rdp = calibrate_noise_multiplier(0.01, 100, 1e-5, 800.0, Accountant::Rdp, 1e-3).unwrap();
    assert!(rdp.epsilon.epsilon <= 800.0 && rdp.epsilon.epsilon > 760.0);
}
