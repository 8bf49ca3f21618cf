//! The one-run audit of Steinke, Nasr & Jagielski 2023 ("Privacy Auditing
//! with One (1) Training Run").
//!
//! Each of `m` canaries is included independently with probability ½
//! (`S_i = ±1`). From the canary scores alone the auditor guesses `+1` for
//! the `k+` largest scores, `−1` for the `k−` smallest and abstains on the
//! rest (their Algorithm 1, line 7). With `r = k+ + k−` guesses of which
//! `v` are correct, their Theorem 3.1 bounds the p-value under "(ε, δ)-DP":
//!
//! `p = P[Bin(r, q) ≥ v] + 2mδ · max_{1≤i≤v} P[v > Bin(r, q) ≥ v − i]/i`,
//! `q = e^ε/(1 + e^ε)`, capped at 1 (their Eqs. (2)–(3), computed as in the
//! paper's full version, Appendix D). The lower bound is the largest ε
//! rejected at level `1 − confidence`, found by bisection (grow the upper
//! end by 1 until not rejected, then exactly 30 halvings, return the low
//! end).
//!
//! **Input convention.** Each observation is one canary; `member = true`
//! means `S_i = +1` (included). Higher score means "guess included".
//!
//! **Ties carry no information.** By default (the quantile rule of
//! [`crate::tie_break`]) a guess set that cuts through a run of equal
//! scores is counted at the number of correct guesses that a share γ =
//! 0.95 of the uniformly random orders of the run reach, and every test
//! runs at γ times the level (any tie-breaking blind to the inclusion bits
//! keeps the theorem's premise, and the γ-quantile over tie-breaks is valid
//! by Markov's inequality); where both guess sets cut the same run, at the
//! worst order's count (`Ranked::new`), which every tie-break reaches.
//! Neither depends on the order of the rows: all-equal scores give 0
//! however the file is sorted. On request ([`TieBreak::Seeded`]) the ties
//! are instead broken by one seeded pseudo-random order, at the full level:
//! valid for a seed fixed before the inclusion bits are seen, and stronger
//! on heavily tied scores, but then the bound depends on the seed and the
//! row order; the evidence says whether there were ties.
//!
//! **Two-valued scores** (the pooled scores, read without the labels, take
//! exactly two values, `m ≥ 4`): every policy but `fixed` bounds the one
//! guess set "in" for every canary at the larger value, "out" for the rest
//! (`r = m`, a function of the scores; on the evaluation half under
//! `split`), at the full level: it cuts no run, and a fixed-size guess set
//! would take random shares of the same two runs on fewer guesses.
//!
//! **The design is checked.** The theorem needs every canary included
//! independently with probability ½; a member count implausible under that
//! design is refused before any guess ([`crate::design`]), and the test's
//! p-value travels with the bound ([`OneRunEvidence::inclusion`]).
//!
//! **Choosing (k+, k−)** (`select_guesses`, shared with the f-DP one-run
//! audit of [`crate::one_run_fdp`]). The candidates are a family fixed in
//! advance ([`GuessFamily`]): `k+ = k− = f·m` (the default), and on request
//! also one-sided `k+ = f·m, k− = 0` or `k+ = 0, k− = f·m`, for `f` in
//! [`candidate_fractions`]. Policies:
//! `bonferroni` (all canaries, every candidate at level `(1 − confidence)/K`),
//! `split` (choose the best candidate on a random half of the canaries,
//! chosen without looking at inclusion bits, then bound the other half with
//! the same fractions, `m` = that half's size), `multi-split` (see
//! [`crate::policy`]), `fixed` (the caller's `k+`, `k−`), or `same-data` (the
//! paper's practice, §5: the best candidate on all canaries, not valid at the
//! stated confidence). The guesses depend on the scores only, never on the
//! inclusion bits, as the theorem requires.

