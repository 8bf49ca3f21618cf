//! The rank test at thresholds fixed by ranks: the `bonferroni` family on
//! all data, and the threshold a `split` carries to its evaluation half.

use super::statistic::Statistic;
use super::sweep::{sweep, Sorted};
use crate::bound::{ThresholdEvidence, ThresholdTest};
use crate::error::Result;
use crate::observations::Observations;
use crate::rank_test::{Precision, RankStatement, RankTest};

/// Ratio of consecutive ranks in [`rank_grid`].
pub const RANK_GRID_RATIO: f64 = 4.0;

/// The ranks of the `bonferroni` threshold family for a class of `n` scores:
/// 0, 1, then each rank the previous one times [`RANK_GRID_RATIO`] rounded
/// up (and at least one more), while at most `n/2`: 0, 1, 4, 16, 64, …
/// It depends on `n` alone. (Of the ratios √2, 2, 4 and 8 in the power study
/// of `benches/RESULTS.md`, fewer statements outweighed a coarser grid up to
/// 4, which beat 2 in 78 of 85 cells; 8 gained little more on average and
/// lost up to 0.18 in ε where the GDP optimum falls between its ranks.)
pub fn rank_grid(n: u64) -> Vec<u64> {
    let mut out = vec![0_u64];
    let mut r = 1_u64;
    while r <= n / 2 {
        out.push(r);
        r = (r + 1).max((r as f64 * RANK_GRID_RATIO).ceil() as u64);
    }
    out
}

/// The largest f64 below `x` (finite `x`), so "score > below(t)" is
/// "score ≥ t".
pub(super) fn below(x: f64) -> f64 {
    if x == 0.0 {
        -f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

/// The class whose order statistic sets a threshold of the rank test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RankClass {
    /// The (rank+1)-th largest non-member score; members at or below it are
    /// counted (false negatives).
    NonMember,
    /// Just below the (rank+1)-th smallest member score; non-members at or
    /// above it are counted (false positives).
    Member,
}

impl RankClass {
    fn name(self) -> &'static str {
        match self {
            RankClass::NonMember => "non-member",
            RankClass::Member => "member",
        }
    }
}

/// A threshold fixed by a rank, its counts and its plug-in statistic.
struct RankCandidate {
    class: RankClass,
    threshold: f64,
    statement: RankStatement,
    plug_in: f64,
}

fn rank_candidate(sorted: &Sorted, class: RankClass, rank: u64, stat: Statistic) -> RankCandidate {
    let (n0, n1) = (sorted.nonmembers.len() as u64, sorted.members.len() as u64);
    let (threshold, statement) = match class {
        RankClass::NonMember => {
            let rank = rank.min(n0 - 1);
            let t = sorted.nonmembers[(n0 - 1 - rank) as usize];
            let (_, fnn) = sorted.counts(t);
            (
                t,
                RankStatement {
                    rank,
                    n_rank: n0,
                    count: fnn,
                    n_count: n1,
                },
            )
        }
        RankClass::Member => {
            let rank = rank.min(n1 - 1);
            let t = below(sorted.members[rank as usize]);
            let (fp, _) = sorted.counts(t);
            (
                t,
                RankStatement {
                    rank,
                    n_rank: n1,
                    count: fp,
                    n_count: n0,
                },
            )
        }
    };
    let (r, c) = (
        statement.rank as f64 / statement.n_rank as f64,
        statement.count as f64 / statement.n_count as f64,
    );
    let plug_in = match class {
        RankClass::NonMember => stat.eval(r, c),
        RankClass::Member => stat.eval(c, r),
    };
    RankCandidate {
        class,
        threshold,
        statement,
        plug_in,
    }
}

/// The rank test of every candidate at `level`; returns the best candidate
/// and its θ (ε or μ, 0 when none is rejected at θ = 0: then the candidate
/// with the best plug-in statistic, for the record). A rough pass ranks the
/// candidates (each rough result is itself a valid, slightly smaller bound);
/// the fine search then runs on those within 1 % of the best rough one.
fn best_rank_test(cands: &[RankCandidate], stat: Statistic, level: f64) -> (usize, f64) {
    let mut order: Vec<usize> = (0..cands.len()).collect();
    // Most promising first, so that later candidates are dismissed by a
    // single p-value at the running best.
    order.sort_by(|&a, &b| cands[b].plug_in.total_cmp(&cands[a].plug_in));
    let mut tests: Vec<Option<RankTest>> = cands.iter().map(|_| None).collect();
    let mut rough: Vec<(usize, f64)> = Vec::new();
    let mut floor = 0.0;
    for &i in &order {
        let test = tests[i].get_or_insert_with(|| RankTest::new(cands[i].statement, stat.curve()));
        // The plug-in statistic is where the p-value is about ½: a first
        // upper end well above any bound.
        let step = (cands[i].plug_in - floor).max(0.1);
        if let Some(v) = test.largest_rejected(level, floor, Precision::ROUGH, Some(step)) {
            floor = floor.max(v);
            rough.push((i, v));
        }
    }
    let mut best: Option<(usize, f64)> = None;
    for &(i, v) in rough.iter().filter(|(_, v)| *v >= 0.99 * floor) {
        let start = best.map_or(v, |(_, b)| b.max(v));
        if let Some(test) = tests[i].as_mut() {
            // The rough result is within about 10⁻³ of the fine one.
            let step = 2e-3 * start.max(1.0);
            let fine = test
                .largest_rejected(level, start, Precision::FINE, Some(step))
                .unwrap_or(v);
            if best.is_none_or(|(_, b)| fine > b) {
                best = Some((i, fine));
            }
        }
    }
    best.unwrap_or((order[0], 0.0))
}

