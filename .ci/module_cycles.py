#!/usr/bin/env python3
"""Fails when the top-level modules of a crate import each other in a circle.

A module `m` of crate `c` (`crates/c/src/m.rs` or `crates/c/src/m/`) depends on
`n` when its code (not comments, not its `#[cfg(test)] mod tests`) names
`crate::n`. Every crate's dependency graph must be acyclic (ARCHITECTURE.md).
"""
import os
import re
import sys


def graph(src):
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(root, name)
                top = os.path.relpath(path, src)[:-3].split(os.sep)[0]
                if top not in ("lib", "main"):
                    files.setdefault(top, []).append(path)
    deps = {m: set() for m in files}
    for m, paths in files.items():
        for path in paths:
            text = re.split(r"#\[cfg\(test\)\]\s*mod tests", open(path, encoding="utf-8").read())[0]
            code = "\n".join(l for l in text.split("\n") if not l.strip().startswith("//"))
            names = re.findall(r"crate::([a-z_0-9]+)", code)
            for group in re.findall(r"use crate::\{([^}]*)\}", code):
                names += re.findall(r"\b([a-z_0-9]+)\b", group)
            deps[m] |= {n for n in names if n in deps and n != m}
    return deps


def cycles(deps):
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


bad = False
for crate in sorted(os.listdir("crates")):
    src = os.path.join("crates", crate, "src")
    if os.path.isdir(src):
        deps = graph(src)
        for comp in cycles(deps):
            bad = True
            edges = ", ".join(f"{v} -> {sorted(deps[v] & set(comp))}" for v in comp)
            print(f"crates/{crate}: modules import each other in a circle: {edges}", file=sys.stderr)
sys.exit(1 if bad else 0)
