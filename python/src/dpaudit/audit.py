"""ε lower bounds from membership scores.

Every function takes NumPy arrays and returns a :class:`Bound` (PANORAMIA: a
dict, since its ε̃ is a measurement, not a bound). The numbers and the JSON of
``Bound.to_dict()`` come from the same Rust functions as ``dpaudit estimate
--json``; ``docs/audit-statistics.md`` gives the arguments for every method
and selection policy.

Two input forms:

- ``scores`` and ``members`` of the same length: one score per row, and a
  boolean (or 0/1) array, True when the target/canary was included. A higher
  score must mean "member" (pass ``-loss`` for loss-based attacks).
- ``in_scores`` and ``out_scores``: the scores of the runs with and without the
  target, as JAX-Privacy's ``CanaryScoreAuditor`` takes them.

A contiguous float64 ``scores`` array is read in place, without a copy;
other dtypes and strided views are converted first. A boolean ``members``
array is read as bytes with NumPy's rule, any non-zero byte is a member
(``u8.view(bool)`` and ``np.fromfile(..., dtype=bool)`` masks count as
``np.count_nonzero`` counts them). Long computations release the GIL (do not
write to the arrays from another thread meanwhile) and stop on Ctrl-C with
``KeyboardInterrupt``; a ``multi-split`` of absurdly many ``splits`` is
refused with an estimate of its cost. Bad input raises ``ValueError`` (or
``TypeError`` for an argument of the wrong kind) with the message the CLI
prints. A :class:`Bound` is picklable and copyable, and equal bounds compare
equal.

Selection policies (``selection=``): ``"auto"`` (the default: the best valid
policy for the method and the number of rows, chosen from them alone),
``"bonferroni"``, ``"split"`` (``seed``), ``"multi-split"`` (``seed``,
``splits``), ``"fixed"`` (one-run, with ``k_plus`` and ``k_minus`` fixed in
advance) and ``"same-data"`` (the papers' practice: flagged NOT valid at the
stated confidence in every output).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _dpaudit
from ._dpaudit import Bound

__all__ = [
    "Bound",
    "eps_delta",
    "gdp",
    "one_run",
    "one_run_fdp",
    "one_run_gaussian_scores",
    "one_run_order",
    "panoramia",
    "metrics",
    "inclusion_check",
    "DESIGN_LEVEL",
]

#: Below this p-value of the inclusion test the one-run methods refuse.
DESIGN_LEVEL: float = _dpaudit.DESIGN_LEVEL


def _as_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    # pandas Series and other array-likes
    if hasattr(value, "__array__"):
        return np.asarray(value)
    raise TypeError(f"`{name}` must be a NumPy array (or a list or array-like), got {type(value).__name__}")


def _rows(scores, members, in_scores, out_scores):
    """(scores, members) from either input form."""
    if in_scores is not None or out_scores is not None:
        if scores is not None or members is not None:
            raise ValueError("give either scores and members, or in_scores and out_scores, not both")
        if in_scores is None or out_scores is None:
            raise ValueError("in_scores and out_scores must be given together")
        a = _as_array("in_scores", in_scores)
        b = _as_array("out_scores", out_scores)
        if a.ndim != 1 or b.ndim != 1:
            raise ValueError(
                f"in_scores and out_scores must be one-dimensional, got shapes {a.shape} and {b.shape}"
            )
        rows = np.concatenate([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
        flags = np.concatenate([np.ones(a.shape[0], dtype=bool), np.zeros(b.shape[0], dtype=bool)])
        return rows, flags
    if scores is None or members is None:
        raise ValueError("scores and members are required (or in_scores and out_scores)")
    s = _as_array("scores", scores)
    m = _as_array("members", members)
    if s.shape != m.shape:
        raise ValueError(f"scores and members must have the same shape, got {s.shape} and {m.shape}")
    return s, m


def _count(name: str, value, optional: bool = False):
    """A non-negative integer argument (NumPy integers accepted)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} = {value} is invalid; expected an integer ≥ 0")
    return int(value)


def _check_delta(delta) -> float:
    if delta is None:
        raise ValueError("delta is required: the δ of the guarantee being audited, e.g. 1e-5")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating, np.integer)):
        raise TypeError(f"delta must be a number, got {type(delta).__name__}")
    return float(delta)


