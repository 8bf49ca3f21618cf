"""Opacus's known privacy reports, each reproduced by one command beside its correct counterpart.

    python -m dpaudit.opacus.reports 819        # or 571, 813, all
    python -m dpaudit.opacus.reports all --runs 1000 --json reports.json

Each report is a pair of neighbouring datasets ``D`` (with a target record) and
``D' = D`` minus the target, trained many times by Opacus 1.6's own
``PrivacyEngine`` under two variants:

- ``report``: the setting the report describes, through the code path that
  leaks;
- ``correct``: its counterpart without the bug (the fix, or Opacus's own
  correct setting), which must stay consistent with the claim.

Each training flips a fair coin for the target, runs Opacus from scratch on
``D`` or ``D'`` (its own ``torch.Generator`` for the batches and the noise,
seeded from the run's seed), and turns what the auditor sees into one score
fixed in advance (higher: more likely ``D``). The bound is the (ε, δ) region
bound over the runs (``dpaudit.audit.eps_delta``: one exact rank test of both
error counts per threshold, Annamalai et al. 2024, Eq. (1); valid for any
mechanism at the stated confidence, like ``dpaudit run``'s many-run audits);
the claim is Opacus's own accountant ε for the run, which must be the same in
both worlds (same q, σ and steps), else the report refuses. The bound chosen
on the evaluation scores (``same-data``, the practice of the reports) is
printed beside it and labelled not valid.

Why many runs and not the one-run canaries of :class:`dpaudit.opacus.DiracCanaries`:

- #819 and #571 leak through Opacus's normaliser ``expected_batch_size =
  int(len(dataset) · q)``, one number per training, fixed by the dataset's
  size. A gradient canary is not a record of the dataset, so its inclusion
  leaves the normaliser unchanged; and if canaries were records, all m of
  them would share one normaliser set by their total count, so no single
  canary's inclusion would show. Only datasets that differ in the target
  itself, trained separately, show it.
- #813 is a data-sampling bug: the canaries are sampled by the harness's own
  generator, never by the data loader, so no sampler bug reaches them.

``docs/library-audits.md`` ("Known reports") describes each report, the
setting, and the measured table.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import platform
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import opacus
import torch
from opacus import PrivacyEngine
from opacus.accountants.utils import get_noise_multiplier
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

from .. import audit as _audit

DELTA = 1e-5
CONFIDENCE = 0.95
C = 1.0  # max_grad_norm everywhere
VARIANTS = ("report", "correct")

# A target whose squared-error gradient on the one weight is 2(w + 1000) ≫ C:
# clipped, it contributes exactly +C while |w| ≪ 1000 (_check_weight holds each run to |w| < 500).
_TARGET_Y = -1000.0


def _check_weight(values) -> None:
    if np.max(np.abs(values)) >= 500:
        raise RuntimeError("the weight reached 500: the target's gradient may no longer be clipped to +C")


@dataclass(frozen=True)
class Run:
    """What one training hands the audit: the score and the claim's inputs."""

    score: float
    history: tuple  # Opacus's accountant history: ((σ, q, steps), ...)
    expected_batch_size: float  # the normaliser Opacus divided the noisy sum by
    epsilon: Optional[float] = None  # Opacus's ε at DELTA, filled for the first run of each world only


@dataclass(frozen=True)
class Row:
    """One line of a report's table."""

    report: str
    variant: str
    setting: str
    claimed_epsilon: float
    eps_delta: float  # valid at CONFIDENCE
    eps_delta_same_data: float  # threshold chosen on the evaluation scores: NOT a valid bound
    runs: int
    members: int
    normaliser_member: Optional[float]
    normaliser_non_member: Optional[float]
    verdict: str
    seconds: float
    score: str
    opacus: str = opacus.__version__
    torch: str = torch.__version__

    def to_dict(self) -> dict:
        out = asdict(self)
        out["eps_delta_same_data_valid"] = False  # chosen on the scores it bounds
        out["confidence"], out["delta"] = CONFIDENCE, DELTA
        return out


