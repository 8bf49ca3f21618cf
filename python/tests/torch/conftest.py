"""What the tests that need torch share.

Each module that needs Opacus skips itself with ``pytest.importorskip("opacus")``
(the reason names the missing module); this file silences, for every test in
this folder, the two notices Opacus 1.6 prints on the small models they train,
which say nothing about the audit: a full backward hook on a first layer whose
input needs no gradient, and ``secure_mode`` being off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
OPACUS_NOTICES = (
    "ignore:Full backward hook is firing:UserWarning",
    "ignore:Secure RNG turned off:UserWarning",
)


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            for notice in OPACUS_NOTICES:
                item.add_marker(pytest.mark.filterwarnings(notice))
