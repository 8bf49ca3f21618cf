"""dpaudit's valid defaults against every estimator of JAX-Privacy 2.0.0
(`CanaryScoreAuditor`) and opake-auditing 0.16.1 on one grid of one-run data
sets (benches/RESULTS.md, "Peers on the one-run grid"; issue 38).

Needs a virtualenv outside the repository with both peers, and dpaudit's
`bound_npy` example built in release:

    python3 -m venv /work/peersenv
    /work/peersenv/bin/pip install opake-auditing==0.16.1 jax-privacy==2.0.0
    env -u LIBTORCH -u LIBTORCH_USE_PYTORCH cargo build --release -p dpaudit-audit --example bound_npy
    /work/peersenv/bin/python benches/compare_peers.py --bin target/release/examples/bound_npy \\
        --ms 1000,10000 --trials 3

The data. Each data set is one run with m canaries, each included
independently with probability 1/2 (member = included, the design of
Steinke, Nasr & Jagielski 2023); a canary's score is one draw of the
mechanism on its bit b (member b = 1, non-member b = 0):

- `gauss mu`: N(mu * b, 1), the Gaussian mechanism of sensitivity mu: mu-GDP,
  true eps(delta) from Dong, Roth & Su 2022 Cor. 2.13. Gaussian trade-off.
- `laplace b`: Laplace(location b_i, scale b) (shift 1): pure (1/b)-DP; the
  true eps(delta) is the root of delta(eps) = 1 - exp(-(1 - t)/b)/2 -
  e^eps * exp(-t/b)/2 with t = (1 + eps * b)/2 (the privacy loss is
  (|x| - |x - 1|)/b), slightly below 1/b at delta = 1e-5.
- `rr eps0`: randomized response, the score is the output bit, 1 with
  probability e^eps0/(1 + e^eps0) for a member and 1/(1 + e^eps0) for a
  non-member: pure eps0-DP, eps(delta) = ln((p - delta)/(1 - p)), p =
  e^eps0/(1 + e^eps0). Two score values: every threshold cuts a tie.
- `rounded mu`: round(N(mu * b, 1)) (mu = 1), integer scores with ties; a
  post-processing of mu-GDP whose true eps(delta) is computed exactly from
  its discrete distribution (below the GDP value). Not a Gaussian trade-off.

delta = 1e-5, confidence 0.95 everywhere. A figure counts as *valid* in a cell
when its selection is valid at 95 % and, if it converts a Gaussian
(mu-GDP-family) bound to eps, the cell's mechanism has a Gaussian trade-off
curve (the `gauss` cells only). Everything else is shown in the flagged
columns: same-data selection (opake's defaults: the threshold maximising
accuracy on the evaluated labels), JAX-Privacy's `epsilon_from_gdp` (largest
|mu| over thresholds, not valid on weak signals: docs/audit-statistics.md
section 9), its `epsilon_raw_counts` (a point estimate, not a bound), and
Gaussian-family figures in non-Gaussian cells, and JAX-Privacy's
`Bonferroni()` strategy (every `*/bonferroni`): it divides the level by the
number of thresholds left on the Pareto frontier of the labelled (false
negative, true negative) counts, so the family it corrects for is chosen with
the audited labels (its `one_run` bound is above 0 on 175 of 3,000 null data
sets of m = 1000 continuous scores at 95 %: `--coverage gauss:0:1000`).
opake's two estimators are
also run at a valid threshold: chosen by opake's own rule (maximum accuracy)
on a random half of the canaries, bounded with `threshold=` on the other half
(`split`, this harness's wrapper; the bound then has m/2 canaries).

`--coverage KIND:PARAM:M` instead counts, over `--trials` data sets of one
cell, how often each bound is above the true eps (a check of a surprising
single cell).

Each peer call runs in a worker process with a time box (`--timeout`, 120 s);
an estimator that runs over it is skipped for the rest of that m and for every
larger m, and the table says so. The peers run single-threaded.

dpaudit's side is `bound_npy --methods DPAUDIT_METHODS`: a new dpaudit
method is one name added to that list (its validity comes from the bound's
`valid_at_confidence` and `assumes` fields). `one-run-gaussian-scores`
assumes Gaussian scores and is never a default: it is shown only in the
Gaussian table, marked †. The data are seeded, so `--peers none` reruns
dpaudit alone and `--table-from OLD...,NEW` takes dpaudit's figures from the
last file and the peers' from the earlier ones.
"""

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.stats  # noqa: E402

