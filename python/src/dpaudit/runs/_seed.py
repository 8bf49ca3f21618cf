"""The values dpaudit derives from a run's seed and does not write
(inclusion bits, selection seeds, PANORAMIA's coins), drawn by dpaudit's own
seed key tree (``crates/data/src/seed.rs``) through the binding: which
stream and path each value comes from is stated here, next to the Rust code
that uses it.
"""

from __future__ import annotations

import numpy as np

from .. import _dpaudit


def selection_seed(train_seed: int) -> int:
    """The seed of the ``split``/``multi-split`` selection policies of a
    ``dpaudit run`` audit: ``RunSeed(train.seed).stream(Split).child(0xA0D1)
    .to_u64()`` (``crates/plan/src/canary/audit_report.rs``, ``selection_for``).
    ``auto`` passes it on too, but the default policies of the threshold
    methods (``bonferroni``) do not use it."""
    return int(_dpaudit.seed_u64(int(train_seed), "split", [0xA0D1]))


def inclusion_bits(train_seed: int, runs: int, count: int) -> np.ndarray:
    """The inclusion bits of a canary experiment, ``(runs, count)`` bool
    (True = the canary was included): ``count`` fair coins per run from the
    ``membership`` stream's child ``run`` (``crates/plan/src/canary/canaries.rs``,
    ``inclusion_bits``). ``inclusion.csv`` must hold exactly these."""
    return _dpaudit.seed_coins(int(train_seed), "membership", [], int(count), int(runs))


def panoramia_coins(seed: int, m: int) -> np.ndarray:
    """The fair coins of PANORAMIA's audit game (True = the audit record is
    a real member, False = a generated non-member): ``coins(m,
    membership.child(0))`` of the pipeline's seed
    (``crates/panoramia/src/pipeline/game.rs``). The out-dir does not store them."""
    return _dpaudit.seed_coins(int(seed), "membership", [0], int(m))
