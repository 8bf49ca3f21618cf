"""Shared fixtures: the CLI binary (for equality with `dpaudit ... --json`)
and deterministic score files."""

import json
import os
import subprocess

import numpy as np
import pytest


@pytest.fixture(scope="session")
def dpaudit_bin():
    """The `dpaudit` binary named by DPAUDIT_BIN (`./dev test` sets it)."""
    path = os.environ.get("DPAUDIT_BIN")
    if not path:
        pytest.skip("DPAUDIT_BIN is not set: the CLI-equality tests need the dpaudit binary")
    if not os.path.exists(path):
        pytest.fail(f"DPAUDIT_BIN={path} does not exist")
    return path


def run_cli(binary, *args):
    """`dpaudit ARGS --json` parsed, or the failed process."""
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    return out


def cli_json(binary, *args):
    out = run_cli(binary, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def gaussian_rows(n, mu, seed):
    """n member scores N(mu, 1) and n non-member scores N(0, 1), shuffled."""
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)])
    members = np.concatenate([np.ones(n, dtype=bool), np.zeros(n, dtype=bool)])
    order = rng.permutation(2 * n)
    return scores[order], members[order]


def canary_rows(m, mu, seed):
    """m canaries of one run, each included with probability 1/2."""
    rng = np.random.default_rng(seed)
    members = rng.random(m) < 0.5
    scores = rng.normal(0.0, 1.0, m) + mu * members
    return scores, members


def write_npy(path, scores, members):
    np.save(path, np.column_stack([scores, members.astype(np.float64)]).astype("<f8"))
    return str(path)
