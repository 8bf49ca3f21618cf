#!/usr/bin/env python3
"""Audit an Opacus training run of LeNet-5 on Fashion-MNIST in one run.

Trains LeNet-5 (tanh, average pooling; 61,706 parameters for 10 classes, as
dpaudit's `lenet5`) with Opacus 1.6 DP-SGD on the real Fashion-MNIST, twice:

- `poisson`: Poisson sampling (`poisson_sampling=True`), as Opacus accounts it;
- `shuffle`: shuffled fixed-size batches (`poisson_sampling=False`), which
  Opacus still accounts as Poisson sampling with q = 1/len(data_loader).

Each run carries two sets of Dirac gradient canaries (dpaudit.opacus), on
disjoint coordinates, each canary included with probability 1/2:

- `sampled` (`--m`): each canary sampled like a record (Poisson: rate q at each
  step; shuffled: once per epoch at a random step). Opacus's ε is claimed for
  each of them as for a record.
- `every` (`--m-every`, 0 to leave out): each included canary at every step (the
  hidden-state game of Cebere et al. 2024). Its claim is T composed Gaussian
  mechanisms (μ = √T/σ); Opacus's subsampled ε does not apply to it. Each
  included one moves its coordinate by lr·T·C/B ≈ 9 at the defaults, which
  costs accuracy (0.843 without them, 0.776 with 1000).

Canaries enter before clipping, as per-sample gradients of norm 4C that
Opacus's own clip_and_accumulate clips. The score is the harness's default,
`steps-llr`: at each step the noisy sum minus the records' clipped sum at the
canary's coordinate (the canary and the noise, without the training's drift),
combined by the likelihood ratio of the claimed mechanism
(docs/library-audits.md says what it assumes the auditor sees); `--score final`
uses the first and final models only. The bounds are the one-run audit of
Steinke, Nasr & Jagielski 2023 and its f-DP version (Mahloujifar et al. 2024),
at 95 % confidence.

Data: the gz IDX files of the Debian package `dataset-fashion-mnist`
(/usr/share/datasets/fashion-mnist, or `--data-dir`), parsed with numpy.
Randomness: torch's global generator seeded with `--seed` (model init,
Opacus's Poisson sampling, shuffling and noise; secure_mode off, so the model is
not private against whoever knows the seed); the canaries have their own
generator from the same seed.

    .venv/bin/python examples/opacus_lenet_fmnist.py            # 930 s measured on 2 shared CPU cores
    .venv/bin/python examples/opacus_lenet_fmnist.py --quick    # smoke run, 49 s there
    .venv/bin/python examples/opacus_lenet_fmnist.py --json > result.json

Needs `pip install ./python opacus==1.6.0` in the environment.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from opacus import PrivacyEngine
from torch import nn

import dpaudit
from dpaudit.opacus import DiracCanaries

# The benchmarks' LeNet-5 (tanh, average pooling; dpaudit's `lenet5`), one
# definition for the timing rows and this example.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "benches"))
from torch_rows import LeNet5  # noqa: E402

DATA_DIR = "/usr/share/datasets/fashion-mnist"
# Fashion-MNIST training-set pixel mean and standard deviation (of x / 255).
MEAN, STD = 0.2860, 0.3530


def read_idx(path: str) -> np.ndarray:
    """An IDX file (LeCun's MNIST format) of unsigned bytes, gzipped."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes (magic {raw[:4].hex()})")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {body.size} bytes of data, the header says {dims}")
    return body.reshape(dims)


def load(data_dir: str, split: str):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = (torch.from_numpy(images.astype(np.float32) / 255.0) - MEAN) / STD
    return x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(x[i : i + 2000]).argmax(1) == y[i : i + 2000]).sum()) for i in range(0, len(x), 2000))
    model.train()
    return correct / len(x)


