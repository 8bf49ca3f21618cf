//! Validated inputs (scores with membership labels) and the threshold
//! selection policy.
//!
//! Convention everywhere: a **higher score means "more likely a member"**
//! (the canary/target was included). Pass `−loss` for loss-based attacks.

use std::borrow::Cow;
use std::fmt;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::error::{AuditError, Result};

/// Scores of observations, each labelled member (1: the target/canary was
/// included) or non-member (0), in input order. Owned
/// ([`Observations::new`]), or borrowed from the caller's buffers
/// ([`Observations::borrowed`], e.g. NumPy arrays read in place).
#[derive(Debug, Clone, PartialEq)]
pub struct Observations<'a> {
    scores: Cow<'a, [f64]>,
    members: Cow<'a, [bool]>,
}

impl Observations<'static> {
    /// Validates that every score is finite, that lengths agree and that both
    /// classes are non-empty.
    pub fn new(scores: Vec<f64>, members: Vec<bool>) -> Result<Self> {
        Observations::checked(Cow::Owned(scores), Cow::Owned(members))
    }

    /// From two separate score lists, members first.
    pub fn from_classes(members: &[f64], nonmembers: &[f64]) -> Result<Self> {
        let mut scores = Vec::with_capacity(members.len() + nonmembers.len());
        scores.extend_from_slice(members);
        scores.extend_from_slice(nonmembers);
        let mut labels = vec![true; members.len()];
        labels.resize(members.len() + nonmembers.len(), false);
        Self::new(scores, labels)
    }
}

impl<'a> Observations<'a> {
    /// As [`Observations::new`], reading the caller's buffers where they lie.
    pub fn borrowed(scores: &'a [f64], members: &'a [bool]) -> Result<Self> {
        Self::checked(Cow::Borrowed(scores), Cow::Borrowed(members))
    }

    /// Either kind of storage; the same checks.
    pub fn from_cows(scores: Cow<'a, [f64]>, members: Cow<'a, [bool]>) -> Result<Self> {
        Self::checked(scores, members)
    }

    fn checked(scores: Cow<'a, [f64]>, members: Cow<'a, [bool]>) -> Result<Self> {
        if scores.len() != members.len() {
            return Err(AuditError::InvalidParameter {
                name: "members",
                value: format!("{} labels for {} scores", members.len(), scores.len()),
                expected: "one label per score",
            });
        }
        if let Some((i, &s)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
            return Err(AuditError::NonFiniteScore {
                location: format!("score index {i}"),
                value: s,
            });
        }
        let obs = Self { scores, members };
        obs.check_both_classes("")?;
        Ok(obs)
    }

    /// The same observations, owning their storage.
    pub fn into_owned(self) -> Observations<'static> {
        Observations {
            scores: Cow::Owned(self.scores.into_owned()),
            members: Cow::Owned(self.members.into_owned()),
        }
    }

    pub(crate) fn check_both_classes(&self, context: &str) -> Result<()> {
        let n_members = self.members.iter().filter(|&&m| m).count();
        if n_members == 0 {
            return Err(AuditError::EmptyClass {
                class: "member",
                context: context.into(),
            });
        }
        if n_members == self.members.len() {
            return Err(AuditError::EmptyClass {
                class: "non-member",
                context: context.into(),
            });
        }
        Ok(())
    }

    /// Scores in input order.
    pub fn scores(&self) -> &[f64] {
        &self.scores
    }

    /// Membership labels in input order.
    pub fn members(&self) -> &[bool] {
        &self.members
    }

    /// Number of observations.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there are no observations (never true for a validated value).
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// Splits into (member scores, non-member scores).
    pub fn classes(&self) -> (Vec<f64>, Vec<f64>) {
        let n_pos = self.members.iter().filter(|&&m| m).count();
        let mut pos = Vec::with_capacity(n_pos);
        let mut neg = Vec::with_capacity(self.len() - n_pos);
        for (&s, &m) in self.scores.iter().zip(self.members.iter()) {
            if m {
                pos.push(s);
            } else {
                neg.push(s);
            }
        }
        (pos, neg)
    }

    /// The deterministic random split used by [`Selection::Split`]: each
    /// observation goes to the *selection* half when its bit in a ChaCha8
    /// stream seeded with `seed` is 1, else to the *evaluation* half.
    /// Returns `(selection, evaluation)`, each keeping input order.
    ///
    /// The assignment ignores scores and labels, so the two halves are
    /// independent samples whenever the input rows are (e.g. rows in run
    /// order). Either half may lack a class; callers then report
    /// [`AuditError::EmptyClass`].
    pub fn split(&self, seed: u64) -> (Observations<'static>, Observations<'static>) {
        let bits = split_bits(self.len(), seed);
        let (mut a_s, mut a_m, mut b_s, mut b_m) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, (&s, &m)) in self.scores.iter().zip(self.members.iter()).enumerate() {
            if bits[i] {
                a_s.push(s);
                a_m.push(m);
            } else {
                b_s.push(s);
                b_m.push(m);
            }
        }
        let half = |scores, members| Observations {
            scores: Cow::Owned(scores),
            members: Cow::Owned(members),
        };
        (half(a_s, a_m), half(b_s, b_m))
    }
}

