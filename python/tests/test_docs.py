"""Every number `docs/python.md` shows is printed by its own examples: the
page's `>>>` blocks run as doctests (in a scratch directory, for the plots
they write), so a changed bound or a stale number fails here."""

import doctest
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def test_the_python_page_prints_what_it_shows(tmp_path, monkeypatch):
    if not DOC.exists():
        pytest.skip(f"{DOC} is not there (the suite runs from a checkout)")
    monkeypatch.chdir(tmp_path)
    result = doctest.testfile(
        str(DOC),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        report=True,
    )
    # The walk-through's examples are there (a page that lost its `>>>`
    # prompts would pass vacuously) and every one prints what the page says.
    assert result.attempted >= 20, result
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {DOC} print something else"