from compare_jax_privacy import (DELTA, SIGNIFICANCE, gdp_epsilon, jax_estimators,  # noqa: E402
                                 mean_se, run_dpaudit, save_scores)

# dpaudit's methods, each at its default selection (bound_npy's names). Add a
# method here, or `METHOD:SELECTION`.
# `one-run-gaussian-scores` assumes Gaussian scores and is never a default: it
# counts only in the Gaussian cells and the table marks it (GAUSSIAN_SCORES).
DPAUDIT_METHODS = ["eps-delta", "gdp", "one-run", "one-run-fdp", "one-run-fdp-gaussian",
                   "one-run-order", "one-run-order-gaussian",
                   "one-run-gaussian-scores"]
GAUSSIAN_SCORES = "one_run_gaussian_scores"

# ---------------------------------------------------------------- mechanisms


def _discrete_epsilon(p, q, delta):
    """eps(delta) of the pair of discrete distributions p, q (both orders)."""
    def d(eps):
        return max(np.maximum(p - math.exp(eps) * q, 0).sum(),
                   np.maximum(q - math.exp(eps) * p, 0).sum()) - delta
    if d(0.0) <= 0:
        return 0.0
    hi = 1.0
    while d(hi) > 0:
        hi *= 2
    return scipy.optimize.brentq(d, 0.0, hi, xtol=1e-12)


def _laplace_epsilon(b, delta):
    def d(eps):
        t = (1 + eps * b) / 2
        return 1 - math.exp(-(1 - t) / b) / 2 - math.exp(eps - t / b) / 2 - delta
    return scipy.optimize.brentq(d, 0.0, 1 / b, xtol=1e-12)


def _rr_p(eps0):
    return math.exp(eps0) / (1 + math.exp(eps0))


def _rounded_pmf(shift):
    k = np.arange(-15, 17)
    return scipy.stats.norm.cdf(k + 0.5 - shift) - scipy.stats.norm.cdf(k - 0.5 - shift)


# kind -> (draw(rng, bits, param), true eps(param, delta), Gaussian trade-off)
MECHANISMS = {
    "gauss": (lambda rng, b, mu: rng.normal(mu * b, 1.0),
              gdp_epsilon, True),
    "laplace": (lambda rng, b, s: rng.laplace(b.astype(float), s),
                _laplace_epsilon, False),
    "rr": (lambda rng, b, e: (rng.random(b.size) < np.where(b, _rr_p(e), 1 - _rr_p(e))).astype(float),
           lambda e, d: _discrete_epsilon(np.array([1 - _rr_p(e), _rr_p(e)]),
                                          np.array([_rr_p(e), 1 - _rr_p(e)]), d),
           False),
    "rounded": (lambda rng, b, mu: np.round(rng.normal(mu * b, 1.0)),
                lambda mu, d: _discrete_epsilon(_rounded_pmf(mu), _rounded_pmf(0.0), d),
                False),
}
GRID = [("gauss", 0.5), ("gauss", 1.0), ("gauss", 2.0), ("gauss", 3.0),
        ("laplace", 1.0), ("laplace", 4.0),
        ("rr", 0.5), ("rr", 1.0), ("rr", 2.0), ("rr", 4.0),
        ("rounded", 1.0)]


def data_set(kind, param, m, trial):
    """Scores and inclusion bits of one run, from a fixed seed."""
    rng = np.random.default_rng([list(MECHANISMS).index(kind), round(param * 1000), m, trial])
    bits = rng.random(m) < 0.5
    return MECHANISMS[kind][0](rng, bits, param), bits


# -------------------------------------------------------------------- peers
# name -> (fn(scores, bits, seed), selection, assumes): selection "valid",
# "same-data", "invalid" or "estimate"; assumes "nothing" or "gaussian".

def _jax(key):
    def fn(scores, bits, seed):
        from jax_privacy import auditing
        a = auditing.CanaryScoreAuditor(scores[bits], scores[~bits])
        return jax_estimators()[key](a, seed, SIGNIFICANCE, DELTA)
    return fn


