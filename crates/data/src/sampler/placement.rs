//! What the audits need around the samplers: a special record at a stored
//! position, and the canary insertion schedule.
//!
//! * Annamalai et al. 2024 Algorithm 2 builds `{(x̂,ŷ)} ∪ D` and `{(x_⊥,y_⊥)} ∪ D`: the
//!   target or the zero-out record sits at stored position 0 (§2.2, §6 item
//!   6), which is what makes partial shuffling and batch-then-shuffle leak.
//!   [`TargetLayout`] maps the sampler's indices `0..n` to "the special
//!   record" or a base record; an [`super::EpochPlan`] then says in which
//!   step and slot it sits.
//! * Cebere et al. 2024 App. D, Algorithm 4 inserts the crafted gradient at the steps
//!   `t` with `t mod k = 0`, `t = 1..T`: [`InsertionSchedule`].

use super::plan::invalid;
use super::DataError;

/// What a sampler index refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordRef {
    /// The special record: the target in `D`, the zero-out record `⊥` in `D′`.
    Target,
    /// Record `i` of the base dataset (without the special record).
    Base(usize),
}

/// A base dataset of `base_len` records with one special record inserted at
/// stored `position`; the sampler sees `base_len + 1` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetLayout {
    base_len: usize,
    position: usize,
}

impl TargetLayout {
    /// The special record first, as in Annamalai et al. 2024 Algorithm 2.
    pub fn first(base_len: usize) -> Self {
        Self {
            base_len,
            position: 0,
        }
    }

    /// The special record at `position ≤ base_len`.
    pub fn at(base_len: usize, position: usize) -> Result<Self, DataError> {
        if position > base_len {
            return Err(invalid(
                "target_position",
                position,
                format!("at most {base_len} (the base dataset's length)"),
            ));
        }
        Ok(Self { base_len, position })
    }

    /// Records the sampler must index: `base_len + 1`.
    pub fn len(&self) -> usize {
        self.base_len + 1
    }

    /// Never empty: the special record is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The sampler index of the special record.
    pub fn target_index(&self) -> usize {
        self.position
    }

    /// What sampler index `index` refers to; `None` past the end.
    pub fn resolve(&self, index: usize) -> Option<RecordRef> {
        match index.cmp(&self.position) {
            std::cmp::Ordering::Less => Some(RecordRef::Base(index)),
            std::cmp::Ordering::Equal => Some(RecordRef::Target),
            std::cmp::Ordering::Greater if index <= self.base_len => {
                Some(RecordRef::Base(index - 1))
            }
            std::cmp::Ordering::Greater => None,
        }
    }

    /// The sampler index of base record `base`; `None` past the end.
    pub fn index_of_base(&self, base: usize) -> Option<usize> {
        if base >= self.base_len {
            None
        } else if base < self.position {
            Some(base)
        } else {
            Some(base + 1)
        }
    }
}

/// Canary insertion every `period`-th step (Cebere et al. 2024 App. D, Algorithm 4, docs/canary-games.md item 5):
/// 1-based steps `t` with `t mod k = 0`, so the last insertion of a run of
/// `T = m·k` steps is at its final step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InsertionSchedule {
    period: u64,
}

impl InsertionSchedule {
    /// Insert every `period ≥ 1` steps (`period = 1`: every step).
    pub fn every(period: u64) -> Result<Self, DataError> {
        if period == 0 {
            return Err(invalid("period", 0, "at least 1 (insert every k-th step)"));
        }
        Ok(Self { period })
    }

    /// The periodicity `k`.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// Whether the 0-based global step `step` gets the canary.
    pub fn inserts_at(&self, step: u64) -> bool {
        (step + 1) % self.period == 0
    }

    /// Insertions in a run of `steps` steps: `⌊steps / k⌋` (the number of
    /// compositions the accountant counts, Cebere et al. 2024 §5.1).
    pub fn insertions(&self, steps: u64) -> u64 {
        steps / self.period
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_round_trips() {
        let layout = TargetLayout::at(5, 2).unwrap();
        assert_eq!(layout.len(), 6);
        let resolved: Vec<_> = (0..7).map(|i| layout.resolve(i)).collect();
        assert_eq!(
            resolved,
            vec![
                Some(RecordRef::Base(0)),
                Some(RecordRef::Base(1)),
                Some(RecordRef::Target),
                Some(RecordRef::Base(2)),
                Some(RecordRef::Base(3)),
                Some(RecordRef::Base(4)),
                None
            ]
        );
        for base in 0..5 {
            let index = layout.index_of_base(base).unwrap();
            assert_eq!(layout.resolve(index), Some(RecordRef::Base(base)));
        }
        assert_eq!(layout.index_of_base(5), None);
        assert_eq!(TargetLayout::first(3).target_index(), 0);
        assert!(TargetLayout::at(3, 4).is_err());
    }

    /// Cebere et al. 2024 App. D, Algorithm 4: T = 1250, k = 5 gives 250 insertions at t = 5, 10, …,
    /// 1250 (1-based), the last at the final step.
    #[test]
    fn schedule_matches_cebere_et_al() {
        let schedule = InsertionSchedule::every(5).unwrap();
        let steps: Vec<u64> = (0..1250).filter(|&s| schedule.inserts_at(s)).collect();
        assert_eq!(steps.len(), 250);
        assert_eq!(schedule.insertions(1250), 250);
        assert_eq!(steps[0], 4);
        assert_eq!(*steps.last().unwrap(), 1249);
        assert!((0..10).all(|s| InsertionSchedule::every(1).unwrap().inserts_at(s)));
        assert!(InsertionSchedule::every(0).is_err());
    }
}