def _bound(method, scores, members, in_scores, out_scores, delta, confidence, selection, seed, splits, **one_run):
    """The one call behind every bound function: ``method`` by its CLI name,
    the arguments checked in the order of the signatures."""
    s, m = _rows(scores, members, in_scores, out_scores)
    args = (method, s, m, _check_delta(delta), confidence, selection, _count("seed", seed), _count("splits", splits, True))
    for k in ("k_plus", "k_minus"):
        if k in one_run:
            one_run[k] = _count(k, one_run[k], True)
    return _dpaudit.bound(*args, **one_run)


def eps_delta(
    scores=None,
    members=None,
    *,
    delta: float,
    confidence: float = 0.95,
    selection: str = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    in_scores=None,
    out_scores=None,
) -> Bound:
    """The (ε, δ) region bound (Annamalai et al. 2024, Eq. (1)).

    Each candidate threshold is tested by the rank test: one exact test of
    both error counts against the (ε, δ) trade-off curve. Valid for any
    mechanism at ``confidence`` (unless ``selection="same-data"``).
    Requirements: one score per independent run; member scores i.i.d.,
    non-member scores i.i.d.
    """
    return _bound("eps-delta", scores, members, in_scores, out_scores, delta, confidence, selection, seed, splits)


def gdp(
    scores=None,
    members=None,
    *,
    delta: float,
    confidence: float = 0.95,
    selection: str = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    in_scores=None,
    out_scores=None,
) -> Bound:
    """The GDP audit (Cebere, Bellet & Papernot 2024, App. A).

    ``evidence["mu_lower"]`` bounds the μ of any μ-GDP claim; the ε at δ
    derived from it is a lower bound only if the mechanism's trade-off curve
    is Gaussian (Gaussian noise without subsampling or shuffling): the
    bound's ``assumes`` is ``"gaussian-tradeoff"``. ``delta`` must be > 0.
    """
    return _bound("gdp", scores, members, in_scores, out_scores, delta, confidence, selection, seed, splits)


def one_run(
    scores=None,
    members=None,
    *,
    delta: float,
    confidence: float = 0.95,
    selection: str = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    k_plus: Optional[int] = None,
    k_minus: Optional[int] = None,
    guesses: str = "symmetric",
    tie_break: str = "quantile",
    in_scores=None,
    out_scores=None,
) -> Bound:
    """The one-run audit of Steinke, Nasr & Jagielski 2023 (Thm 3.1).

    The rows are the canaries of one training run, each included
    independently with probability ½ (``members``). A member count
    implausible under that design (exact binomial test, p < ``DESIGN_LEVEL``)
    is refused with ``ValueError``. Under ``bonferroni``, ``fixed`` and
    ``same-data`` the row order does not matter (a guess set that cuts tied
    scores counts them as 95 % of random tie-breaks would, at 95 % of the
    level); under ``split`` and ``multi-split`` (the default
    from 5000 canaries) the random halving assigns rows by position and
    ``seed``, so the bound depends on the row order and the seed (valid for
    any order and seed fixed before the scores are seen). ``Bound.assumptions()``
    says which holds. ``guesses="with-one-sided"`` adds
    one-sided guess counts (stronger for one-sided signals such as loss
    attacks; needs inclusion with probability exactly ½).
    ``tie_break="seeded"`` breaks ties among the scores by a random order
    keyed by ``seed`` and tests at the full level (stronger on heavily tied
    scores, e.g. integer-rounded ones); with ties the bound then depends on
    ``seed`` and the row order (valid for any seed fixed before the scores
    are seen; ``evidence["tie_break"]`` names the seed, and
    ``evidence["tied_scores"]`` says whether there were ties).
    """
    return _bound(
        "one-run", scores, members, in_scores, out_scores, delta, confidence, selection, seed, splits,
        k_plus=k_plus, k_minus=k_minus, guesses=guesses, tie_break=tie_break,
    )


def one_run_fdp(
    scores=None,
    members=None,
    *,
    delta: float,
    confidence: float = 0.95,
    family: str = "eps-delta",
    selection: str = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    k_plus: Optional[int] = None,
    k_minus: Optional[int] = None,
    guesses: str = "symmetric",
    tie_break: str = "quantile",
    in_scores=None,
    out_scores=None,
) -> Bound:
    """The f-DP one-run audit of Mahloujifar, Melis & Chaudhuri 2024.

    ``family="eps-delta"`` (the default) bounds ε for any mechanism;
    ``family="gaussian"`` bounds μ (``evidence["mu_lower"]``) and reports an ε
    that assumes a Gaussian trade-off curve (label ``one-run-fdp-gaussian``).
    The design and ties (and ``tie_break``) are handled as in :func:`one_run`.
    """
    return _bound(
        "one-run-fdp", scores, members, in_scores, out_scores, delta, confidence, selection, seed, splits,
        family=family, k_plus=k_plus, k_minus=k_minus, guesses=guesses, tie_break=tie_break,
    )


