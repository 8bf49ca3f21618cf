//! The experiment files refuse DP fields through the one validation
//! (`dpaudit_accounting::dp_fields`): a canary audit claims the accountant's
//! ε, so σ > 0; a BGM setting claims it for a given σ and calibrates σ to a
//! given `epsilon`. Each refusal says what the validator says, under the key
//! the file spells.

mod common;

use std::path::Path;

use common::fixtures::{with, BGM_SETTING, TINY_CANARY};
use common::read_canary;
use dpaudit_accounting::dp_fields::{expected, DpContext, DpField};
use dpaudit_experiment::bgm::audit::{prepare, BgmExperiment};

fn bgm_refusal(text: &str) -> String {
    let experiment = BgmExperiment::from_toml(Path::new("t.toml"), text).unwrap();
    prepare(experiment.settings[0].clone())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn a_canary_audit_refuses_sigma_zero_as_the_claimed_context() {
    // σ = 0 passes the training rule of `train.dp` and is refused here, as
    // are the values the training rule refuses, in the claimed context's words.
    let said = expected(DpContext::Claimed, DpField::NoiseMultiplier);
    for bad in ["0.0", "-1.0", "nan", "inf"] {
        let e = read_canary(
            &with(
                TINY_CANARY,
                &[(
                    "noise_multiplier = 1.0",
                    &format!("noise_multiplier = {bad}"),
                )],
            ),
            "t.toml",
        )
        .unwrap_err();
        assert!(
            e.contains("train.dp.noise_multiplier") && e.contains(said),
            "{bad}: {e}"
        );
    }
}

#[test]
fn a_bgm_setting_refuses_through_the_validator() {
    let sigma = |v: &str| with(BGM_SETTING, &[("noise_multiplier = 1.0", v)]);
    for bad in ["0.0", "-1.0", "nan", "inf"] {
        let e = bgm_refusal(&sigma(&format!("noise_multiplier = {bad}")));
        let said = expected(DpContext::Claimed, DpField::NoiseMultiplier);
        assert!(
            e.contains("noise_multiplier") && e.contains(said),
            "{bad}: {e}"
        );
    }
    for bad in ["0.0", "-1.0", "inf"] {
        let e = bgm_refusal(&sigma(&format!("epsilon = {bad}")));
        let said = expected(DpContext::Calibrated, DpField::TargetEpsilon);
        assert!(e.contains("epsilon") && e.contains(said), "{bad}: {e}");
    }
    let e = bgm_refusal(&with(BGM_SETTING, &[("delta = 1e-5", "delta = 1.0")]));
    let said = expected(DpContext::Claimed, DpField::Delta);
    assert!(e.contains("delta") && e.contains(said), "{e}");
}