/// One selection bit per observation from ChaCha8 seeded with `seed`.
pub(crate) fn split_bits(n: usize, seed: u64) -> Vec<bool> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let word = rng.next_u64();
        let take = (n - out.len()).min(64);
        out.extend((0..take).map(|j| (word >> j) & 1 == 1));
    }
    out
}

/// How the threshold (or the guess counts) is chosen. Named in every output.
///
/// Which policies are valid, and why, is written out in
/// `docs/audit-statistics.md`; [`crate::policy::default_selection`] picks
/// one from the method and the number of observations alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "policy", rename_all = "kebab-case")]
pub enum Selection {
    /// Choose on a random half (see [`Observations::split`]), bound on the
    /// other half. Valid at the stated confidence.
    Split {
        /// Seed of the split; fix it before looking at the scores.
        seed: u64,
    },
    /// `splits` independent random halvings, each bounded as [`Selection::Split`]
    /// at level `(1 − confidence)/2`; the reported bound is the
    /// `⌈splits/2⌉`-th largest of them. Valid for any dependence between the
    /// splits (Meinshausen, Meier & Bühlmann 2009, p-value aggregation with
    /// γ = ½: at least half of the splits must reject).
    MultiSplit {
        /// Seed from which the splits' seeds are derived.
        seed: u64,
        /// Number of random halvings.
        splits: u32,
    },
    /// Choose and bound on the same data, as the papers do (Annamalai et
    /// al. 2024 §3.2; Cebere et al. 2024 App. A; Steinke et al. 2023 §5).
    /// The maximum over candidates is **not** a valid bound at the stated
    /// confidence.
    SameData,
    /// Choose on all the data, with a union bound over a family declared in
    /// advance. Threshold audits: every error-rate bound holds simultaneously
    /// over all thresholds, via a grid of count levels fixed by the class
    /// sizes (see [`crate::region`]). One-run audits: every (k+, k−) candidate
    /// of the fixed grid is tested at level `(1 − confidence)/K`. Valid.
    Bonferroni,
    /// No search: the guess counts were fixed before looking at the data
    /// (one-run only). Valid.
    Fixed,
}

impl Selection {
    /// Short name: `split`, `multi-split`, `same-data`, `bonferroni` or `fixed`.
    pub fn name(&self) -> &'static str {
        match self {
            Selection::Split { .. } => "split",
            Selection::MultiSplit { .. } => "multi-split",
            Selection::SameData => "same-data",
            Selection::Bonferroni => "bonferroni",
            Selection::Fixed => "fixed",
        }
    }

    /// Whether the reported bound holds at the stated confidence.
    pub fn is_valid(&self) -> bool {
        !matches!(self, Selection::SameData)
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selection::Split { seed } => {
                write!(f, "split (seed {seed}: chosen on one random half, bounded on the other)")
            }
            Selection::MultiSplit { seed, splits } => write!(
                f,
                "multi-split (seed {seed}: {splits} random halvings, each at half the level; the median-rank bound)"
            ),
            Selection::SameData => write!(
                f,
                "same-data (chosen and bounded on the same scores: NOT valid at the stated confidence)"
            ),
            Selection::Bonferroni => write!(
                f,
                "bonferroni (all scores; a union bound over a family fixed in advance)"
            ),
            Selection::Fixed => write!(f, "fixed (guess counts fixed in advance, no search)"),
        }
    }
}

/// The statistical method that produced a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Clopper–Pearson (ε,δ) region (Annamalai et al. 2024, Eq. (1) and
    /// Algorithm 5).
    EpsDelta,
    /// GDP audit (Cebere et al. 2024, App. A, Lemma 1 and Corollary 1).
    Gdp,
    /// One-run audit (Steinke, Nasr & Jagielski 2023, Thm 3.1).
    OneRun,
    /// f-DP one-run audit (Mahloujifar, Melis & Chaudhuri 2024).
    OneRunFdp,
    /// PANORAMIA measurement (Kazmi et al. 2024).
    Panoramia,
}

impl Method {
    /// The CLI name.
    pub fn name(&self) -> &'static str {
        match self {
            Method::EpsDelta => "eps-delta",
            Method::Gdp => "gdp",
            Method::OneRun => "one-run",
            Method::OneRunFdp => "one-run-fdp",
            Method::Panoramia => "panoramia",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_scores() {
        let err = Observations::new(vec![1.0, f64::NAN], vec![true, false]).unwrap_err();
        assert!(err.to_string().contains("index 1"), "{err}");
        let err = Observations::new(vec![1.0, 2.0], vec![true, true]).unwrap_err();
        assert!(matches!(
            err,
            AuditError::EmptyClass {
                class: "non-member",
                ..
            }
        ));
        assert!(Observations::new(vec![1.0], vec![true, false]).is_err());
    }

    #[test]
    fn split_is_deterministic_and_covers_all() {
        let obs = Observations::new(
            (0..1000).map(f64::from).collect(),
            (0..1000).map(|i| i % 3 == 0).collect(),
        )
        .unwrap();
        let (a, b) = obs.split(7);
        let (a2, _) = obs.split(7);
        assert_eq!(a, a2);
        assert_eq!(a.len() + b.len(), 1000);
        // Binomial(1000, ½): the halves are within 5 standard deviations (±79).
        assert!((a.len() as i64 - 500).abs() < 80, "{}", a.len());
        let (c, _) = obs.split(8);
        assert_ne!(a, c);
    }
}
