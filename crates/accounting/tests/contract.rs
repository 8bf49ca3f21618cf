//! The contract every accountant satisfies : no events → ε = 0;
//! monotone in steps, noise and δ; ε ↔ δ round-trips; PLD ≤ RDP; PLD agrees with exact GDP
//! for non-subsampled composition within its error bound.

use dpaudit_accounting::{delta, epsilon, gdp, Accountant, MechanismEvent, NeighbouringRelation};

const REL: NeighbouringRelation = NeighbouringRelation::AddOrRemove;

/// Accountants with a sample rate and noise multiplier each can interpret (exact GDP refuses
/// subsampling); the noise keeps ε moderate so that the tests stay fast.
fn cases() -> Vec<(Accountant, f64, f64)> {
    vec![
        (Accountant::Pld, 0.02, 1.2),
        (Accountant::Rdp, 0.02, 1.2),
        (Accountant::Gdp, 1.0, 10.0),
        (Accountant::GdpClt, 0.02, 1.2),
        (Accountant::Pld, 1.0, 10.0),
        (Accountant::Rdp, 1.0, 10.0),
    ]
}

fn eps(acc: Accountant, q: f64, sigma: f64, steps: u64, d: f64) -> f64 {
    epsilon(&MechanismEvent::dpsgd(q, sigma, steps), d, acc, REL)
        .unwrap()
        .epsilon
}

#[test]
fn no_events_give_zero() {
    for acc in [
        Accountant::Pld,
        Accountant::Rdp,
        Accountant::Gdp,
        Accountant::GdpClt,
    ] {
        let e = epsilon(&MechanismEvent::Composed(vec![]), 1e-5, acc, REL).unwrap();
        assert!(e.epsilon.abs() < 1e-9, "{acc}: {}", e.epsilon);
        let d = delta(&MechanismEvent::Composed(vec![]), 0.0, acc, REL).unwrap();
        assert!(d.delta.abs() < 1e-9, "{acc}: {}", d.delta);
    }
}

#[test]
fn monotone_in_steps_noise_and_delta() {
    for (acc, q, s) in cases() {
        let base = eps(acc, q, s, 200, 1e-5);
        assert!(base > 0.0, "{acc}");
        let more_steps = eps(acc, q, s, 400, 1e-5);
        let more_noise = eps(acc, q, s * 1.25, 200, 1e-5);
        let larger_delta = eps(acc, q, s, 200, 1e-3);
        assert!(
            more_steps > base,
            "{acc} q={q}: steps {more_steps} vs {base}"
        );
        assert!(
            more_noise < base,
            "{acc} q={q}: noise {more_noise} vs {base}"
        );
        assert!(
            larger_delta < base,
            "{acc} q={q}: delta {larger_delta} vs {base}"
        );
    }
}

#[test]
fn epsilon_delta_round_trip() {
    for (acc, q, s) in cases() {
        let event = MechanismEvent::dpsgd(q, s, 200);
        let e = epsilon(&event, 1e-5, acc, REL).unwrap();
        let d = delta(&event, e.epsilon, acc, REL).unwrap();
        // δ(ε(δ)) = δ, up to the solver tolerance and the PLD's numerical bracket.
        assert!(
            (d.delta - 1e-5).abs() < 2e-7,
            "{acc} q={q}: δ(ε({})) = {} (ε = {})",
            1e-5,
            d.delta,
            e.epsilon
        );
    }
}

#[test]
fn pld_is_at_most_rdp() {
    for (q, sigma, steps) in [
        (0.01, 1.0, 1000u64),
        (0.1, 0.8, 50),
        (1.0, 2.0, 10),
        (0.005, 0.6, 3000),
    ] {
        let p = eps(Accountant::Pld, q, sigma, steps, 1e-5);
        let r = eps(Accountant::Rdp, q, sigma, steps, 1e-5);
        assert!(p <= r, "q={q} σ={sigma} k={steps}: PLD {p} > RDP {r}");
    }
}

#[test]
fn pld_brackets_exact_gdp_without_subsampling() {
    // k Gaussian mechanisms with noise multiplier σ are exactly (√k/σ)-GDP (DRS Cor. 3.3);
    // the PLD's (lower, upper) must contain the closed form, and be tight.
    for (sigma, steps) in [(1.0, 1u64), (4.0, 250), (2.0, 30), (10.0, 1000)] {
        let event = MechanismEvent::fixed_batches(sigma, steps);
        let p = epsilon(&event, 1e-5, Accountant::Pld, REL).unwrap();
        let exact = gdp::epsilon_for_delta((steps as f64).sqrt() / sigma, 1e-5).unwrap();
        let n = p.numerical.unwrap();
        assert!(
            n.lower <= exact && exact <= n.upper,
            "σ={sigma} k={steps}: {n:?} vs {exact}"
        );
        assert!(n.lower <= n.estimate && n.estimate <= n.upper);
        assert!(
            (n.upper - exact) / exact < 1e-4,
            "σ={sigma} k={steps}: {n:?} vs {exact}"
        );
    }
}

#[test]
fn relations_agree_for_zero_out() {
    // Annamalai et al. 2024 §2.1 (zero-out adjacency): zero-out adjacency gives the same accounting as add/remove.
    let event = MechanismEvent::dpsgd(0.01, 1.0, 100);
    let a = epsilon(
        &event,
        1e-5,
        Accountant::Pld,
        NeighbouringRelation::AddOrRemove,
    )
    .unwrap();
    let z = epsilon(
        &event,
        1e-5,
        Accountant::Pld,
        NeighbouringRelation::ReplaceWithZeroOut,
    )
    .unwrap();
    assert_eq!(a.epsilon, z.epsilon);
    assert_eq!(z.relation, NeighbouringRelation::ReplaceWithZeroOut);
}

#[test]
fn composition_of_different_components_lies_between_its_parts() {
    // Composing two different subsampled Gaussians costs more than either alone and at most
    // what RDP says for the composition.
    let a = MechanismEvent::dpsgd(0.01, 1.0, 300);
    let b = MechanismEvent::dpsgd(0.05, 2.0, 100);
    let both = MechanismEvent::Composed(vec![a.clone(), b.clone()]);
    let e = |ev: &MechanismEvent, acc| epsilon(ev, 1e-5, acc, REL).unwrap().epsilon;
    let (ea, eb, eab) = (
        e(&a, Accountant::Pld),
        e(&b, Accountant::Pld),
        e(&both, Accountant::Pld),
    );
    assert!(eab > ea.max(eb));
    assert!(eab <= e(&both, Accountant::Rdp));
}