use crate::bound::{BoundedOn, EpsilonLowerBound, Evidence, MechanismAssumption, OneRunEvidence};
use crate::design::{check_inclusion, InclusionDesign};
use crate::error::{check_confidence, check_delta, AuditError, Result};
use crate::interrupt::Interrupt;
use crate::metrics::{metrics_sorted, Metrics};
use crate::observations::{split_bits, Method, Observations, Selection};
use crate::policy::{median_rank_index, multi_split_seeds};
use crate::sort::{merge_sorted, split_sorted_classes};

use crate::ranked::{tied, Ranked};
use crate::special::{ln_binomial_pmf, ln_binomial_sf};
use crate::tie_break::seeded_ranks;

pub use crate::bound::GuessFamily;
pub use crate::tie_break::TieBreak;

/// The design of a one-run audit: the confidence, the δ and how (k+, k−)
/// is chosen. One design serves both one-run audits: the (ε, δ) test of
/// this module ([`one_run_lower_bound`]) and the f-DP test of
/// [`crate::one_run_fdp`] ([`crate::one_run_fdp::one_run_fdp_lower_bound`]),
/// which is given the trade-off family besides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneRunConfig {
    /// Confidence of the bound, e.g. 0.95 (`p_conf = 1 − confidence`).
    pub confidence: f64,
    /// δ, read by each audit as its theorem needs it: the (ε, δ) test takes
    /// it as the δ of the null hypothesis "(ε, δ)-DP" (use the claimed
    /// guarantee's δ); the f-DP test as the δ of the (ε, δ) curves, or, for
    /// the Gaussian family, as the δ at which the μ bound is stated as ε
    /// (then it must be > 0).
    pub delta: f64,
    /// How (k+, k−) is chosen.
    pub selection: Selection,
    /// Fixed guess counts (k+, k−); required by, and only used with,
    /// [`Selection::Fixed`].
    pub fixed_guesses: Option<(u64, u64)>,
    /// The candidates the other policies search.
    pub guesses: GuessFamily,
    /// How tied scores are ordered ([`TieBreak`]): a seeded random order at
    /// the full level (the default) or the order-free quantile rule.
    pub tie_break: TieBreak,
}

impl OneRunConfig {
    /// The common design: `selection` searches the symmetric candidates
    /// ([`GuessFamily::Symmetric`]), no fixed (k+, k−), ties broken by the
    /// seeded rule with the seed of a split (0 for the other policies), as
    /// the front ends do by default.
    pub fn new(confidence: f64, delta: f64, selection: Selection) -> Self {
        let seed = match selection {
            Selection::Split { seed } | Selection::MultiSplit { seed, .. } => seed,
            Selection::SameData | Selection::Bonferroni | Selection::Fixed => 0,
        };
        Self {
            confidence,
            delta,
            selection,
            fixed_guesses: None,
            guesses: GuessFamily::Symmetric,
            tie_break: TieBreak::Seeded { seed },
        }
    }

    /// The same design ordering tied scores by `tie_break`.
    pub fn with_tie_break(self, tie_break: TieBreak) -> Self {
        Self { tie_break, ..self }
    }

    /// The same design searching the candidates `guesses`.
    pub fn with_guesses(self, guesses: GuessFamily) -> Self {
        Self { guesses, ..self }
    }

    /// The same design with the fixed (k+, k−) of [`Selection::Fixed`].
    pub fn with_fixed_guesses(self, k_plus: u64, k_minus: u64) -> Self {
        Self {
            fixed_guesses: Some((k_plus, k_minus)),
            ..self
        }
    }
}

/// What one guess set gives: `v` correct of `r` guesses on `m` canaries,
/// the counts both one-run tests read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guesses {
    /// Canaries.
    pub m: u64,
    /// Guesses made (k+ + k−).
    pub r: u64,
    /// Correct guesses.
    pub v: u64,
}

