"""The canary harnesses refuse σ and C through the binding's one validation
of the DP fields (`dpaudit_accounting::dp_fields`, training context): each
refusal is the validator's message under the keyword (issue 41)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dpaudit import _dpaudit  # noqa: E402
from dpaudit.canaries import DiracCanaries  # noqa: E402


def _canaries():
    return DiracCanaries([torch.zeros(100)], m=4, sample_rate=0.5, seed=0)


def _said(value, field):
    with pytest.raises(ValueError) as e:
        _dpaudit.check_dp_field(value, field=field, context="training")
    return str(e.value)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_draw_refuses_a_clipping_norm_through_the_binding(bad):
    with pytest.raises(ValueError) as e:
        _canaries().draw(bad)
    assert str(e.value) == _said(bad, "max_grad_norm")


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_observe_and_the_opacus_path_refuse_a_noise_multiplier_through_the_binding(bad):
    canaries = _canaries()
    canaries.draw(1.0)
    with pytest.raises(ValueError) as e:
        canaries.observe([torch.zeros(100)], noise_multiplier=bad)
    assert str(e.value) == _said(bad, "noise_multiplier")
    # The Opacus harness books a step without observe(): the same refusal,
    # before any state changes.
    canaries = _canaries()
    with pytest.raises(ValueError) as e:
        canaries._record(np.arange(4), np.zeros(4), bad, 1.0)
    assert str(e.value) == _said(bad, "noise_multiplier")
    assert canaries.steps == 0 and int(canaries.insertions.sum()) == 0
    # σ = 0 trains without noise: booked, and the likelihood-ratio score is then undefined.
    canaries._record(np.arange(4), np.zeros(4), 0.0, 1.0)
    assert canaries.steps == 1
