"""Member arrays that NumPy calls boolean but whose bytes are not 0/1
(`u8.view(bool)`, `np.fromfile(..., dtype=bool)` of a 0/255 mask) are read
as NumPy reads them: any non-zero byte is a member (issue 41). Before, they
were read as Rust `bool` (undefined behaviour): counts came out wrong and
255 bytes panicked."""

import numpy as np
import pytest

import dpaudit
from conftest import canary_rows, gaussian_rows

DELTA = 1e-5

METHODS = [
    lambda s, m: dpaudit.audit.eps_delta(s, m, delta=DELTA),
    lambda s, m: dpaudit.audit.gdp(s, m, delta=DELTA),
    lambda s, m: dpaudit.audit.one_run(s, m, delta=DELTA),
    lambda s, m: dpaudit.audit.one_run_fdp(s, m, delta=DELTA),
    lambda s, m: dpaudit.audit.one_run(s, m, delta=DELTA, selection="multi-split", splits=3),
]


def dirty(members, byte):
    """`members` as a bool view of bytes 0 and `byte` (and a few other non-zero bytes)."""
    raw = members.astype(np.uint8) * np.uint8(byte)
    raw[np.flatnonzero(members)[::7]] = 2
    raw[np.flatnonzero(members)[1::7]] = 128
    view = raw.view(bool)
    assert view.dtype == bool and set(np.unique(raw)) > {0, 1} - {1}
    return view


@pytest.mark.parametrize("byte", [1, 2, 255])
@pytest.mark.parametrize("method", range(len(METHODS)))
def test_non_zero_bytes_are_members(byte, method):
    scores, members = canary_rows(1000, 1.0, seed=4)
    m = dirty(members, byte)
    clean = METHODS[method](scores, members)
    ours = METHODS[method](scores, m)
    assert ours.metrics.members == np.count_nonzero(m) == members.sum()
    assert ours == clean
    assert ours.epsilon == clean.epsilon


def test_fromfile_mask(tmp_path):
    scores, members = gaussian_rows(500, 1.0, seed=5)
    path = tmp_path / "mask.bin"
    (members.astype(np.uint8) * 255).tofile(path)
    m = np.fromfile(path, dtype=bool)
    assert m.view(np.uint8).max() == 255
    assert dpaudit.audit.metrics(scores, m).members == np.count_nonzero(m) == 500
    assert dpaudit.audit.eps_delta(scores, m, delta=DELTA) == dpaudit.audit.eps_delta(scores, members, delta=DELTA)
    assert dpaudit.audit.panoramia(scores, m, scores, m) == dpaudit.audit.panoramia(
        scores, members, scores, members)
    b = dpaudit.audit.one_run(scores, m, delta=DELTA)
    assert b.plot().startswith("<svg") and "<svg" in b.histogram()


def test_strided_dirty_view():
    scores, members = canary_rows(600, 1.0, seed=6)
    raw = np.zeros((600, 2), dtype=np.uint8)
    raw[:, 0] = members * 255
    view = raw.view(bool)[:, 0]
    assert not view.flags.c_contiguous
    assert dpaudit.audit.one_run(scores, view, delta=DELTA) == dpaudit.audit.one_run(scores, members, delta=DELTA)