impl Guesses {
    /// Refuses counts outside `0 ≤ v ≤ r ≤ m`.
    pub(crate) fn check(self) -> Result<()> {
        let Guesses { m, r, v } = self;
        if v > r || r > m {
            return Err(AuditError::InvalidParameter {
                name: "counts",
                value: format!("m = {m}, r = {r}, v = {v}"),
                expected: "0 ≤ v (correct) ≤ r (guesses) ≤ m (canaries)",
            });
        }
        Ok(())
    }

    /// [`Guesses::check`], and at least one canary (`m ≥ 1`): the f-DP
    /// tests start their recursions from fractions of `m`.
    pub(crate) fn check_nonempty(self) -> Result<()> {
        self.check()?;
        if self.m == 0 {
            return Err(AuditError::InvalidParameter {
                name: "counts",
                value: format!("m = {}, r = {}, v = {}", self.m, self.r, self.v),
                expected: "at least one canary (m ≥ 1)",
            });
        }
        Ok(())
    }
}

/// `(ln q, ln(1 − q))` for `q = e^ε/(1+e^ε)`, stable for large ε.
fn ln_rr_accuracy(epsilon: f64) -> (f64, f64) {
    let l = (-epsilon).exp().ln_1p();
    (-l, -epsilon - l)
}

/// The Theorem 3.1 p-value, for validated inputs.
pub(crate) fn p_value_unchecked(g: Guesses, epsilon: f64, delta: f64) -> f64 {
    let Guesses { m, r, v } = g;
    if v == 0 {
        return 1.0;
    }
    let (ln_q, ln_1q) = ln_rr_accuracy(epsilon);
    let (q, q1) = (ln_q.exp(), ln_1q.exp());
    let beta = ln_binomial_sf(v, r, q, q1).exp();
    if delta == 0.0 {
        return beta.min(1.0);
    }
    // alpha_code = max_{1≤i≤v} cum_i / i, cum_i = Σ_{j=1..i} pmf(v − j).
    // Terms are kept relative to a running log scale to avoid under/overflow;
    // pmf(k−1)/pmf(k) = k(1−q) / ((r−k+1) q).
    let mut ln_scale = ln_binomial_pmf(v - 1, r, q, q1);
    let mut term = 1.0_f64;
    let mut cum = 0.0_f64;
    let mut best = 0.0_f64;
    let ln_odds = ln_1q - ln_q;
    for i in 1..=v {
        let k = v - i; // term = pmf(k)
        cum += term;
        let ratio_i = cum / i as f64;
        if ratio_i > best {
            best = ratio_i;
        }
        if k == 0 {
            break;
        }
        let ratio = (k as f64).ln() - ((r - k + 1) as f64).ln() + ln_odds;
        let ratio = ratio.exp();
        // Below the mode the ratios keep shrinking: once the remaining mass is
        // negligible, cum is constant and cum/i only decreases.
        if ratio < 1.0 {
            let remaining = term * ratio / (1.0 - ratio);
            if remaining <= 1e-17 * cum {
                break;
            }
        }
        term *= ratio;
        if term > 1e250 {
            term *= 1e-250;
            cum *= 1e-250;
            best *= 1e-250;
            ln_scale += 250.0 * std::f64::consts::LN_10;
        }
    }
    let alpha = if best > 0.0 {
        (ln_scale + best.ln()).exp()
    } else {
        0.0
    };
    (beta + alpha * delta * 2.0 * m as f64).min(1.0)
}

/// The Theorem 3.1 p-value bound on `P[≥ v correct of r guesses]` under
/// "(ε, δ)-DP" with `m` randomized canaries (Steinke et al. 2023 Eqs. (2)–(3)).
pub fn p_value(m: u64, r: u64, v: u64, epsilon: f64, delta: f64) -> Result<f64> {
    let g = Guesses { m, r, v };
    g.check()?;
    check_delta(delta)?;
    if !(epsilon.is_finite() && epsilon >= 0.0) {
        return Err(AuditError::InvalidParameter {
            name: "epsilon",
            value: epsilon.to_string(),
            expected: "a finite ε ≥ 0",
        });
    }
    Ok(p_value_unchecked(g, epsilon, delta))
}