def _opake_estimate(scores, bits):
    import opake.auditing as oa
    from opake.auditing.types import CoinFlip
    ids = np.arange(scores.size)
    cf = CoinFlip(num_canaries=scores.size, canary_indices=ids, _in_mask=bits,
                  in_indices=ids[bits], out_indices=ids[~bits], dataset_size=scores.size)
    return oa.one_run(oa.canary_scores(scores, canary_indices=ids), coin_flip=cf)


def _opake(method, split):
    def fn(scores, bits, seed):
        if not split:
            est = _opake_estimate(scores, bits)
            return getattr(est, method)().epsilon_at(delta=DELTA, significance=SIGNIFICANCE)
        half = np.random.default_rng(seed).random(scores.size) < 0.5
        choose = _opake_estimate(scores[half], bits[half])
        correct = (choose.n_in - choose.fn_counts) + choose.tn_counts
        threshold = float(choose.thresholds[int(np.argmax(correct))])
        est = _opake_estimate(scores[~half], bits[~half])
        return getattr(est, method)().epsilon_at(delta=DELTA, significance=SIGNIFICANCE,
                                                 threshold=threshold)
    return fn


def peer_estimators():
    out = {}
    for key in jax_estimators():
        family = "gaussian" if key.startswith("one_run_fdp") or key == "gdp" else "nothing"
        selection = {"gdp": "invalid", "raw_counts": "estimate"}.get(key, "valid")
        if key.endswith("/bonferroni"):
            # Its divisor is the number of thresholds on the Pareto frontier
            # of the labelled (FN, TN) counts, a family chosen with the labels.
            selection = "label-chosen"
        out[f"jax/{key}"] = (_jax(key), selection, family)
    for method, family in (("eps_delta", "nothing"), ("gdp", "gaussian")):
        out[f"opake/{method}"] = (_opake(method, False), "same-data", family)
        out[f"opake/{method}/split"] = (_opake(method, True), "valid", family)
    return out


def _worker(conn):
    estimators = peer_estimators()
    import jax_privacy.auditing  # noqa: F401  (imported before the first time box)
    import opake.auditing  # noqa: F401
    import torch
    torch.set_num_threads(1)
    conn.send("ready")
    while (task := conn.recv()) is not None:
        name, path, seed = task
        data = np.load(path)
        start = time.time()
        try:
            value, error = float(estimators[name][0](data[:, 0], data[:, 1] != 0, seed)), None
        except Exception as e:  # a peer's refusal is a result to report
            value, error = None, f"{type(e).__name__}: {e}"
        conn.send((value, time.time() - start, error))


class Worker:
    """One peer process; a call past its time box kills and restarts it."""

    def __init__(self):
        self.ctx = multiprocessing.get_context("spawn")
        self._start()

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        assert self.conn.recv() == "ready"

    def call(self, task, timeout):
        self.conn.send(task)
        if self.conn.poll(timeout):
            return self.conn.recv()
        self.proc.kill()
        self.proc.join()
        self._start()
        return None, None, f"over the {timeout:g} s time box"

    def close(self):
        self.conn.send(None)
        self.proc.join()


# --------------------------------------------------------------------- run

def run(args):
    ms = [int(m) for m in args.ms.split(",")]
    trials = {int(k): int(v) for k, v in (x.split(":") for x in args.trials_at.split(","))} \
        if args.trials_at else {}
    names = list(peer_estimators()) if not args.peers else \
        [] if args.peers == "none" else args.peers.split(",")
    methods = args.methods.split(",") if args.methods else DPAUDIT_METHODS
    rows, skipped = [], {}
    worker = Worker()
    with tempfile.TemporaryDirectory() as tmp:
        for m in ms:
            sets = []
            # Trial by trial over the whole grid, saved after each data set,
            # so that a run stopped early leaves whole trials of every cell.
            for t in range(args.first_trial, args.first_trial + trials.get(m, args.trials)):
                for kind, param in GRID:
                    if args.kinds and kind not in args.kinds.split(","):
                        continue
                    scores, bits = data_set(kind, param, m, t)
                    path = os.path.join(tmp, f"{kind}-{param}-{m}-{t}.npy")
                    save_scores(path, scores, bits)
                    sets.append((kind, param, t, path))
            start = time.time()
            ours = run_dpaudit(args.bin, [s[3] for s in sets], DELTA, methods)
            print(f"m = {m}: dpaudit {time.time() - start:.1f} s for {len(sets)} data sets",
                  file=sys.stderr)
            for (kind, param, t, path), us in zip(sets, ours):
                them = {}
                for name in names:
                    if name in skipped:
                        them[name] = {"error": f"skipped (over the time box at m = {skipped[name]})"}
                        continue
                    value, secs, error = worker.call((name, path, t), args.timeout)
                    if error and error.startswith("over the"):
                        skipped[name] = m
                    them[name] = {"epsilon": value, "seconds": secs, "error": error}
                rows.append({"kind": kind, "param": param, "m": m, "trial": t,
                             "ours": us, "peers": them})
                print(f"  {kind} {param} m={m} t={t}: peers "
                      f"{sum(v.get('seconds') or 0 for v in them.values()):.1f} s", file=sys.stderr)
                with open(args.json, "w") as f:
                    json.dump({"versions": versions(), "rows": rows}, f)
    worker.close()
    return rows


def coverage(args):
    """How often each dpaudit method and each `--peers` estimator is above the
    true eps on `--trials` data sets of one cell (`--coverage KIND:PARAM:M`),
    seeds from `--first-trial`: a check of single surprising cells."""
    kind, param, m = args.coverage.split(":")
    param, m = float(param), int(m)
    truth = MECHANISMS[kind][1](param, DELTA)
    seeds = range(args.first_trial, args.first_trial + args.trials)
    est = peer_estimators()
    with tempfile.TemporaryDirectory() as tmp:
        files, data = [], []
        for t in seeds:
            scores, bits = data_set(kind, param, m, t)
            files.append(os.path.join(tmp, f"{t}.npy"))
            save_scores(files[-1], scores, bits)
            data.append((scores, bits, t))
        ours = run_dpaudit(args.bin, files, DELTA,
                           args.methods.split(",") if args.methods else DPAUDIT_METHODS)
    results = {f"dpaudit/{k}": [o[k]["epsilon"] for o in ours]
               for k, v in ours[0].items() if isinstance(v, dict)}
    for name in args.peers.split(",") if args.peers not in (None, "none") else []:
        results[name] = [est[name][0](s, b, t) for s, b, t in data]
    print(f"{cell_name(kind, param)}, m = {m}, true eps(1e-5) = {truth:.4f}, "
          f"seeds {seeds.start}-{seeds.stop - 1}:")
    for name, v in results.items():
        print(f"  {name}: above the truth in {sum(x > truth for x in v)}/{len(v)}, "
              f"mean {np.mean(v):.3f}")


def versions():
    v = {p: importlib.metadata.version(p) for p in ("jax-privacy", "opake-auditing", "numpy")}
    v["date"] = datetime.date.today().isoformat()
    return v


# ------------------------------------------------------------------- table

def _valid_here(selection, assumes, gaussian_cell):
    return selection == "valid" and (assumes in ("nothing",) or gaussian_cell)


def _ours_entries(row, defaults=True):
    """dpaudit's figures as (name, epsilon, selection, assumes); `defaults`
    leaves out the Gaussian-scores bound (never a default)."""
    out = []
    for key, b in row["ours"].items():
        if defaults and key == GAUSSIAN_SCORES:
            continue
        if isinstance(b, dict) and "epsilon" in b:
            out.append((key, b["epsilon"], "valid" if b["valid_at_confidence"] else "same-data",
                        "nothing" if b["assumes"] == "nothing" else "gaussian"))
    return out


def _peer_entries(row, prefix):
    est = peer_estimators()
    return [(k, v["epsilon"], est[k][1], est[k][2]) for k, v in row["peers"].items()
            if k.startswith(prefix) and v.get("epsilon") is not None]


def _best(rs, entries, keep):
    """The name with the largest mean among the kept entries, and its
    per-data-set values (in row order)."""
    by = {}
    for r in rs:
        for name, eps, sel, ass in entries(r):
            if keep(sel, ass):
                by.setdefault(name, []).append(eps)
    by = {k: v for k, v in by.items() if len(v) == len(rs)}
    if not by:
        return None, None
    name = max(by, key=lambda k: np.mean(by[k]))
    return name, by[name]


def _fmt(name, values, truth=None):
    if name is None:
        return "—"
    mu, se = mean_se(values)
    over = sum(v > truth + 1e-9 for v in values) if truth is not None else 0
    flag = f" ⚠ {over}/{len(values)} above truth" if over else ""
    return f"{mu:.3f} ± {se:.3f} ({name}){flag}"


