//! Spec 003 A.6 and D.6: PANORAMIA's c_lb table and measurement ceilings.

use dpaudit_audit::panoramia::{ceiling, logit_precision_lower_bound, panoramia, PanoramiaConfig};
use dpaudit_audit::scores::{Observations, Selection};

#[test]
fn c_lb_table() {
    // Spec 003 A.6 "Test vectors" (exact binomial, α = 0.025): (tp, r, c_lb).
    let rows = [
        (100_u64, 100_u64, 3.2813),
        (5000, 5000, 7.2115),
        (950, 1000, 2.6598),
        (90, 100, 1.5422),
        (45, 50, 1.2766),
        (600, 1000, 0.2773),
    ];
    for (tp, r, expected) in rows {
        let got = logit_precision_lower_bound(tp, r, 0.025).unwrap();
        assert!(
            (got - expected).abs() < 5e-5,
            "tp={tp} r={r}: {got} vs {expected}"
        );
    }
}

#[test]
fn ceilings() {
    // Spec 003 D.6: 5000 members at α = 0.025 → 7.2115 (paper B.2 prints 7.21);
    // with the released code's 0.05/200 → 6.4008.
    assert!((ceiling(5000, 0.025) - 7.2115).abs() < 5e-5);
    assert!((ceiling(5000, 0.05 / 200.0) - 6.4008).abs() < 5e-5);
}

#[test]
fn measurement_end_to_end() {
    // Audit set of 2000 points, 1000 members. Baseline: the top 100 scores
    // hold 90 members (c_τ = 1.5422 by the table above, tp/r = 90/100).
    // MIA: the top 1000 hold 950 members (2.6598). Other thresholds are
    // weaker by construction (everything below is an even mix).
    let mut b_scores = Vec::new();
    let mut b_members = Vec::new();
    let mut a_scores = Vec::new();
    let mut a_members = Vec::new();
    for i in 0..2000_u32 {
        // Baseline: rows 0..100 score 10 (90 members), the rest 0.
        b_scores.push(if i < 100 { 10.0 } else { 0.0 });
        let member_b = if i < 100 { i < 90 } else { i < 100 + 910 };
        b_members.push(member_b);
        // MIA: rows 0..1000 score 10 (950 members), the rest 0 (50 members).
        a_scores.push(if i < 1000 { 10.0 } else { 0.0 });
        a_members.push(if i < 1000 { i < 950 } else { i < 1050 });
    }
    let baseline = Observations::new(b_scores, b_members).unwrap();
    let mia = Observations::new(a_scores, a_members).unwrap();
    let cfg = PanoramiaConfig {
        confidence: 0.95,
        selection: Selection::SameData,
    };
    let m = panoramia(&baseline, &mia, &cfg).unwrap();
    assert!((m.c_lb - 1.5422).abs() < 5e-5, "{}", m.c_lb);
    assert!(
        (m.c_plus_epsilon_lb - 2.6598).abs() < 5e-5,
        "{}",
        m.c_plus_epsilon_lb
    );
    assert!((m.epsilon_tilde - (2.6598 - 1.5422)).abs() < 1e-4);
    assert_eq!((m.mia.predictions, m.mia.true_positives), (1000, 950));
    assert!((m.mia.ceiling - ceiling(1000, 0.025)).abs() < 1e-12);
    // Bonferroni lowers both bounds (level 0.025/2000 per threshold).
    let cfg = PanoramiaConfig {
        confidence: 0.95,
        selection: Selection::Bonferroni,
    };
    let mb = panoramia(&baseline, &mia, &cfg).unwrap();
    assert!(mb.c_plus_epsilon_lb < m.c_plus_epsilon_lb);
    let expected = logit_precision_lower_bound(950, 1000, 0.025 / 2000.0).unwrap();
    assert!((mb.c_plus_epsilon_lb - expected).abs() < 1e-12);
}
