"""ε lower bounds from membership scores.

:func:`estimate` is the one entry: ``estimate(scores, members,
method="eps-delta", delta=1e-5)`` returns a :class:`Bound`; ``eps_delta``,
``gdp``, ``one_run``, ``one_run_fdp``, ``one_run_order`` and
``one_run_gaussian_scores`` are that call with ``method`` filled in.
:func:`panoramia` returns a :class:`Panoramia` measurement (not a bound),
:func:`metrics` a :class:`Metrics`, :func:`inclusion_check` an
:class:`InclusionCheck`. The numbers and ``to_dict()`` come from the same
Rust functions as ``dpaudit estimate --json``; ``docs/audit-statistics.md``
gives the arguments for every method and selection policy.

Two input forms:

- ``scores`` and ``members`` of the same length: one score per row, and a
  boolean (or 0/1) array, True when the target/canary was included. A higher
  score must mean "member" (pass ``-loss`` for loss-based attacks).
- ``in_scores`` and ``out_scores``: the scores of the runs with and without the
  target, as JAX-Privacy's ``CanaryScoreAuditor`` takes them (its names
  ``in_canary_scores`` and ``out_canary_scores`` are accepted too).

A contiguous float64 ``scores`` array is read in place, without a copy;
other dtypes and strided views are converted first. A boolean ``members``
array is read as bytes with NumPy's rule, any non-zero byte is a member.
Long computations release the GIL (do not write to the arrays from another
thread meanwhile) and stop on Ctrl-C with ``KeyboardInterrupt``; a
``multi-split`` of absurdly many ``splits`` is refused with an estimate of its
cost. Bad input raises ``ValueError`` (or ``TypeError`` for an argument of the
wrong kind, or numbers given by position) with the message the CLI prints.
Every result is frozen and picklable; equal results compare equal.

Selection policies (``selection=``): ``"auto"`` (the default: the best valid
policy for the method and the number of rows, chosen from them alone),
``"bonferroni"``, ``"split"`` (``seed``), ``"multi-split"`` (``seed``,
``splits``), ``"fixed"`` (one-run, with ``k_plus`` and ``k_minus`` fixed in
advance) and ``"same-data"`` (the papers' practice: flagged NOT valid at the
stated confidence in every output).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Literal, Optional, Tuple, TypeVar

from . import _args, _dpaudit
from ._dpaudit import Bound
from ._results import (
    EpsilonTilde, InclusionCheck, Interval, Metrics, Panoramia, PrecisionEvidence, Roc, TprAtFpr,
)

__all__ = [
    "Bound",
    "estimate",
    "METHODS",
    "LABELS",
    "eps_delta",
    "gdp",
    "one_run",
    "one_run_fdp",
    "one_run_gaussian_scores",
    "one_run_order",
    "panoramia",
    "metrics",
    "inclusion_check",
    "Metrics",
    "TprAtFpr",
    "Interval",
    "Roc",
    "Panoramia",
    "PrecisionEvidence",
    "EpsilonTilde",
    "InclusionCheck",
    "DESIGN_LEVEL",
]

#: Below this p-value of the inclusion test the one-run methods refuse.
DESIGN_LEVEL: float = _dpaudit.DESIGN_LEVEL

#: The methods :func:`estimate` takes (the keys of ``METHODS``).
Method = Literal["eps-delta", "gdp", "one-run", "one-run-fdp", "one-run-gaussian-scores", "one-run-order"]
#: The printed labels of bounds (the keys of ``LABELS``).
Label = Literal[
    "eps-delta", "gdp", "one-run", "one-run-fdp", "one-run-fdp-gaussian", "one-run-gaussian-scores",
    "one-run-order", "one-run-order-gaussian",
]
SelectionName = Literal["auto", "bonferroni", "split", "multi-split", "fixed", "same-data"]
Family = Literal["eps-delta", "gaussian"]
Guesses = Literal["symmetric", "with-one-sided", "all-counts"]
TieBreak = Literal["quantile", "seeded"]

#: The method table, read from the Rust core (``audit::method::Method``): each
#: method by its CLI name, with the options it takes beyond ``delta``,
#: ``confidence``, ``selection`` and ``seed``. A method of the core is
#: reachable through :func:`estimate` without a line here.
METHODS: Dict[str, Tuple[str, ...]] = {
    name: tuple(options) for name, listed, _, options, _ in _dpaudit.methods() if listed
}

#: The printed labels of ``audit.json`` and ``Bound.label``: the method and
#: the options a label fixes (``dpaudit.runs`` reproduces bounds through it).
#: A name that is a family of another method (``one-run-fdp-gaussian``) is
#: that method with ``family="gaussian"``; a method taking ``family`` is
#: labelled by its name with ``family="eps-delta"``.
LABELS: Dict[str, Tuple[str, Dict[str, str]]] = {
    name: (
        recorded,
        {"family": "gaussian"} if not listed
        else {"family": "eps-delta"} if "family" in options
        else {},
    )
    for name, listed, recorded, options, _ in _dpaudit.methods()
}

F = TypeVar("F", bound=Callable[..., Bound])

# The integer options and their largest values (the core's u64 and u32).
_COUNTS = {"splits": _args.U32_MAX, "k_plus": _args.U64_MAX, "k_minus": _args.U64_MAX}


@_args.keyword_only(positional=2)
def estimate(
    scores: Any = None,
    members: Any = None,
    *,
    method: Method,
    delta: float,
    confidence: float = 0.95,
    selection: SelectionName = "auto",
    seed: int = 0,
    splits: Optional[int] = None,
    family: Optional[Family] = None,
    k_plus: Optional[int] = None,
    k_minus: Optional[int] = None,
    guesses: Optional[Guesses] = None,
    tie_break: Optional[TieBreak] = None,
    in_scores: Any = None,
    out_scores: Any = None,
    in_canary_scores: Any = None,
    out_canary_scores: Any = None,
) -> Bound:
    """The ε lower bound of ``method`` on the scores, as ``dpaudit estimate
    --method METHOD --json``.

    Parameters
    ----------
    scores, members : array_like, optional
        One score per row (higher = member) and the membership flags
        (booleans, non-zero = member, or 0/1 numbers).
    method : {"eps-delta", "gdp", "one-run", "one-run-fdp", "one-run-gaussian-scores", "one-run-order"}
        The statistic (``METHODS`` lists each one's options; ``snake_case`` names work too).
    delta : float
        The δ of the guarantee being audited, in [0, 1) (> 0 for the Gaussian methods).
    confidence : float, default 0.95
        The confidence the bound holds at, in (0, 1).
    selection : {"auto", "bonferroni", "split", "multi-split", "fixed", "same-data"}, default "auto"
        How the threshold or guess count is chosen (see the module docs).
    seed : int, default 0
        Keys a ``split`` or ``multi-split`` and the seeded tie-break; in [0, 2⁶⁴ − 1].
    splits : int, optional
        The halvings of a ``multi-split`` (default ``DEFAULT_SPLITS``).
    family, k_plus, k_minus, guesses, tie_break : optional
        The one-run options (see :func:`one_run`, :func:`one_run_fdp`); None
        means the method's default. An option the method does not take is an error.
    in_scores, out_scores : array_like, optional
        The other input form: scores with and without the target.
    in_canary_scores, out_canary_scores : array_like, optional
        JAX-Privacy's names for ``in_scores`` and ``out_scores``.

    Returns
    -------
    Bound
        The lower bound with what produced it.

    Raises
    ------
    ValueError
        Bad data, a parameter out of range, an unknown name, an option the
        method does not take, or a one-run member count the design check refuses.
    TypeError
        An argument of the wrong kind, or numbers given by position.
    KeyboardInterrupt
        Ctrl-C during the computation.
    """
    name = method.replace("_", "-") if isinstance(method, str) else method
    if name not in METHODS:
        raise ValueError(f"method `{method}` is unknown; expected {', '.join(METHODS)}")
    # The core refuses an option the method does not take, naming it.
    options = {"splits": splits, "family": family, "k_plus": k_plus, "k_minus": k_minus,
               "guesses": guesses, "tie_break": tie_break}
    in_scores, out_scores = _args.scores_aliases(
        in_scores, out_scores, {"in_canary_scores": in_canary_scores, "out_canary_scores": out_canary_scores}
    )
    s, m = _args.rows(scores, members, in_scores, out_scores)
    given = {key: value for key, value in options.items() if value is not None}
    for key, most in _COUNTS.items():
        if key in given:
            given[key] = _args.count(key, given[key], maximum=most)
    return _dpaudit.bound(
        name, s, m, _args.check_delta(delta), confidence=_args.number("confidence", confidence),
        selection=selection, seed=_args.count("seed", seed), **given,
    )


def _common(local: Dict[str, Any]) -> Dict[str, Any]:
    """The arguments of a per-method function, passed on to :func:`estimate`."""
    return {k: v for k, v in local.items() if k not in ("scores", "members")}


# The sections every per-method function's docstring ends with.
_SHARED_SECTIONS = """
Returns
-------
Bound
    The lower bound with what produced it.

Raises
------
ValueError, TypeError, KeyboardInterrupt
    As :func:`estimate`."""


def _per_method(fn: F) -> F:
    """A per-method function, :func:`estimate` with ``method`` filled in: its
    numbers keyword-only, and its docstring completed with what they all
    share (a Parameters section naming the signature's arguments when the
    docstring has none, then Returns and Raises)."""
    doc = inspect.cleandoc(fn.__doc__ or "")
    if "\nParameters\n" not in doc:
        names = ", ".join(inspect.signature(fn).parameters)
        doc += f"\n\nParameters\n----------\n{names}\n    As :func:`estimate`."
    fn.__doc__ = doc + "\n" + _SHARED_SECTIONS
    return _args.keyword_only(positional=2)(fn)


@_per_method
def eps_delta(
    scores: Any = None, members: Any = None, *, delta: float, confidence: float = 0.95,
    selection: SelectionName = "auto", seed: int = 0, splits: Optional[int] = None,
    in_scores: Any = None, out_scores: Any = None, in_canary_scores: Any = None, out_canary_scores: Any = None,
) -> Bound:
    """The (ε, δ) region bound (Annamalai et al. 2024, Eq. (1)).

    Each candidate threshold is tested by the rank test: one exact test of
    both error counts against the (ε, δ) trade-off curve. Valid for any
    mechanism at ``confidence`` (unless ``selection="same-data"``).
    Requirements: one score per independent run; member scores i.i.d.,
    non-member scores i.i.d.
    """
    return estimate(scores, members, method="eps-delta", **_common(locals()))


@_per_method
def gdp(
    scores: Any = None, members: Any = None, *, delta: float, confidence: float = 0.95,
    selection: SelectionName = "auto", seed: int = 0, splits: Optional[int] = None,
    in_scores: Any = None, out_scores: Any = None, in_canary_scores: Any = None, out_canary_scores: Any = None,
) -> Bound:
    """The GDP audit (Cebere, Bellet & Papernot 2024, App. A).

    ``evidence["mu_lower"]`` bounds the μ of any μ-GDP claim; the ε at δ
    derived from it is a lower bound only if the mechanism's trade-off curve
    is Gaussian (Gaussian noise without subsampling or shuffling): the
    bound's ``assumes`` is ``"gaussian-tradeoff"``. ``delta`` must be > 0.
    """
    return estimate(scores, members, method="gdp", **_common(locals()))


@_per_method
def one_run(
    scores: Any = None, members: Any = None, *, delta: float, confidence: float = 0.95,
    selection: SelectionName = "auto", seed: int = 0, splits: Optional[int] = None,
    k_plus: Optional[int] = None, k_minus: Optional[int] = None, guesses: Guesses = "symmetric",
    tie_break: TieBreak = "seeded",
    in_scores: Any = None, out_scores: Any = None, in_canary_scores: Any = None, out_canary_scores: Any = None,
) -> Bound:
    """The one-run audit of Steinke, Nasr & Jagielski 2023 (Thm 3.1).

    The rows are the canaries of one training run, each included
    independently with probability ½ (``members``). A member count
    implausible under that design (exact binomial test, p < ``DESIGN_LEVEL``)
    is refused with ``ValueError``. A guess set that ends inside a run of
    tied scores takes the run's rows in a random order keyed by ``seed``
    (the default ``tie_break="seeded"``); under ``split`` and
    ``multi-split`` (the default from 5000 canaries) the random halving also
    assigns rows by position and ``seed``. Either way a bound may depend on
    the row order and the seed (valid for any order and seed fixed before
    the scores are seen); with ``tie_break="quantile"`` and ``bonferroni``,
    ``fixed`` or ``same-data`` it does not. ``Bound.assumptions`` says which
    holds.

    Parameters
    ----------
    k_plus, k_minus : int, optional
        The guess counts of ``selection="fixed"``, fixed in advance.
    guesses : {"symmetric", "with-one-sided", "all-counts"}, default "symmetric"
        ``"with-one-sided"`` adds one-sided guess counts (stronger for
        one-sided signals such as loss attacks; needs inclusion with
        probability exactly ½); ``"all-counts"`` tries every count, so it
        never saturates at a grid's largest count, at the cost of a
        Bonferroni level over about ``2.5 m`` candidates.
    tie_break : {"seeded", "quantile"}, default "seeded"
        ``"seeded"`` breaks ties by a random order keyed by ``seed`` and tests
        at the full level; with tied scores the bound depends on ``seed`` and
        the row order, and ``evidence["tie_break"]`` names the seed.
        ``"quantile"`` counts a cut run of ties as 95 % of its random orders
        would and tests at 95 % of the level: order-free, a little lower
        (much lower on heavily tied scores).
    Others : as :func:`estimate`.
    """
    return estimate(scores, members, method="one-run", **_common(locals()))


@_per_method
def one_run_fdp(
    scores: Any = None, members: Any = None, *, delta: float, confidence: float = 0.95,
    family: Family = "eps-delta", selection: SelectionName = "auto", seed: int = 0, splits: Optional[int] = None,
    k_plus: Optional[int] = None, k_minus: Optional[int] = None, guesses: Guesses = "symmetric",
    tie_break: TieBreak = "seeded",
    in_scores: Any = None, out_scores: Any = None, in_canary_scores: Any = None, out_canary_scores: Any = None,
) -> Bound:
    """The f-DP one-run audit of Mahloujifar, Melis & Chaudhuri 2024.

    Parameters
    ----------
    family : {"eps-delta", "gaussian"}, default "eps-delta"
        ``"eps-delta"`` bounds ε for any mechanism; ``"gaussian"`` bounds μ
        (``evidence["mu_lower"]``) and reports an ε that assumes a Gaussian
        trade-off curve (label ``one-run-fdp-gaussian``).
    Others : as :func:`one_run` (the design and ties are handled the same way).
    """
    return estimate(scores, members, method="one-run-fdp", **_common(locals()))


@_per_method
def one_run_gaussian_scores(
    scores: Any = None, members: Any = None, *, delta: float, confidence: float = 0.95,
    selection: Literal["auto", "bonferroni"] = "auto", seed: int = 0,
    in_scores: Any = None, out_scores: Any = None, in_canary_scores: Any = None, out_canary_scores: Any = None,
) -> Bound:
    """The continuous-score one-run audit after Agrawal et al. 2026 ("Let's
    Ask Gauss"). **Assumes Gaussian canary scores** (asymptotic, DP-SGD white
    box): member scores i.i.d. N(m1, s²), non-member scores i.i.d. N(m0, s²).

    ``evidence["mu_lower"]`` is a lower confidence limit on (m1 − m0)/s, from
    the class means and the pooled spread; the ε at δ is that of μ-GDP, which
    under the assumption bounds any mechanism (``assumes`` is
    ``"gaussian-scores"``). Not valid for arbitrary scores: on randomized
    response or Laplace scores the ε exceeds the truth (see
    ``docs/audit-statistics.md``). Never a default.

    Parameters
    ----------
    selection : {"auto", "bonferroni"}, default "auto"
        Nothing is chosen from the data, so nothing else is accepted.
    delta : float
        Must be > 0.
    seed : int, default 0
        Unused (nothing is split); accepted for the shared signature.
    Others : as :func:`estimate`.
    """
    return estimate(scores, members, method="one-run-gaussian-scores", **_common(locals()))


@_per_method
def one_run_order(
    scores: Any = None, members: Any = None, *, delta: float, confidence: float = 0.95,
    family: Family = "eps-delta", selection: SelectionName = "auto", seed: int = 0, splits: Optional[int] = None,
    k_plus: Optional[int] = None, k_minus: Optional[int] = None, guesses: Guesses = "symmetric",
    in_scores: Any = None, out_scores: Any = None, in_canary_scores: Any = None, out_canary_scores: Any = None,
) -> Bound:
    """The order-statistics one-run audit of Xiang, Wang, Xiao, Tian & Wang 2025.

    Parameters
    ----------
    family : {"eps-delta", "gaussian"}, default "eps-delta"
        ``"gaussian"`` bounds μ (``evidence["mu_lower"]``) from the exact law
        of the wrong guesses among the most confident ones, assuming canaries
        that do not interact (each its own channel); its ε also assumes a
        Gaussian trade-off curve (label ``one-run-order-gaussian``).
        ``"eps-delta"`` is valid for any mechanism and is Steinke et al.'s test.
    Others : as :func:`one_run` (no ``tie_break``).
    """
    return estimate(scores, members, method="one-run-order", **_common(locals()))


@_args.keyword_only(positional=4)
def panoramia(
    baseline_scores: Any,
    baseline_members: Any,
    scores: Any,
    members: Any,
    *,
    confidence: float = 0.95,
    selection: Literal["auto", "bonferroni", "split", "same-data"] = "auto",
    seed: int = 0,
) -> Panoramia:
    """PANORAMIA's ε̃ (Kazmi et al. 2024): a measurement relative to a
    baseline classifier, **not** a lower bound on ε.

    Parameters
    ----------
    baseline_scores, baseline_members : array_like
        The baseline classifier's scores on the audit set (member = a real
        training record, not a generated one).
    scores, members : array_like
        The MIA's.
    confidence : float, default 0.95
        Of the two bounds jointly.
    selection : {"auto", "bonferroni", "split", "same-data"}, default "auto"
    seed : int, default 0
        Keys a ``split``.

    Returns
    -------
    Panoramia
        ``to_dict()`` is ``dpaudit estimate --method panoramia --json``.

    Raises
    ------
    ValueError, TypeError
        Bad data or parameters.
    """
    d = _dpaudit.panoramia(
        _args.as_array("baseline_scores", baseline_scores),
        _args.as_array("baseline_members", baseline_members),
        _args.as_array("scores", scores),
        _args.as_array("members", members),
        _args.number("confidence", confidence),
        selection,
        _args.count("seed", seed),
    )
    return Panoramia._from_json(d)


@_args.keyword_only(positional=2)
def metrics(
    scores: Any = None, members: Any = None, *, confidence: float = 0.95,
    in_scores: Any = None, out_scores: Any = None, in_canary_scores: Any = None, out_canary_scores: Any = None,
) -> Metrics:
    """AUC (ties count ½) and TPR at FPR = 10⁻³ and 10⁻² with two-sided
    Clopper–Pearson intervals at ``confidence`` (Carlini et al. 2022);
    ``Metrics.tpr_at_fpr(x)`` and ``Metrics.roc()`` give any FPR and the
    whole curve. Same-data empirical rates: descriptive, not bounds.

    Parameters
    ----------
    scores, members, in_scores, out_scores, in_canary_scores, out_canary_scores
        As :func:`estimate`.
    confidence : float, default 0.95
        Of the intervals.

    Returns
    -------
    Metrics
        ``to_dict()`` is the ``metrics`` object of ``dpaudit estimate --json``.

    Raises
    ------
    ValueError, TypeError
        Bad data or parameters.
    """
    in_scores, out_scores = _args.scores_aliases(
        in_scores, out_scores, {"in_canary_scores": in_canary_scores, "out_canary_scores": out_canary_scores}
    )
    s, m = _args.rows(scores, members, in_scores, out_scores)
    level = _args.number("confidence", confidence)
    return Metrics._from_json(_dpaudit.metrics(s, m, level), scores=s, member_flags=m)


@_args.keyword_only()
def inclusion_check(*, canaries: int, included: int) -> InclusionCheck:
    """The one-run methods' design check: the exact two-sided binomial test
    of ``included`` of ``canaries`` against inclusion with probability ½.

    Parameters
    ----------
    canaries : int
        The number of canaries (m).
    included : int
        How many were included (members), at most ``canaries``.

    Returns
    -------
    InclusionCheck
        ``plausible`` is False below ``DESIGN_LEVEL`` (the one-run methods refuse).

    Raises
    ------
    ValueError
        ``included`` > ``canaries``, or a negative count.
    TypeError
        A count that is not an integer, or counts given by position.
    """
    return InclusionCheck._from_json(
        _dpaudit.inclusion_check(_args.count("canaries", canaries), _args.count("included", included))
    )
