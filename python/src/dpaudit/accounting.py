"""ε upper bounds of DP-SGD, noise calibration, and the shuffling lower bound.

The same Rust functions as ``dpaudit account`` and ``dpaudit calibrate``:
``to_dict()`` of each result equals their ``--json`` output to the last
digit. DP-SGD is ``steps`` Poisson-subsampled Gaussian mechanisms with
``sample_rate`` (1 = no subsampling) and ``noise_multiplier``, under
add/remove adjacency. Every number is a keyword argument (four numbers in a
row are easy to swap).

:func:`epsilon` and :func:`delta` return plain floats, the accountant's
reported upper bound, as ``get_epsilon``/``get_delta`` of dp_accounting and
Opacus do; :func:`account` and :func:`account_delta` return the same number
with its details (:class:`Account`, :class:`DeltaUpperBound`).

Accountants: ``"pld"`` (privacy loss distribution; tight, with numerical
bounds ``epsilon_lower``/``epsilon_upper``; the default), ``"rdp"`` (Rényi DP),
``"gdp"`` (exact Gaussian DP; only without subsampling) and ``"gdp-clt"``
(central-limit approximation: **approximate, not a bound**, flagged
``approximate``). ``docs/accounting.md`` in the repository states the methods.
"""

from __future__ import annotations

from typing import Literal

from . import _args, _dpaudit
from ._results import Account, Calibration, DeltaUpperBound, EpsilonUpperBound, ShuffleLowerBound

__all__ = [
    "account",
    "account_delta",
    "epsilon",
    "delta",
    "calibrate",
    "shuffle_lower_bound",
    "Account",
    "EpsilonUpperBound",
    "DeltaUpperBound",
    "Calibration",
    "ShuffleLowerBound",
]

Accountant = Literal["pld", "rdp", "gdp", "gdp-clt"]


def _dpsgd(sample_rate: float, noise_multiplier: float, steps: int) -> tuple:
    return (
        _args.number("sample_rate", sample_rate),
        _args.number("noise_multiplier", noise_multiplier),
        _args.count("steps", steps),
    )


@_args.keyword_only()
def account(
    *,
    sample_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    accountant: Accountant = "pld",
    shuffle: bool = False,
) -> Account:
    """ε of DP-SGD at ``delta`` with the accountant's details (``dpaudit account --json``).

    Parameters
    ----------
    sample_rate : float
        Poisson sampling rate q in (0, 1] (1 = every record at every step).
    noise_multiplier : float
        σ, the noise standard deviation over the clipping norm.
    steps : int
        Steps T.
    delta : float
        The δ of the guarantee, in (0, 1).
    accountant : {"pld", "rdp", "gdp", "gdp-clt"}, default "pld"
    shuffle : bool, default False
        Also the Chua et al. 2024 lower bound for shuffled batches
        (``1/sample_rate`` batches per epoch; ``steps`` whole epochs).

    Returns
    -------
    Account
        ``epsilon`` (the upper bound to report) with the numerical bracket,
        the parameters, and ``shuffle_lower_bound`` (None without ``shuffle``).

    Raises
    ------
    ValueError
        A parameter out of range or an unknown accountant (the CLI's message).
    TypeError
        A number of the wrong kind, or numbers given by position.
    """
    q, sigma, t = _dpsgd(sample_rate, noise_multiplier, steps)
    d = _dpaudit.account(q, sigma, t, _args.number("delta", delta), accountant, bool(shuffle))
    return Account._from_json(d)


@_args.keyword_only()
def epsilon(
    *, sample_rate: float, noise_multiplier: float, steps: int, delta: float, accountant: Accountant = "pld"
) -> float:
    """ε of DP-SGD at ``delta``: ``account(...).epsilon``.

    Parameters
    ----------
    sample_rate, noise_multiplier, steps, delta, accountant
        As :func:`account`.

    Returns
    -------
    float
        The accountant's ε upper bound (for PLD the upper end of its bracket).

    Raises
    ------
    ValueError, TypeError
        As :func:`account`.
    """
    return account(
        sample_rate=sample_rate, noise_multiplier=noise_multiplier, steps=steps, delta=delta, accountant=accountant
    ).epsilon


