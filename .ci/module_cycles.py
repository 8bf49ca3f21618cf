#!/usr/bin/env python3
"""Fails when the source files of a crate import each other in a circle.

Usage: `python3 .ci/module_cycles.py [CRATES_DIR]` (default `crates`); exit status 1 and one
message per circle, naming its files and one reference per edge, when any circle is found.

The nodes are the files: every `.rs` file under `CRATES_DIR/*/src` (its module path follows
from its place: `lib.rs`/`main.rs` is the crate root, `a/mod.rs` and `a.rs` are `a`,
`a/b.rs` is `a::b`). A file depends on another when its code names an item of the other:

- every path of a `use` declaration (private, `pub`, `pub(crate)`; in a function body or at
  the top), groups and renames included, whether it starts with `crate::`, `super::`,
  `self::` or the name of a child module (`pub use child::Item;` in a `mod.rs`);
- every path in the code that starts with `crate::`, `super::`, `self::` or a child module's
  name (`crate::nn::Adam::new(…)`, `quality::check(…)`, `super::FORMAT`).

The edge goes to the file that *defines* the named item. A path through an import (a facade
such as `pub use store::Stage;` in `mod.rs`, or a `use` in the file it names) is followed to
the file whose `fn`/`struct`/`enum`/`trait`/`type`/`const`/`static`/`mod` defines the name,
so `use super::Stage` in a sibling depends on `store.rs`, not on the facade; the facade
itself depends on `store.rs` through its own `use`. A path naming a module (`use
crate::task;`) depends on that module's file. An item the script cannot find (an
external re-export, a macro) depends on the file of the module that the path reached.

Parent and child: declaring `mod child;` (or `pub mod child;`) is not an import, so a
parent that only declares its children does not depend on them; a parent that calls or
re-exports a child's items (`child::f()`, `pub use child::Item`) does, and a child that uses
its parent's own items (`super::Run`, `crate::SomeFn` defined in `lib.rs`) depends on the
parent. Both together are a circle: the shared items belong in a lower file of their own.

Not code: comments (doc comments and their intra-doc links included), string and char
literals, and every item under `#[cfg(test)]` (unit tests may import anything). An inline
`mod name { … }` is part of its file; `super::` inside it is the file's own module.

Every crate's file graph must be acyclic (ARCHITECTURE.md, "Architecture invariants"). A
circle listed in ALLOWED (exactly that set of files) is printed as a warning instead.
Tests: `.ci/tests/test_module_cycles.py`.
"""
import os
import re
import sys

# Circles tolerated for now, each exactly as a set of files relative to CRATES_DIR's parent
# (none today). A circle that grows or changes is an error again.
ALLOWED: list = []

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
DEF_RE = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|union|mod)\s+(" + IDENT + r")"
    r"|\bmacro_rules!\s*(" + IDENT + r")"
)
CHILD_RE = re.compile(r"(?:^|[^\w:])mod\s+(" + IDENT + r")\s*;")


