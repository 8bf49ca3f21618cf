//! A bound written as JSON (its own fields) reads back as the same value,
//! bit for bit: what the Python binding pickles. Every method and every
//! selection policy, so that every evidence and selection variant is read.

mod common;

use dpaudit_audit::bound::EpsilonLowerBound;
use dpaudit_audit::estimate::{lower_bound, BoundSettings};
use dpaudit_audit::observations::{Method, Observations, Selection};
use dpaudit_audit::one_run::{GuessFamily, TieBreak};
use dpaudit_audit::one_run_fdp::TradeoffFamily;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn data() -> Observations<'static> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let members: Vec<bool> = (0..3000).map(|_| rng.gen()).collect();
    let scores = members
        .iter()
        .map(|&m| rng.gen::<f64>() + if m { 0.6 } else { 0.0 })
        .collect();
    Observations::new(scores, members).unwrap()
}

#[test]
fn every_bound_reads_back_as_itself() {
    let obs = data();
    let selections = [
        Selection::Bonferroni,
        Selection::Split { seed: 3 },
        Selection::MultiSplit { seed: 3, splits: 3 },
        Selection::SameData,
        Selection::Fixed,
    ];
    let mut read = 0;
    for method in [
        Method::EpsDelta,
        Method::Gdp,
        Method::OneRun,
        Method::OneRunFdp,
        Method::OneRunFdpGaussian,
    ] {
        for (selection, tie_break) in selections
            .into_iter()
            .flat_map(|s| [TieBreak::Quantile, TieBreak::Seeded { seed: 11 }].map(|t| (s, t)))
        {
            let settings = BoundSettings {
                guesses: GuessFamily::WithOneSided,
                fixed_guesses: (selection == Selection::Fixed).then_some((100, 100)),
                tie_break,
                ..common::settings(0.95, 1e-5, selection)
            };
            // `fixed` and the seeded tie-break are refused by the threshold
            // methods.
            let Ok(bound) = lower_bound(method, &obs, &settings) else {
                continue;
            };
            let text = serde_json::to_string(&bound).unwrap();
            let back: EpsilonLowerBound = serde_json::from_str(&text).unwrap();
            assert_eq!(back, bound, "{method} {selection}");
            assert_eq!(back.epsilon.to_bits(), bound.epsilon.to_bits());
            assert_eq!(serde_json::to_string(&back).unwrap(), text);
            read += 1;
        }
    }
    // 2 threshold methods × 4 policies + 3 one-run methods × 5 × 2 rules.
    assert_eq!(read, 38);
}

#[test]
fn unknown_names_are_refused() {
    let obs = data();
    let settings = BoundSettings {
        family: TradeoffFamily::Gaussian,
        ..common::settings(0.95, 1e-5, Selection::Bonferroni)
    };
    let bound = lower_bound(Method::OneRunFdp, &obs, &settings).unwrap();
    let text = serde_json::to_string(&bound).unwrap();
    assert!(text.contains("\"family\":\"gaussian\""), "{text}");
    let bad = text.replace("\"family\":\"gaussian\"", "\"family\":\"laplace\"");
    let err = serde_json::from_str::<EpsilonLowerBound>(&bad).unwrap_err();
    assert!(err.to_string().contains("`laplace` is unknown"), "{err}");
}