@_args.keyword_only()
def account_delta(
    *, sample_rate: float, noise_multiplier: float, steps: int, epsilon: float, accountant: Accountant = "pld"
) -> DeltaUpperBound:
    """δ of DP-SGD at ``epsilon``, with the accountant's details.

    Parameters
    ----------
    sample_rate, noise_multiplier, steps, accountant
        As :func:`account`.
    epsilon : float
        The ε at which δ is wanted (≥ 0).

    Returns
    -------
    DeltaUpperBound
        ``delta`` (an upper bound) and, for PLD, ``delta_lower``.

    Raises
    ------
    ValueError, TypeError
        As :func:`account`.
    """
    q, sigma, t = _dpsgd(sample_rate, noise_multiplier, steps)
    d = _dpaudit.delta_for_epsilon(q, sigma, t, _args.number("epsilon", epsilon), accountant)
    return DeltaUpperBound._from_json(d)


@_args.keyword_only()
def delta(
    *, sample_rate: float, noise_multiplier: float, steps: int, epsilon: float, accountant: Accountant = "pld"
) -> float:
    """δ of DP-SGD at ``epsilon``: ``account_delta(...).delta``.

    Parameters
    ----------
    sample_rate, noise_multiplier, steps, epsilon, accountant
        As :func:`account_delta`.

    Returns
    -------
    float
        The accountant's δ upper bound.

    Raises
    ------
    ValueError, TypeError
        As :func:`account`.
    """
    return account_delta(
        sample_rate=sample_rate, noise_multiplier=noise_multiplier, steps=steps, epsilon=epsilon, accountant=accountant
    ).delta


@_args.keyword_only()
def calibrate(
    *,
    sample_rate: float,
    steps: int,
    delta: float,
    target_epsilon: float,
    accountant: Accountant = "pld",
    tolerance: float = 1e-3,
) -> Calibration:
    """The smallest noise multiplier for which DP-SGD reaches
    (``target_epsilon``, ``delta``) (``dpaudit calibrate --json``).

    Parameters
    ----------
    sample_rate, steps, delta, accountant
        As :func:`account`.
    target_epsilon : float
        The ε to reach (> 0).
    tolerance : float, default 1e-3
        Relative width of the final bracket.

    Returns
    -------
    Calibration
        ``noise_multiplier`` (it reaches the target; ``float(c)`` too), the
        bracket's lower end, and the accountant's result there.

    Raises
    ------
    ValueError, TypeError
        As :func:`account`.
    """
    d = _dpaudit.calibrate(
        _args.number("sample_rate", sample_rate),
        _args.count("steps", steps),
        _args.number("delta", delta),
        _args.number("target_epsilon", target_epsilon),
        accountant,
        _args.number("tolerance", tolerance),
    )
    return Calibration._from_json(d)


@_args.keyword_only()
def shuffle_lower_bound(
    *, noise_multiplier: float, steps_per_epoch: int, epochs: int, delta: float
) -> ShuffleLowerBound:
    """The Chua et al. 2024 lower bound on ε for DP-SGD with shuffled
    batches: what a shuffled run claimed as Poisson can leak at least.

    Parameters
    ----------
    noise_multiplier : float
        σ.
    steps_per_epoch : int
        Batches per epoch (the Poisson comparison's sample rate is its inverse).
    epochs : int
        Epochs.
    delta : float
        The δ of the bound.

    Returns
    -------
    ShuffleLowerBound

    Raises
    ------
    ValueError, TypeError
        As :func:`account`.
    """
    d = _dpaudit.shuffle_epsilon_lower_bound(
        _args.number("noise_multiplier", noise_multiplier),
        _args.count("steps_per_epoch", steps_per_epoch),
        _args.count("epochs", epochs),
        _args.number("delta", delta),
    )
    return ShuffleLowerBound._from_json(d)
