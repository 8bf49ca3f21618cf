//! The reference ordering of a run: the one-run audit of Steinke, Nasr &
//! Jagielski 2023 on real members against real non-members (the paper's
//! "O(1) RM;RN" baseline, Kazmi et al. 2024, §5), score = −loss, δ = 0.
//! ε̃ is judged by how it orders the targets against this audit, so the
//! audit must be able to order them.
//!
//! **The default** (`[reference]` absent): every guess count
//! ([`GuessFamily::AllCounts`]) under `bonferroni`: a lower bound valid at the
//! run's confidence, its guesses fixed without the inclusion bits. The
//! earlier reference, the 33 grid candidates of
//! [`GuessFamily::WithOneSided`] with the tests' own `same-data` choice,
//! steps from `0.1·m` to `0.2·m` guesses: two targets whose `0.1·m` surest
//! guesses are all right tie there however much further their right
//! guesses reach (both most leaky targets of
//! `experiments/panoramia/fmnist-lenet-ranking-small.toml` did,
//! `docs/panoramia.md`). It stays available:
//!
//! ```toml
//! [reference]
//! guesses = "with-one-sided"  # symmetric, with-one-sided or all-counts (the default)
//! selection = "same-data"     # bonferroni (the default; valid) or same-data (NOT valid)
//! ```

use dpaudit_audit::observations::Selection;
use dpaudit_audit::one_run::{GuessFamily, OneRunConfig, TieBreak};
use serde::{Deserialize, Serialize};

/// How the reference audit chooses its guess counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReferenceSelection {
    /// Every candidate at level `(1 − confidence)/K`: valid. The default.
    #[default]
    Bonferroni,
    /// The best candidate on the audit set itself (Steinke et al. 2023, §5,
    /// as practised): NOT valid at the stated confidence.
    SameData,
}

/// `[reference]`: the one-run audit on real non-members that orders the
/// targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceConfig {
    /// The guess counts searched (default `all-counts`).
    #[serde(default = "all_counts")]
    pub guesses: GuessFamily,
    /// How one is chosen (default `bonferroni`).
    #[serde(default)]
    pub selection: ReferenceSelection,
}

fn all_counts() -> GuessFamily {
    GuessFamily::AllCounts
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        Self {
            guesses: all_counts(),
            selection: ReferenceSelection::default(),
        }
    }
}

impl ReferenceConfig {
    /// The audit crate's design at `confidence`, δ = 0, with the order-free
    /// quantile tie-break: the reference does not depend on the row order.
    pub fn one_run_config(&self, confidence: f64) -> OneRunConfig {
        let selection = match self.selection {
            ReferenceSelection::Bonferroni => Selection::Bonferroni,
            ReferenceSelection::SameData => Selection::SameData,
        };
        OneRunConfig::new(confidence, 0.0, selection)
            .with_guesses(self.guesses)
            .with_tie_break(TieBreak::Quantile)
    }

    /// Whether the reference is a lower bound valid at the confidence.
    pub fn is_valid(&self) -> bool {
        self.selection == ReferenceSelection::Bonferroni
    }

    /// In words, for the summary.
    pub fn describe(&self) -> String {
        format!(
            "one-run audit (Steinke et al. 2023, δ = 0) on real members vs real non-members, score = −loss; \
             guesses `{}`, {}",
            self.guesses.name(),
            match self.selection {
                ReferenceSelection::Bonferroni =>
                    "`bonferroni` (every candidate at the level over their count; valid at the confidence)",
                ReferenceSelection::SameData =>
                    "`same-data` (the best candidate on the audit set itself; NOT valid at the confidence)",
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpaudit_train::config::parse_toml;

    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        reference: ReferenceConfig,
    }

    #[test]
    fn defaults_to_every_count_under_bonferroni() {
        let f: File = parse_toml("", "test").unwrap();
        assert_eq!(f.reference.guesses, GuessFamily::AllCounts);
        assert!(f.reference.is_valid());
        let cfg = f.reference.one_run_config(0.95);
        assert_eq!(cfg.selection, Selection::Bonferroni);
        assert_eq!(cfg.guesses, GuessFamily::AllCounts);
        assert_eq!(cfg.delta, 0.0);
    }

    #[test]
    fn the_earlier_reference_stays_available_and_flagged() {
        let text = "[reference]\nguesses = \"with-one-sided\"\nselection = \"same-data\"\n";
        let f: File = parse_toml(text, "test").unwrap();
        assert_eq!(f.reference.guesses, GuessFamily::WithOneSided);
        assert!(!f.reference.is_valid());
        assert!(f.reference.describe().contains("NOT valid"));
        let bad = parse_toml::<File>("[reference]\nguesses = \"grid\"\n", "test");
        let msg = bad.err().unwrap().to_string();
        assert!(msg.contains("all-counts"), "{msg}");
    }
}
