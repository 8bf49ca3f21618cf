//! The all-counts guess family ([`GuessFamily::AllCounts`]) against the
//! fraction grid: two score sets whose most confident guesses are right to
//! different depths, both beyond the grid's `0.1·m` step and short of its
//! `0.2·m` one, tie under the grid and are told apart by every count.

use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::one_run::{epsilon_lower_bound, one_run_lower_bound, GuessFamily, OneRunConfig};

/// `m` = 3000 canaries, half included, ranked by score: the `depth` highest
/// are included, the `depth` lowest not, the rest alternate (included next
/// to the lowest block, excluded next to the highest). The symmetric
/// guess set `(depth, depth)` is all right; every larger set has wrong
/// guesses.
fn graded(depth: usize) -> Observations<'static> {
    let m = 3000;
    let members: Vec<bool> = (0..m)
        .map(|i| {
            if i < depth {
                false
            } else if i >= m - depth {
                true
            } else {
                (i - depth) % 2 == 0
            }
        })
        .collect();
    let scores: Vec<f64> = (0..m).map(|i| i as f64).collect();
    Observations::new(scores, members).unwrap()
}

fn bound(depth: usize, family: GuessFamily, selection: Selection) -> f64 {
    let cfg = OneRunConfig::new(0.95, 0.0, selection).with_guesses(family);
    one_run_lower_bound(&graded(depth), &cfg).unwrap().epsilon
}

#[test]
fn all_counts_does_not_saturate_where_the_grid_does() {
    // The default (seeded) tie-break runs every test at the full level
    // (crate::tie_break; the scores have no ties), so the level is 0.05.
    let level = 0.05;
    // The grid: both depths' best candidate is (0.1·m, 0.1·m) = 600 guesses,
    // all right (the next symmetric step, 1200 guesses, has 300 or 200
    // wrong), so both get the all-right closed form at r = 600.
    let grid_300 = bound(300, GuessFamily::WithOneSided, Selection::SameData);
    let grid_400 = bound(400, GuessFamily::WithOneSided, Selection::SameData);
    let all_right_600 = epsilon_lower_bound(3000, 600, 600, 0.0, level).unwrap();
    assert!(
        (grid_300 - all_right_600).abs() < 1e-9,
        "{grid_300} vs {all_right_600}"
    );
    assert!(
        (grid_400 - all_right_600).abs() < 1e-9,
        "{grid_400} vs {all_right_600}"
    );
    // Every count under Bonferroni: 1500 symmetric + 2 × 3000 one-sided
    // candidates; each depth's best is its own all-right set, r = 2·depth.
    let k = 7500.0;
    for depth in [300u64, 400] {
        let got = bound(
            depth as usize,
            GuessFamily::AllCounts,
            Selection::Bonferroni,
        );
        let want = epsilon_lower_bound(3000, 2 * depth, 2 * depth, 0.0, level / k).unwrap();
        // Closed form (v = r, δ = 0): ε = logit((level/K)^{1/r}).
        let q = (level / k).powf(1.0 / (2 * depth) as f64);
        assert!((want - (q / (1.0 - q)).ln()).abs() < 1e-6);
        assert!((got - want).abs() < 1e-9, "depth {depth}: {got} vs {want}");
    }
    // r = 600: logit((0.05/7500)^{1/600}) = 3.9089; r = 800: 4.1991.
    let (a, b) = (
        bound(300, GuessFamily::AllCounts, Selection::Bonferroni),
        bound(400, GuessFamily::AllCounts, Selection::Bonferroni),
    );
    assert!(
        (a - 3.9089).abs() < 1e-3 && (b - 4.1991).abs() < 1e-3,
        "{a}, {b}"
    );
}

#[test]
fn all_counts_evidence_names_the_family_and_its_candidates() {
    let cfg =
        OneRunConfig::new(0.95, 0.0, Selection::Bonferroni).with_guesses(GuessFamily::AllCounts);
    let b = one_run_lower_bound(&graded(300), &cfg).unwrap();
    let json = serde_json::to_value(&b).unwrap();
    assert_eq!(json["evidence"]["guess_family"], "all-counts");
    assert_eq!(json["evidence"]["candidates"], 7500);
    assert_eq!(json["evidence"]["guesses"], 600);
    assert_eq!(json["evidence"]["correct"], 600);
    assert_eq!(
        "all-counts".parse::<GuessFamily>().unwrap(),
        GuessFamily::AllCounts
    );
}
