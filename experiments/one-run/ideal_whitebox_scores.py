#!/usr/bin/env python3
"""The white-box Dirac score of Steinke, Nasr & Jagielski 2023 (§4.1) without any other record: what the
one-run audit can reach at a DP-SGD setting (q, T, σ) when nothing but the mechanism moves the canary's coordinate.

A Dirac canary C·e_d included in the run is sampled in each of T steps with probability q; every step adds
N(0, σ²C²) to coordinate d. Its score θ₀[d] − θ_T[d], in units of η·C/normaliser, is therefore
Binomial(T, q) + N(0, σ²T) for a member and N(0, σ²T) for a non-member. Writes one CSV (score, member) per
setting of the paper's Fig. 6 (De et al. 2022's q, T, σ; docs/reproductions.md §3), m = 5,000 canaries each
included with probability ½, for `dpaudit estimate --method one-run`.

    experiments/one-run/ideal_whitebox_scores.py OUT_DIR [SEED]
"""
import math
import random
import sys

# ε: (σ, T), q = 4096 / 50,000 (De et al. 2022, WRN-16-4 on CIFAR-10).
SETTINGS = {1: (10.0, 875), 2: (6.0, 1125), 4: (4.0, 1593), 8: (3.0, 2468)}
Q = 4096 / 50000
M = 5000


def main() -> None:
    out = sys.argv[1]
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    for eps, (sigma, steps) in SETTINGS.items():
        with open(f"{out}/ideal-eps{eps}.csv", "w", encoding="utf-8") as f:
            f.write("score,member\n")
            for _ in range(M):
                member = rng.random() < 0.5
                sampled = sum(rng.random() < Q for _ in range(steps)) if member else 0
                f.write(f"{sampled + rng.gauss(0.0, sigma * math.sqrt(steps))!r},{int(member)}\n")


if __name__ == "__main__":
    main()