/// Largest ε rejected at level `p_conf`: bracket [0, 1], grow the top by 1
/// until not rejected, 30 halvings, return the low (conservative) end (the
/// procedure of Steinke et al. 2023, full version, Appendix D).
pub fn epsilon_lower_bound(m: u64, r: u64, v: u64, delta: f64, p_conf: f64) -> Result<f64> {
    let g = Guesses { m, r, v };
    g.check()?;
    check_delta(delta)?;
    if !(p_conf.is_finite() && p_conf > 0.0 && p_conf < 1.0) {
        return Err(AuditError::InvalidParameter {
            name: "level",
            value: p_conf.to_string(),
            expected: "a level strictly between 0 and 1 (1 − confidence)",
        });
    }
    Ok(epsilon_lower_bound_unchecked(g, delta, p_conf))
}

fn epsilon_lower_bound_unchecked(g: Guesses, delta: f64, p_conf: f64) -> f64 {
    // Interrupt::NEVER never stops: the bisection cannot fail.
    bisect_epsilon(g, delta, p_conf, Interrupt::NEVER).unwrap_or(0.0)
}

/// The bisection of [`epsilon_lower_bound`], asking `stop` before each
/// p-value (one p-value is O(v) at most).
fn bisect_epsilon(g: Guesses, delta: f64, p_conf: f64, stop: Interrupt) -> Result<f64> {
    let rejected = |eps: f64| -> Result<bool> {
        stop.check("one-run bound")?;
        Ok(p_value_unchecked(g, eps, delta) < p_conf)
    };
    let mut eps_min = 0.0;
    let mut eps_max = 1.0;
    while rejected(eps_max)? {
        eps_max += 1.0;
        if eps_max > 1e4 {
            break;
        }
    }
    for _ in 0..30 {
        let eps = 0.5 * (eps_min + eps_max);
        if rejected(eps)? {
            eps_min = eps;
        } else {
            eps_max = eps;
        }
    }
    Ok(eps_min)
}

/// The fractions of the candidate guess counts: `f ∈ {0.001, 0.002, 0.005,
/// 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5}` (`k = round(f·m)`).
pub fn candidate_fractions() -> &'static [f64] {
    &[
        0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5,
    ]
}

/// The candidate (k+, k−) fraction pairs: symmetric `(f, f)`, and with
/// [`GuessFamily::WithOneSided`] also one-sided `(f, 0)` and `(0, f)`, for
/// `f` in [`candidate_fractions`] ([`GuessFamily::AllCounts`] depends on `m`:
/// it gives the same pairs here, and every count in the audit). Fixed in advance; the pairs that round to
/// no guess or to more than `m` guesses are dropped for a given `m` by
/// `candidates`.
pub fn candidate_pairs(family: GuessFamily) -> Vec<(f64, f64)> {
    let fr = candidate_fractions();
    let mut out: Vec<(f64, f64)> = fr.iter().map(|&f| (f, f)).collect();
    if family != GuessFamily::Symmetric {
        out.extend(fr.iter().map(|&f| (f, 0.0)));
        out.extend(fr.iter().map(|&f| (0.0, f)));
    }
    out
}

/// The candidate pairs usable with `m` canaries (at least one guess, at
/// most `m`); [`GuessFamily::AllCounts`]: every count as a fraction `k/m`.
fn candidates(m: u64, family: GuessFamily) -> Vec<(f64, f64)> {
    if family == GuessFamily::AllCounts {
        let f = |k: u64| k as f64 / m as f64;
        let sym = (1..=m / 2).map(|k| (f(k), f(k)));
        let one = (1..=m).flat_map(|k| [(f(k), 0.0), (0.0, f(k))]);
        return sym.chain(one).collect();
    }
    candidate_pairs(family)
        .into_iter()
        .filter(|&(a, b)| {
            let r = round_count(a, m) + round_count(b, m);
            r >= 1 && r <= m
        })
        .collect()
}

