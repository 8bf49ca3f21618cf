"""The Opacus audit suite: one small training per Opacus configuration, one table.

``python -m dpaudit.opacus.suite`` trains an MLP on synthetic data under each
configuration of :data:`CONFIGS` (Opacus's grad-sample modes, Poisson and
shuffled batches, ``BatchMemoryManager``'s virtual steps, secure mode, one-
process DDP), with two sets of :class:`~dpaudit.opacus.DiracCanaries` on the
same optimizer:

- m **sampled** canaries (sampled like records, entering before clipping with
  norm 4C; after clipping for ghost clipping), scored by the default
  ``steps-llr``: the one-run bound (Steinke, Nasr & Jagielski 2023, Thm 3.1) and
  the f-DP one-run bound (Mahloujifar, Melis & Chaudhuri 2024, (ε, δ) family),
  both valid for any mechanism, against the ε of Opacus's own accountant (what
  a user would report). The **verdict** is the f-DP one-run bound, declared in
  advance, against that claim at 95 %;
- ``m_every`` **every-step** canaries (present at all T steps), whose claim is
  T composed Gaussian mechanisms (μ = √T/σ GDP): beside the valid f-DP bound,
  the order-statistics bound of Xiang et al. 2025 in its Gaussian family
  (``dpaudit.audit.one_run_order``), which assumes canaries that do not interact,
  each a Gaussian channel — true of white-box canaries on separate
  coordinates scored per step when the library is correct; never applied to the
  sampled canaries, whose channels are subsampled, not Gaussian.

The Python API is :func:`run_suite` (returns a :class:`SuiteResult` with
``table()``, ``to_dict()`` and ``svg()``); the command line prints the table and
writes ``opacus-suite.json`` and ``opacus-suite.svg`` to ``--out-dir``.
``docs/library-audits.md`` ("The Opacus suite") shows a measured table.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import os
import sys
import tempfile
import time
import warnings
from typing import Callable, Optional, Sequence

import numpy as np
import opacus
import torch
from torch import nn

from .. import __version__ as _dpaudit_version
from .. import audit as _audit
from .canaries import DiracCanaries
from .suite_report import SuiteResult


@dataclasses.dataclass(frozen=True)
class Setting:
    """The training and audit of every configuration.

    ``records`` synthetic records of ``features`` standard normal inputs,
    labelled by a random linear teacher into ``classes``; an MLP
    ``features-hidden-classes`` (tanh) trained by DP-SGD (plain SGD, ``lr``)
    with expected batch ``batch`` (q = batch / records), noise multiplier
    ``sigma``, clipping norm ``max_grad_norm``, for ``steps`` logical steps;
    ``physical`` is the physical batch of the virtual-steps configuration."""

    records: int
    features: int
    hidden: int
    classes: int
    batch: int
    sigma: float
    max_grad_norm: float
    steps: int
    lr: float
    m: int
    m_every: int
    delta: float
    physical: int

    @property
    def sample_rate(self) -> float:
        return self.batch / self.records

    @property
    def parameters(self) -> int:
        return (self.features + 1) * self.hidden + (self.hidden + 1) * self.classes


#: The default run: 200 steps at q = 0.1 and σ = 2 (Opacus's PRV ε ≈ 3.4 at δ = 1e-5), 5,000 sampled
#: and 1,000 every-step canaries in an MLP of 7,114 weights.
DEFAULT = Setting(
    records=2000, features=100, hidden=64, classes=10, batch=200, sigma=2.0, max_grad_norm=1.0,
    steps=200, lr=0.5, m=5000, m_every=1000, delta=1e-5, physical=50,
)  # fmt: skip

#: ``--quick``: seconds per configuration (the tests' setting).
QUICK = Setting(
    records=400, features=24, hidden=24, classes=4, batch=40, sigma=1.5, max_grad_norm=1.0,
    steps=30, lr=0.5, m=600, m_every=100, delta=1e-5, physical=16,
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Config:
    """One Opacus configuration of the suite."""

    name: str
    audits: str  # what this row exercises, and what it cannot show
    mode: str = "hooks"  # grad_sample_mode
    poisson: bool = True
    virtual_steps: bool = False
    secure: str = "off"  # "off", "engine" (PrivacyEngine(secure_mode=True)), "noise" (the optimizer's flag)
    ddp: bool = False

    @property
    def insert_at(self) -> str:
        # Ghost clipping forms no per-sample gradients: canaries can only enter after clipping.
        return "summed_grad" if self.mode == "ghost" else "grad_sample"


CONFIGS = (
    Config("hooks", "grad-sample hooks, Poisson batches: clipping and noise"),
    Config("functorch", "per-sample gradients by functorch (vmap): clipping and noise", mode="functorch"),
    Config("ew", "expanded weights (torch.func): clipping and noise", mode="ew"),
    Config(
        "ghost",
        "ghost clipping: canaries enter after clipping, so a clipping bug cannot show in this row; noise",
        mode="ghost",
    ),
    Config(
        "shuffle",
        "poisson_sampling=False: shuffled batches that Opacus accounts as Poisson (not a proven bound)",
        poisson=False,
    ),
    Config("virtual-steps", "BatchMemoryManager: logical batches in physical parts", virtual_steps=True),
    Config("secure-mode", "PrivacyEngine(secure_mode=True): torchcsprng noise and sampling", secure="engine"),
    Config(
        "secure-noise",
        "secure mode's noise formula (4 normals / 2) on torch's PRNG, without torchcsprng",
        secure="noise",
    ),
    Config("ddp", "DPDDP + DistributedDPOptimizer, one process, gloo", ddp=True),
)
_BY_NAME = {c.name: c for c in CONFIGS}


class Unavailable(Exception):
    """A configuration that cannot run here (the reason is the message)."""


@dataclasses.dataclass
class Trained:
    """One training: final flat parameters, the canary sets, engine and optimizer."""

    params: torch.Tensor
    sampled: Optional[DiracCanaries]
    every: Optional[DiracCanaries]
    engine: opacus.PrivacyEngine
    optimizer: object
    seconds: float
    accuracy: float  # on the training records


def _data(setting: Setting, seed: int):
    g = torch.Generator().manual_seed(10_000 + seed)
    x = torch.randn(setting.records, setting.features, generator=g)
    teacher = torch.randn(setting.features, setting.classes, generator=g)
    return x, (x @ teacher).argmax(dim=1)


@contextlib.contextmanager
def _process_group():
    import torch.distributed as dist

    if not dist.is_available():
        raise Unavailable("torch.distributed is not available in this torch build")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=0, world_size=1)
        except Exception as error:  # pragma: no cover - depends on the build
            raise Unavailable(f"gloo process group failed: {error}") from error
        try:
            yield
        finally:
            dist.destroy_process_group()


def train(
    config: Config,
    setting: Setting,
    seed: int,
    *,
    canaries: bool = True,
    included: Optional[np.ndarray] = None,
    included_every: Optional[np.ndarray] = None,
) -> Trained:
    """Trains one configuration (seeded: the same seed gives the same records'
    training); with ``canaries``, attaches the two canary sets (their inclusion
    bits drawn from ``seed``, or fixed by ``included``/``included_every``).
    Raises :class:`Unavailable` when the configuration cannot run here."""
    # Opacus draws its Poisson batches and its noise from torch's global generator (a seeded
    # noise_generator would not cover the sampling, and secure mode refuses one): seed it inside a
    # fork, so that the caller's generator state is back as it was afterwards.
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.random.fork_rng(devices=[]))
        torch.manual_seed(seed)
        if config.ddp:
            stack.enter_context(_process_group())
        return _train(config, setting, seed, canaries, included, included_every)


def _train(config, setting, seed, canaries, included, included_every) -> Trained:
    if config.secure == "engine":
        try:
            engine = opacus.PrivacyEngine(secure_mode=True)
        except ImportError as error:
            raise Unavailable(
                "secure_mode=True needs torchcsprng, which is not installed (its last release, 0.2.1 of 2021, "
                f"has no build for this Python and torch {torch.__version__.split('+')[0]}); not faked here, "
                "see the secure-noise row"
            ) from error
    else:
        engine = opacus.PrivacyEngine()
    x, y = _data(setting, seed)
    net = nn.Sequential(
        nn.Linear(setting.features, setting.hidden), nn.Tanh(), nn.Linear(setting.hidden, setting.classes)
    )
    model = net
    if config.ddp:
        from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP

        model = DPDDP(net)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=setting.batch, shuffle=not config.poisson
    )
    out = engine.make_private(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=setting.lr),
        data_loader=loader,
        noise_multiplier=setting.sigma,
        max_grad_norm=setting.max_grad_norm,
        poisson_sampling=config.poisson,
        grad_sample_mode=config.mode,
        **({"criterion": nn.CrossEntropyLoss()} if config.mode == "ghost" else {}),
    )
    if config.mode == "ghost":
        model, optimizer, criterion, loader = out
    else:
        model, optimizer, loader = out
        criterion = nn.CrossEntropyLoss()
    if config.secure == "noise":
        optimizer.secure_mode = True
    sampled = every = None
    if canaries:
        common = dict(privacy_engine=engine, insert_at=config.insert_at)
        sampled = DiracCanaries(optimizer, loader, m=setting.m, seed=seed, included=included, **common)
        if setting.m_every:  # a seed of its own: the two sets' coins must be independent
            every = DiracCanaries(
                optimizer, loader, m=setting.m_every, insertion="every", seed=seed + 1_000_003,
                included=included_every, **common,
            )  # fmt: skip

    started = time.perf_counter()
    done = 0
    while done < setting.steps:
        batches = _epoch(loader, optimizer, config, setting)
        try:
            for xb, yb in batches:
                optimizer.zero_grad()
                criterion(model(xb), yb).backward()
                optimizer.step()
                if not getattr(optimizer, "_is_last_step_skipped", False):  # a logical step ended
                    done += 1
                    if done == setting.steps:
                        break
        finally:
            batches.close()
    seconds = time.perf_counter() - started
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
    with torch.no_grad():
        # The plain module (its parameters are the trained ones): expanded weights refuse a second forward.
        accuracy = float((net(x).argmax(dim=1) == y).double().mean())
    return Trained(flat, sampled, every, engine, optimizer, seconds, accuracy)


def _epoch(loader, optimizer, config: Config, setting: Setting):
    """One epoch's physical batches (through BatchMemoryManager for virtual steps)."""
    if config.virtual_steps:
        from opacus.utils.batch_memory_manager import BatchMemoryManager

        with BatchMemoryManager(
            data_loader=loader, max_physical_batch_size=setting.physical, optimizer=optimizer
        ) as batches:
            yield from batches
    else:
        yield from loader


