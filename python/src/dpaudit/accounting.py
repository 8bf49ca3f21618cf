"""ε upper bounds of DP-SGD, noise calibration, and the shuffling lower bound.

The same Rust functions as ``dpaudit account`` and ``dpaudit calibrate``: the
dicts below equal their ``--json`` output to the last digit. DP-SGD is
``steps`` Poisson-subsampled Gaussian mechanisms with ``sample_rate`` (1 = no
subsampling) and ``noise_multiplier``, under add/remove adjacency.

Accountants: ``"pld"`` (privacy loss distribution; tight, with numerical
bounds ``epsilon_lower``/``epsilon_upper``; the default), ``"rdp"`` (Rényi DP),
``"gdp"`` (exact Gaussian DP; only without subsampling) and ``"gdp-clt"``
(central-limit approximation: **approximate, not a bound**, flagged
``approximate``). ``docs/accounting.md`` in the repository states the methods.
"""

from __future__ import annotations

from . import _dpaudit
from .audit import _count

__all__ = ["account", "epsilon", "delta", "calibrate", "shuffle_lower_bound"]


def account(
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    accountant: str = "pld",
    shuffle: bool = False,
) -> dict:
    """The dict of ``dpaudit account --json``: ε at ``delta`` with the
    accountant's details; with ``shuffle=True`` also the Chua et al. lower
    bound for shuffled batches (``1/sample_rate`` batches per epoch)."""
    return _dpaudit.account(sample_rate, noise_multiplier, _count("steps", steps), delta, accountant, shuffle)


def epsilon(sample_rate: float, noise_multiplier: float, steps: int, delta: float, accountant: str = "pld") -> float:
    """ε of DP-SGD at ``delta`` (the ``epsilon`` of :func:`account`)."""
    return account(sample_rate, noise_multiplier, steps, delta, accountant)["epsilon"]


def delta(sample_rate: float, noise_multiplier: float, steps: int, epsilon: float, accountant: str = "pld") -> dict:
    """δ of DP-SGD at ``epsilon``: ``delta`` (an upper bound) and, for PLD,
    ``delta_lower``."""
    return _dpaudit.delta_for_epsilon(sample_rate, noise_multiplier, _count("steps", steps), epsilon, accountant)


def calibrate(
    sample_rate: float,
    steps: int,
    delta: float,
    target_epsilon: float,
    accountant: str = "pld",
    tolerance: float = 1e-3,
) -> dict:
    """The dict of ``dpaudit calibrate --json``: the smallest noise multiplier
    (within ``tolerance``, relative) for which DP-SGD reaches
    (``target_epsilon``, ``delta``), with the bracket and the accountant's
    result there."""
    return _dpaudit.calibrate(sample_rate, _count("steps", steps), delta, target_epsilon, accountant, tolerance)


def shuffle_lower_bound(noise_multiplier: float, steps_per_epoch: int, epochs: int, delta: float) -> dict:
    """The Chua et al. 2024 lower bound on ε for DP-SGD with shuffled
    batches: what a shuffled run claimed as Poisson can leak at least."""
    return _dpaudit.shuffle_epsilon_lower_bound(
        noise_multiplier, _count("steps_per_epoch", steps_per_epoch), _count("epochs", epochs), delta
    )