# -- the trainings ---------------------------------------------------------------------------------


def _engine_run(
    model: nn.Module,
    dataset: TensorDataset,
    generator: torch.Generator,
    *,
    batch_size: int,
    lr: float,
    epochs: int,
    noise_multiplier: Optional[float] = None,
    target_epsilon: Optional[float] = None,
    sampler=None,
    poisson_sampling: bool = True,
    normaliser: Optional[float] = None,
    per_step: Optional[Callable[[nn.Module], float]] = None,
    want_epsilon: bool = False,
) -> tuple:
    """One Opacus training from scratch (SGD, MSE loss, C = 1). Returns
    (per-step readings of ``per_step`` or [], the engine's history, the
    optimizer's normaliser, ε or None)."""
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    engine = PrivacyEngine()
    common = dict(
        module=model, optimizer=optimizer, data_loader=loader, max_grad_norm=C,
        poisson_sampling=poisson_sampling, noise_generator=generator,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if target_epsilon is not None:
            # make_private_with_epsilon's own steps (Opacus 1.6): q = 1/len(loader), σ from
            # get_noise_multiplier with the engine's accountant, then make_private; σ cached
            # because the calibration (seconds) is the same for every run.
            noise_multiplier = _calibrated_sigma(target_epsilon, 1 / len(loader), epochs, engine.accountant.mechanism())
        model, optimizer, loader = engine.make_private(noise_multiplier=noise_multiplier, **common)
    if normaliser is not None:
        optimizer.expected_batch_size = normaliser
    readings = []
    if per_step is not None:
        readings.append(per_step(model))
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = ((model(xb) - yb) ** 2).sum() / max(len(xb), 1)  # mean reduction; 0 on an empty batch
            loss.backward()
            optimizer.step()
            if per_step is not None:
                readings.append(per_step(model))
    history = tuple(tuple(float(v) for v in h) for h in engine.accountant.history)
    epsilon = None
    if want_epsilon:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            epsilon = float(engine.get_epsilon(DELTA))
    return readings, history, float(optimizer.expected_batch_size), epsilon


@functools.lru_cache(maxsize=None)
def _calibrated_sigma(target_epsilon: float, sample_rate: float, epochs: int, accountant: str) -> float:
    return float(
        get_noise_multiplier(
            target_epsilon=target_epsilon, target_delta=DELTA, sample_rate=sample_rate, epochs=epochs,
            accountant=accountant,
        )
    )


def _one_weight_model() -> nn.Module:
    """``y = w·x``, one weight starting at 0: the linear regression of #571."""
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    return model


def _one_weight(model) -> float:
    return float(model._module.weight.detach().reshape(-1)[0])


def _crafted_dataset(n_others: int, member: bool) -> TensorDataset:
    """The worst case of #571: records at x = 0 (gradient exactly 0 on w) and,
    in D, the target at x = 1, y = −1000 (clipped gradient exactly +C)."""
    x = torch.zeros(n_others + member, 1)
    y = torch.zeros(n_others + member, 1)
    if member:
        x[0, 0], y[0, 0] = 1.0, _TARGET_Y
    return TensorDataset(x, y)


# -- Opacus #819: floor(expected batch size), high-dimensional output ------------------------------

R819 = dict(n=100, batch=10, d_in=4, d_out=2000, sigma=2.0, epochs=1, lr=1.0)


def train_819(member: bool, generator: torch.Generator, variant: str, want_epsilon: bool = False) -> Run:
    """#819: 100 records (x ∈ R⁴, y ∈ R²⁰⁰⁰, fixed), batch_size 10, so q = 1/len(loader) = 0.1
    for D and for D' (99 records), and Opacus normalises by int(100 · 0.1) = 10 with the
    target and int(99 · 0.1) = 9 without. Linear(4, 2000) without bias (8,000 weights), σ = 2,
    C = 1, one epoch (10 steps), SGD lr 1. Score: −‖θ_T − θ_0‖ (the final model only).
    ``correct``: the normaliser pinned to the public batch size, 10, for both datasets."""
    p = R819
    data = torch.Generator().manual_seed(819)
    x = torch.randn(p["n"], p["d_in"], generator=data)
    y = torch.randn(p["n"], p["d_out"], generator=data)
    if not member:
        x, y = x[1:], y[1:]
    model = nn.Linear(p["d_in"], p["d_out"], bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.randn(p["d_out"], p["d_in"], generator=data) * 0.1)
    w0 = model.weight.detach().clone()
    _, history, normaliser, eps = _engine_run(
        model, TensorDataset(x, y), generator, batch_size=p["batch"], lr=p["lr"], epochs=p["epochs"],
        noise_multiplier=p["sigma"], normaliser=p["batch"] if variant == "correct" else None,
        want_epsilon=want_epsilon,
    )
    score = -float((model.weight.detach() - w0).norm())
    return Run(score, history, normaliser, eps)


# -- Opacus #571: the batch cardinality at 2-3 samples per batch -----------------------------------

R571 = dict(n=9, batch=3, sigma=4.0, epochs=3, lr=0.1)


def _llr_571(steps: np.ndarray, sigma: float, q: float, b_in: float, b_out: float) -> float:
    """Log-likelihood ratio of the per-step observations s_t = (w_{t−1} − w_t)/lr under D
    (s_t = (C·Bernoulli(q) + N(0, σ²C²)) / b_in) against D' (s_t = N(0, σ²C²) / b_out): the
    Neyman–Pearson score of the mechanism Opacus's code runs, fixed before any training."""
    z_in = b_in * steps / (sigma * C)
    z_in1 = (b_in * steps - C) / (sigma * C)
    log_in = np.logaddexp(math.log1p(-q) - 0.5 * z_in**2, math.log(q) - 0.5 * z_in1**2) + math.log(b_in)
    log_out = -0.5 * (b_out * steps / (sigma * C)) ** 2 + math.log(b_out)
    return float(np.sum(log_in - log_out))


def normalisers_571(variant: str) -> tuple:
    """What Opacus divides by with and without the target: int(len(dataset) · q), or the
    public batch size when pinned (``correct``)."""
    p = R571
    steps_per_epoch = math.ceil(p["n"] / p["batch"])
    if variant == "correct":
        return float(p["batch"]), float(p["batch"])
    return float(int(p["n"] / steps_per_epoch)), float(int((p["n"] - 1) / steps_per_epoch))


def train_571(member: bool, generator: torch.Generator, variant: str, want_epsilon: bool = False) -> Run:
    """#571: the crafted worst case on 9 records with the target (8 without), batch_size 3, so
    q = 1/3 for both and Opacus normalises by int(9/3) = 3 with the target, int(8/3) = 2 without.
    Linear regression y = w·x (one weight), σ = 4, C = 1, 3 epochs (9 steps), SGD lr 0.1.
    Score: the log-likelihood ratio of the 9 per-step updates of w (the white-box view that
    DP-SGD's accounting covers: every noisy step is released). ``correct``: the normaliser
    pinned to the public batch size, 3."""
    p = R571
    weights, history, normaliser, eps = _engine_run(
        _one_weight_model(), _crafted_dataset(p["n"] - 1, member), generator, batch_size=p["batch"], lr=p["lr"],
        epochs=p["epochs"], noise_multiplier=p["sigma"], normaliser=p["batch"] if variant == "correct" else None,
        per_step=_one_weight, want_epsilon=want_epsilon,
    )
    _check_weight(weights)
    steps = -np.diff(np.asarray(weights)) / p["lr"]
    b_in, b_out = normalisers_571(variant)
    score = _llr_571(steps, p["sigma"], 1.0 / math.ceil(p["n"] / p["batch"]), b_in, b_out)
    return Run(score, history, normaliser, eps)


# -- Opacus #813: WeightedRandomSampler -----------------------------------------------------------

R813 = dict(n=205, minority=4, batch=10, target_epsilon=1.0, epochs=1, lr=0.1)


def train_813(member: bool, generator: torch.Generator, variant: str, want_epsilon: bool = False) -> Run:
    """#813: 205 records with the target (204 without), two classes, the minority of 4 (3
    without) holding the target; class-balancing weights 1/class count in a
    ``WeightedRandomSampler(num_samples=len(dataset), replacement=True)``, batch_size 10, so
    len(loader) = 21 and Opacus claims q = 1/21 for both datasets (normaliser int(205/21) =
    int(204/21) = 9: #819 stays out). σ from ``make_private_with_epsilon`` (ε = 1, δ = 10⁻⁵, one
    epoch), C = 1, SGD lr 0.1, the crafted records of #571 (only the target moves the weight).
    ``report``: ``poisson_sampling=False``, the only way Opacus keeps the user's sampler: each
    batch draws 10 records with replacement, the target with probability 1/8 per draw, so it
    is in most batches, often several times, where the accountant assumes Poisson q = 1/21 and
    at most once. ``correct``: Opacus's default ``poisson_sampling=True`` on the same loader:
    the weighted sampler is replaced by Poisson sampling at q = 1/len(loader), which the
    accountant describes. Score: w_0 − w_T (the final model only)."""
    p = R813
    n = p["n"] - (not member)
    minority = p["minority"] - (not member)
    dataset = _crafted_dataset(p["n"] - 1, member)
    labels = np.zeros(n, dtype=np.int64)
    labels[:minority] = 1  # the target (row 0, when present) and the other minority records
    counts = np.bincount(labels, minlength=2)
    weights = torch.as_tensor(1.0 / counts[labels], dtype=torch.double)
    sampler = WeightedRandomSampler(weights, num_samples=n, replacement=True, generator=generator)
    model = _one_weight_model()
    _, history, normaliser, eps = _engine_run(
        model, dataset, generator, batch_size=p["batch"], lr=p["lr"], epochs=p["epochs"],
        target_epsilon=p["target_epsilon"], sampler=sampler, poisson_sampling=variant == "correct",
        want_epsilon=want_epsilon,
    )
    w_final = float(model.weight.detach().reshape(-1)[0])  # make_private wrapped `model`; w_0 = 0
    _check_weight([w_final])
    score = -w_final / p["lr"]
    return Run(score, history, normaliser, eps)


REPORTS = {
    "819": (train_819, "-|theta_T - theta_0| (final model)"),
    "571": (train_571, "per-step log-likelihood ratio"),
    "813": (train_813, "w_0 - w_T (final model)"),
}

SETTINGS = {
    "819": {
        "report": "100 vs 99 records, Linear(4, 2000), batch 10: Opacus divides by int(N q) = 10 vs 9",
        "correct": "same, normaliser pinned to the public batch size 10",
    },
    "571": {
        "report": "9 vs 8 records, y = w x, batch 3: Opacus divides by int(N q) = 3 vs 2",
        "correct": "same, normaliser pinned to the public batch size 3",
    },
    "813": {
        "report": "WeightedRandomSampler kept (poisson_sampling=False), target weight 1/8 per draw",
        "correct": "same loader, Opacus's default poisson_sampling=True (sampler replaced)",
    },
}


# -- the many-run audit ---------------------------------------------------------------------------


def audit_report(report: str, variant: str, runs: int, seed: int = 0) -> Row:
    """Trains ``runs`` times (each a fair coin for the target) and bounds ε at 95 %.

    Raises ``ValueError`` if Opacus's accountant history (σ, q, steps) differs between
    runs: the claim must not depend on the coin."""
    if report not in REPORTS:
        raise ValueError(f"report must be one of {', '.join(REPORTS)}, got {report!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if runs < 2:
        raise ValueError(f"runs must be at least 2, got {runs}")
    train, score_name = REPORTS[report]
    started = time.perf_counter()
    root = np.random.SeedSequence([seed, int(report), VARIANTS.index(variant)])
    # SeedSequence.spawn counts its children: the coins use child 0, run i uses child i + 2.
    coins = np.random.default_rng(root.spawn(1)[0]).random(runs) < 0.5
    run_seeds = root.spawn(runs + 1)[1:]
    scores = np.empty(runs)
    histories = set()
    epsilon = {}
    normaliser = {}
    for i in range(runs):
        member = bool(coins[i])
        generator = torch.Generator().manual_seed(int(run_seeds[i].generate_state(1, np.uint64)[0] >> np.uint64(1)))
        run = train(member, generator, variant, want_epsilon=member not in epsilon)
        scores[i] = run.score
        histories.add(run.history)
        if member not in epsilon:
            epsilon[member] = run.epsilon
            normaliser[member] = run.expected_batch_size
        elif normaliser[member] != run.expected_batch_size:
            raise ValueError(f"report {report}: the normaliser changed between runs of one dataset")
    if len(histories) != 1:
        raise ValueError(
            f"report {report} ({variant}): Opacus's accountant saw different (σ, q, steps) in different runs "
            f"({sorted(histories)}): the claim would depend on the target"
        )
    claims = [e for e in epsilon.values() if e is not None]
    claim = claims[0]
    if any(abs(e - claim) > 1e-9 for e in claims):
        raise ValueError(f"report {report} ({variant}): Opacus claims different ε with and without the target")
    bound = _audit.eps_delta(scores, coins, delta=DELTA, confidence=CONFIDENCE)
    same = _audit.eps_delta(scores, coins, delta=DELTA, confidence=CONFIDENCE, selection="same-data")
    return Row(
        report=report,
        variant=variant,
        setting=SETTINGS[report][variant],
        claimed_epsilon=claim,
        eps_delta=float(bound.epsilon),
        eps_delta_same_data=float(same.epsilon),
        runs=runs,
        members=int(coins.sum()),
        normaliser_member=normaliser.get(True),
        normaliser_non_member=normaliser.get(False),
        verdict="exceeds the claim at 95 %" if bound.epsilon > claim else "consistent",
        seconds=time.perf_counter() - started,
        score=score_name,
    )


def format_table(rows: Sequence[Row]) -> str:
    head = (
        "| report | variant | setting | claimed ε | eps-delta 95 % | same-data (not valid) | runs (D) "
        "| normaliser D / D' | verdict | s |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        norm = f"{r.normaliser_member:g} / {r.normaliser_non_member:g}" if r.normaliser_member is not None else "-"
        lines.append(
            f"| #{r.report} | {r.variant} | {r.setting} | {r.claimed_epsilon:.2f} | {r.eps_delta:.2f} "
            f"| {r.eps_delta_same_data:.2f} | {r.runs} ({r.members}) | {norm} | {r.verdict} | {r.seconds:.0f} |"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dpaudit.opacus.reports",
        description="Reproduce Opacus's known privacy reports (#819, #571, #813), each beside its correct "
        "counterpart, by many trainings and the (ε, δ) region bound at 95 %.",
    )
    ap.add_argument("report", choices=[*REPORTS, "all"])
    ap.add_argument("--runs", type=int, default=1000, help="trainings per variant (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variant", choices=[*VARIANTS, "both"], default="both")
    ap.add_argument("--json", help="write the rows as JSON to this file")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    # Opacus logs each empty first batch of a Poisson epoch (it trains on it, noise only).
    logging.getLogger("opacus.data_loader").setLevel(logging.ERROR)
    reports = list(REPORTS) if args.report == "all" else [args.report]
    variants = list(VARIANTS) if args.variant == "both" else [args.variant]
    rows = []
    for report in reports:
        for variant in variants:
            rows.append(audit_report(report, variant, args.runs, args.seed))
            print(format_table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(f"Opacus {opacus.__version__}, torch {torch.__version__}, Python {platform.python_version()}, "
          f"δ = {DELTA:g}, seed {args.seed}")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.to_dict() for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
