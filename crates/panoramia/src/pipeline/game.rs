//! Stage "game": the audit game (Definition 2) — a fair coin per index picks
//! `D_in^te[i]` or `D_out^te[i]` — and the classifiers' training and
//! validation sets (members against generated non-members); beside it the
//! one-run audit's game on real members against real non-members.

use dpaudit_data::seed::Stream;

use super::context::{keys, Run};
use super::data::{Data, Pools};
use crate::records::{coins, permutation, Records};

/// The audit set and the membership classifiers' data, raw and normalised.
pub(super) struct Game {
    /// The coins `s` (true: the member was picked).
    pub coins: Vec<bool>,
    pub audit: Records,
    pub train_set: Records,
    pub y_train: Vec<bool>,
    pub val_set: Records,
    pub y_val: Vec<bool>,
    pub train_n: Records,
    pub val_n: Records,
    pub audit_n: Records,
}

impl Game {
    /// The coins from the `membership` stream; the sets they pick.
    pub fn new(run: &Run<'_>, data: &Data, pools: &Pools) -> Self {
        let norm = data.norm.as_ref();
        let m = run.config.split.audit;
        let s = coins(m, run.rnd.stream(Stream::Membership).child(keys::GAME));
        let pick: Vec<Records> = (0..m)
            .map(|i| {
                if s[i] {
                    data.in_te.range(i, 1)
                } else {
                    pools.out_te.range(i, 1)
                }
            })
            .collect();
        let mut audit = Records {
            x: Vec::with_capacity(m * data.d_f.record_len()),
            y: Vec::with_capacity(m),
            shape: data.d_f.shape.clone(),
        };
        for p in &pick {
            audit.x.extend_from_slice(&p.x);
            audit.y.extend_from_slice(&p.y);
        }
        let train_set = data.in_tr.concat(&pools.out_tr);
        let y_train: Vec<bool> = (0..train_set.len()).map(|i| i < data.in_tr.len()).collect();
        let val_set = data.in_val.concat(&pools.out_val);
        let y_val: Vec<bool> = (0..val_set.len()).map(|i| i < data.in_val.len()).collect();
        let (train_n, val_n, audit_n) = (
            train_set.normalized(norm),
            val_set.normalized(norm),
            audit.normalized(norm),
        );
        Self {
            coins: s,
            audit,
            train_set,
            y_train,
            val_set,
            y_val,
            train_n,
            val_n,
            audit_n,
        }
    }
}

/// The one-run audit's game (Steinke et al. 2023, the paper's "O(1)
/// RM;RN"): a coin per pair picks a real member of `D_in^te` or a real
/// non-member of the test split; all normalised as the targets saw them.
pub(super) struct O1Game {
    /// Audit pairs.
    pub pairs: usize,
    pub coins: Vec<bool>,
    /// The picked records, normalised.
    pub set_n: Records,
    /// `D_f` and the test split, normalised (the targets' accuracies).
    pub d_f_n: Records,
    pub test_n: Records,
}

impl O1Game {
    /// The coins and pairs from the `membership` and `split` streams.
    pub fn new(run: &Run<'_>, data: &Data) -> Self {
        let norm = data.norm.as_ref();
        let m = run.config.split.audit;
        let test_n = data.test.normalized(norm);
        let d_f_n = data.d_f.normalized(norm);
        let o1_pairs = m.min(data.test.len());
        let real_perm = permutation(
            data.test.len(),
            run.rnd
                .stream(Stream::Split)
                .child(keys::SPLIT_REAL_NONMEMBERS),
        );
        let s_o1 = coins(
            o1_pairs,
            run.rnd.stream(Stream::Membership).child(keys::GAME_O1),
        );
        let mut o1_set = Records {
            x: Vec::new(),
            y: Vec::new(),
            shape: data.d_f.shape.clone(),
        };
        for (i, &si) in s_o1.iter().enumerate() {
            let (src, j) = if si {
                (&data.in_te, i)
            } else {
                (&data.test, real_perm[i])
            };
            o1_set.x.extend_from_slice(src.record(j));
            o1_set.y.push(src.y[j]);
        }
        Self {
            pairs: o1_pairs,
            coins: s_o1,
            set_n: o1_set.normalized(norm),
            d_f_n,
            test_n,
        }
    }
}