fn round_count(fraction: f64, m: u64) -> u64 {
    ((fraction * m as f64).round() as u64).min(m)
}

/// A statistic of one guess set: `bound(guesses, level, floor)` returns the
/// bound (ε or μ) from `v` correct of `r` guesses on `m` canaries at `level`;
/// it may return any value ≤ `floor` when the bound is at most `floor` (a
/// shortcut for searches). Its error is [`AuditError::Interrupted`].
pub(crate) type GuessBound<'a> = dyn Fn(Guesses, f64, f64) -> Result<f64> + 'a;

/// The guesses a policy chose and the bound they give.
#[derive(Debug, Clone)]
pub(crate) struct GuessOutcome {
    pub value: f64,
    pub evidence: OneRunEvidence,
    pub bounded_on: BoundedOn,
    /// Multi-split: every split's value.
    pub split_values: Option<Vec<f64>>,
    pub metrics: Metrics,
}

struct Choice {
    k_plus: u64,
    k_minus: u64,
    fractions: (f64, f64),
    value: f64,
}

fn best_candidate(
    ranked: &Ranked,
    level: f64,
    cands: &[(f64, f64)],
    bound: &GuessBound<'_>,
) -> Result<Option<Choice>> {
    let m = ranked.m();
    let mut best: Option<Choice> = None;
    for &(a, b) in cands {
        let (kp, km) = (round_count(a, m), round_count(b, m));
        if kp + km == 0 || kp + km > m {
            continue;
        }
        let v = ranked.correct_share(kp, km);
        let floor = best.as_ref().map_or(0.0, |c| c.value);
        let value = bound(Guesses { m, r: kp + km, v }, level, floor)?;
        if best.as_ref().is_none_or(|c| value > c.value) {
            best = Some(Choice {
                k_plus: kp,
                k_minus: km,
                fractions: (a, b),
                value,
            });
        }
    }
    Ok(best)
}

#[allow(clippy::too_many_arguments)]
fn evidence(
    m: u64,
    kp: u64,
    km: u64,
    v: u64,
    level: f64,
    candidates: usize,
    inclusion: InclusionDesign,
    guess_family: GuessFamily,
) -> OneRunEvidence {
    OneRunEvidence {
        canaries: m,
        k_plus: kp,
        k_minus: km,
        guesses: kp + km,
        correct: v,
        level,
        candidates: candidates as u64,
        family: None,
        mu_lower: None,
        inclusion,
        guess_family,
        tie_break: TieBreak::Quantile,
        tied_scores: false,
    }
}

/// The two halves of the split with `seed` ([`Observations::split`]), each
/// ranked.
fn ranked_halves(obs: &Observations, seed: u64) -> [Ranked; 2] {
    let bits = split_bits(obs.len(), seed);
    split_sorted_classes(obs.scores(), obs.members(), &bits)
        .map(|(pos, neg)| Ranked::from_sorted(pos, neg))
}

/// Two-valued scores: the one guess set of [`Ranked::two_valued_guesses`]
/// (every canary guessed, `r = m`), bounded at `base_level` without the
/// tie-break factor, since it cuts no run; `None` for other scores.
fn two_valued(
    ranked: &Ranked,
    base_level: f64,
    bound: &GuessBound<'_>,
    design: InclusionDesign,
    family: GuessFamily,
) -> Result<Option<(f64, OneRunEvidence)>> {
    let Some((kp, km, v)) = ranked.two_valued_guesses() else {
        return Ok(None);
    };
    let m = ranked.m();
    let value = bound(Guesses { m, r: m, v }, base_level, 0.0)?;
    let ev = evidence(m, kp, km, v, base_level, 1, design, family);
    Ok(Some((value, ev)))
}

