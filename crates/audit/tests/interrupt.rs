//! Long computations stop when the caller's hook asks them to, and a
//! multi-split asking for absurd work is refused before any of it is done.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use dpaudit_audit::estimate::{lower_bound, lower_bound_interruptible, BoundSettings};
use dpaudit_audit::interrupt::Interrupt;
use dpaudit_audit::observations::{Method, Observations, Selection};
use dpaudit_audit::AuditError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn settings(selection: Selection) -> BoundSettings {
    common::settings(0.95, 1e-5, selection)
}

/// Rows of one run: each included with probability ½ (the one-run design),
/// members scoring higher.
fn data(n: usize) -> Observations<'static> {
    let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
    let members: Vec<bool> = (0..n).map(|_| rng.gen()).collect();
    let scores = members
        .iter()
        .map(|&m| rng.gen::<f64>() + if m { 0.3 } else { 0.0 })
        .collect();
    Observations::new(scores, members).unwrap()
}

const METHODS: [Method; 5] = [
    Method::EpsDelta,
    Method::Gdp,
    Method::OneRun,
    Method::OneRunFdp,
    Method::OneRunFdpGaussian,
];

#[test]
fn a_multi_split_stops_when_asked() {
    let obs = data(2000);
    let sel = Selection::MultiSplit {
        seed: 1,
        splits: 50,
    };
    for method in METHODS {
        // Stop at the hook's 5th question: well before 50 halvings are done.
        let asked = AtomicUsize::new(0);
        let hook = || asked.fetch_add(1, Ordering::Relaxed) >= 4;
        let r = lower_bound_interruptible(method, &obs, &settings(sel), Interrupt::new(&hook));
        assert!(
            matches!(r, Err(AuditError::Interrupted { .. })),
            "{method}: {r:?}"
        );
        assert_eq!(asked.load(Ordering::Relaxed), 5, "{method}");
        // A hook that never stops changes nothing.
        let never = || false;
        let a = lower_bound_interruptible(method, &obs, &settings(sel), Interrupt::new(&never));
        assert_eq!(
            a.unwrap(),
            lower_bound(method, &obs, &settings(sel)).unwrap()
        );
    }
}

#[test]
fn every_policy_asks() {
    let obs = data(2000);
    for method in METHODS {
        for sel in [
            Selection::Bonferroni,
            Selection::Split { seed: 2 },
            Selection::SameData,
        ] {
            let stop = || true;
            let r = lower_bound_interruptible(method, &obs, &settings(sel), Interrupt::new(&stop));
            assert!(
                matches!(r, Err(AuditError::Interrupted { .. })),
                "{method} {sel}: {r:?}"
            );
        }
    }
}

#[test]
fn absurd_splits_are_refused_by_every_method() {
    // The call of issue 41: 10⁶ halvings of 2000 rows.
    let obs = data(2000);
    let sel = Selection::MultiSplit {
        seed: 0,
        splits: 1_000_000,
    };
    for method in METHODS {
        let e = lower_bound(method, &obs, &settings(sel)).unwrap_err();
        assert!(
            matches!(e, AuditError::TooMuchWork { name: "splits", .. }),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(msg.contains("at most 10000 splits for 2000 rows"), "{msg}");
    }
}
