#!/usr/bin/env python3
"""Fails when a document names a repository path that does not exist.

Usage: `python3 .ci/doc_paths.py [FILE ...]` (default `ARCHITECTURE.md`), from the repository root.

A path is a backticked token (`like/this.rs`) that starts with a top-level folder of the
repository (`crates/`, `python/`, `docs/`, `.ci/`, `experiments/`, `benches/`, `tests/`, `build/`,
…: every folder at the root that git tracks), or is a file at the root (`dev`, `Cargo.toml`).
A placeholder (`crates/audit/src/<stat>.rs`, `tests/cli_<name>.rs`) or a glob
(`crates/audit/tests/coverage_*.rs`) must match, up to its first placeholder or star, an existing
folder and, with the star, at least one file; `{a,b}` is expanded. A token ending in `.rs`,
`.py`, `.sh` or `.cpp` that starts nowhere in the repository is an error too, so that a file is
always named from the root. Exit status 1 with one line per missing path (file:line: path).
"""
import glob
import os
import re
import subprocess
import sys

SOURCE_SUFFIXES = (".rs", ".py", ".sh", ".cpp")


def roots():
    """(top-level folders, top-level files) that git tracks, or that exist when git is absent."""
    try:
        names = subprocess.run(
            ["git", "ls-files"], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = os.listdir(".")
    dirs = {n.split("/")[0] for n in names if "/" in n}
    files = {n for n in names if "/" not in n}
    return dirs, files


def expand(token):
    """`a/{b,c}.rs` → [`a/b.rs`, `a/c.rs`]."""
    m = re.search(r"\{([^{}]*)\}", token)
    if not m:
        return [token]
    return [x for part in m.group(1).split(",") for x in expand(token[: m.start()] + part + token[m.end():])]


def exists(path):
    if "<" in path or "*" in path:
        cut = min(i for i in (path.find("<"), path.find("*")) if i >= 0)
        folder = path[: path.rfind("/", 0, cut) + 1] or "."
        if not os.path.isdir(folder):
            return False
        if "*" in path and "<" not in path:
            return bool(glob.glob(path))
        return True
    return os.path.exists(path.rstrip("/")) and (not path.endswith("/") or os.path.isdir(path))


def missing(doc, dirs, files):
    """[(line, token)] of the paths `doc` names that do not exist."""
    out = []
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    # Backticked spans; fenced code blocks are drawings, not paths.
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for m in re.finditer(r"`([^`\n]+)`", text):
        token = m.group(1).strip()
        if " " in token:
            continue
        head = token.split("/")[0]
        named_from_root = ("/" in token and head in dirs) or token in files
        if not named_from_root and not token.endswith(SOURCE_SUFFIXES):
            continue
        line = text.count("\n", 0, m.start()) + 1
        for path in expand(token):
            if not named_from_root or not exists(path):
                out.append((line, path))
    return out


def main(argv):
    dirs, files = roots()
    bad = False
    for doc in argv[1:] or ["ARCHITECTURE.md"]:
        for line, path in missing(doc, dirs, files):
            bad = True
            print(f"{doc}:{line}: `{path}` does not exist (name paths from the repository root)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
