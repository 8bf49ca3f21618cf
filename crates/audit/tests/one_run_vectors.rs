//! docs/audit-statistics.md, "Reference values": the one-run audit's p-values and bounds, including the
//! numbers printed in Steinke, Nasr & Jagielski 2023 (Figs. 9–11).

use dpaudit_audit::one_run::{epsilon_lower_bound, p_value};

fn close(got: f64, expected: f64, tol: f64, what: &str) {
    assert!(
        (got - expected).abs() <= tol,
        "{what}: got {got}, expected {expected} ± {tol}"
    );
}

#[test]
fn p_value_table() {
    // docs/audit-statistics.md, "Reference values" "p-value test vectors" (f64 lgamma, 50-digit check).
    let cases: [(u64, u64, u64, f64, f64, f64); 6] = [
        (1000, 100, 75, 0.5, 1e-4, 0.014_587_207_651_351_3),
        (100_000, 1510, 1439, 2.0, 1e-5, 0.014_683_945_564_993_2),
        (100, 100, 98, 3.0, 0.0, 0.141_613_944_787_058),
        (1000, 1000, 982, 3.6, 0.0, 0.049_590_362_003_568_9),
        (10, 10, 9, 0.0, 0.0, 0.010_742_187_5),
        (100_000, 1500, 1429, 0.0, 1e-5, 0.002_736_514_792_481_59),
    ];
    for (m, r, v, eps, delta, expected) in cases {
        let got = p_value(m, r, v, eps, delta).unwrap();
        assert!(
            ((got - expected) / expected).abs() < 1e-10,
            "p({m},{r},{v},{eps},{delta}) = {got}, expected {expected}"
        );
    }
}

#[test]
fn paper_numbers() {
    // Fig. 10 / §6: 2.6758510060608387 (paper prints 2.675); δ = 0 gives 2.8062.
    close(
        epsilon_lower_bound(100_000, 1510, 1439, 1e-5, 0.05).unwrap(),
        2.675_851_006_060_838_7,
        1e-9,
        "Fig. 10",
    );
    close(
        epsilon_lower_bound(100_000, 1510, 1439, 0.0, 0.05).unwrap(),
        2.8062,
        5e-5,
        "Fig. 10 δ=0",
    );
    // Fig. 9: r = m = 10000, v = 9820: 3.8744 (δ = 0), 3.8713 (δ = 1e-5).
    close(
        epsilon_lower_bound(10_000, 10_000, 9820, 0.0, 0.05).unwrap(),
        3.8744,
        5e-5,
        "Fig. 9 δ=0",
    );
    close(
        epsilon_lower_bound(10_000, 10_000, 9820, 1e-5, 0.05).unwrap(),
        3.8713,
        5e-5,
        "Fig. 9",
    );
    // Full-version Appendix D example: 0.67298.
    close(
        epsilon_lower_bound(1000, 100, 75, 1e-4, 0.05).unwrap(),
        0.67298,
        5e-6,
        "App. D",
    );
}

#[test]
fn fig9_sweep() {
    // docs/audit-statistics.md, "Reference values" "Fig. 9 sweep": (N, v, LB δ=0, LB δ=1e-5), m = r = N.
    let rows = [
        (100_u64, 98_u64, 2.7232, 2.7220),
        (1000, 982, 3.6008, 3.5984),
        (2000, 1964, 3.7182, 3.7155),
        (5000, 4910, 3.8222, 3.8193),
        (10_000, 9820, 3.8744, 3.8713),
        (100_000, 98_201, 3.9605, 3.9570),
    ];
    for (n, v, lb0, lb5) in rows {
        close(
            epsilon_lower_bound(n, n, v, 0.0, 0.05).unwrap(),
            lb0,
            5e-5,
            &format!("N={n} δ=0"),
        );
        close(
            epsilon_lower_bound(n, n, v, 1e-5, 0.05).unwrap(),
            lb5,
            5e-5,
            &format!("N={n} δ=1e-5"),
        );
    }
}

