"""A comparison of judges (:mod:`.compare`) as ``pairscope compare`` prints it — text and JSON —
and as the window draws it: the forest plot of B − A with its CI, overall and per slice
(matplotlib without pyplot or Qt, loaded when first drawn)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .compare import FLIP_KINDS, Comparison, Matrix, Paired, _num

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The ``pairscope compare --json`` document of two runs."""
    consistency = None
    if c.consistency is not None:
        consistency = {
            "per_run": {
                str(run): {"consistent": k, "items": n, "share": _num(k / n if n else None)}
                for run, (k, n) in c.consistency.consistent.items()
            },
            "paired": None if c.consistency.paired is None else c.consistency.paired.as_dict(),
        }
    return {
        "run_a": {"id": c.a.id, "label": c.a.label, "k": c.a.k, "both_orders": c.a.both_orders},
        "run_b": {"id": c.b.id, "label": c.b.label, "k": c.b.k, "both_orders": c.b.both_orders},
        "convention": c.convention,
        "undecided": "counted wrong" if c.undecided_wrong else "left out",
        "bootstrap": {"resamples": c.resamples, "seed": c.seed, "level": c.level},
        "overall": c.overall.as_dict(),
        "slices": [
            {
                "kind": s.kind,
                "value": s.value,
                **s.paired.as_dict(),
                "p_holm": _num(s.p_holm),
                "p_sidak": _num(s.p_sidak),
            }
            for s in c.slices
        ],
        "flips": {kind: [i.ext_id for i in c.items if i.kind == kind] for kind in FLIP_KINDS[:3]},
        "undecided_paired": dict(c.undecided),
        "unscored": c.unscored,
        "only_a": list(c.only_a),
        "only_b": list(c.only_b),
        "consistency": consistency,
        "notes": list(c.notes),
    }


def matrix_dict(m: Matrix) -> dict[str, Any]:
    """The ``pairscope compare --json`` document of three or more runs."""
    return {
        "runs": [{"id": r.id, "label": r.label} for r in m.runs],
        "convention": m.convention,
        "undecided": "counted wrong" if m.undecided_wrong else "left out",
        "pairs": [
            {"a": cell.a, "b": cell.b, **cell.paired.as_dict(), "p_holm": _num(cell.p_holm)}
            for cell in m.cells.values()
        ],
    }


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def pp(x: float | None) -> str:
    """A difference of shares in percentage points, signed."""
    return "n/a" if x is None else f"{100 * x:+.1f} pp"


def ci_text(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}] pp"


