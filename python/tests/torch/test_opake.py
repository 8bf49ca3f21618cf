"""dpaudit.suites.opake: Dirac canaries through opake 0.16.1's clipped_grad, audited in one run.

Skips when opake is not installed (``pip install opake-dpsgd==0.16.1``). A
smaller setting than the suite's (m = 2,000, 100 steps), seconds per run.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opake.dpsgd", reason="opake is not installed (pip install opake-dpsgd==0.16.1)")
torch = pytest.importorskip("torch")

from dpaudit.suites import opake as suite  # noqa: E402

torch.set_num_threads(1)
SMALL = dict(m=2000, steps=100, hidden=128)
# q = 0.1, σ = 2, T = 100, δ = 1e-5: dpaudit's PLD ε (measured 2.3374; opake's accountant, run on
# Python 3.13.0, gives 2.3376 (measured); dpaudit's stands in where opake's does not import).
CLAIM = 2.3374


def test_excluded_canaries_leave_opake_training_unchanged():
    plain, _ = suite.train(5, with_canaries=False, m=2000, steps=15, hidden=128)
    excluded, canaries = suite.train(5, included=np.zeros(2000, dtype=bool), m=2000, steps=15, hidden=128)
    assert all(torch.equal(a, b) for a, b in zip(plain, excluded))
    assert canaries.steps == 15 and canaries.insertions.sum() == 0


def test_canary_enters_opake_clipped_at_C():
    # noise off: what a step adds beyond the records is the canaries' clipped sum / batch size.
    with suite.seeded_bug("noise-off"):
        _, canaries = suite.train(6, m=2000, steps=3, hidden=128)
    # steps-sum adds x_t / C per step (x_t rescaled by the batch size 200): C per canary entry.
    scores = canaries.scores("steps-sum")
    assert np.allclose(scores, canaries.insertions, atol=1e-4)


@pytest.mark.parametrize("bug", ["none", "noise-off", "clipping-off"])
def test_opake_seeded_bugs_caught_correct_run_consistent(bug):
    _, canaries = suite.train(3, bug=bug, **SMALL)
    result = canaries.audit(delta=1e-5)
    assert result.claim_epsilon == pytest.approx(CLAIM, abs=0.01)
    if bug == "none":
        assert not any(result.exceeds_claim.values())
        assert 0 < result.one_run.epsilon < CLAIM
    else:
        assert result.exceeds_claim == {"one_run": True, "one_run_fdp": True}, result


def test_seeded_bug_restores_opake():
    import opake.api.dpsgd.noise._gaussian as noise

    before = noise._resolve_noise_multiplier
    with suite.seeded_bug("noise-quarter"):
        assert noise._resolve_noise_multiplier(2.0) == 0.5
    assert noise._resolve_noise_multiplier is before
    with pytest.raises(ValueError, match="bug must be one of"):
        with suite.seeded_bug("typo"):
            pass
