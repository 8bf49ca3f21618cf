"""The Python API's shape (issue 41): typed results, the one `estimate` entry,
notebook habits (JAX-Privacy's keywords, float(), _repr_svg_, TPR at any FPR
and the ROC), star import without torch, and the deprecated mapping access."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dpaudit
from conftest import canary_rows, gaussian_rows

DELTA = 1e-5


@pytest.fixture(scope="module")
def rows():
    return gaussian_rows(1000, 1.0, seed=21)


@pytest.fixture(scope="module")
def canaries():
    return canary_rows(2000, 1.5, seed=22)


# ---- estimate(method=...) is every per-method function -------------------------------


@pytest.mark.parametrize("method,kw", [
    ("eps-delta", {}),
    ("gdp", {"selection": "split", "seed": 4}),
    ("one-run", {"guesses": "with-one-sided"}),
    ("one-run-fdp", {"family": "gaussian"}),
    ("one-run-order", {"selection": "fixed", "k_plus": 40, "k_minus": 40}),
    ("one-run-gaussian-scores", {}),
])
def test_estimate_is_the_per_method_function(canaries, method, kw):
    s, m = canaries
    fn = getattr(dpaudit.audit, method.replace("-", "_"))
    direct = fn(s, m, delta=DELTA, **kw)
    assert dpaudit.audit.estimate(s, m, method=method, delta=DELTA, **kw) == direct
    assert dpaudit.audit.estimate(s, m, method=method.replace("-", "_"), delta=DELTA, **kw) == direct
    assert method in dpaudit.audit.METHODS


def test_estimate_refuses_options_the_method_does_not_take(canaries):
    s, m = canaries
    with pytest.raises(ValueError, match=r"splits is not an option of method one-run-gaussian-scores \(its options: none\)"):
        dpaudit.audit.estimate(s, m, method="one-run-gaussian-scores", delta=DELTA, splits=3)
    with pytest.raises(ValueError, match="tie_break is not an option of method one-run-order"):
        dpaudit.audit.estimate(s, m, method="one-run-order", delta=DELTA, tie_break="seeded")


def test_the_method_table_and_its_literals_are_the_cores_list():
    # METHODS and LABELS are read from the core (audit::method::Method); the
    # Literal stubs are written out for type checkers and must equal them.
    from typing import get_args

    core = dpaudit._dpaudit.methods()
    listed = tuple(name for name, is_listed, *_ in core if is_listed)
    assert get_args(dpaudit.audit.Method) == listed == tuple(dpaudit.audit.METHODS)
    assert get_args(dpaudit.audit.Label) == tuple(name for name, *_ in core) == tuple(dpaudit.audit.LABELS)
    # The docstring's list of methods is the same list.
    doc = dpaudit.audit.estimate.__doc__
    assert "method : {" + ", ".join(f'"{name}"' for name in listed) + "}" in doc
    # The options each method takes (the table the Python layer had by hand;
    # a method added since keeps these rows).
    methods = {
        "eps-delta": ("splits",),
        "gdp": ("splits",),
        "one-run": ("splits", "k_plus", "k_minus", "guesses", "tie_break"),
        "one-run-fdp": ("splits", "family", "k_plus", "k_minus", "guesses", "tie_break"),
        "one-run-gaussian-scores": (),
        "one-run-order": ("splits", "family", "k_plus", "k_minus", "guesses"),
    }
    assert {name: dpaudit.audit.METHODS[name] for name in methods} == methods
    labels = {
        "eps-delta": ("eps-delta", {}),
        "gdp": ("gdp", {}),
        "one-run": ("one-run", {}),
        "one-run-fdp": ("one-run-fdp", {"family": "eps-delta"}),
        "one-run-fdp-gaussian": ("one-run-fdp", {"family": "gaussian"}),
        "one-run-gaussian-scores": ("one-run-gaussian-scores", {}),
        "one-run-order": ("one-run-order", {"family": "eps-delta"}),
        "one-run-order-gaussian": ("one-run-order", {"family": "gaussian"}),
    }
    assert {name: dpaudit.audit.LABELS[name] for name in labels} == labels


# ---- JAX-Privacy's keywords -----------------------------------------------------------


def test_jax_privacy_keywords_are_aliases(rows):
    s, m = rows
    ours = dpaudit.audit.eps_delta(in_scores=s[m], out_scores=s[~m], delta=DELTA)
    theirs = dpaudit.audit.eps_delta(in_canary_scores=s[m], out_canary_scores=s[~m], delta=DELTA)
    assert theirs == ours and theirs.epsilon == dpaudit.audit.eps_delta(s, m, delta=DELTA).epsilon
    mixed = dpaudit.audit.gdp(in_scores=s[m], out_canary_scores=s[~m], delta=DELTA)
    assert mixed == dpaudit.audit.gdp(in_scores=s[m], out_scores=s[~m], delta=DELTA)
    assert dpaudit.audit.metrics(in_canary_scores=s[m], out_canary_scores=s[~m]) == dpaudit.audit.metrics(s, m)
    with pytest.raises(ValueError, match="give in_scores or in_canary_scores .*not both"):
        dpaudit.audit.eps_delta(in_scores=s[m], in_canary_scores=s[m], out_scores=s[~m], delta=DELTA)
    with pytest.raises(ValueError, match="give out_scores or out_canary_scores"):
        dpaudit.audit.one_run(in_scores=s[m], out_scores=s[~m], out_canary_scores=s[~m], delta=DELTA)


# ---- Bound: float() and the notebook's SVG ----------------------------------------------


def test_bound_is_a_float_and_shows_its_plot(rows, canaries):
    s, m = rows
    b = dpaudit.audit.eps_delta(s, m, delta=DELTA)
    assert float(b) == b.epsilon and f"{float(b):.3f}" == f"{b.epsilon:.3f}"
    assert b._repr_svg_() == b.plot() and b._repr_svg_().startswith("<svg")
    r = dpaudit.audit.one_run(*canaries, delta=DELTA)
    assert r._repr_svg_() == r.plot()
    g = dpaudit.audit.one_run_gaussian_scores(*canaries, delta=DELTA)
    assert g._repr_svg_() == g.histogram()


# ---- Metrics: TPR at any FPR, the ROC ------------------------------------------------------


def test_tpr_at_any_fpr_and_the_roc_hand_computed():
    # Members {3, 1, 2}, non-members {2, 0} (the audit crate's own AUC example: 0.75).
    m = dpaudit.audit.metrics(in_scores=[3.0, 1.0, 2.0], out_scores=[2.0, 0.0])
    assert m.auc == 0.75
    fpr, tpr, thresholds = m.roc()
    assert thresholds.tolist() == [3.0, 2.0, 1.0, 0.0, -np.inf]
    assert tpr.tolist() == [0.0, 1 / 3, 2 / 3, 1.0, 1.0]
    assert fpr.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]
    assert float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2)) == pytest.approx(0.75, abs=1e-15)
    # FPR 0.5: k = 1, the threshold is the smaller non-member (0): 1 false
    # positive, all 3 members above it.
    half = m.tpr_at_fpr(0.5)
    assert (half.threshold, half.false_positives, half.true_positives, half.tpr) == (0.0, 1, 3, 1.0)
    assert half.resolvable and float(half) == 1.0
    # FPR 0: no false positive allowed, the threshold is the largest non-member (2).
    zero = m.tpr_at_fpr(0.0)
    assert (zero.threshold, zero.false_positives, zero.true_positives) == (2.0, 0, 1)
    assert not zero.resolvable
    assert m.tpr_at_fpr([0.0, 0.5]) == (zero, half)
    with pytest.raises(ValueError, match="fpr"):
        m.tpr_at_fpr(1.5)


def test_tpr_at_fpr_is_the_metrics_rule(rows):
    s, mem = rows
    m = dpaudit.audit.metrics(s, mem)
    assert m.tpr_at_fpr([1e-3, 1e-2]) == m.at_low_fpr
    at = m.tpr_at_fpr(0.1, confidence=0.9)
    assert at.tpr_interval.lower < at.tpr < at.tpr_interval.upper and at.target_fpr == 0.1
    fpr, tpr, _ = m.roc()
    assert fpr.dtype == np.float64 and fpr[0] == 0.0 and tpr[-1] == 1.0
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    assert area == pytest.approx(m.auc, abs=1e-12)
    assert "same-data empirical rates, not bounds" in repr(m)


# ---- typed results: attributes, repr, the deprecated mapping access ------------------------


def test_results_are_typed_with_readable_reprs():
    acc = dpaudit.accounting.account(sample_rate=0.01, noise_multiplier=1.0, steps=1000, delta=DELTA)
    assert isinstance(acc, dpaudit.accounting.EpsilonUpperBound)
    assert acc.epsilon_lower <= acc.epsilon_estimate <= acc.epsilon_upper == acc.epsilon
    assert acc.shuffle_lower_bound is None and "shuffle_lower_bound" not in acc.to_dict()
    assert repr(acc).startswith(f"<dpaudit Account pld: ε ≤ {acc.epsilon:.4f} at δ = 1e-5 (q = 0.01, σ = 1, 1000 steps)")
    check = dpaudit.audit.inclusion_check(canaries=1000, included=400)
    assert not check.plausible and check.p_value < dpaudit.audit.DESIGN_LEVEL
    assert "IMPLAUSIBLE" in repr(check)
    assert dpaudit.audit.inclusion_check(canaries=1000, included=500).p_value == 1.0
    s, m = gaussian_rows(300, 1.0, seed=23)
    p = dpaudit.audit.panoramia(s, m, s + m, m)
    assert "NOT a lower bound" in repr(p) and p.bound.startswith("none")
    assert p.epsilon == max(0.0, p.c_plus_epsilon_lb - p.c_lb)
    assert (p.selection, p.seed) == ("split", 0)  # `auto` at 600 rows; the seed keys the split
    b = dpaudit.audit.panoramia(s, m, s + m, m, selection="bonferroni")
    assert b.seed is None and "seed" not in b.to_dict()


def test_mapping_access_is_kept_for_one_release_and_warns():
    acc = dpaudit.accounting.account(sample_rate=0.01, noise_multiplier=1.0, steps=100, delta=DELTA)
    with pytest.warns(DeprecationWarning, match="read its attributes"):
        assert acc["epsilon"] == acc.epsilon
    with pytest.warns(DeprecationWarning):
        assert set(acc) == set(acc.to_dict()) and "steps" in acc and len(acc) == len(acc.to_dict())
    cal = dpaudit.accounting.calibrate(sample_rate=0.01, steps=100, delta=DELTA, target_epsilon=3.0)
    with pytest.warns(DeprecationWarning):
        assert cal["result"]["epsilon"] == cal.result.epsilon  # nested values are the old dicts
    assert bool(acc)  # truth does not go through the mapping (no warning, always true)


# ---- the package without torch -------------------------------------------------------------


def test_star_import_and_the_opacus_hint_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['opacus'] = None\n"
        "from dpaudit import *\n"
        "print(sorted(n for n in dir() if n not in ('sys',) and (not n.startswith('_') or n == '__version__')))\n"
        "try:\n"
        "    import dpaudit.opacus\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    names, hint = out.stdout.splitlines()[:2]
    assert names == "['__version__', 'accounting', 'audit', 'canaries', 'runs']"
    assert "pip install opacus==1.6.0" in hint and "dpaudit[" not in hint


def test_every_public_function_has_numpydoc_sections():
    import inspect
    for module in (dpaudit.audit, dpaudit.accounting):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                doc = inspect.getdoc(obj)
                for section in ("Parameters\n----------", "Returns\n-------", "Raises\n------"):
                    assert section in doc, f"{module.__name__}.{name} lacks {section.splitlines()[0]}"
