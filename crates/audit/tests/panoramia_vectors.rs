//! PANORAMIA's c_lb table and measurement ceilings (Kazmi et al. 2024,
//! §4.1 with the exact binomial tail, Appendix B.2), and ε̃'s properties.

use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::panoramia::{ceiling, logit_precision_lower_bound, panoramia, PanoramiaConfig};

#[test]
fn c_lb_table() {
    // Exact-binomial c_lb at α = 0.025, computed independently from the
    // binomial tail (tp = r rows also by the closed form below): (tp, r, c_lb).
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
    // 5000 members at α = 0.025 → 7.2115 (Kazmi et al. 2024, Appendix B.2
    // prints 7.21); with the authors' released code's 0.05/200 → 6.4008.
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
    assert!((m.epsilon_tilde.value - (2.6598 - 1.5422)).abs() < 1e-4);
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

/// The worked example, exactly. With every prediction right (`tp = r = k`)
/// the exact binomial tail is `P[Bin(k, p) ≥ k] = p^k`, so the largest
/// rejected precision is `p̲ = α^{1/k}` and `c = logit(α^{1/k}) =
/// ln(α^{1/k} / (1 − α^{1/k}))` in closed form. At α = β/2 = 0.025 and
/// k = 5000 this is 7.2115, the paper's "we can measure up to 7.21"
/// (Kazmi et al. 2024, Appendix B.2). An audit set whose baseline guesses
/// 100 members without error and whose MIA guesses 1000 members without
/// error therefore gives c_lb = logit(0.025^{1/100}) = 3.2813…,
/// {c+ε}_lb = logit(0.025^{1/1000}) = 5.6006…, ε̃ = their difference; the
/// implementation must agree with the closed form to floating-point
/// rounding.
#[test]
fn worked_example_matches_the_closed_form() {
    let closed = |k: f64| {
        let p: f64 = (0.025f64.ln() / k).exp();
        (p / -(0.025f64.ln() / k).exp_m1()).ln()
    };
    assert!((closed(5000.0) - 7.21).abs() < 5e-3, "paper B.2: 7.21");
    assert!((ceiling(5000, 0.025) - closed(5000.0)).abs() < 1e-12);
    let (c_b, c_a) = (closed(100.0), closed(1000.0));
    assert!(
        (c_b - 3.2813).abs() < 5e-5 && (c_a - 5.6006).abs() < 5e-5,
        "{c_b} {c_a}"
    );
    // 4000 audit points; 2000 members. Baseline: 100 members on top, then
    // non-members. MIA: 1000 members on top, then non-members.
    let mut b_scores = Vec::new();
    let mut a_scores = Vec::new();
    let mut members = Vec::new();
    for i in 0..4000_u32 {
        let member = i % 2 == 0;
        members.push(member);
        let rank = i / 2; // 0..2000 within each class
        b_scores.push(if member && rank < 100 {
            2.0
        } else if member {
            0.0
        } else {
            1.0
        });
        a_scores.push(if member && rank < 1000 {
            2.0
        } else if member {
            0.0
        } else {
            1.0
        });
    }
    let baseline = Observations::new(b_scores, members.clone()).unwrap();
    let mia = Observations::new(a_scores, members).unwrap();
    let cfg = PanoramiaConfig {
        confidence: 0.95,
        selection: Selection::SameData,
    };
    let m = panoramia(&baseline, &mia, &cfg).unwrap();
    assert!((m.c_lb - c_b).abs() < 1e-12, "{} vs {c_b}", m.c_lb);
    assert!(
        (m.c_plus_epsilon_lb - c_a).abs() < 1e-12,
        "{} vs {c_a}",
        m.c_plus_epsilon_lb
    );
    assert!((m.epsilon_tilde.value - (c_a - c_b)).abs() < 1e-12);
    assert_eq!(
        (m.baseline.predictions, m.baseline.true_positives),
        (100, 100)
    );
    assert_eq!((m.mia.predictions, m.mia.true_positives), (1000, 1000));
    // Swapping the roles: the MIA is worse than the baseline, ε̃ = 0, not negative.
    let swapped = panoramia(&mia, &baseline, &cfg).unwrap();
    assert_eq!(swapped.epsilon_tilde.value, 0.0);
    let json = serde_json::to_string(&swapped.epsilon_tilde).unwrap();
    assert!(
        json.contains("\"is_lower_bound\":false") && json.contains("not a lower bound"),
        "{json}"
    );
}

/// ε̃ never exceeds {c+ε}_lb (c_lb ≥ 0), for every selection and many
/// random score sets, including ones where the baseline wins.
#[test]
fn epsilon_tilde_never_exceeds_the_mia_bound() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    for trial in 0..200 {
        let n = rng.gen_range(20..400);
        let members: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
        let (sb, sa) = (rng.gen_range(0.0..3.0), rng.gen_range(0.0..3.0));
        let score = |m: bool, s: f64, rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
            rng.gen_range(0.0..1.0) + if m { s } else { 0.0 }
        };
        let b: Vec<f64> = members.iter().map(|&m| score(m, sb, &mut rng)).collect();
        let a: Vec<f64> = members.iter().map(|&m| score(m, sa, &mut rng)).collect();
        let baseline = Observations::new(b, members.clone()).unwrap();
        let mia = Observations::new(a, members).unwrap();
        for selection in [
            Selection::SameData,
            Selection::Bonferroni,
            Selection::Split { seed: trial },
        ] {
            let m = panoramia(
                &baseline,
                &mia,
                &PanoramiaConfig {
                    confidence: 0.95,
                    selection,
                },
            )
            .unwrap();
            assert!(m.c_lb >= 0.0);
            assert!(m.epsilon_tilde.value >= 0.0);
            assert!(
                m.epsilon_tilde.value <= m.c_plus_epsilon_lb,
                "trial {trial}: ε̃ {} > {{c+ε}}_lb {}",
                m.epsilon_tilde.value,
                m.c_plus_epsilon_lb
            );
        }
    }
}
