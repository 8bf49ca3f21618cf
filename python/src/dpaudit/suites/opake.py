"""One-run audit of opake's functional DP-SGD with Dirac gradient canaries.

``python -m dpaudit.suites.opake`` trains a small MLP with opake 0.16.1's own
pieces (``PoissonSampler``, ``clipped_grad``, ``gaussian_noise``), once
correctly and once under each seeded bug, on several seeds, and prints opake's
claimed ε beside the one-run and f-DP one-run lower bounds.

**Where the canaries enter.** opake forms per-sample gradients inside
``clipped_grad`` (``vmap`` of ``grad`` of a per-example loss), clips them and
returns only their sum, so no per-sample gradient rows can be appended from
outside. The canaries therefore go through a second ``clipped_grad`` of the
same settings (clipping norm C, ``normalize_by``), built over
:func:`dpaudit.canaries.dirac_loss`: opake forms each canary's per-sample
gradient (``4C`` in its coordinate), clips it to C and sums, exactly as for a
record. The records' clipped sum is the first call's output, untouched; the
two sums are added (as one ``ClippedPytree`` of the records' ``max_norm``)
and handed to ``gaussian_noise``. The harness sees the records' sum and the
noisy sum, so the white-box per-step score applies. A bug in clipping or in
the noise reaches the canaries; one in the per-example loss plumbing of the
records' call would not (the canaries have their own loss).

**The claim** is opake's own accountant (``opake.dpsgd.accounting.poisson(
gaussian(σ), q) * T``, ε at δ). opake-accounting 0.16.1 does not import on
CPython 3.11.7 or 3.12.1 (a ``dataclass(slots=True, weakref_slot=True)``
subclass raises ``TypeError: __weakref__ slot disallowed``); it imports on
3.13.0. When it does not import here, ``--opake-python PATH`` (or
``DPAUDIT_OPAKE_PYTHON``) names an interpreter with ``opake-accounting`` and
``opake-dpsgd`` installed (``--no-deps`` is enough) that computes it; else
dpaudit's PLD ε stands in and the table says so.

**Seeded bugs** (:func:`seeded_bug`) patch opake the way a silent bug would,
while the accountant keeps σ and C: ``noise-off`` and ``noise-quarter`` scale
the noise multiplier ``gaussian_noise`` resolves internally; ``clipping-off``
makes the clipping kernel's bound infinite (the output still claims
``max_norm = C``, so the noise stays σC).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
from typing import Optional

BUGS = ("none", "noise-off", "noise-quarter", "clipping-off")

#: The opake release whose internals (``_resolve_noise_multiplier``,
#: ``_prepare_kernel_clipping_norm``) the seeded bugs patch.
SUPPORTED_OPAKE = "0.16.1"

_ACCOUNTANT = (
    "import sys, opake.api.accounting.dpsgd as a; q, s, t, d = map(float, sys.argv[1:]); "
    "print(repr(float((a.poisson(a.gaussian(s), sample_rate=q) * int(t)).epsilon_at(d))))"
)


def opake_epsilon(sample_rate: float, noise_multiplier: float, steps: int, delta: float, python: Optional[str] = None):
    """opake's accountant ε for ``steps`` Poisson-subsampled Gaussian steps:
    ``(epsilon, source)``, or ``(None, reason)`` when it cannot run."""
    args = [str(sample_rate), str(noise_multiplier), str(steps), str(delta)]
    try:
        import opake.api.accounting.dpsgd as accounting

        step = accounting.poisson(accounting.gaussian(noise_multiplier), sample_rate=sample_rate)
        return float((step * steps).epsilon_at(delta)), f"opake {SUPPORTED_OPAKE} accountant (PLD)"
    except Exception as error:  # noqa: BLE001 - any failure of the import is reported, not raised
        here = f"{type(error).__name__}: {error}"
    python = python or os.environ.get("DPAUDIT_OPAKE_PYTHON")
    if not python:
        return None, f"opake's accountant does not import on Python {sys.version.split()[0]} ({here})"
    done = subprocess.run([python, "-c", _ACCOUNTANT, *args], capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"opake's accountant failed under {python}: {done.stderr.strip().splitlines()[-1:]}"
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True)
    return float(done.stdout.strip()), f"opake {SUPPORTED_OPAKE} accountant (PLD), run by Python {version.stdout.strip()}"


@contextlib.contextmanager
def seeded_bug(bug: str):
    """Patch opake 0.16.1 with a silent bug for the duration (the accountant keeps σ and C)."""
    if bug not in BUGS:
        raise ValueError(f"bug must be one of {', '.join(BUGS)}, got {bug!r}")
    import opake.api.dpsgd.noise._gaussian as noise
    import opake.api.engine.clipping._clipped_fun as clipping

    saved = (noise._resolve_noise_multiplier, clipping._prepare_kernel_clipping_norm)
    try:
        if bug in ("noise-off", "noise-quarter"):
            factor = 0.0 if bug == "noise-off" else 0.25
            noise._resolve_noise_multiplier = lambda multiplier: saved[0](multiplier) * factor
        elif bug == "clipping-off":
            clipping._prepare_kernel_clipping_norm = lambda *a, **k: saved[1](*a, **k) * math.inf
        yield
    finally:
        noise._resolve_noise_multiplier, clipping._prepare_kernel_clipping_norm = saved


def train(
    seed: int,
    *,
    bug: str = "none",
    n: int = 2000,
    q: float = 0.1,
    sigma: float = 2.0,
    C: float = 1.0,
    steps: int = 200,
    lr: float = 0.5,
    m: int = 5000,
    hidden: int = 256,
    included=None,
    with_canaries: bool = True,
):
    """DP-SGD with opake on synthetic data (20 features, 2 classes, an MLP
    with one hidden layer), canaries drawn with ``seed``. Returns
    ``(params, canaries)`` (``canaries`` is None without canaries)."""
    import torch
    from opake.dpsgd import PoissonSampler, clipped_grad, gaussian_noise
    from opake.functional import make_functional
    from opake.random import key
    from opake.types import clipped

    from ..canaries import DiracCanaries, dirac_loss

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(10_000 + seed)
    X = torch.randn(n, 20, generator=gen)
    Y = (X[:, 0] + 0.5 * X[:, 1] > 0).long()
    model = torch.nn.Sequential(torch.nn.Linear(20, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 2))
    fmodel, params = make_functional(model, disable_autograd_tracking=True)

    def loss(p, x, y):
        return torch.nn.functional.cross_entropy(fmodel(p, x.unsqueeze(0)), y.unsqueeze(0))

    batch_size = q * n
    with seeded_bug(bug):
        records_fn, records_state = clipped_grad(loss, clipping_norm=C, normalize_by=batch_size, batch_argnums=(1, 2))
        canary_fn, canary_state = clipped_grad(dirac_loss, clipping_norm=C, normalize_by=batch_size, batch_argnums=(1, 2))
        noise_fn, noise_state = gaussian_noise(noise_multiplier=sigma, key=key(20_000 + seed))
        sampler = PoissonSampler(X, sample_rate=q, n_steps=steps, key=key(30_000 + seed))
        canaries = (
            DiracCanaries(params, m=m, sample_rate=q, seed=seed, included=included) if with_canaries else None
        )
        for batch in sampler:
            index = torch.as_tensor(batch, dtype=torch.long)
            total, records_state = records_fn(params, X[index], Y[index], state=records_state)
            records = total.pytree
            if canaries is not None:
                step = canaries.draw(C)
                if len(step):
                    ours, canary_state = canary_fn(params, *step.loss_inputs(), state=canary_state)
                    total = clipped(tuple(a + b for a, b in zip(records, ours.pytree)), max_norm=total.max_norm)
            noisy, noise_state = noise_fn(total, noise_state)
            if canaries is not None:
                canaries.observe(noisy.pytree, records, noise_multiplier=sigma, normalize_by=batch_size)
            params = tuple(p - lr * g for p, g in zip(params, noisy.pytree))
    return params, canaries


def run(seeds=(0, 1, 2), bugs=BUGS, *, m: int = 5000, steps: int = 200, delta: float = 1e-5, python=None, out=print):
    """Trains and audits every (bug, seed); returns the rows (dicts)."""
    import opake.dpsgd
    import torch

    torch.set_num_threads(1)
    q, sigma = 0.1, 2.0
    claim, source = opake_epsilon(q, sigma, steps, delta, python)
    out(f"opake {opake.dpsgd.__version__}, torch {torch.__version__}; MLP 20-256-2, 2,000 records, q = {q}, "
        f"σ = {sigma}, C = 1, {steps} steps, m = {m} canaries, δ = {delta}, 95 %")
    out(f"claim: {source}" + ("" if claim is not None else "; dpaudit's PLD ε stands in"))
    out(f"{'bug':<14}{'seed':>5}{'claimed ε':>11}{'one-run':>9}{'f-DP':>8}  {'verdict':<26}{'wall s':>7}")
    rows = []
    for bug in bugs:
        for seed in seeds:
            started = time.perf_counter()
            _, canaries = train(seed, bug=bug, steps=steps, m=m)
            result = canaries.audit(delta, claimed_epsilon=claim, claim_source=source)
            wall = time.perf_counter() - started
            verdict = "exceeds the claim at 95 %" if any(result.exceeds_claim.values()) else "consistent"
            out(f"{bug:<14}{seed:>5}{result.claim_epsilon:>11.4f}{result.one_run.epsilon:>9.3f}"
                f"{result.one_run_fdp.epsilon:>8.3f}  {verdict:<26}{wall:>7.1f}")
            rows.append(dict(bug=bug, seed=seed, verdict=verdict, wall_seconds=wall, **result.to_dict()))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpaudit.suites.opake", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--bugs", nargs="+", default=list(BUGS), choices=BUGS)
    parser.add_argument("--m", type=int, default=5000, help="canaries (default 5000)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--opake-python", help="an interpreter that runs opake's accountant (see the module doc)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    try:
        import opake.dpsgd  # noqa: F401
    except ImportError as error:
        print(f"needs opake: pip install opake-dpsgd==0.16.1 ({error})", file=sys.stderr)
        return 2
    rows = run(args.seeds, args.bugs, m=args.m, steps=args.steps, python=args.opake_python)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)
    correct = [r for r in rows if r["bug"] == "none"]
    seeded = [r for r in rows if r["bug"] != "none"]
    ok = all(r["verdict"] == "consistent" for r in correct) and all(r["verdict"] != "consistent" for r in seeded)
    print("all correct runs consistent, all seeded bugs caught" if ok else "UNEXPECTED: see the verdicts above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