def one_run_gaussian_scores(
    scores=None,
    members=None,
    *,
    delta: float,
    confidence: float = 0.95,
    selection: str = "auto",
    seed: int = 0,
    in_scores=None,
    out_scores=None,
) -> Bound:
    """The continuous-score one-run audit after Agrawal et al. 2026 ("Let's
    Ask Gauss"). **Assumes Gaussian canary scores** (asymptotic, DP-SGD white
    box): member scores i.i.d. N(m1, s²), non-member scores i.i.d. N(m0, s²).

    ``evidence["mu_lower"]`` is a lower confidence limit on (m1 − m0)/s, from
    the class means and the pooled spread; the ε at δ is that of μ-GDP, which
    under the assumption bounds any mechanism (``assumes`` is
    ``"gaussian-scores"``). Not valid for arbitrary scores: on randomized
    response or Laplace scores the ε exceeds the truth (see
    ``docs/audit-statistics.md``). Never a default. ``selection`` must be
    ``"auto"`` or ``"bonferroni"`` (nothing is chosen from the data);
    ``delta`` must be > 0; ``seed`` is unused (nothing is split) and accepted
    for the signature the other methods share.
    """
    return _bound(
        "one-run-gaussian-scores", scores, members, in_scores, out_scores, delta, confidence, selection, seed, None,
    )


def one_run_order(
    scores=None,
    members=None,
    *,
    delta: float,
    confidence: float = 0.95,
    family: str = "eps-delta",
    selection: str = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    k_plus: Optional[int] = None,
    k_minus: Optional[int] = None,
    guesses: str = "symmetric",
    in_scores=None,
    out_scores=None,
) -> Bound:
    """The order-statistics one-run audit of Xiang, Wang, Xiao, Tian & Wang 2025.

    ``family="gaussian"`` bounds μ (``evidence["mu_lower"]``) from the exact
    law of the wrong guesses among the most confident ones (every rank, any
    number of canaries), assuming canaries that do not interact (each its own
    channel, e.g. white-box canaries on separate coordinates); its ε also
    assumes a Gaussian trade-off curve (label ``one-run-order-gaussian``).
    ``family="eps-delta"`` (the default) is valid for any mechanism and is
    Steinke et al.'s test. The design and ties are handled as in
    :func:`one_run`.
    """
    return _bound(
        "one-run-order", scores, members, in_scores, out_scores, delta, confidence, selection, seed, splits,
        family=family, k_plus=k_plus, k_minus=k_minus, guesses=guesses,
    )


def panoramia(
    baseline_scores,
    baseline_members,
    scores,
    members,
    *,
    confidence: float = 0.95,
    selection: str = "auto",
    seed: int = 0,
) -> dict:
    """PANORAMIA's ε̃ (Kazmi et al. 2024): a measurement relative to a
    baseline classifier, **not** a lower bound on ε.

    ``baseline_*``: the baseline classifier's scores on the audit set
    (member = a real training record, not a generated one); ``scores``,
    ``members``: the MIA's. Returns the dict of ``dpaudit estimate --method
    panoramia --json``.
    """
    return _dpaudit.panoramia(
        _as_array("baseline_scores", baseline_scores),
        _as_array("baseline_members", baseline_members),
        _as_array("scores", scores),
        _as_array("members", members),
        confidence,
        selection,
        _count("seed", seed),
    )


def metrics(scores=None, members=None, *, confidence: float = 0.95, in_scores=None, out_scores=None) -> dict:
    """AUC (ties count ½) and TPR at FPR = 1e-3 and 1e-2 with two-sided
    Clopper–Pearson intervals at ``confidence`` (Carlini et al. 2022)."""
    s, m = _rows(scores, members, in_scores, out_scores)
    return _dpaudit.metrics(s, m, confidence)


def inclusion_check(canaries: int, included: int) -> dict:
    """The one-run methods' design check: the exact two-sided binomial test
    of ``included`` of ``canaries`` against inclusion with probability ½;
    ``plausible`` is False below ``DESIGN_LEVEL``."""
    return _dpaudit.inclusion_check(_count("canaries", canaries), _count("included", included))