def p_text(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _ids(ids: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" … ({len(ids) - limit} more)" if len(ids) > limit else "")


def comparison_lines(c: Comparison) -> list[str]:
    """The ``pairscope compare`` text of two runs."""
    o = c.overall
    basis = "paired items, undecided counted wrong" if c.undecided_wrong else "paired items both runs decided"
    level = f"{100 * c.level:g}%"
    lines = [
        f"A: {c.a.label}",
        f"B: {c.b.label}",
        f"{c.convention} vote; {o.n} {basis}",
        "",
        f"{'':10}{'B right':>10}{'B wrong':>10}",
        f"{'A right':10}{o.both_right:>10}{o.a_only:>10}",
        f"{'A wrong':10}{o.b_only:>10}{o.both_wrong:>10}",
        "",
        f"accuracy: A {pct(o.accuracy_a)}, B {pct(o.accuracy_b)}; B − A {pp(o.difference)},"
        f" {level} CI {ci_text(o.ci)} (paired bootstrap, {c.resamples} resamples, seed {c.seed})",
        f"McNemar exact p = {p_text(o.p)} ({o.a_only} A only right, {o.b_only} B only right)",
    ]
    if not c.undecided_wrong:
        u = c.undecided
        lines.append(f"left out (no majority): A only {u['a']}, B only {u['b']}, both {u['both']}")
    if c.unscored:
        lines.append(f"judged by both without a reference preference: {c.unscored}")
    if c.slices:
        lines += ["", "per slice (B − A, adjusted within each kind: Holm, Šidák):"]
        width = min(28, max(len(s.value) for s in c.slices))
        for s in c.slices:
            q = s.paired
            lines.append(
                f"  {s.kind:<10} {s.value[:width]:<{width}} n={q.n:<5} {pp(q.difference):>9} {ci_text(q.ci):>18}"
                f"  p={p_text(q.p)} holm={p_text(s.p_holm)} sidak={p_text(s.p_sidak)}"
            )
    if c.consistency is not None:
        lines += ["", "consistency across orders (paired items):"]
        for run, (k, n) in c.consistency.consistent.items():
            name = "A" if run == c.a.id else "B"
            lines.append(f"  {name} (run {run}): {k}/{n} consistent ({pct(k / n if n else None)})")
        both = c.consistency.paired
        if both is not None:
            lines.append(
                f"  B − A {pp(both.difference)}, {level} CI {ci_text(both.ci)}, McNemar exact p = {p_text(both.p)}"
            )
    flips = c.flips()
    lines += ["", f"flips: {sum(1 for i in flips if i.kind == FLIP_KINDS[0])} A right B wrong,"
              f" {sum(1 for i in flips if i.kind == FLIP_KINDS[1])} B right A wrong,"
              f" {sum(1 for i in flips if i.kind == FLIP_KINDS[2])} other disagreements"]  # fmt: skip
    for kind in FLIP_KINDS[:3]:
        ids = [i.ext_id for i in flips if i.kind == kind]
        if ids:
            lines.append(f"  {kind}: {_ids(ids)}")
    lines.append(f"items only A judged: {len(c.only_a)}" + (f" ({_ids(c.only_a)})" if c.only_a else ""))
    lines.append(f"items only B judged: {len(c.only_b)}" + (f" ({_ids(c.only_b)})" if c.only_b else ""))
    lines += [f"note: {n}" for n in c.notes]
    return lines


def matrix_lines(m: Matrix) -> list[str]:
    """The ``pairscope compare`` text of three or more runs: every pair, column minus row."""
    lines = [f"{len(m.runs)} runs, {m.convention} vote; each pair on the items both decided" if not m.undecided_wrong
             else f"{len(m.runs)} runs, {m.convention} vote; undecided counted wrong"]  # fmt: skip
    lines += [f"  {r.label}" for r in m.runs]
    lines += ["", "B − A (row A, column B), Holm-adjusted McNemar p over all pairs:"]
    ids = [r.id for r in m.runs]
    lines.append("  " + "run".rjust(6) + "".join(f"{r:>22}" for r in ids))
    for a in ids:
        cells = []
        for b in ids:
            cell = m.cells.get((a, b))
            flip = cell is None and (b, a) in m.cells
            cell = cell or m.cells.get((b, a))
            if cell is None:
                cells.append(f"{'—':>22}")
                continue
            d = cell.paired.difference
            d = None if d is None else (-d if flip else d)
            cells.append(f"{pp(d) + ' p=' + p_text(cell.p_holm):>22}")
        lines.append("  " + f"{a:>6}" + "".join(cells))
    lines += ["", "pairs:"]
    for cell in m.cells.values():
        q = cell.paired
        lines.append(
            f"  run {cell.b} − run {cell.a}: n={q.n}, {pp(q.difference)} CI {ci_text(q.ci)},"
            f" McNemar p={p_text(q.p)}, Holm p={p_text(cell.p_holm)}"
        )
    return lines


# -- the forest plot ---------------------------------------------------------------------------------


def forest_figure(c: Comparison, width: float = 7.0) -> Figure:
    """accuracy(B) − accuracy(A) with its CI, overall and per slice, with the Holm-adjusted p
    beside each row (matplotlib, no pyplot)."""
    from matplotlib.figure import Figure

    from .plots import _literal

    rows: list[tuple[str, Paired, str]] = [("overall", c.overall, f"p={p_text(c.overall.p)}")]
    rows += [(f"{s.kind}: {s.value}", s.paired, f"Holm p={p_text(s.p_holm)}") for s in c.slices]
    fig = Figure(figsize=(width, 1.2 + 0.32 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    if not c.overall.n:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "No items both runs decided", ha="center", va="center", color="#555")
        return fig
    y = np.arange(len(rows))[::-1]
    for yi, (_name, q, _p) in zip(y, rows):
        if q.difference is None:
            continue
        d = 100 * q.difference
        low, high = (d, d) if q.ci is None else (100 * q.ci[0], 100 * q.ci[1])
        colour = "#333" if _name == "overall" else "#4c8bf5"
        ax.errorbar([d], [yi], xerr=[[d - low], [high - d]], fmt="s" if _name == "overall" else "o",
                    color=colour, capsize=3, markersize=5)  # fmt: skip
    ax.axvline(0, color="#999", linewidth=1, linestyle="--")
    ax.set_yticks(y, [f"{_literal(name, 40)} (n={q.n})" for name, q, _p in rows], fontsize="small")
    right = ax.secondary_yaxis("right")
    right.set_yticks(y, [p for _n, _q, p in rows], fontsize="small")
    right.tick_params(length=0)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(f"accuracy B − A, percentage points ({100 * c.level:g}% paired bootstrap CI)", fontsize="small")
    ax.set_title(_literal(f"B: run {c.b.id} ({c.b.model}) vs A: run {c.a.id} ({c.a.model})", 90), fontsize="medium")
    ax.grid(axis="x", color="#eee")
    return fig


__all__ = [
    "ci_text",
    "comparison_dict",
    "comparison_lines",
    "forest_figure",
    "matrix_dict",
    "matrix_lines",
    "p_text",
    "pct",
    "pp",
]
