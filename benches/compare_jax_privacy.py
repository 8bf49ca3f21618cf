"""dpaudit's default bounds against JAX-Privacy 2.0's CanaryScoreAuditor on the
same scores (see benches/RESULTS.md, "Comparison with JAX-Privacy 2.0").

Needs a virtualenv with jax-privacy==2.0.0 (kept outside the repository) and
dpaudit's `bound_npy` example built in release:

    python3 -m venv /work/jaxenv && /work/jaxenv/bin/pip install jax-privacy==2.0.0
    cargo build --release -p dpaudit-audit --example bound_npy
    /work/jaxenv/bin/python benches/compare_jax_privacy.py \\
        --bin $CARGO_TARGET_DIR/release/examples/bound_npy --trials 5

Scores: members N(mu, 1), non-members N(0, 1), n of each, rows shuffled; the
one-run methods read the same 2n rows as the canaries of one run (member =
included). delta = 1e-5, confidence 0.95 (significance 0.05).

`--coverage` instead checks the peer's policies for validity on Laplace and
Gaussian scores of known epsilon (the setting where choosing among many
nearly optimal thresholds is most optimistic). `--reuse-peer FILE` re-runs
only dpaudit's side against the peer results saved by an earlier run.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.stats
from jax_privacy import auditing

DELTA = 1e-5
SIGNIFICANCE = 0.05


def gdp_epsilon(mu, delta):
    """epsilon at delta of mu-GDP (Dong, Roth & Su 2019, Cor. 2.13)."""
    if mu <= 0:
        return 0.0
    f = lambda e: (scipy.stats.norm.cdf(-e / mu + mu / 2)
                   - math.exp(e) * scipy.stats.norm.cdf(-e / mu - mu / 2) - delta)
    lo, hi = 0.0, 1.0
    while f(hi) > 0:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return lo


# JAX-Privacy 2.0.0's estimators: (key, fn(auditor, seed, significance,
# delta)). `cp` is two-sided (its one-sided bound is never larger: the same
# Clopper-Pearson limits, one direction fewer); `multi-split` uses 20 splits.
JAX_STRATEGIES = ("bonferroni", "split", "multi-split")


def jax_strategy(name, seed):
    return {"bonferroni": auditing.Bonferroni(),
            "split": auditing.Split(seed=seed),
            "multi-split": auditing.MultiSplit(num_samples=20, seed=seed)}[name]


def jax_estimators():
    out = {}
    for s in JAX_STRATEGIES:
        out[f"cp/{s}"] = lambda a, seed, sig, d, s=s: a.epsilon_clopper_pearson(
            sig, d, one_sided=False, threshold_strategy=jax_strategy(s, seed))
        out[f"one_run/{s}"] = lambda a, seed, sig, d, s=s: a.epsilon_one_run(
            sig, d, threshold_strategy=jax_strategy(s, seed))
        out[f"one_run_fdp/{s}"] = lambda a, seed, sig, d, s=s: a.epsilon_one_run_fdp(
            sig, d, threshold_strategy=jax_strategy(s, seed))
    out["gdp"] = lambda a, seed, sig, d: a.epsilon_from_gdp(sig, d)
    out["raw_counts"] = lambda a, seed, sig, d: a.epsilon_raw_counts(delta=d, one_sided=False)
    return out


def peer(members, nonmembers, seed, delta=DELTA, significance=SIGNIFICANCE, only=None):
    """Every JAX-Privacy bound and threshold strategy on one data set
    (`only == "gdp"`: its GDP estimator alone, which is fast)."""
    a = auditing.CanaryScoreAuditor(members, nonmembers)
    keys = ["gdp"] if only == "gdp" else [k for k in jax_estimators() if k != "raw_counts"]
    return {k: float(jax_estimators()[k](a, seed, significance, delta)) for k in keys}


def save_scores(path, scores, member):
    """An `(N, 2)` little-endian float64 NPY of `[score, member]` rows, the
    input of dpaudit's `bound_npy`."""
    np.save(path, np.column_stack([scores, member]).astype("<f8"))