def cell_name(kind, param):
    return {"gauss": f"Gaussian μ = {param:g}", "laplace": f"Laplace b = {param:g}",
            "rr": f"RR ε₀ = {param:g}", "rounded": f"rounded Gaussian μ = {param:g}"}[kind]


def table(rows, out=sys.stdout):
    cells = []
    for r in rows:
        c = (r["kind"], r["param"], r["m"])
        if c not in cells:
            cells.append(c)
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p("| data set | m | data sets | true ε(1e-5) | dpaudit best valid | JAX-Privacy best valid "
      "| opake best valid | dpaudit − best peer | JAX-Privacy flagged | opake flagged |")
    p("|---|---|---|---|---|---|---|---|---|---|")
    losses = []
    for kind, param, m in sorted(cells, key=lambda c: (GRID.index(c[:2]), c[2])):
        rs = [r for r in rows if (r["kind"], r["param"], r["m"]) == (kind, param, m)]
        gauss = MECHANISMS[kind][2]
        truth = MECHANISMS[kind][1](param, DELTA)
        valid = lambda s, a: _valid_here(s, a, gauss)  # noqa: E731
        flagged = lambda s, a: not _valid_here(s, a, gauss)  # noqa: E731
        ours = _best(rs, _ours_entries, valid)
        jax = _best(rs, lambda r: _peer_entries(r, "jax/"), valid)
        opk = _best(rs, lambda r: _peer_entries(r, "opake/"), valid)
        peers = [x for x in (jax, opk) if x[0] is not None]
        if peers and ours[0] is not None:
            top = max(peers, key=lambda x: np.mean(x[1]))
            d, se = mean_se(np.array(ours[1]) - np.array(top[1]))
            # Below by less than the printed precision is a tie.
            verdict = f"{d:+.3f} ± {se:.3f}" + (" **loses**" if d < -5e-4 else "")
            if d < -5e-4:
                losses.append((cell_name(kind, param), m, ours, top, d, se))
        else:
            verdict = "—"
        p(f"| {cell_name(kind, param)} | {m} | {len(rs)} | {truth:.3f} | {_fmt(*ours, truth)} "
          f"| {_fmt(*jax, truth)} | {_fmt(*opk, truth)} | {verdict} "
          f"| {_fmt(*_best(rs, lambda r: _peer_entries(r, 'jax/'), flagged), truth)} "
          f"| {_fmt(*_best(rs, lambda r: _peer_entries(r, 'opake/'), flagged), truth)} |")
    notes = set()
    every = {k for r in rows for k in r["peers"]}
    for m in {r["m"] for r in rows}:
        ran = {k for r in rows if r["m"] == m for k in r["peers"]}
        notes.update(f"{k} at m = {m}: not run (left out by --peers)" for k in every - ran)
    for r in rows:
        for k, v in r["peers"].items():
            if v.get("error"):
                notes.add(f"{k} at m = {r['m']}: {v['error']}")
    if notes:
        p("\nNot run or refused:\n")
        for n in sorted(notes):
            p(f"- {n}")
    p("\nCells where dpaudit's best valid default is below a peer's best valid figure:\n")
    for name, m, ours, top, d, se in losses:
        p(f"- {name}, m = {m}: dpaudit {ours[0]} {np.mean(ours[1]):.3f} < {top[0]} "
          f"{np.mean(top[1]):.3f} ({d:+.3f} ± {se:.3f})")
    if not losses:
        p("- none")
    gaussian_table(rows, p)
    p("\n† assumes Gaussian scores (never a default; not in the columns above).")
    timing_table(rows, p)


