"""The Opacus suite's result: the table as text (Markdown), JSON and SVG.

Pure Python (no torch): :class:`SuiteResult` holds the rows that
``dpaudit.opacus.suite`` produced. The SVG is a plain table written by hand
(no plotting dependency), the verdict cells that exceed the claim in red, as
the CLI's figures mark a statement that fails.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Optional
from xml.sax.saxutils import escape

_VERDICT_NOTE = (
    "verdict: the f-DP one-run bound (pre-declared, 95 %) against the claim; one-run beside it; "
    "order-Gaussian assumes independent Gaussian canary channels (every-step canaries only)"
)


def _num(x: Optional[float], digits: int = 2) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and not math.isfinite(x):
        return "∞" if x > 0 else "n/a"
    return f"{x:.{digits}f}"


def _cells(row: dict) -> list:
    ran = row.get("status") == "ran"
    every = row.get("every")
    note = row.get("reason") if not ran else "; ".join(row.get("notes", []))
    return [
        f"{row['config']} (seed {row['seed']})",
        _num(row.get("claim_epsilon")) if ran else "—",
        _num(row.get("one_run")) if ran else "—",
        _num(row.get("one_run_fdp")) if ran else "—",
        row["verdict"],
        f"{_num(every['claim_epsilon'])} / {_num(every['one_run_fdp'])} / {_num(every['one_run_order_gaussian'])}"
        if ran and every
        else "—",
        every["verdict"] if ran and every else "—",
        f"{row['m']} / {row['m_every']} / {row['steps']}",
        _num(row.get("train_accuracy"), 3) if ran else "—",
        f"{row['wall_seconds']:.1f}",
        note or "",
    ]


_HEADER = [
    "configuration",
    "claimed ε (Opacus)",
    "one-run",
    "f-DP one-run",
    "verdict",
    "every-step: claim / f-DP / order-Gaussian",
    "every-step verdict",
    "m / m every / steps",
    "train acc.",
    "wall s",
    "note",
]


@dataclasses.dataclass(frozen=True)
class SuiteResult:
    """The suite's rows (one per configuration and seed, dicts as in the
    JSON) and ``meta`` (setting, versions, date, wall time)."""

    rows: tuple
    meta: dict

    def row(self, config: str, seed: Optional[int] = None) -> dict:
        """The row of ``config`` (and ``seed``, if given)."""
        for row in self.rows:
            if row["config"] == config and (seed is None or row["seed"] == seed):
                return row
        raise KeyError(f"no row for configuration {config!r}" + ("" if seed is None else f", seed {seed}"))

    def to_dict(self) -> dict:
        return {"meta": dict(self.meta), "rows": [dict(r) for r in self.rows]}

    def to_json(self) -> str:
        def finite(x):
            if isinstance(x, float) and not math.isfinite(x):
                return None
            if isinstance(x, dict):
                return {k: finite(v) for k, v in x.items()}
            if isinstance(x, list):
                return [finite(v) for v in x]
            return x

        return json.dumps(finite(self.to_dict()), indent=2, ensure_ascii=False)

    def _caption(self) -> str:
        m = self.meta
        s = m["setting"]
        return (
            f"Opacus {m['opacus']}, torch {m['torch']}, dpaudit {m['dpaudit']}, {m['date']}; MLP "
            f"{s['features']}-{s['hidden']}-{s['classes']} ({m['parameters']} weights), {s['records']} synthetic "
            f"records, q = {s['batch'] / s['records']:g}, σ = {s['sigma']:g}, C = {s['max_grad_norm']:g}, "
            f"δ = {s['delta']:g}; {m['threads']} torch thread(s), {m['wall_seconds']:.0f} s in all"
        )

    def table(self) -> str:
        """The table as Markdown, with a caption line and the verdict's rule."""
        lines = [self._caption(), _VERDICT_NOTE, "", "| " + " | ".join(_HEADER) + " |"]
        lines.append("|" + "---|" * len(_HEADER))
        for row in self.rows:
            lines.append("| " + " | ".join(c.replace("|", "/") for c in _cells(row)) + " |")
        return "\n".join(lines)

    def svg(self) -> str:
        """The table as an SVG document."""
        body = [[str(c) for c in _cells(r)] for r in self.rows]
        widths = []
        for k, head in enumerate(_HEADER):
            longest = max([len(head)] + [len(r[k]) for r in body])
            widths.append(min(longest, 60) * 6.6 + 14)  # long notes are cut at 60 characters
        x0, row_h, top = 10.0, 22.0, 64.0
        width = x0 * 2 + sum(widths)
        height = top + row_h * (len(body) + 1) + 30
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="11">',
            '<rect width="100%" height="100%" fill="white"/>',
            f'<text x="{x0}" y="22" font-size="14">{escape("dpaudit: the Opacus suite")}</text>',
            f'<text x="{x0}" y="40" fill="#555">{escape(self._caption())}</text>',
            f'<text x="{x0}" y="56" fill="#555">{escape(_VERDICT_NOTE)}</text>',
        ]
        for i, cells in enumerate([_HEADER] + body):
            y = top + row_h * i
            fill = "#eeeeee" if i == 0 else ("#fafafa" if i % 2 else "white")
            out.append(f'<rect x="{x0}" y="{y:.0f}" width="{sum(widths):.0f}" height="{row_h:.0f}" fill="{fill}"/>')
            x = x0
            for k, cell in enumerate(cells):
                if not cell:
                    x += widths[k]
                    continue
                text = cell if len(cell) <= 60 else cell[:59] + "…"
                attrs = ' font-weight="bold"' if i == 0 else ""
                if i > 0 and cell == "exceeds the claim":
                    attrs = ' fill="#c00000" font-weight="bold" class="warning"'
                out.append(f'<text x="{x + 6:.0f}" y="{y + 15:.0f}"{attrs}>{escape(text)}</text>')
                x += widths[k]
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def write(self, out_dir: str) -> dict:
        """Writes ``opacus-suite.json``, ``.svg`` and ``.md`` to ``out_dir``; returns their paths."""
        paths = {ext: os.path.join(out_dir, f"opacus-suite.{ext}") for ext in ("json", "svg", "md")}
        with open(paths["json"], "w", encoding="utf-8") as f:
            f.write(self.to_json() + "\n")
        with open(paths["svg"], "w", encoding="utf-8") as f:
            f.write(self.svg())
        with open(paths["md"], "w", encoding="utf-8") as f:
            f.write(self.table() + "\n")
        return paths

    def __repr__(self) -> str:
        return f"<dpaudit SuiteResult: {len(self.rows)} rows>\n{self.table()}"
