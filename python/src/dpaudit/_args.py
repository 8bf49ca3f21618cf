"""Argument checks shared by :mod:`dpaudit.audit` and :mod:`dpaudit.accounting`
(private): every error names the parameter and what was expected."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, TypeVar

import numpy as np

#: The largest value of each integer parameter the Rust core takes
#: (``u64`` counts and seeds, ``u32`` split counts).
U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1


def as_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a NumPy array, without a copy when it is one."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        return np.asarray(value)
    # pandas Series and other array-likes
    if hasattr(value, "__array__"):
        return np.asarray(value)
    raise TypeError(f"`{name}` must be a NumPy array (or a list or array-like), got {type(value).__name__}")


def count(name: str, value: Any, optional: bool = False, maximum: int = U64_MAX) -> Optional[int]:
    """A non-negative integer argument of at most ``maximum`` (NumPy integers accepted)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < 0 or value > maximum:
        raise ValueError(f"{name} = {value} is invalid; expected an integer in [0, {maximum}]")
    return int(value)


def number(name: str, value: Any) -> float:
    """A real-number argument (Python or NumPy ints and floats)."""
    if value is None:
        raise ValueError(f"{name} is required")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} = {value} is too large for a float64") from None


def check_delta(delta: Any) -> float:
    if delta is None:
        raise ValueError("delta is required: the δ of the guarantee being audited, e.g. 1e-5")
    return number("delta", delta)


def scores_aliases(in_scores: Any, out_scores: Any, aliases: dict) -> tuple:
    """``in_scores``/``out_scores`` or JAX-Privacy's names for them
    (``in_canary_scores``/``out_canary_scores``), never both spellings."""
    for ours, theirs, value in (
        ("in_scores", "in_canary_scores", in_scores),
        ("out_scores", "out_canary_scores", out_scores),
    ):
        alias = aliases.get(theirs)
        if alias is not None:
            if value is not None:
                raise ValueError(f"give {ours} or {theirs} (JAX-Privacy's name for it), not both")
            if ours == "in_scores":
                in_scores = alias
            else:
                out_scores = alias
    return in_scores, out_scores


def rows(scores: Any, members: Any, in_scores: Any, out_scores: Any) -> tuple:
    """(scores, members) from either input form."""
    if in_scores is not None or out_scores is not None:
        if scores is not None or members is not None:
            raise ValueError("give either scores and members, or in_scores and out_scores, not both")
        if in_scores is None or out_scores is None:
            raise ValueError("in_scores and out_scores must be given together")
        a = as_array("in_scores", in_scores)
        b = as_array("out_scores", out_scores)
        if a.ndim != 1 or b.ndim != 1:
            raise ValueError(f"in_scores and out_scores must be one-dimensional, got shapes {a.shape} and {b.shape}")
        joined = np.concatenate([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
        flags = np.concatenate([np.ones(a.shape[0], dtype=bool), np.zeros(b.shape[0], dtype=bool)])
        return joined, flags
    if scores is None or members is None:
        raise ValueError("scores and members are required (or in_scores and out_scores)")
    s = as_array("scores", scores)
    m = as_array("members", members)
    if s.shape != m.shape:
        raise ValueError(f"scores and members must have the same shape, got {s.shape} and {m.shape}")
    return s, m


F = TypeVar("F", bound=Callable[..., Any])


def keyword_only(positional: int = 0) -> Callable[[F], F]:
    """Refuses more than ``positional`` positional arguments with a
    ``TypeError`` that names the keywords (numbers are easy to swap)."""

    def wrap(fn: F) -> F:
        params = inspect.signature(fn).parameters.values()
        keywords = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        required = [
            p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
        ]
        arrays = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        example = ", ".join(arrays[:positional] + [f"{n}=…" for n in required])
        allowed = f"at most {positional} positional arguments ({', '.join(arrays[:positional])})" if positional else (
            "no positional arguments"
        )

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if len(args) > positional:
                raise TypeError(
                    f"{fn.__name__}() takes {allowed}, got {len(args)}: its numbers are keyword-only, "
                    f"e.g. {fn.__name__}({example}); keywords: {', '.join(keywords)}"
                )
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap
