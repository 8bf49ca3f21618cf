"""dpaudit.canaries: Dirac canaries in a hand-written DP-SGD loop (torch.func), audited in one run.

A small MLP on synthetic data, CPU, one thread, seconds per run. The loop is
the one of the ``dpaudit.canaries`` docstring (whose code block is itself run
by ``test_docstring_example_runs``), with switches for seeded bugs.
"""

from __future__ import annotations

import math
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.func import functional_call, grad, vmap  # noqa: E402

import dpaudit  # noqa: E402
from dpaudit.canaries import DiracCanaries, dirac_loss  # noqa: E402

torch.set_num_threads(1)
N, FEATURES, HIDDEN = 1000, 20, 64
# q = 0.1, σ = 2, T = 100, δ = 1e-5: dpaudit's PLD ε (measured 2.3374 with dpaudit.accounting.epsilon).
CLAIM = 2.3374


def data():
    gen = torch.Generator().manual_seed(1234)
    X = torch.randn(N, FEATURES, generator=gen)
    return X, (X[:, 0] > 0).long()


def dp_sgd(
    seed, *, m=1000, q=0.1, sigma=2.0, C=1.0, T=100, lr=0.5,
    noise_scale=1.0, clip_scale=1.0, included=None, with_canaries=True, norms_seen=None,
):
    """DP-SGD by hand; ``noise_scale`` and ``clip_scale`` seed bugs (the claim keeps σ and C)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 2))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        return torch.nn.functional.cross_entropy(functional_call(model, p, (x[None],)), y[None])

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    X, Y = data()
    canaries = DiracCanaries(params, m=m, sample_rate=q, seed=seed, included=included) if with_canaries else None
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(T):
        batch = torch.rand(N, generator=gen) < q
        g = per_sample(params, X[batch], Y[batch])
        n = int(batch.sum())
        if canaries is not None:
            rows = canaries.draw(C).rows()
            g = {k: torch.cat([g[k], rows[k]]) for k in g}
        norms = torch.cat([v.flatten(1) for v in g.values()], 1).norm(dim=1)
        clip = (clip_scale * C / (norms + 1e-6)).clamp(max=1.0)
        clipped = {k: clip.view(-1, *[1] * (v.dim() - 1)) * v for k, v in g.items()}
        if norms_seen is not None:
            norms_seen.append((torch.cat([v.flatten(1) for v in clipped.values()], 1).norm(dim=1), n))
        records = {k: v[:n].sum(0) for k, v in clipped.items()}
        std = noise_scale * sigma * C
        noisy = {k: v.sum(0) + std * torch.randn(v.shape[1:], generator=gen) for k, v in clipped.items()}
        if canaries is not None:
            canaries.observe(noisy, records, noise_multiplier=sigma)
        params = {k: params[k] - lr / (q * N) * noisy[k] for k in params}
    return params, canaries


def test_docstring_example_runs():
    doc = dpaudit.canaries.__doc__
    code = textwrap.dedent(doc.split("runs this very loop)::\n\n")[1].split("\n\n**The audit")[0])
    assert code.count("\n") <= 25 and "canaries.draw(C).rows()" in code
    namespace: dict = {}
    exec(compile(code, "dpaudit.canaries docstring", "exec"), namespace)  # noqa: S102 - our own docstring
    result = namespace["canaries"].audit(delta=1e-5)
    # σ = 1, q = 0.1, T = 100: dpaudit's PLD ε (measured 7.0466; Opacus's PRV gives the same to 2 %).
    assert result.claim_epsilon == pytest.approx(7.0466, abs=0.01)
    assert result.steps == 100 and result.m == 1000
    assert 0 < result.one_run.epsilon < result.claim_epsilon
    assert not any(result.exceeds_claim.values())


def test_excluded_canaries_leave_training_unchanged():
    plain, _ = dp_sgd(3, T=20, with_canaries=False)
    excluded, canaries = dp_sgd(3, T=20, included=np.zeros(1000, dtype=bool))
    for k in plain:
        assert torch.equal(plain[k], excluded[k]), k
    assert canaries.steps == 20 and canaries.insertions.sum() == 0


def test_clipped_norms_at_most_C_and_canaries_exactly_C():
    seen = []
    _, canaries = dp_sgd(4, T=10, C=0.5, norms_seen=seen)
    every = torch.cat([norms for norms, _ in seen])
    assert float(every.max()) <= 0.5 * (1 + 1e-5)
    # The canary rows come after the n records' in each step: norm 4C before clipping, C after.
    tail = torch.cat([norms[n:] for norms, n in seen])
    assert tail.numel() == int(canaries.insertions.sum()) > 0
    assert torch.allclose(tail, torch.full_like(tail, 0.5), rtol=1e-5)


def test_dirac_loss_gradient_is_the_canary_row():
    params = {"a": torch.zeros(3, 4), "b": torch.zeros(5)}
    canaries = DiracCanaries(params, m=6, insertion="every", seed=0, included=np.ones(6, dtype=bool))
    step = canaries.draw(2.0)
    rows = step.rows()
    index, value = step.loss_inputs()
    grads = vmap(grad(dirac_loss), in_dims=(None, 0, 0))(params, index, value)
    for k in params:
        assert torch.equal(grads[k], rows[k])
    flat = torch.cat([rows[k].flatten(1) for k in params], 1)
    assert torch.equal(flat.norm(dim=1), torch.full((6,), 8.0))  # 4 · C
    assert sorted(flat.nonzero()[:, 1].tolist()) == sorted(canaries.coordinates.tolist())


def test_protocol_errors_are_clear():
    params = [torch.zeros(10)]
    canaries = DiracCanaries(params, m=4, sample_rate=0.5, seed=0)
    with pytest.raises(RuntimeError, match="observe\\(\\) without draw"):
        canaries.observe(params, noise_multiplier=1.0)
    canaries.draw(1.0)
    with pytest.raises(RuntimeError, match="draw\\(\\) called twice"):
        canaries.draw(1.0)
    with pytest.raises(ValueError, match="sizes"):
        canaries.observe([torch.zeros(9)], noise_multiplier=1.0)
    with pytest.raises(ValueError, match="m must be in"):
        DiracCanaries(params, m=11, sample_rate=0.5, seed=0)
    with pytest.raises(ValueError, match="sample_rate"):
        DiracCanaries(params, m=4, seed=0)
    with pytest.raises(ValueError, match="seed"):
        DiracCanaries(params, m=4, sample_rate=0.5, seed=-1)


def test_import_dpaudit_needs_no_torch():
    import subprocess

    code = "import sys, dpaudit, dpaudit.canaries; sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("bug", ["none", "noise-off", "noise-quarter", "clip-4C"])
def test_seeded_bugs_are_caught_and_the_correct_loop_is_consistent(bug):
    noise_scale = {"noise-off": 0.0, "noise-quarter": 0.25}.get(bug, 1.0)
    clip_scale = 4.0 if bug == "clip-4C" else 1.0
    _, canaries = dp_sgd(7, noise_scale=noise_scale, clip_scale=clip_scale)
    result = canaries.audit(delta=1e-5)
    assert result.claim_epsilon == pytest.approx(CLAIM, abs=0.01)
    assert result.score == "steps-llr" and math.isclose(result.mean_insertions, 10, rel_tol=0.1)
    if bug == "none":
        assert not any(result.exceeds_claim.values())
        assert 0 < result.one_run.epsilon < result.claim_epsilon
    else:
        assert result.exceeds_claim == {"one_run": True, "one_run_fdp": True}, result
    if bug == "noise-off":  # perfect separation: what m = 1,000 canaries can show (measured 4.41 / 4.80)
        assert result.one_run.epsilon > 4.0 and result.one_run_fdp.epsilon > 4.0



def test_final_score_and_unobserved_records_are_audited_with_notes():
    params, canaries = dp_sgd(8, T=50)
    final = canaries.audit(delta=1e-5, score="final", params=params)
    assert final.score == "final" and not any(final.exceeds_claim.values())
    with pytest.raises(ValueError, match="final parameters"):
        canaries.scores("final")
    # A loop that does not expose the records' sum: the scores keep the drift, and the audit says so.
    loose = DiracCanaries([torch.zeros(50)], m=20, sample_rate=0.5, seed=1)
    loose.draw(1.0)
    loose.observe([torch.zeros(50)], noise_multiplier=1.0)
    assert any("observed at 0 of 1 steps" in note for note in loose.audit(delta=1e-5).notes)


def test_every_step_canaries_are_claimed_gdp():
    params = {"w": torch.zeros(2000)}
    canaries = DiracCanaries(params, m=2000, insertion="every", seed=9)
    gen = torch.Generator().manual_seed(0)
    for _ in range(25):
        rows = canaries.draw(1.0).rows()["w"]  # already of norm 4C: clip to C
        clipped = rows / 4.0
        noisy = clipped.sum(0) + 4.0 * torch.randn(2000, generator=gen)
        canaries.observe({"w": noisy}, {"w": torch.zeros(2000)}, noise_multiplier=4.0)
    result = canaries.audit(delta=1e-5)
    # 25 Gaussian mechanisms of noise σ = 4: μ = √25/4 = 1.25 GDP, ε at δ = 1e-5 from dpaudit's gdp accountant.
    assert result.claim_epsilon == pytest.approx(
        dpaudit.accounting.epsilon(sample_rate=1.0, noise_multiplier=4.0, steps=25, delta=1e-5, accountant="gdp"),
        rel=1e-12,
    )
    assert result.mean_insertions == 25 and not any(result.exceeds_claim.values())
