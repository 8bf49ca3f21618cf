"""Long calls honour Ctrl-C, and absurd multi-splits are refused with an
estimate before any work (issue 41)."""

import _thread
import signal
import threading
import time

import numpy as np
import pytest

import dpaudit
from conftest import canary_rows, gaussian_rows

DELTA = 1e-5


@pytest.mark.parametrize("method", ["eps_delta", "one_run"])
def test_ctrl_c_stops_a_long_multi_split(method):
    # 5000 halvings of 4·10⁴ rows: minutes of work without the interrupt.
    scores, members = (gaussian_rows if method == "eps_delta" else canary_rows)(20_000, 1.0, seed=7)
    fn = getattr(dpaudit.audit, method)
    # Python's own Ctrl-C handler, whatever the process inherited: a job
    # started in the background by a non-interactive shell ignores SIGINT,
    # and then `interrupt_main` does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    t = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fn(scores, members, delta=DELTA, selection="multi-split", splits=5000)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    # Generous: the check runs every 50 ms, between halvings of a few ms each.
    assert time.perf_counter() - t < 10
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
