//! Validity conditions travel with the bounds: a bound converted from μ
//! assumes a Gaussian trade-off curve and says so, and it is marked not valid
//! when the caller says the mechanism's curve is not Gaussian (a sampled
//! canary: Cebere et al. 2024, Remark 3), whoever calls it.

use dpaudit_audit::bound::{MechanismAssumption, TradeoffShape};
use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::one_run::{one_run_lower_bound, GuessFamily, OneRunConfig};
use dpaudit_audit::one_run_fdp::{one_run_fdp_lower_bound, TradeoffFamily};
use dpaudit_audit::region::{eps_delta_lower_bound, gdp_lower_bound, RegionConfig};

/// Members at 0.5 + i/n, non-members at i/n: separable enough for a
/// positive bound.
fn scores(n: usize) -> Observations<'static> {
    let mut s = Vec::new();
    let mut m = Vec::new();
    for i in 0..n {
        let x = i as f64 / n as f64;
        s.extend([x + 0.5, x]);
        m.extend([true, false]);
    }
    Observations::new(s, m).unwrap()
}

#[test]
fn gdp_bounds_assume_a_gaussian_tradeoff_and_lose_validity_without_one() {
    let obs = scores(2000);
    let cfg = RegionConfig {
        confidence: 0.95,
        delta: 1e-5,
        selection: Selection::Split { seed: 3 },
    };
    let gdp = gdp_lower_bound(&obs, &cfg).unwrap();
    assert!(gdp.epsilon > 0.5, "{}", gdp.epsilon);
    assert_eq!(gdp.assumes, MechanismAssumption::GaussianTradeoff);
    assert!(gdp.assumption().contains("NOT valid for sampled"));
    assert!(gdp.valid_at_confidence);
    assert!(
        gdp.clone()
            .for_mechanism(TradeoffShape::Gaussian)
            .valid_at_confidence
    );
    assert!(
        gdp.clone()
            .for_mechanism(TradeoffShape::Unknown)
            .valid_at_confidence
    );
    let sampled = gdp.clone().for_mechanism(TradeoffShape::NotGaussian);
    assert!(!sampled.valid_at_confidence);
    // The number is unchanged; only its standing is.
    assert_eq!(sampled.epsilon, gdp.epsilon);

    // The (ε, δ) region assumes nothing of the mechanism.
    let region = eps_delta_lower_bound(&obs, &cfg).unwrap();
    assert_eq!(region.assumes, MechanismAssumption::Nothing);
    assert!(
        region
            .for_mechanism(TradeoffShape::NotGaussian)
            .valid_at_confidence
    );

    // Same-data stays invalid whatever the mechanism.
    let same = RegionConfig {
        selection: Selection::SameData,
        ..cfg
    };
    let g = gdp_lower_bound(&obs, &same).unwrap();
    assert!(!g.for_mechanism(TradeoffShape::Gaussian).valid_at_confidence);
}

#[test]
fn one_run_bounds_carry_their_assumption() {
    let obs = scores(1000);
    let design = OneRunConfig::new(0.95, 1e-5, Selection::Split { seed: 1 })
        .with_guesses(GuessFamily::WithOneSided);
    let gauss = one_run_fdp_lower_bound(&obs, &design, TradeoffFamily::Gaussian).unwrap();
    assert_eq!(gauss.assumes, MechanismAssumption::GaussianTradeoff);
    assert!(
        !gauss
            .for_mechanism(TradeoffShape::NotGaussian)
            .valid_at_confidence
    );
    let eps = one_run_fdp_lower_bound(&obs, &design, TradeoffFamily::EpsDelta).unwrap();
    assert_eq!(eps.assumes, MechanismAssumption::Nothing);
    assert!(
        eps.for_mechanism(TradeoffShape::NotGaussian)
            .valid_at_confidence
    );
    let steinke = one_run_lower_bound(&obs, &design).unwrap();
    assert_eq!(steinke.assumes, MechanismAssumption::Nothing);
}