/// Split with `seed`: choose the fractions on the `select` half of the
/// canaries, bound the `evaluate` half with them at `base_level` times the
/// tie-break rule's `share`; two-valued scores in the evaluation half
/// (`original`, its scores before a seeded tie-break) get their one guess
/// set there at `base_level` instead ([`two_valued`]).
#[allow(clippy::too_many_arguments)]
fn split_guesses(
    [select, evaluate]: &[Ranked; 2],
    original: &Ranked,
    seed: u64,
    base_level: f64,
    share: f64,
    bound: &GuessBound<'_>,
    design: InclusionDesign,
    family: GuessFamily,
) -> Result<(f64, OneRunEvidence)> {
    if let Some(out) = two_valued(original, base_level, bound, design, family)? {
        return Ok(out);
    }
    let level = base_level * share;
    // Label-blind split: stratifying on inclusion would break the
    // independence of the evaluation half's coins.
    let cands = candidates(select.m(), family);
    let c = best_candidate(select, level, &cands, bound)?.ok_or_else(|| {
        AuditError::InvalidParameter {
            name: "canaries",
            value: format!("{} in the selection half (seed {seed})", select.m()),
            expected: "at least one canary to guess on in each half of the split",
        }
    })?;
    let m = evaluate.m();
    let kp = round_count(c.fractions.0, m);
    let km = round_count(c.fractions.1, m).min(m - kp);
    if kp + km == 0 {
        return Ok((
            0.0,
            evidence(m, 0, 0, 0, level, cands.len(), design, family),
        ));
    }
    let v = evaluate.correct_share(kp, km);
    let value = bound(Guesses { m, r: kp + km, v }, level, 0.0)?;
    Ok((
        value,
        evidence(m, kp, km, v, level, cands.len(), design, family),
    ))
}

