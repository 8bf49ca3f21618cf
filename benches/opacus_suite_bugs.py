#!/usr/bin/env python3
"""The Opacus suite (`python -m dpaudit.opacus.suite`) with a bug seeded inside Opacus 1.6.

Runs the suite's configurations at its default setting (or `--quick`) while Opacus is patched the
way the tests patch it (`python/tests/torch/test_opacus.py`, `seed_bug`: `noise-off`, `noise-quarter`,
`clipping-bypassed`; the accountant keeps σ, so the claim is unchanged). Ghost clipping's optimizer
binds `_generate_noise` in its own module, so the noise bugs are seeded there too. Prints the suite's
table and writes its JSON to `--out` (measurements for docs/library-audits.md, "The Opacus suite").

    OMP_NUM_THREADS=1 python benches/opacus_suite_bugs.py --bug noise-quarter --out noise-quarter.json
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python", "tests", "torch"))
from test_opacus import BUGS, seed_bug  # noqa: E402

from dpaudit.opacus import suite  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bug", choices=BUGS, required=True)
    ap.add_argument("--configs", default=None, help="comma-separated subset (default: all)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="write the JSON there")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="Secure RNG turned off")
    torch.set_num_threads(1)
    configs = None if args.configs is None else args.configs.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    with pytest.MonkeyPatch.context() as patch:
        seed_bug(patch, args.bug)
        if args.bug in ("noise-off", "noise-quarter"):
            import opacus.optimizers.optimizer_fast_gradient_clipping as fast

            scale = 0.0 if args.bug == "noise-off" else 0.25
            generate = fast._generate_noise
            def scaled(std, reference, *a, **k):
                return generate(std * scale, reference, *a, **k)

            patch.setattr(fast, "_generate_noise", scaled)
        result = suite.run_suite(configs, seeds, suite.QUICK if args.quick else suite.DEFAULT)
    print(f"seeded bug: {args.bug}")
    print(result.table())
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(result.to_json() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