def run_dpaudit(binary, files, delta=DELTA, methods=None):
    """dpaudit's bounds on each NPY file through `bound_npy`, one dict per
    file; `methods` (names as on the command line, `METHOD[:SELECTION]`)
    defaults to every lower-bound method at its default selection."""
    cmd = [binary] + (["--methods", ",".join(methods)] if methods else []) + [str(delta), *files]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def comparison(args):
    mus = [float(x) for x in args.mus.split(",")]
    ns = [int(n) for n in args.ns.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files, meta = [], []
        for n in ns:
            for mu in mus:
                for t in range(args.first_trial, args.first_trial + args.trials):
                    rng = np.random.default_rng([n, int(mu * 10), t])
                    m = rng.normal(mu, 1.0, n)
                    o = rng.normal(0.0, 1.0, n)
                    order = rng.permutation(2 * n)
                    path = os.path.join(tmp, f"n{n}-mu{mu}-t{t}.npy")
                    save_scores(path, np.concatenate([m, o])[order],
                                np.concatenate([np.ones(n), np.zeros(n)])[order])
                    files.append(path)
                    meta.append((n, mu, t, m, o))
        start = time.time()
        ours = run_dpaudit(args.bin, files)
        print(f"dpaudit: {time.time() - start:.1f} s for {len(files)} data sets",
              file=sys.stderr)
        start = time.time()
        saved = {}
        if args.reuse_peer:
            with open(args.reuse_peer) as f:
                saved = {(r["n"], r["mu"], r["trial"]): r["peer"] for r in json.load(f)}
        for (n, mu, t, m, o), us in zip(meta, ours):
            them = saved.get((n, mu, t)) or peer(m, o, seed=t, only=args.only)
            rows.append({"n": n, "mu": mu, "trial": t, "ours": us, "peer": them})
        print(f"JAX-Privacy: {time.time() - start:.1f} s", file=sys.stderr)
    with open(args.json, "w") as f:
        json.dump(rows, f)
    table(rows)


def mean_se(v):
    v = np.asarray(v, dtype=float)
    return v.mean(), (v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else 0.0)


def table(rows):
    cells = sorted({(r["n"], r["mu"]) for r in rows})
    if "cp/bonferroni" not in rows[0]["peer"]:
        gdp_table(rows, cells)
        return
    families = [
        ("(eps, delta) region", "eps_delta", "cp"),
        ("one-run (Steinke et al.)", "one_run", "one_run"),
        ("one-run f-DP, Gaussian", "one_run_fdp_gaussian", "one_run_fdp"),
    ]
    for title, ours_key, peer_key in families:
        print(f"\n### {title}\n")
        print("| n per class | mu | true eps(1e-5) | dpaudit default | peer bonferroni "
              "| peer split | peer multi-split | peer best valid | dpaudit - peer best |")
        print("|---|---|---|---|---|---|---|---|---|")
        for n, mu in cells:
            rs = [r for r in rows if r["n"] == n and r["mu"] == mu]
            us = mean_se([r["ours"][ours_key]["epsilon"] for r in rs])
            sel = rs[0]["ours"][ours_key]["selection"]
            them = {s: mean_se([r["peer"][f"{peer_key}/{s}"] for r in rs])
                    for s in ("bonferroni", "split", "multi-split")}
            best = max(them, key=lambda s: them[s][0])
            diff = mean_se([r["ours"][ours_key]["epsilon"] - r["peer"][f"{peer_key}/{best}"]
                            for r in rs])
            fmt = lambda x: f"{x[0]:.3f} ± {x[1]:.3f}"
            print(f"| {n} | {mu} | {gdp_epsilon(mu, DELTA):.3f} | {fmt(us)} ({sel}) | "
                  f"{fmt(them['bonferroni'])} | {fmt(them['split'])} | {fmt(them['multi-split'])} | "
                  f"{best} | {fmt(diff)} |")
    print("\n### GDP\n")
    print("| n per class | mu | true eps(1e-5) | dpaudit default (mu lower bound) | peer epsilon_from_gdp |")
    print("|---|---|---|---|---|")
    for n, mu in cells:
        rs = [r for r in rows if r["n"] == n and r["mu"] == mu]
        us = mean_se([r["ours"]["gdp"]["epsilon"] for r in rs])
        mu_us = mean_se([r["ours"]["gdp"]["mu"] for r in rs])
        them = mean_se([r["peer"]["gdp"] for r in rs])
        print(f"| {n} | {mu} | {gdp_epsilon(mu, DELTA):.3f} | {us[0]:.3f} ± {us[1]:.3f} "
              f"(mu {mu_us[0]:.3f}) | {them[0]:.3f} ± {them[1]:.3f} |")


def gdp_table(rows, cells):
    """GDP only: dpaudit's default against the peer's epsilon_from_gdp, with
    how often each is above the truth (the peer maximises |mu|, so it is not
    valid where the signal is weak) and the ratio of the means."""
    print("\n### GDP\n")
    print("| n per class | mu | true eps(1e-5) | dpaudit default | above truth | peer epsilon_from_gdp "
          "| above truth | dpaudit / peer |")
    print("|---|---|---|---|---|---|---|---|")
    for n, mu in cells:
        rs = [r for r in rows if r["n"] == n and r["mu"] == mu]
        truth = gdp_epsilon(mu, DELTA)
        us = mean_se([r["ours"]["gdp"]["epsilon"] for r in rs])
        them = mean_se([r["peer"]["gdp"] for r in rs])
        over_us = sum(r["ours"]["gdp"]["epsilon"] > truth + 1e-9 for r in rs)
        over_them = sum(r["peer"]["gdp"] > truth + 1e-9 for r in rs)
        ratio = us[0] / them[0] if them[0] > 0 else float("nan")
        print(f"| {n} | {mu} | {truth:.3f} | {us[0]:.3f} ± {us[1]:.3f} | {over_us}/{len(rs)} "
              f"| {them[0]:.3f} ± {them[1]:.3f} | {over_them}/{len(rs)} | {ratio:.3f} |")


def coverage(args):
    """Peer policies on Laplace scores of known epsilon: P[bound > eps]."""
    eps0, n, trials = 1.0, 2000, args.trials
    for conf in (0.6, 0.95):
        sig = 1 - conf
        bad = {}
        for t in range(trials):
            rng = np.random.default_rng([7, t])
            m = rng.laplace(eps0, 1.0, n)
            o = rng.laplace(0.0, 1.0, n)
            a = auditing.CanaryScoreAuditor(m, o)
            for name, s in (("bonferroni", auditing.Bonferroni()),
                            ("split", auditing.Split(seed=t))):
                e = max(a.epsilon_clopper_pearson(sig, 0.0, one_sided=sided,
                                                  threshold_strategy=s)
                        for sided in (True, False))
                bad[name] = bad.get(name, 0) + (e > eps0)
        se3 = 3 * math.sqrt(sig * (1 - sig) / trials)
        for name, k in bad.items():
            print(f"confidence {conf}: peer CP {name}, Laplace eps0 = {eps0}, n = {n}: "
                  f"P[bound > eps0] = {k / trials:.3f} (beta = {sig:.2f}, 3 s.e. = {se3:.3f}, "
                  f"{trials} trials)")
    # One-run: m = 2000 canaries of one run (1000 in, 1000 out). Laplace
    # scores are pure eps0-DP, so eps0 bounds eps at any delta; Gaussian
    # scores (mu = 1) are mu-GDP, epsilon(1e-5) = 4.377.
    conf, sig = 0.6, 0.4
    for label, fn, draw, truth in (
        ("one-run (Steinke)", "epsilon_one_run", lambda r: (r.laplace(eps0, 1, 1000), r.laplace(0, 1, 1000)), eps0),
        ("one-run f-DP", "epsilon_one_run_fdp", lambda r: (r.normal(1, 1, 1000), r.normal(0, 1, 1000)), gdp_epsilon(1.0, DELTA)),
    ):
        k = 0
        runs = max(trials // 3, 1)
        for t in range(runs):
            m, o = draw(np.random.default_rng([11, t]))
            e = getattr(auditing.CanaryScoreAuditor(m, o), fn)(sig, DELTA)
            k += e > truth
        se3 = 3 * math.sqrt(sig * (1 - sig) / runs)
        print(f"confidence {conf}: peer {label} bonferroni: P[bound > {truth:.3f}] = {k / runs:.3f} "
              f"(beta = {sig:.2f}, 3 s.e. = {se3:.3f}, {runs} trials)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", help="dpaudit's bound_npy example (release)")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--first-trial", type=int, default=0, help="seed of the first data set per cell")
    p.add_argument("--ns", default="1000,10000,100000", help="scores per class, comma-separated")
    p.add_argument("--mus", default="0,0.5,1,2,3", help="member shifts mu, comma-separated")
    p.add_argument("--only", choices=["gdp"], help="run only the peer's GDP estimator (fast)")
    p.add_argument("--json", default="/tmp/compare_jax_privacy.json")
    p.add_argument("--coverage", action="store_true")
    p.add_argument("--table-from", help="print the tables of saved --json files (comma-separated)")
    p.add_argument("--reuse-peer", help="take the peer's results from a saved --json file "
                   "(the data sets are regenerated from the same seeds)")
    args = p.parse_args()
    if args.table_from:
        rows = []
        for path in args.table_from.split(","):
            with open(path) as f:
                rows.extend(json.load(f))
        table(rows)
    elif args.coverage:
        coverage(args)
    else:
        comparison(args)


if __name__ == "__main__":
    main()
