"""`Bound` pickles, copies and crosses processes, and stays equal (issue 41)."""

import copy
import multiprocessing
import pickle

import numpy as np
import pytest

import dpaudit
from conftest import canary_rows, gaussian_rows

DELTA = 1e-5


def bounds():
    s, m = gaussian_rows(1000, 1.0, seed=11)
    c, cm = canary_rows(2000, 1.5, seed=12)
    return [
        dpaudit.audit.eps_delta(s, m, delta=DELTA),
        dpaudit.audit.gdp(s, m, delta=DELTA, selection="same-data"),
        dpaudit.audit.eps_delta(s, m, delta=DELTA, selection="multi-split", splits=3, seed=4),
        dpaudit.audit.one_run(c, cm, delta=DELTA, selection="split", seed=2),
        dpaudit.audit.one_run(c, cm, delta=DELTA, selection="fixed", k_plus=50, k_minus=50),
        dpaudit.audit.one_run_fdp(c, cm, delta=DELTA, family="gaussian"),
        dpaudit.audit.one_run_fdp(c, cm, delta=DELTA, guesses="with-one-sided"),
    ]


def same(a, b):
    assert a == b and hash(a) == hash(b)
    assert a.to_dict() == b.to_dict() and a.to_json() == b.to_json()
    assert a.epsilon == b.epsilon and repr(a) == repr(b) and a.split_bounds == b.split_bounds
    assert a.plot() == b.plot() and a.histogram() == b.histogram()


@pytest.mark.parametrize("i", range(7))
def test_pickle_and_copy_round_trip(i):
    b = bounds()[i]
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        same(pickle.loads(pickle.dumps(b, protocol=proto)), b)
    same(copy.copy(b), b)
    same(copy.deepcopy(b), b)
    assert isinstance(pickle.loads(pickle.dumps(b)), dpaudit.audit.Bound)


def test_equality_is_by_value():
    a, b = bounds()[0], bounds()[0]
    assert a is not b and a == b and len({a, b}) == 1
    c = bounds()[1]
    assert a != c and a != "a bound" and not (a == 1.0)


def _epsilon_of(bound):
    return bound.epsilon, bound


def test_bounds_cross_processes():
    bs = bounds()[:3]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        back = pool.map(_epsilon_of, bs)
    for b, (eps, again) in zip(bs, back):
        assert eps == b.epsilon
        same(again, b)


def test_a_corrupt_state_is_a_value_error():
    with pytest.raises(ValueError, match="not the state of a pickled Bound"):
        dpaudit.audit.Bound._from_state("{}", np.zeros(2), np.array([True, False]), False)


def results():
    """Every typed result class of dpaudit.audit and dpaudit.accounting."""
    s, m = gaussian_rows(300, 1.0, seed=13)
    acc = dpaudit.accounting
    dpsgd = dict(sample_rate=0.01, noise_multiplier=1.0, steps=200)
    return [
        acc.account(**dpsgd, delta=DELTA, shuffle=True),
        acc.account(**dpsgd, delta=DELTA, accountant="rdp"),
        acc.account_delta(**dpsgd, epsilon=1.0),
        acc.calibrate(sample_rate=0.01, steps=200, delta=DELTA, target_epsilon=2.0),
        acc.shuffle_lower_bound(noise_multiplier=1.0, steps_per_epoch=100, epochs=2, delta=DELTA),
        dpaudit.audit.metrics(s, m),
        dpaudit.audit.panoramia(s, m, s + 0.5 * m, m, selection="split", seed=3),
        dpaudit.audit.inclusion_check(canaries=1000, included=480),
    ]


@pytest.mark.parametrize("i", range(8))
def test_results_pickle_copy_and_stay_frozen(i):
    r = results()[i]
    for again in [pickle.loads(pickle.dumps(r, protocol=p)) for p in range(2, pickle.HIGHEST_PROTOCOL + 1)] + [
        copy.copy(r), copy.deepcopy(r)
    ]:
        assert type(again) is type(r) and again == r and hash(again) == hash(r)
        assert again.to_dict() == r.to_dict() and repr(again) == repr(r)
    assert type(r).__module__ in ("dpaudit.audit", "dpaudit.accounting")
    with pytest.raises(AttributeError):
        r.epsilon = 0.0  # frozen (dataclasses.FrozenInstanceError is an AttributeError)


def test_metrics_keep_their_scores_across_pickling():
    m = results()[5]
    again = pickle.loads(pickle.dumps(m))
    assert again.tpr_at_fpr(0.05) == m.tpr_at_fpr(0.05)
    np.testing.assert_array_equal(again.roc().tpr, m.roc().tpr)