def gaussian_table(rows, p):
    """The Gaussian family's one-run bound against opake's GDP estimator."""
    p("\nGaussian cells, the Gaussian-family one-run bound against opake's GDP estimator:\n")
    p("| data set | m | true ε(1e-5) | dpaudit one-run-fdp-gaussian | dpaudit one-run-order-gaussian "
      "| dpaudit one-run-gaussian-scores † | opake gdp (same-data) "
      "| opake gdp/split (valid) | JAX one_run_fdp best (valid) |")
    p("|---|---|---|---|---|---|---|---|---|")
    for kind, param in GRID:
        if kind != "gauss":
            continue
        for m in sorted({r["m"] for r in rows}):
            rs = [r for r in rows if (r["kind"], r["param"], r["m"]) == (kind, param, m)]
            if not rs:
                continue
            truth = gdp_epsilon(param, DELTA)

            def col(get):
                v = [x for x in map(get, rs) if x is not None]
                some = f" ({len(v)} of {len(rs)} data sets)" if 0 < len(v) < len(rs) else ""
                return f"{np.mean(v):.3f} ± {mean_se(v)[1]:.3f}{some}" if v else "—"
            jx = _best(rs, lambda r: _peer_entries(r, "jax/one_run_fdp/"), lambda s, a: s == "valid")
            p(f"| {cell_name(kind, param)} | {m} | {truth:.3f} "
              f"| {col(lambda r: r['ours'].get('one_run_fdp_gaussian', {}).get('epsilon'))} "
              f"| {col(lambda r: r['ours'].get('one_run_order_gaussian', {}).get('epsilon'))} "
              f"| {col(lambda r: r['ours'].get(GAUSSIAN_SCORES, {}).get('epsilon'))} "
              f"| {col(lambda r: r['peers'].get('opake/gdp', {}).get('epsilon'))} "
              f"| {col(lambda r: r['peers'].get('opake/gdp/split', {}).get('epsilon'))} "
              f"| {_fmt(*jx)} |")


def timing_table(rows, p):
    p("\nSeconds per data set (mean; single thread):\n")
    ms = sorted({r["m"] for r in rows})
    p("| estimator | " + " | ".join(f"m = {m}" for m in ms) + " |")
    p("|---|" + "---|" * len(ms))
    names = list(dict.fromkeys(k for r in rows for k in r["peers"])) + \
        [f"dpaudit/{k}" for k, _, _, _ in _ours_entries(rows[0], defaults=False)]
    for name in names:
        cells = []
        for m in ms:
            if name.startswith("dpaudit/"):
                v = [r["ours"][name[8:]]["seconds"] for r in rows if r["m"] == m]
            else:
                v = [r["peers"].get(name, {}).get("seconds") for r in rows if r["m"] == m]
                v = [x for x in v if x is not None]
            cells.append(f"{np.mean(v):.3g}" if v else "—")
        p(f"| {name} | " + " | ".join(cells) + " |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", help="dpaudit's bound_npy example (release)")
    p.add_argument("--ms", default="1000,10000", help="canaries per run, comma-separated")
    p.add_argument("--trials", type=int, default=3, help="data sets per cell")
    p.add_argument("--first-trial", type=int, default=0, help="seed of the first data set per cell")
    p.add_argument("--trials-at", help="per-m data sets, e.g. 1000000:1")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per peer call")
    p.add_argument("--peers", help="peer estimators to run (default: all), comma-separated; "
                   "`none`: dpaudit only (its results then replace those of earlier "
                   "--table-from files on the same data sets)")
    p.add_argument("--kinds", help="mechanisms of the grid to run (default: all), e.g. gauss,rr")
    p.add_argument("--methods", help="dpaudit methods (default: DPAUDIT_METHODS), comma-separated")
    p.add_argument("--json", default="/tmp/compare_peers.json")
    p.add_argument("--coverage", help="KIND:PARAM:M: how often each bound is above the truth "
                   "over --trials data sets of that cell (no time box)")
    p.add_argument("--table-from", help="print the table of saved --json files (comma-separated)")
    args = p.parse_args()
    if args.coverage:
        coverage(args)
        return
    if args.table_from:
        # The same data set in several files (a rerun of some estimators):
        # one row, each estimator's result from the last file that has one.
        by = {}
        for path in args.table_from.split(","):
            with open(path) as f:
                saved = json.load(f)
            print(f"<!-- {path}: {saved['versions']} -->")
            for r in saved["rows"]:
                old = by.setdefault((r["kind"], r["param"], r["m"], r["trial"]), r)
                # The data are seeded: dpaudit's figures from the last file
                # (a rerun of dpaudit alone, `--peers none`) replace older ones.
                old["ours"] = r["ours"]
                for k, v in r["peers"].items():
                    if v.get("epsilon") is not None or k not in old["peers"]:
                        old["peers"][k] = v
        rows = list(by.values())
    else:
        rows = run(args)
    table(rows)


if __name__ == "__main__":
    main()