def _eps(bound) -> float:
    return float(bound.epsilon)


def run_config(config: Config, setting: Setting, seed: int) -> dict:
    """One row of the table: trains ``config`` with canaries and audits it."""
    started = time.perf_counter()
    row = {
        "config": config.name,
        "audits": config.audits,
        "grad_sample_mode": config.mode,
        "sampling": "poisson" if config.poisson else "shuffle",
        "insert_at": config.insert_at,
        "seed": seed,
        "m": setting.m,
        "m_every": setting.m_every,
        "steps": setting.steps,
        "sample_rate": setting.sample_rate,
        "noise_multiplier": setting.sigma,
        "max_grad_norm": setting.max_grad_norm,
        "delta": setting.delta,
        "confidence": 0.95,
    }
    try:
        trained = train(config, setting, seed)
    except Unavailable as why:
        row.update(status="not run", reason=str(why), verdict="not run", wall_seconds=time.perf_counter() - started)
        return row
    except Exception as error:  # one broken configuration is a row of the table, not the end of the suite
        row.update(
            status="failed",
            reason=f"{type(error).__name__}: {error}",
            verdict="failed",
            wall_seconds=time.perf_counter() - started,
        )
        return row
    result = trained.sampled.audit(delta=setting.delta)
    row.update(
        status="ran",
        reason=None,
        claim_epsilon=result.claim_epsilon,
        claim_source=result.claim_source,
        opacus_epsilon=result.opacus_epsilon,
        opacus_accountant=result.opacus_accountant,
        pld_epsilon=result.pld_epsilon,
        score=result.score,
        included=result.included,
        one_run=_eps(result.one_run),
        one_run_fdp=_eps(result.one_run_fdp),
        exceeds_claim=dict(result.exceeds_claim),
        verdict="exceeds the claim" if result.exceeds_claim["one_run_fdp"] else "consistent",
        notes=list(result.notes),
        optimizer=type(trained.optimizer).__name__,
        train_accuracy=trained.accuracy,
    )
    if trained.every is not None:
        every = trained.every.audit(delta=setting.delta)
        order = _audit.one_run_order(
            every.scores, every.members, delta=setting.delta, family="gaussian", guesses="with-one-sided"
        )
        row["every"] = {
            "m": every.m,
            "included": every.included,
            "claim_epsilon": every.claim_epsilon,
            "claim_source": every.claim_source,
            "one_run_fdp": _eps(every.one_run_fdp),
            "one_run_order_gaussian": _eps(order),
            "order_assumes": order.assumes,
            # Pre-declared: the order-statistics bound (valid under its assumption, which the claim implies).
            "verdict": "exceeds the claim" if _eps(order) > every.claim_epsilon else "consistent",
        }
    if not config.poisson:
        row["notes"].append("the claim is Opacus's Poisson accounting of shuffled batches, not a proven bound")
    if config.mode == "ghost":
        row["notes"].append("canaries enter after clipping: a clipping bug cannot show in this row")
    if config.secure == "noise":
        row["notes"].append(
            "secure_mode's noise path on torch's PRNG (torchcsprng absent); sampling is not secure"
        )
    row["train_seconds"] = trained.seconds
    row["wall_seconds"] = time.perf_counter() - started
    return row


