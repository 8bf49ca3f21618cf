"""Every method × selection policy on a few data sets (ties, ±0, up to 10⁶ rows), one JSON line per bound,
to compare two builds byte for byte (issue 41: `cmp before.jsonl after.jsonl`).

    PYTHONPATH=<build A> python benches/bounds_snapshot.py before.jsonl
"""
import json, sys
import numpy as np
import dpaudit
out = open(sys.argv[1], "w")
rng = np.random.default_rng(42)
sets = {}
for n in (200, 3000, 20000, 1_000_000):
    m = rng.random(n) < 0.5
    sets[f"gauss{n}"] = (rng.normal(0, 1, n) + 1.0 * m, m)
m = rng.random(5000) < 0.5
sets["ties"] = (np.round(rng.normal(0, 1, 5000) + m, 1), m)
s = np.where(m, 0.0, -0.0); s[:100] = 1.0
sets["zeros"] = (s, m)
sets["ints"] = (rng.integers(0, 5, 5000).astype(float) + m, m)
for name, (s, m) in sets.items():
    for meth in ("eps-delta", "gdp", "one-run", "one-run-fdp", "one-run-fdp-gaussian"):
        for sel in ("auto", "bonferroni", "split", "multi-split", "same-data"):
            if meth.startswith("one-run-fdp") and len(s) > 100_000:
                continue
            for guesses in (("symmetric", "with-one-sided") if meth.startswith("one-run") else ("symmetric",)):
                try:
                    b = dpaudit._dpaudit.bound(meth, s, m, 1e-5, 0.95, sel, 3, 6, "eps-delta", None, None, guesses)
                    r = b.to_json()
                except ValueError as e:
                    r = "ERR " + str(e)
                out.write(json.dumps([name, meth, sel, guesses, r]) + "\n")
    for meth in ("one-run", "one-run-fdp"):
        for kp, km in ((10, 10), (100, 0)):
            b = dpaudit._dpaudit.bound(meth, s, m, 1e-5, 0.95, "fixed", 0, None, "eps-delta", kp, km)
            out.write(json.dumps([name, meth, "fixed", kp, b.to_json()]) + "\n")