fn rank_evidence(
    sorted: &Sorted,
    cand: &RankCandidate,
    level: f64,
    statements: u64,
    candidates: u64,
) -> ThresholdEvidence {
    let (fp, fnn) = sorted.counts(cand.threshold);
    ThresholdEvidence {
        threshold: cand.threshold,
        false_positives: fp,
        nonmembers: sorted.nonmembers.len() as u64,
        false_negatives: fnn,
        members: sorted.members.len() as u64,
        test: ThresholdTest::Rank {
            class: cand.class.name(),
            rank: cand.statement.rank,
            level,
        },
        statements,
        mu_lower: None,
        candidates,
    }
}

/// The `bonferroni` family on all data: the rank test of every threshold of
/// the rank grid of both classes, each at level `(1 − confidence)/S`.
pub(super) fn bonferroni_best(
    sorted: &Sorted,
    confidence: f64,
    stat: Statistic,
) -> (ThresholdEvidence, f64) {
    let (n0, n1) = (sorted.nonmembers.len() as u64, sorted.members.len() as u64);
    let cands: Vec<RankCandidate> = rank_grid(n0)
        .into_iter()
        .map(|k| rank_candidate(sorted, RankClass::NonMember, k, stat))
        .chain(
            rank_grid(n1)
                .into_iter()
                .map(|j| rank_candidate(sorted, RankClass::Member, j, stat)),
        )
        .collect();
    let statements = cands.len() as u64;
    let level = (1.0 - confidence) / statements as f64;
    let (i, value) = best_rank_test(&cands, stat, level);
    (
        rank_evidence(sorted, &cands[i], level, statements, statements),
        value,
    )
}

/// Split with `seed`: the best threshold on one half (pointwise limits),
/// carried to the other half as a rank of the class with the smaller error
/// rate there, and bounded by the rank test at `1 − confidence`.
pub(super) fn split_evidence(
    obs: &Observations,
    seed: u64,
    confidence: f64,
    stat: Statistic,
) -> Result<(ThresholdEvidence, f64)> {
    let (select, evaluate) = obs.split(seed);
    select.check_both_classes(&format!(
        " in the selection half of the split (seed {seed})"
    ))?;
    evaluate.check_both_classes(&format!(
        " in the evaluation half of the split (seed {seed})"
    ))?;
    let chosen = Sorted::of(&select);
    let best = sweep(&chosen, (1.0 - confidence) / 2.0, stat);
    let (fp, fnn) = chosen.counts(best.threshold);
    let fpr = fp as f64 / chosen.nonmembers.len() as f64;
    let fnr = fnn as f64 / chosen.members.len() as f64;
    let sorted = Sorted::of(&evaluate);
    let (class, fraction, n) = if fpr <= fnr {
        (RankClass::NonMember, fpr, sorted.nonmembers.len())
    } else {
        (RankClass::Member, fnr, sorted.members.len())
    };
    let rank = ((fraction * n as f64).round() as u64).min(n as u64 - 1);
    let cand = rank_candidate(&sorted, class, rank, stat);
    let level = 1.0 - confidence;
    let value = RankTest::new(cand.statement, stat.curve())
        .largest_rejected(level, 0.0, Precision::FINE, Some(cand.plug_in.max(0.1)))
        .unwrap_or(0.0);
    Ok((
        rank_evidence(&sorted, &cand, level, 1, best.candidates),
        value,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_grid_depends_on_the_class_size_only() {
        assert_eq!(rank_grid(200), vec![0, 1, 4, 16, 64]);
        assert_eq!(rank_grid(1), vec![0]);
        assert_eq!(rank_grid(3), vec![0, 1]);
        assert_eq!(rank_grid(8), vec![0, 1, 4]);
    }
}
