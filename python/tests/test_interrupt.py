"""Long calls honour Ctrl-C, and absurd multi-splits are refused with an
estimate before any work (issue 41)."""

import _thread
import contextlib
import signal
import threading
import time

import numpy as np
import pytest

import dpaudit
from conftest import canary_rows, gaussian_rows

DELTA = 1e-5


@contextlib.contextmanager
def ctrl_c_after(seconds):
    """Ctrl-C (SIGINT to the main thread) `seconds` into the block, which must
    raise KeyboardInterrupt; returns after asserting it did, within 10 s."""
    # Python's own Ctrl-C handler, whatever the process inherited: a job
    # started in the background by a non-interactive shell ignores SIGINT,
    # and then `interrupt_main` does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(seconds, _thread.interrupt_main)
    t = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    # Generous: the calls check every 50 ms or every few tens of ms.
    assert time.perf_counter() - t < 10


@pytest.mark.parametrize("method", ["eps_delta", "one_run"])
def test_ctrl_c_stops_a_long_multi_split(method):
    # 5000 halvings of 4·10⁴ rows: minutes of work without the interrupt.
    scores, members = (gaussian_rows if method == "eps_delta" else canary_rows)(20_000, 1.0, seed=7)
    fn = getattr(dpaudit.audit, method)
    # The check runs every 50 ms, between halvings of a few ms each.
    with ctrl_c_after(0.3):
        fn(scores, members, delta=DELTA, selection="multi-split", splits=5000)
    # The interpreter and the package still work.
    assert fn(scores[:2000], members[:2000], delta=DELTA).epsilon >= 0


def test_absurd_splits_are_refused_with_an_estimate():
    scores, members = gaussian_rows(1000, 1.0, seed=8)
    t = time.perf_counter()
    with pytest.raises(ValueError, match=r"`splits` = 1000000 is refused: .*row-halvings.*at most 10000 splits"):
        dpaudit.audit.eps_delta(scores, members, delta=DELTA, selection="multi-split", splits=10**6)
    with pytest.raises(ValueError, match="at most 10000 splits for 2000 rows"):
        dpaudit.audit.one_run(scores, members, delta=DELTA, selection="multi-split", splits=10**6)
    # Refused before any work: far quicker than one halving per second.
    assert time.perf_counter() - t < 5


@pytest.mark.parametrize("children", [None, 256])
def test_ctrl_c_stops_a_long_seed_coins(children):
    # 2**28 coins in all, one node or 256 children of 2**20: 256 MiB of flags
    # and about 3-6 s (50-100 M coins/s) if it ran to the end. The output is
    # reserved, not written, up front, so stopped after 0.3 s it holds only
    # the pages of the coins drawn by then. The binding checks for Ctrl-C
    # every 2**22 coins, also inside one node's row.
    count = 2**28 if children is None else 2**20
    # A check every 2**22 coins is every few tens of ms.
    with ctrl_c_after(0.3):
        dpaudit._dpaudit.seed_coins(5, "membership", [0], count, children=children)
    # The interpreter and the binding still work, and drawing in pieces keeps
    # the stream: 2**22 + 5 coins (two pieces) start with the first 1000.
    first = dpaudit._dpaudit.seed_coins(5, "membership", [0], 1000)
    assert np.array_equal(dpaudit._dpaudit.seed_coins(5, "membership", [0], 2**22 + 5)[:1000], first)
    rows = dpaudit._dpaudit.seed_coins(5, "membership", [0], 2**21 + 3, children=3)
    assert np.array_equal(rows[2, :1000], dpaudit._dpaudit.seed_coins(5, "membership", [0, 2], 1000))