#[test]
fn fig1_and_fig2_tables() {
    // docs/audit-statistics.md, "Reference values" "Fig. 1-style" (m = r = 100): (v, LB δ=0, LB δ=1e-5).
    let fig1 = [
        (60_u64, 0.0519, 0.0517),
        (70, 0.4717, 0.4714),
        (75, 0.7022, 0.7019),
        (80, 0.9584, 0.9581),
        (90, 1.6308, 1.6304),
        (95, 2.1724, 2.1717),
        (99, 3.0193, 3.0177),
        (100, 3.4930, 3.4902),
    ];
    for (v, lb0, lb5) in fig1 {
        close(
            epsilon_lower_bound(100, 100, v, 0.0, 0.05).unwrap(),
            lb0,
            5e-5,
            &format!("v={v} δ=0"),
        );
        close(
            epsilon_lower_bound(100, 100, v, 1e-5, 0.05).unwrap(),
            lb5,
            5e-5,
            &format!("v={v} δ=1e-5"),
        );
    }
    // "Fig. 2-style" (m = r = 1000).
    let fig2 = [
        (731_u64, 0.8806, 0.8803),
        (880, 1.8300, 1.8295),
        (982, 3.6008, 3.5984),
        (997, 4.8542, 4.8451),
        (999, 5.3480, 5.3323),
    ];
    for (v, lb0, lb5) in fig2 {
        close(
            epsilon_lower_bound(1000, 1000, v, 0.0, 0.05).unwrap(),
            lb0,
            5e-5,
            &format!("v={v} δ=0"),
        );
        close(
            epsilon_lower_bound(1000, 1000, v, 1e-5, 0.05).unwrap(),
            lb5,
            5e-5,
            &format!("v={v} δ=1e-5"),
        );
    }
}

#[test]
fn fig10_sweep_and_fig11_grid() {
    // docs/audit-statistics.md, "Reference values" "Fig. 10 sweep" (m = 1e5, δ = 1e-5): r → (v, LB).
    let rows = [
        (100_u64, 98_u64, 0.7218),
        (200, 195, 1.5615),
        (500, 484, 2.3314),
        (1000, 959, 2.6259),
        (1300, 1242, 2.6711),
        (1500, 1429, 2.6688),
        (1510, 1439, 2.6759),
        (1600, 1523, 2.6721),
        (2000, 1896, 2.6540),
        (3000, 2819, 2.5754),
        (5000, 4634, 2.4286),
        (10_000, 9033, 2.1712),
    ];
    for (r, v, lb) in rows {
        close(
            epsilon_lower_bound(100_000, r, v, 1e-5, 0.05).unwrap(),
            lb,
            5e-5,
            &format!("r={r}"),
        );
    }
    // "Fig. 11 grid" (m = 1e5, r = 1500, v = 1429): δ × confidence.
    let confidences = [0.5, 0.8, 0.9, 0.95, 0.99, 0.999];
    let grid: [(f64, [f64; 6]); 7] = [
        (0.0, [2.9925, 2.8922, 2.8409, 2.7992, 2.7223, 2.6383]),
        (1e-10, [2.9925, 2.8922, 2.8409, 2.7992, 2.7223, 2.6383]),
        (1e-8, [2.9924, 2.8921, 2.8409, 2.7991, 2.7221, 2.6368]),
        (1e-7, [2.9922, 2.8918, 2.8404, 2.7984, 2.7200, 2.6210]),
        (1e-6, [2.9895, 2.8886, 2.8358, 2.7914, 2.6940, 1.6653]),
        (1e-5, [2.9635, 2.8540, 2.7806, 2.6688, 1.6653, 0.0]),
        (1e-4, [2.6851, 2.2167, 1.6653, 0.9201, 0.0, 0.0]),
    ];
    for (delta, row) in grid {
        for (c, lb) in confidences.iter().zip(row) {
            close(
                epsilon_lower_bound(100_000, 1500, 1429, delta, 1.0 - c).unwrap(),
                lb,
                5e-5,
                &format!("δ={delta} c={c}"),
            );
        }
    }
}

#[test]
fn exact_coverage_case() {
    // docs/audit-statistics.md, "Reference values" validity: ε₀ = 2, r = m = 1000, δ = 0: LB > 2 first at v = 898.
    assert!(epsilon_lower_bound(1000, 1000, 897, 0.0, 0.05).unwrap() <= 2.0);
    assert!(epsilon_lower_bound(1000, 1000, 898, 0.0, 0.05).unwrap() > 2.0);
    // and P[Bin(1000, 0.8808) ≥ 898] = 0.049228 ≤ 0.05 (the p-value at ε = 2).
    let p = p_value(1000, 1000, 898, 2.0, 0.0).unwrap();
    assert!((p - 0.049_228).abs() < 5e-6, "{p}");
}
