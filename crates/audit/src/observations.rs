//! Validated inputs: scores with membership labels, and their random split.
//!
//! Convention everywhere: a **higher score means "more likely a member"**
//! (the canary/target was included). Pass `−loss` for loss-based attacks.

use std::borrow::Cow;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::{AuditError, Result};

/// The methods and the selection policies live in [`crate::method`]; their
/// old paths stay valid.
pub use crate::method::{Method, Selection, SelectionChoice};

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

    /// The rows `(score, member)` in input order.
    pub fn rows(&self) -> impl Iterator<Item = (f64, bool)> + '_ {
        self.scores
            .iter()
            .copied()
            .zip(self.members.iter().copied())
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
        for (s, m) in self.rows() {
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
        for (i, (s, m)) in self.rows().enumerate() {
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
