//! The PLD accountant's answers before and after its speed-ups agree to roundoff: the reported
//! ε (the upper end) never moves by more than `TOLERANCE` relative, and in particular never
//! drops by more than that (an accountant that under-reports ε is a privacy bug).
//!
//! The reference values are those of this crate's PLD accountant as it was at main 7764b17
//! (complex FFT over a window from 13 Chernoff exponents, before the real FFT, the golden-section
//! window and the streamed discretisation), printed to full precision with `{:?}` from
//! `epsilon(&MechanismEvent::dpsgd(q, σ, steps), δ, Accountant::Pld, AddOrRemove)` and
//! `delta(…)`. They are regression values, not independent truths: the independent reference
//! values (Google's `dp_accounting`) are pinned in `dp_accounting_reference.rs`.
//!
//! The tolerance: the accountant guarantees the true ε lies in its (lower, upper) interval, which
//! is 3e-3 to 3e-2 wide on these settings; a change of the transform or of the FFT window moves
//! the truncation and roundoff charges, which are ~1e-12 of δ, so ε moves by ~1e-9 relative (at
//! most 6.6e-8, at δ = 1e-8). 1e-6 relative is far above that and far below the interval width.

use dpaudit_accounting::{delta, epsilon, Accountant, MechanismEvent, NeighbouringRelation};

const TOLERANCE: f64 = 1e-6;
const REL: NeighbouringRelation = NeighbouringRelation::AddOrRemove;

/// (q, σ, steps, δ, old lower, old estimate, old upper).
const EPSILON: [(f64, f64, u64, f64, f64, f64, f64); 8] = [
    (
        0.01,
        0.5,
        100,
        1e-5,
        6.472547964127324,
        6.47621022767721,
        6.47621022767721,
    ),
    (
        0.01,
        1.0,
        100,
        1e-5,
        0.714907715969549,
        0.7180361043725835,
        0.7180367103314037,
    ),
    (
        0.01,
        1.5,
        100,
        1e-5,
        0.28905547867408976,
        0.29211764014767483,
        0.2921192458340206,
    ),
    (
        1.0 / 11.0,
        3.0,
        1848,
        1e-5,
        6.218660806883462,
        6.232025932746866,
        6.232030555334808,
    ),
    (
        0.01,
        1.0,
        10_000,
        1e-5,
        6.1570440889921265,
        6.187720368396642,
        6.187745008778564,
    ),
    (
        1.0,
        4.0,
        250,
        1e-5,
        23.989668183194443,
        23.995358995285166,
        23.995359424283798,
    ),
    (
        1.0,
        1.0,
        1,
        1e-5,
        4.376894764598246,
        4.377178097854689,
        4.377178100278125,
    ),
    (
        0.2,
        0.8,
        50,
        1e-8,
        20.795435429534677,
        20.798698268355107,
        20.79870063564676,
    ),
];

fn close(new: f64, old: f64) -> bool {
    (new - old).abs() <= TOLERANCE * old.abs().max(1e-3)
}

#[test]
fn epsilon_matches_the_previous_implementation() {
    for (q, sigma, steps, d, lower, estimate, upper) in EPSILON {
        let e = epsilon(
            &MechanismEvent::dpsgd(q, sigma, steps),
            d,
            Accountant::Pld,
            REL,
        )
        .unwrap();
        let n = e.numerical.unwrap();
        let at = format!("q={q} σ={sigma} steps={steps} δ={d}: {n:?}");
        assert_eq!(e.epsilon, n.upper, "{at}");
        assert!(close(n.upper, upper), "{at} vs old upper {upper}");
        assert!(
            close(n.estimate, estimate),
            "{at} vs old estimate {estimate}"
        );
        assert!(close(n.lower, lower), "{at} vs old lower {lower}");
        // The pessimistic side: the reported ε stays above both old bounds' reach.
        assert!(
            n.upper >= upper - TOLERANCE * upper,
            "{at}: below old upper {upper}"
        );
        assert!(
            n.upper >= lower,
            "{at}: below the old valid lower bound {lower}"
        );
        assert!(
            n.lower <= upper,
            "{at}: above the old valid upper bound {upper}"
        );
    }
}

#[test]
fn composed_event_matches_the_previous_implementation() {
    // Three different components: 100 steps at q = 0.01, σ = 1; 30 at q = 0.05, σ = 2; one
    // Gaussian with σ = 8. Old (lower, estimate, upper) at δ = 1e-5.
    let event = MechanismEvent::Composed(vec![
        MechanismEvent::dpsgd(0.01, 1.0, 100),
        MechanismEvent::dpsgd(0.05, 2.0, 30),
        MechanismEvent::gaussian(8.0),
    ]);
    let (lower, estimate, upper) = (0.9860522034217782, 0.9896106971641141, 0.9896115044387279);
    let n = epsilon(&event, 1e-5, Accountant::Pld, REL)
        .unwrap()
        .numerical
        .unwrap();
    assert!(close(n.upper, upper), "{n:?} vs old upper {upper}");
    assert!(
        close(n.estimate, estimate),
        "{n:?} vs old estimate {estimate}"
    );
    assert!(close(n.lower, lower), "{n:?} vs old lower {lower}");
    assert!(n.upper >= upper - TOLERANCE * upper, "{n:?}");
}

#[test]
fn delta_matches_the_previous_implementation() {
    // (q, σ, steps, ε, old lower δ, old upper δ).
    let cases = [
        (
            0.01,
            1.0,
            100,
            0.5,
            0.00012100971427669817,
            0.00012749999986519993,
        ),
        (
            0.01,
            1.0,
            100,
            1.0,
            6.434074824542054e-7,
            6.671449077848413e-7,
        ),
        (1.0, 2.0, 10, 2.0, 0.1703918474773138, 0.1704654206062668),
    ];
    for (q, sigma, steps, eps, lower, upper) in cases {
        let d = delta(
            &MechanismEvent::dpsgd(q, sigma, steps),
            eps,
            Accountant::Pld,
            REL,
        )
        .unwrap();
        let new_lower = d.delta_lower.unwrap();
        let at = format!(
            "q={q} σ={sigma} steps={steps} ε={eps}: [{new_lower}, {}]",
            d.delta
        );
        assert!(close(d.delta, upper), "{at} vs old upper {upper}");
        assert!(close(new_lower, lower), "{at} vs old lower {lower}");
        assert!(
            d.delta >= upper - TOLERANCE * upper,
            "{at}: below old upper {upper}"
        );
    }
}