/// Chooses the guesses per the design `cfg` and bounds them with `bound`,
/// asking `stop` between candidates and halvings. Each class is sorted once
/// per set of canaries a policy ranks (a split sorts its halves and merges
/// them for the metrics); under the seeded tie-break the tie-broken ranks
/// are sorted too (the metrics and the two-valued switch read the scores).
pub(crate) fn select_guesses(
    obs: &Observations,
    cfg: &OneRunConfig,
    bound: &GuessBound<'_>,
    stop: Interrupt,
) -> Result<GuessOutcome> {
    let OneRunConfig {
        confidence,
        selection,
        fixed_guesses,
        guesses: family,
        tie_break,
        ..
    } = *cfg;
    check_confidence(confidence)?;
    // Under the quantile rule every count is the one a share γ of the
    // tie-breaks reach, so every test runs at γ times the level; under the
    // seeded rule the counts are read off one strict order at the full
    // level (crate::tie_break). The one guess set of two-valued scores cuts
    // no run and runs at the full level under both.
    let base_level = 1.0 - confidence;
    let share = tie_break.level_share();
    let level = base_level * share;
    // The theorems need inclusion with probability ½: refuse a count that
    // is implausible under it (crate::design), before any guess is made.
    let design = check_inclusion(obs.members())?;
    // The seeded rule: the scores replaced by their ranks in the strict
    // (score, key) order, the guesses read off those.
    let ranks = match tie_break {
        TieBreak::Quantile => None,
        TieBreak::Seeded { seed } => Some(seeded_ranks(obs.scores(), seed).0),
    };
    let broken = ranks
        .as_deref()
        .map(|r| Observations::borrowed(r, obs.members()))
        .transpose()?;
    let outcome = |value: f64, evidence: OneRunEvidence, bounded_on, metrics, tied| GuessOutcome {
        value,
        evidence: OneRunEvidence {
            tie_break,
            tied_scores: tied,
            ..evidence
        },
        bounded_on,
        split_values: None,
        metrics,
    };
    match selection {
        Selection::Fixed => {
            let Some((kp, km)) = fixed_guesses else {
                return Err(AuditError::InvalidParameter {
                    name: "fixed_guesses",
                    value: "none".into(),
                    expected: "k+ and k− for `fixed` selection",
                });
            };
            let m = obs.len() as u64;
            if kp.saturating_add(km) > m || kp + km == 0 {
                return Err(AuditError::InvalidParameter {
                    name: "fixed_guesses",
                    value: format!("k+ = {kp}, k− = {km} for {m} canaries"),
                    expected: "1 ≤ k+ + k− ≤ number of canaries",
                });
            }
            let ranked = Ranked::new(obs);
            let broken_ranked = broken.as_ref().map(Ranked::new);
            stop.check("one-run bound")?;
            let metrics = metrics_sorted(&ranked.pos, &ranked.neg, confidence);
            let v = broken_ranked
                .as_ref()
                .unwrap_or(&ranked)
                .correct_share(kp, km);
            let value = bound(Guesses { m, r: kp + km, v }, level, 0.0)?;
            Ok(outcome(
                value,
                evidence(m, kp, km, v, level, 1, design, family),
                BoundedOn::All,
                metrics,
                tied(&ranked.pos, &ranked.neg),
            ))
        }
        Selection::SameData | Selection::Bonferroni => {
            let ranked = Ranked::new(obs);
            let broken_ranked = broken.as_ref().map(Ranked::new);
            stop.check("one-run bound")?;
            let metrics = metrics_sorted(&ranked.pos, &ranked.neg, confidence);
            let ties = tied(&ranked.pos, &ranked.neg);
            if let Some((value, ev)) = two_valued(&ranked, base_level, bound, design, family)? {
                return Ok(outcome(value, ev, BoundedOn::All, metrics, ties));
            }
            let guess_ranked = broken_ranked.as_ref().unwrap_or(&ranked);
            let m = ranked.m();
            let cands = candidates(m, family);
            let level = if selection == Selection::Bonferroni {
                level / cands.len().max(1) as f64
            } else {
                level
            };
            let c = best_candidate(guess_ranked, level, &cands, bound)?.ok_or_else(|| {
                AuditError::InvalidParameter {
                    name: "canaries",
                    value: obs.len().to_string(),
                    expected: "at least one canary to guess on",
                }
            })?;
            let v = guess_ranked.correct_share(c.k_plus, c.k_minus);
            Ok(outcome(
                c.value,
                evidence(
                    m,
                    c.k_plus,
                    c.k_minus,
                    v,
                    level,
                    cands.len(),
                    design,
                    family,
                ),
                BoundedOn::All,
                metrics,
                ties,
            ))
        }
        Selection::Split { seed } => {
            let halves = ranked_halves(obs, seed);
            let broken_halves = broken.as_ref().map(|b| ranked_halves(b, seed));
            stop.check("one-run bound")?;
            let [a, b] = &halves;
            let (pos, neg) = (merge_sorted(&a.pos, &b.pos), merge_sorted(&a.neg, &b.neg));
            let metrics = metrics_sorted(&pos, &neg, confidence);
            let (value, ev) = split_guesses(
                broken_halves.as_ref().unwrap_or(&halves),
                b,
                seed,
                base_level,
                share,
                bound,
                design,
                family,
            )?;
            Ok(outcome(
                value,
                ev,
                BoundedOn::EvaluationHalf { seed },
                metrics,
                tied(&pos, &neg),
            ))
        }
        Selection::MultiSplit { seed, splits } => {
            let seeds = multi_split_seeds(seed, splits, obs.len())?;
            let all_ranked = Ranked::new(obs);
            let metrics = metrics_sorted(&all_ranked.pos, &all_ranked.neg, confidence);
            let ties = tied(&all_ranked.pos, &all_ranked.neg);
            drop(all_ranked);
            let all = seeds
                .iter()
                .map(|&s| {
                    stop.check("multi-split")?;
                    let halves = ranked_halves(obs, s);
                    let broken_halves = broken.as_ref().map(|b| ranked_halves(b, s));
                    let guess_halves = broken_halves.as_ref().unwrap_or(&halves);
                    let level = base_level / 2.0;
                    split_guesses(
                        guess_halves,
                        &halves[1],
                        s,
                        level,
                        share,
                        bound,
                        design,
                        family,
                    )
                })
                .collect::<Result<Vec<_>>>()?;
            let values: Vec<f64> = all.iter().map(|(v, _)| *v).collect();
            let i = median_rank_index(&values);
            let chosen = outcome(
                values[i],
                all[i].1.clone(),
                BoundedOn::EvaluationHalf { seed: seeds[i] },
                metrics,
                ties,
            );
            Ok(GuessOutcome {
                split_values: Some(values),
                ..chosen
            })
        }
    }
}