def blank(text, start, end):
    """`text` with [start, end) replaced by spaces, newlines kept (positions stay lines)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def strip_non_code(text):
    """Comments and string/char literals blanked out, positions and line numbers kept."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            wipe(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        elif c == "'":
            m = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'").match(text, i)
            if m:
                wipe(i, m.end())
                i = m.end()
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def item_end(code, i):
    """End of the item that starts at `i` (after its attributes): its `;` or closing brace."""
    depth = 0
    for j in range(i, len(code)):
        c = code[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and c == "}":
                return j + 1
        elif c == ";" and depth == 0:
            return j + 1
    return len(code)


def strip_cfg_test(code):
    """Every item under `#[cfg(test)]` blanked out."""
    while True:
        m = re.search(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", code)
        if not m:
            return code
        j = m.end()
        while True:  # further attributes of the same item
            a = re.compile(r"\s*#\s*\[").match(code, j)
            if not a:
                break
            j = item_end(code, a.end() - 1)
        code = blank(code, m.start(), item_end(code, j))


def inline_modules(code):
    """(start, end, name) of each inline `mod name { … }` block."""
    found = []
    for m in re.finditer(r"(?:^|[^\w:])mod\s+(" + IDENT + r")\s*\{", code):
        found.append((m.end() - 1, item_end(code, m.end() - 1), m.group(1)))
    return found


def parse_use_tree(tree):
    """[(segments, alias)] of one `use` tree; a glob ends its segments with `*`."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", tree.strip())
    out = []

    def split_top(body):
        parts, depth, start = [], 0, 0
        for i, c in enumerate(body):
            depth += {"{": 1, "}": -1}.get(c, 0)
            if c == "," and depth == 0:
                parts.append(body[start:i])
                start = i + 1
        parts.append(body[start:])
        return [p for p in parts if p.strip()]

    def walk(s, prefix):
        if "{" in s:  # the first brace of a subtree always opens its group
            head, _, rest = s.partition("{")
            for part in split_top(rest[: rest.rfind("}")]):
                walk(part, prefix + [p for p in head.split("::") if p])
            return
        alias = None
        m = re.fullmatch(r"(.*?)\s+as\s+(" + IDENT + r")", s.strip())
        if m:
            s, alias = m.group(1), m.group(2)
        segs = [p.strip() for p in s.split("::") if p.strip()]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        out.append((prefix + segs, alias))

    walk(tree.lstrip(":"), [])
    return out


def module_path(rel):
    """Module path of a file relative to `src`."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


class Crate:
    def __init__(self, src, label):
        self.src, self.label = src, label
        self.file_of = {}  # module path (files and inline modules) -> file label
        self.defs = {}  # module path -> names defined there
        self.imports = {}  # module path -> {name: absolute segments}
        self.globs = {}  # module path -> [absolute segments of glob imports]
        self.children = {}  # module path -> names of child modules
        self.refs = {}  # file label -> [(module path, segments, line, text)]
        for root, _, names in os.walk(src):
            for name in sorted(names):
                if name.endswith(".rs"):
                    path = os.path.join(root, name)
                    self.read(path, module_path(os.path.relpath(path, src)))

    def read(self, path, mod):
        label = os.path.join(self.label, os.path.relpath(path, self.src))
        with open(path, encoding="utf-8") as f:
            code = strip_cfg_test(strip_non_code(f.read()))
        blocks = inline_modules(code)

        def context(pos):
            inner = [(s, name) for s, e, name in blocks if s <= pos < e]
            return mod + tuple(name for _, name in sorted(inner))

        for m in [mod] + [context(s + 1) for s, _, _ in blocks]:
            self.file_of[m] = label
            self.defs.setdefault(m, set())
            self.imports.setdefault(m, {})
            self.globs.setdefault(m, [])
            self.children.setdefault(m, set())
        for m in CHILD_RE.finditer(code):
            self.children[context(m.start(1))].add(m.group(1))
        for s, _, name in blocks:
            self.children[context(s - 1)].add(name)
        for m in DEF_RE.finditer(code):
            self.defs[context(m.start())].add(m.group(1) or m.group(2))
        refs = self.refs.setdefault(label, [])
        uses = []
        reexports = []
        for m in re.finditer(r"(?<![\w$])(pub\s*(?:\([^)]*\)\s*)?)?use\s+((?:::)?[A-Za-z_{][^;]*);", code):
            uses.append((m.start(), m.end()))
            ctx = context(m.start())
            line = code.count("\n", 0, m.start()) + 1
            for segs, alias in parse_use_tree(m.group(2)):
                absolute = self.absolute(ctx, segs)
                if absolute is None:
                    continue
                ref = (ctx, absolute, line, "::".join(segs))
                child = absolute[: len(ctx) + 1]
                if m.group(1) and len(absolute) > len(ctx) + 1 and child[:-1] == ctx and child[-1] in self.children[ctx]:
                    reexports.append((alias or absolute[-1], ref))
                else:
                    refs.append(ref)
                if segs and segs[-1] == "*":
                    self.globs[ctx].append(absolute[:-1])
                elif absolute:
                    self.imports[ctx][alias or absolute[-1]] = absolute
        for a, b in uses:
            code = blank(code, a, b)
        # A parent's re-export of its own child's item is the item's public face, like
        # `mod child;`: an edge only when the parent's own code names the item too.
        for name, ref in reexports:
            if name == "*" or re.search(r"(?<![\w$])" + re.escape(name) + r"(?!\w)", code):
                refs.append(ref)
        for m in re.finditer(r"(?<![\w$:])(" + IDENT + r")((?:\s*::\s*" + IDENT + r")+)", code):
            ctx = context(m.start())
            segs = [m.group(1)] + re.findall(IDENT, m.group(2))
            absolute = self.absolute(ctx, segs)
            if absolute is not None:
                line = code.count("\n", 0, m.start()) + 1
                refs.append((ctx, absolute, line, "::".join(segs)))

    def absolute(self, ctx, segs):
        """Absolute module path of `segs` seen from module `ctx`, or None if outside the crate."""
        if not segs:
            return None
        head = segs[0]
        if head == "crate":
            return tuple(segs[1:])
        if head in ("super", "self"):
            base = list(ctx)
            rest = list(segs)
            while rest and rest[0] in ("super", "self"):
                if rest.pop(0) == "super":
                    if not base:
                        return None
                    base.pop()
            return tuple(base + rest)
        if head in self.children.get(ctx, ()):
            return tuple(ctx) + tuple(segs)
        return None

    def resolve(self, path, depth=0):
        """(file, found) of the item `path` names: the file defining it if found."""
        k = len(path)
        while k > 0 and path[:k] not in self.file_of:
            k -= 1
        mod, rest = path[:k], path[k:]
        if mod not in self.file_of:
            return None, False
        if not rest or depth > 12:
            return self.file_of[mod], True
        name = rest[0]
        if name in self.defs[mod]:
            return self.file_of[mod], True
        target = self.imports[mod].get(name)
        if target is not None and target != path:
            file, found = self.resolve(target + rest[1:], depth + 1)
            if file is not None:
                return file, found
        for glob in self.globs[mod]:
            if glob != mod:
                file, found = self.resolve(glob + rest, depth + 1)
                if found:
                    return file, found
        return self.file_of[mod], False

    def graph(self):
        """{file: {file it depends on: first (line, path text) naming it}}."""
        deps = {f: {} for f in self.refs}
        for file, refs in self.refs.items():
            for _, absolute, line, text in refs:
                if absolute and absolute[-1] == "*":
                    absolute = absolute[:-1]
                target, _ = self.resolve(absolute)
                if target is not None and target != file:
                    deps[file].setdefault(target, (line, text))
        return deps


def cycles(deps):
    """The strongly connected components with more than one file (Tarjan), each sorted."""
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

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def check(crates_dir, allowed=()):
    """(errors, warnings): one message per circle of files."""
    errors, warnings = [], []
    for crate in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, crate, "src")
        if not os.path.isdir(src):
            continue
        label = os.path.join(os.path.basename(os.path.normpath(crates_dir)), crate, "src")
        deps = Crate(src, label).graph()
        for comp in cycles(deps):
            edges = "\n".join(
                f"    {v} -> {w} (line {deps[v][w][0]}: {deps[v][w][1]})"
                for v in comp
                for w in sorted(deps[v])
                if w in comp
            )
            if set(comp) in [set(a) for a in allowed]:
                warnings.append(f"allowed circle (ALLOWED in .ci/module_cycles.py):\n{edges}")
            else:
                errors.append(f"{label}: files import each other in a circle:\n{edges}")
    return errors, warnings


def main(argv):
    errors, warnings = check(argv[1] if len(argv) > 1 else "crates", ALLOWED)
    for message in warnings:
        print("warning: " + message, file=sys.stderr)
    for message in errors:
        print(message, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
