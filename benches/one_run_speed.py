"""The one-run bound against eps-delta on the same rows, from NumPy (issue 41;
numbers in benches/RESULTS.md, "Audit statistics").

    /tmp/pyv/bin/python benches/one_run_speed.py 1e7 3    # rows, calls per bound

Rows: each a member with probability 1/2 (the one-run design), members N(1, 1),
non-members N(0, 1), NumPy seed 0. Prints each call's wall time and the bound.
"""

import sys
import time

import numpy as np

import dpaudit

n = int(float(sys.argv[1]))
reps = int(sys.argv[2])
rng = np.random.default_rng(0)
members = rng.random(n) < 0.5
scores = rng.normal(0, 1, n) + 1.0 * members
calls = (
    ("eps_delta", lambda: dpaudit.audit.eps_delta(scores, members, delta=1e-5)),
    ("one_run", lambda: dpaudit.audit.one_run(scores, members, delta=1e-5)),
    ("one_run_bonferroni", lambda: dpaudit.audit.one_run(scores, members, delta=1e-5, selection="bonferroni")),
)
for name, call in calls:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        bound = call()
        times.append(time.perf_counter() - t)
    print(name, " ".join(f"{t:.2f}" for t in times), "eps", bound.epsilon, flush=True)
