"""The Python package against the CLI and against JAX-Privacy, in one run on
one machine (issue 30's measurements; numbers in benches/RESULTS.md).

    python3 -m venv /work/jaxenv && /work/jaxenv/bin/pip install jax-privacy==2.0.0   # outside the repository
    /work/jaxenv/bin/pip install ./python
    cargo build --release -p dpaudit-cli -p dpaudit-cli-torch   # through ./dev
    /work/jaxenv/bin/python benches/python_bench.py --cli target/release/dpaudit [--jax]

1. 10^7 scores: `dpaudit.audit.eps_delta` from NumPy arrays (the whole call,
   arrays to bound) against the CLI's compute time for the same bound on the
   same scores (its own timing with DPAUDIT_TIMINGS=1: the bound, after the
   NPY file has been read).
2. 10^8 scores: the eps-delta bound from Python (arrays in memory) and from the
   CLI (an NPY file in the page cache), wall time and peak memory.
3. With --jax: dpaudit against JAX-Privacy 2.0's CanaryScoreAuditor on the same
   arrays — time and bound of the Clopper–Pearson ε, GDP, one-run and f-DP
   one-run (the peer's defaults; dpaudit's defaults).

Timings are medians of --repeat runs; scores are members N(1, 1) and
non-members N(0, 1).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import dpaudit

DELTA = 1e-5


def rows(n, mu, seed):
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.normal(mu, 1.0, n // 2), rng.normal(0.0, 1.0, n - n // 2)])
    members = np.arange(n) < n // 2
    order = rng.permutation(n)
    return np.ascontiguousarray(scores[order]), np.ascontiguousarray(members[order])


def timed(fn, repeat):
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def cli(binary, *args):
    """Wall seconds and peak RSS (MiB) of one CLI run (via /usr/bin/time)."""
    t = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M", binary, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t
    rss = int(out.stderr.strip().splitlines()[-1]) / 1024
    return out, wall, rss


def cli_compute(binary, path, repeat):
    """Median CLI wall, and the median of its own timings (DPAUDIT_TIMINGS):
    reading the file, and computing the bound."""
    full, read, bound = [], [], []
    eps = None
    env = dict(os.environ, DPAUDIT_TIMINGS="1")
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run([binary, "estimate", "--method", "eps-delta", "--scores", path, "--delta", "1e-5",
                              "--json"], capture_output=True, text=True, env=env, check=True)
        full.append(time.perf_counter() - t)
        eps = json.loads(out.stdout)["epsilon"]
        line = next(l for l in out.stderr.splitlines() if l.startswith("timings:"))
        parts = line.replace(",", "").split()
        read.append(float(parts[2]))
        bound.append(float(parts[5]))
    return eps, statistics.median(full), statistics.median(read), statistics.median(bound)


def section_1e7(args, tmp):
    n = 10_000_000
    scores, members = rows(n, 1.0, 1)
    path = os.path.join(tmp, "s1e7.npy")
    np.save(path, np.column_stack([scores, members.astype(np.float64)]).astype("<f8"))
    eps_cli, full, read, compute = cli_compute(args.cli, path, args.repeat)
    bound, py = timed(lambda: dpaudit.audit.eps_delta(scores, members, delta=DELTA), args.repeat)
    assert bound.epsilon == eps_cli, (bound.epsilon, eps_cli)
    print(f"10^7 scores, eps-delta (bonferroni): Python {py:.3f} s from NumPy (the whole call); CLI {full:.3f} s "
          f"wall, of which {read:.3f} s reading the NPY and {compute:.3f} s computing the bound; "
          f"ratio Python / CLI compute {py / compute:.3f}; the same ε {bound.epsilon:.6f}")


def section_1e8(args, tmp):
    n = 100_000_000
    scores, members = rows(n, 1.0, 2)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    bound, py = timed(lambda: dpaudit.audit.eps_delta(scores, members, delta=DELTA), args.repeat)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    path = os.path.join(tmp, "s1e8.npy")
    np.save(path, np.column_stack([scores, members.astype(np.float64)]).astype("<f8"))
    walls, rss = [], 0
    for _ in range(args.repeat):
        out, wall, rss = cli(args.cli, "estimate", "--method", "eps-delta", "--scores", path, "--delta", "1e-5",
                             "--json")
        walls.append(wall)
    eps_cli = json.loads(out.stdout)["epsilon"]
    assert bound.epsilon == eps_cli, (bound.epsilon, eps_cli)
    print(f"10^8 scores, eps-delta (bonferroni): Python {py:.2f} s from NumPy (peak RSS {after:.0f} MiB; "
          f"{before:.0f} MiB before the bound, generating the arrays); CLI {statistics.median(walls):.2f} s wall on the NPY, "
          f"peak RSS {rss:.0f} MiB; ε {bound.epsilon:.4f}")


def section_jax(args):
    from jax_privacy import auditing

    print("\ndpaudit (defaults) against JAX-Privacy 2.0.0 CanaryScoreAuditor (its defaults), same arrays:")
    print("| n per class | mu | estimator | dpaudit s | peer s | time ratio peer/dpaudit | dpaudit ε | peer ε | "
          "bound ratio dpaudit/peer |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.jax_ns:
        for mu in (1.0, 2.0):
            scores, members = rows(2 * n, mu, 3)
            a = auditing.CanaryScoreAuditor(scores[members], scores[~members])
            cases = [
                ("Clopper–Pearson ε", lambda: dpaudit.audit.eps_delta(scores, members, delta=DELTA).epsilon,
                 lambda: a.epsilon_clopper_pearson(0.05, DELTA)),
                ("GDP ε", lambda: dpaudit.audit.gdp(scores, members, delta=DELTA).epsilon,
                 lambda: a.epsilon_from_gdp(0.05, DELTA)),
                ("one-run ε", lambda: dpaudit.audit.one_run(scores, members, delta=DELTA).epsilon,
                 lambda: a.epsilon_one_run(0.05, DELTA)),
                ("f-DP one-run ε", lambda: dpaudit.audit.one_run_fdp(scores, members, delta=DELTA).epsilon,
                 lambda: a.epsilon_one_run_fdp(0.05, DELTA)),
            ]
            for name, ours, theirs in cases:
                e_us, t_us = timed(ours, 1)
                e_them, t_them = timed(theirs, 1)
                ratio = e_us / e_them if e_them > 0 else float("nan")
                print(f"| {n} | {mu} | {name} | {t_us:.3f} | {t_them:.3f} | {t_them / t_us:.1f} | {e_us:.3f} | "
                      f"{e_them:.3f} | {ratio:.3f} |", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", required=True, help="the dpaudit binary (release)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--jax", action="store_true", help="also compare with JAX-Privacy 2.0 (must be importable)")
    p.add_argument("--jax-ns", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000])
    p.add_argument("--skip-1e8", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        section_1e7(args, tmp)
        if not args.skip_1e8:
            section_1e8(args, tmp)
    if args.jax:
        section_jax(args)


if __name__ == "__main__":
    sys.exit(main())