def run(sampling: str, args, train, test) -> dict:
    torch.manual_seed(args.seed)
    model = LeNet5()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*train), batch_size=args.batch_size, shuffle=(sampling == "shuffle")
    )
    engine = PrivacyEngine(accountant="prv")
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=args.lr),
        data_loader=loader,
        noise_multiplier=args.noise_multiplier,
        max_grad_norm=args.max_grad_norm,
        poisson_sampling=(sampling == "poisson"),
    )
    sets = {
        "sampled": DiracCanaries(
            optimizer, loader, privacy_engine=engine, m=args.m, insertion="sampled", seed=args.seed
        )
    }
    if args.m_every > 0:
        sets["every"] = DiracCanaries(
            optimizer, loader, privacy_engine=engine, m=args.m_every, insertion="every", seed=args.seed + 1
        )
    started = time.perf_counter()
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        if not args.json:
            print(
                f"  [{sampling}] epoch {epoch + 1}/{args.epochs} done at {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
    train_seconds = time.perf_counter() - started
    acc = accuracy(model, *test)
    audits = {
        name: canaries.audit(delta=args.delta, confidence=args.confidence, score=args.score)
        for name, canaries in sets.items()
    }
    return {
        "sampling": sampling,
        "steps": audits["sampled"].steps,
        "sample_rate": audits["sampled"].sample_rate,
        "expected_batch_size": optimizer.expected_batch_size,
        "opacus_epsilon": audits["sampled"].opacus_epsilon,
        "test_accuracy": acc,
        "train_seconds": train_seconds,
        "audit_seconds": sum(a.audit_seconds for a in audits.values()),
        "audits": audits,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=DATA_DIR)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument(
        "--batch-size", type=int, default=256, help="the expected batch size (Poisson) or batch size (shuffle)"
    )
    ap.add_argument("--noise-multiplier", type=float, default=0.6)
    ap.add_argument("--max-grad-norm", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=2.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--m", type=int, default=5000, help="sampled canaries per run")
    ap.add_argument("--m-every", type=int, default=1000, help="every-step canaries per run (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--score", choices=["steps-llr", "steps-sum", "final"], default="steps-llr", help="the canary score"
    )
    ap.add_argument("--sampling", choices=["both", "poisson", "shuffle"], default="both")
    ap.add_argument("--train-records", type=int, default=None, help="use the first N training records")
    ap.add_argument("--quick", action="store_true", help="smoke run: 10,000 records, 1 epoch, m = 1000 + 500")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if args.quick:
        args.epochs, args.m, args.m_every = 1, 1000, 500
        args.train_records = args.train_records or 10_000
    warnings.filterwarnings("ignore", message="Secure RNG turned off")
    warnings.filterwarnings("ignore", message="Full backward hook is firing")

    started = time.perf_counter()
    train, test = load(args.data_dir, "train"), load(args.data_dir, "test")
    if args.train_records:
        train = (train[0][: args.train_records], train[1][: args.train_records])
    samplings = ["poisson", "shuffle"] if args.sampling == "both" else [args.sampling]
    header = {
        "model": "LeNet-5 (tanh, avg pool), 61,706 parameters",
        "data": f"Fashion-MNIST from {args.data_dir}: {len(train[1])} train / {len(test[1])} test records",
        "torch": torch.__version__,
        "opacus": __import__("opacus").__version__,
        "dpaudit": dpaudit.__version__,
        "threads": torch.get_num_threads(),
        "config": {k: v for k, v in vars(args).items() if k not in ("json", "data_dir")},
    }
    if not args.json:
        print(f"dpaudit.opacus example: {header['model']}, {header['data']}")
        print(
            f"runtime  torch {header['torch']}, opacus {header['opacus']}, dpaudit {header['dpaudit']}, "
            f"{header['threads']} threads"
        )
        print(
            f"config   {args.epochs} epochs, batch {args.batch_size}, σ = {args.noise_multiplier}, "
            f"C = {args.max_grad_norm}, lr = {args.lr}, δ = {args.delta}, seed {args.seed}"
        )
    runs = []
    for sampling in samplings:
        r = run(sampling, args, train, test)
        runs.append(r)
        if not args.json:
            print(
                f"\n{sampling:8s} {r['steps']} steps, q = {r['sample_rate']:.6g}, "
                f"test accuracy {r['test_accuracy']:.4f}, Opacus ε = {r['opacus_epsilon']:.4f}, "
                f"training {r['train_seconds']:.0f} s, audits {r['audit_seconds']:.1f} s"
            )
            for audit in r["audits"].values():
                print(audit)
    total = time.perf_counter() - started
    if args.json:
        for r in runs:
            r["audits"] = {name: a.to_dict() for name, a in r["audits"].items()}
        print(json.dumps({**header, "runs": runs, "wall_seconds": total}, indent=2))
    else:
        print(f"\nwall time {total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