impl GuessOutcome {
    /// The typed bound of the design `cfg` (both one-run audits):
    /// `to_epsilon` turns the statistic (ε, or μ for the Gaussian f-DP
    /// family) into the reported ε, for the bound and every split's value.
    pub(crate) fn into_bound(
        self,
        cfg: &OneRunConfig,
        method: Method,
        assumes: MechanismAssumption,
        to_epsilon: impl Fn(f64) -> f64,
    ) -> EpsilonLowerBound {
        EpsilonLowerBound {
            epsilon: to_epsilon(self.value),
            confidence: cfg.confidence,
            delta: cfg.delta,
            method,
            selection: cfg.selection,
            valid_at_confidence: cfg.selection.is_valid(),
            assumes,
            bounded_on: self.bounded_on,
            split_bounds: self
                .split_values
                .map(|v| v.into_iter().map(to_epsilon).collect()),
            metrics: self.metrics,
            evidence: Evidence::OneRun(self.evidence),
        }
    }
}

/// The one-run ε lower bound from canary scores (Steinke et al. 2023 Thm 3.1).
pub fn one_run_lower_bound(obs: &Observations, cfg: &OneRunConfig) -> Result<EpsilonLowerBound> {
    one_run_interruptible(obs, cfg, Interrupt::NEVER)
}

/// [`one_run_lower_bound`], asking `stop` between units of work.
pub fn one_run_interruptible(
    obs: &Observations,
    cfg: &OneRunConfig,
    stop: Interrupt,
) -> Result<EpsilonLowerBound> {
    check_confidence(cfg.confidence)?;
    check_delta(cfg.delta)?;
    let delta = cfg.delta;
    // Not rejected at `floor`: the bound is below it (the p-value grows
    // with ε), so one p-value settles the candidate.
    let bound = |g: Guesses, level: f64, floor: f64| {
        if floor > 0.0 && p_value_unchecked(g, floor, delta) >= level {
            return Ok(floor);
        }
        bisect_epsilon(g, delta, level, stop)
    };
    let out = select_guesses(obs, cfg, &bound, stop)?;
    Ok(out.into_bound(cfg, Method::OneRun, MechanismAssumption::Nothing, |eps| eps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_counts() {
        assert!(p_value(10, 11, 3, 1.0, 0.0).is_err());
        assert!(p_value(10, 5, 6, 1.0, 0.0).is_err());
        assert!(p_value(10, 5, 3, -1.0, 0.0).is_err());
        assert!(epsilon_lower_bound(10, 5, 3, 1.0, 0.05).is_err());
        assert!(epsilon_lower_bound(10, 5, 3, 0.0, 0.0).is_err());
    }

    #[test]
    fn closed_form_all_correct() {
        // Closed form: v = r, δ = 0 leaves p = q^r, so ε = logit(p_conf^{1/r});
        // r = 100 → 3.4930.
        let eps = epsilon_lower_bound(100, 100, 100, 0.0, 0.05).unwrap();
        let p = 0.05_f64.powf(0.01);
        assert!((eps - (p / (1.0 - p)).ln()).abs() < 1e-8);
        assert!((eps - 3.4930).abs() < 5e-5);
    }
}