def run_suite(
    configs: Optional[Sequence[str]] = None,
    seeds: Sequence[int] = (0, 1, 2),
    setting: Setting = DEFAULT,
    on_row: Optional[Callable[[dict], None]] = None,
) -> SuiteResult:
    """Runs each configuration (all of :data:`CONFIGS` by default) once per
    seed; ``on_row`` is called with each row as it finishes."""
    names = [c.name for c in CONFIGS] if configs is None else list(configs)
    unknown = [n for n in names if n not in _BY_NAME]
    if unknown:
        raise ValueError(f"unknown configuration(s) {', '.join(unknown)}; expected some of {', '.join(_BY_NAME)}")
    if setting.m + setting.m_every > setting.parameters:
        raise ValueError(
            f"m + m_every = {setting.m + setting.m_every} canaries need as many weights; the model has "
            f"{setting.parameters} (raise hidden or features)"
        )
    started = time.perf_counter()
    rows = []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        warnings.filterwarnings("ignore", message=".*Optimal order is the (largest|smallest) alpha.*")
        for seed in seeds:
            for name in names:
                row = run_config(_BY_NAME[name], setting, seed)
                rows.append(row)
                if on_row is not None:
                    on_row(row)
    meta = {
        "setting": dataclasses.asdict(setting),
        "parameters": setting.parameters,
        "seeds": list(seeds),
        "opacus": opacus.__version__,
        "torch": torch.__version__,
        "dpaudit": _dpaudit_version,
        "threads": torch.get_num_threads(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "wall_seconds": time.perf_counter() - started,
    }
    return SuiteResult(rows=tuple(rows), meta=meta)


def _parse(argv):
    ap = argparse.ArgumentParser(
        prog="python -m dpaudit.opacus.suite",
        description="Train a small model under each Opacus configuration with Dirac canaries; "
        "audit each in one run.",
        epilog="Exit status: 0 when every configuration ran or could not run here (its row says why), 1 when a "
        "configuration failed (its row gives the error), 2 on bad arguments. A verdict 'exceeds the claim' "
        "is a result, not an error.",
    )
    ap.add_argument("--quick", action="store_true", help="a tiny setting (seconds per configuration)")
    ap.add_argument("--configs", help=f"comma-separated subset of {','.join(_BY_NAME)} (default: all)")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (one row per configuration and seed)")
    ap.add_argument("--m", type=int, help="sampled canaries per run")
    ap.add_argument("--m-every", type=int, help="every-step canaries per run (0: none)")
    ap.add_argument("--steps", type=int, help="logical steps per run")
    ap.add_argument("--noise-multiplier", type=float, help="σ of every run")
    ap.add_argument("--delta", type=float, help="δ of the claims and bounds")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--out-dir", help="write opacus-suite.json, opacus-suite.svg and opacus-suite.md there")
    ap.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parse(argv)
    setting = QUICK if args.quick else DEFAULT
    overrides = {
        "m": args.m,
        "m_every": args.m_every,
        "steps": args.steps,
        "sigma": args.noise_multiplier,
        "delta": args.delta,
    }
    for name, value in overrides.items():
        if value is not None:
            least = 0 if name == "m_every" else 1
            if name in ("m", "m_every", "steps") and value < least:
                print(f"error: --{name.replace('_', '-')} must be ≥ {least}, got {value}", file=sys.stderr)
                return 2
            setting = dataclasses.replace(setting, **{name: value})
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        print(f"error: --seeds takes comma-separated integers, got {args.seeds!r}", file=sys.stderr)
        return 2
    configs = None if args.configs is None else [c.strip() for c in args.configs.split(",") if c.strip()]
    torch.set_num_threads(args.threads)

    def progress(row):
        print(f"  {row['config']} (seed {row['seed']}): {row['verdict']}, {row['wall_seconds']:.1f} s", file=sys.stderr)

    try:
        result = run_suite(configs, seeds, setting, on_row=progress)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        result.write(args.out_dir)
    print(result.to_json() if args.json else result.table())
    failed = [f"{r['config']} (seed {r['seed']})" for r in result.rows if r["status"] == "failed"]
    if failed:
        print(f"error: {', '.join(failed)} failed; the table gives the errors", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
