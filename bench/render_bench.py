"""Response rendering: how long the GUI thread is blocked by one response, whatever its shape.

Each shape is shown through the real ``ResponsePane`` (two responses side by side: the shape
beside a normal answer, so the word diff runs too, as in the window) at 1100×750, offscreen,
each run after an untimed small pair so the cards are reused as when stepping between items.
Columns (medians of ``--runs``, default 5): "1st paint" = ``show_responses`` + the first paint
(``pane.grab()``); "diff" = the pending events after it (the pane diffs in slices on the next
turns of the event loop; the old code diffed inside ``show_responses``); "longest" = the
longest of those slices (one ``processEvents()`` each) or the first paint, i.e. how long the
GUI thread is blocked at once, and "ratio" = that against the
baseline, a normal 300-word Markdown answer; "total" = both; "math" = ``protect_math`` on
the whole text alone. Each shape runs in its own child process with a time limit
(``--limit``, default 60 s): a shape that hangs the old code is reported as "> limit".

Target (issue 16, point 5): "longest" ≤ 100 ms for every shape. For a cut response the last column is the
card's "Show all" (the whole text as plain text, only on demand), median of up to 3.

    python bench/render_bench.py [--runs 5] [--limit 60] [--only SHAPE ...]
    python bench/render_bench.py --widgets-dir /tmp/old/widgets   # measure another copy of
        # widgets/ (e.g. the code before a change, from `git show`), same machine, same run
"""

from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before any Qt import; child processes inherit it

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_util import WORDS, guard_none_refcount, qt_app  # noqa: E402

TARGET_S = 0.100


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}ms"


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def baseline_answer() -> str:
    """A normal ~300-word Markdown answer: paragraphs, a list, emphasis, inline code, math."""
    rng = random.Random(1)
    parts = [
        "## Answer",
        _words(rng, 60).capitalize() + ". There are **three** red circles, `left` of the $x_1$ sign.",
        "\n".join(f"- {_words(rng, 12)}" for _ in range(5)),
        _words(rng, 80).capitalize() + ".",
        "So the answer is **B**: " + _words(rng, 70) + ".",
    ]
    return "\n\n".join(parts)


def table(rows: int, cols: int) -> str:
    rng = random.Random(2)
    head = "| " + " | ".join(f"col {c}" for c in range(cols)) + " |"
    rule = "|" + "---|" * cols
    body = ["| " + " | ".join(_words(rng, 2) for _ in range(cols)) + " |" for _ in range(rows)]
    return "\n".join([head, rule, *body])


def no_space_line(size: int) -> str:
    """Letters and digits only: no line-break opportunity anywhere (a base64 blob's "+" and
    "/" would let Qt break, which hides the quadratic wrap)."""
    rng = random.Random(3)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alphabet) for _ in range(size))


def unmatched_math(size: int) -> str:
    """Inline-math openers that never close, ``\\(`` (most) and ``\\[``, each then a space."""
    rng = random.Random(4)
    return "".join("\\( " if rng.random() < 0.8 else "\\[ " for _ in range(size // 3))


def many_words(size: int) -> str:
    rng = random.Random(5)
    paragraphs, n = [], 0
    while n < size:
        p = _words(rng, 120).capitalize() + "."
        paragraphs.append(p)
        n += len(p) + 2
    return "\n\n".join(paragraphs)[:size]


def code_block(lines: int) -> str:
    rng = random.Random(6)
    body = "\n".join(f"    x{i} = {rng.randint(0, 999)} * y  # {_words(rng, 4)}" for i in range(lines))
    return f"```python\n{body}\n```"


SHAPES = {
    "baseline (300 words)": baseline_answer,
    "table 400×10": lambda: table(400, 10),
    "table 100×30": lambda: table(100, 30),
    "200 KB line, no spaces": lambda: no_space_line(200_000),
    "2 MB line, no spaces": lambda: no_space_line(2_000_000),
    "24 KB unmatched \\( and \\[": lambda: unmatched_math(24_000),
    "10 MB of words": lambda: many_words(10_000_000),
    "code block 20,000 lines": lambda: code_block(20_000),
    # More degenerate shapes seen in model output (loops of one construct):
    "list 3,000 items": lambda: "".join(f"- **Step {i}**: {_words(random.Random(i), 4)}\n" for i in range(3_000)),
    "8,000 entities": lambda: "&amp; " * 8_000,
    "100 KB '*a' (no spaces)": lambda: "*a" * 50_000,
    "2×100 KB different prose": lambda: many_words(100_000),
}
OTHER = {"2×100 KB different prose": lambda: many_words(100_000).replace("e", "o")}


def child(shape: str, runs: int, widgets_dir: str | None) -> dict:
    if widgets_dir:  # resolve pairscope.widgets.* from another copy of widgets/ first
        import pairscope.widgets

        pairscope.widgets.__path__.insert(0, str(Path(widgets_dir).resolve()))
    guard_none_refcount()
    app = qt_app()
    from pairscope.widgets import response_view
    from pairscope.widgets.response_view import ResponsePane, ResponseText

    text = SHAPES[shape]()
    other = OTHER[shape]() if shape in OTHER else baseline_answer().replace("three", "four")
    pane = ResponsePane()
    pane.resize(1100, 750)
    pane.show()
    app.processEvents()
    small = [ResponseText("Response 1", "A small answer."), ResponseText("Response 2", "Another one.")]
    pair = [ResponseText("Response 1", text), ResponseText("Response 2", other)]
    renders, diffs, blocks, totals, maths = [], [], [], [], []
    pending = getattr(pane, "diff_pending", lambda: False)  # older code diffs inside show_responses
    for _ in range(runs):
        pane.show_responses(small)
        pane.grab()
        while pending():
            app.processEvents()
        app.processEvents()
        start = time.perf_counter()
        pane.show_responses(pair)
        pane.grab()
        painted = time.perf_counter()
        slices = []
        while True:  # the deferred word diff: slices of GUI time, one per turn of the loop
            before = time.perf_counter()
            app.processEvents()
            slices.append(time.perf_counter() - before)
            if not pending():
                break
        end = time.perf_counter()
        renders.append(painted - start)
        diffs.append(end - painted)
        blocks.append(max(painted - start, *slices))
        totals.append(end - start)
        t0 = time.perf_counter()
        response_view.protect_math(text)
        maths.append(time.perf_counter() - t0)
    card = pane.cards()[0]
    body = card.body.document()
    shown_chars = body.characterCount()
    full = []
    if getattr(card, "is_cut", lambda: False)():  # "Show all", on demand: the whole text, plain
        for _ in range(min(runs, 3)):
            start = time.perf_counter()
            card.set_show_all(True)
            pane.grab()
            app.processEvents()
            full.append(time.perf_counter() - start)
            card.set_show_all(False)
            app.processEvents()
    return {
        "full": statistics.median(full) if full else None,
        "total": statistics.median(totals),
        "render": statistics.median(renders),
        "diff": statistics.median(diffs),
        "block": statistics.median(blocks),
        "math": statistics.median(maths),
        "chars": len(text),
        "shown_chars": shown_chars,
        "runs": [round(t, 4) for t in blocks],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per shape (child process)")
    parser.add_argument("--only", nargs="*", help="substrings of shape names")
    parser.add_argument("--widgets-dir", help="measure this copy of widgets/ instead of the installed one")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.runs, args.widgets_dir)))
        return
    shapes = [s for s in SHAPES if not args.only or s.startswith("baseline") or any(o in s for o in args.only)]
    print(f"render bench: pair of responses, 1100×750 offscreen, median of {args.runs}; target ≤ 100 ms")
    if args.widgets_dir:
        print(f"widgets from {args.widgets_dir}")
    base = None
    header = (
        f"{'shape':<28} {'chars':>10} {'shown':>9} {'1st paint':>10} {'diff':>9} {'longest':>9} {'ratio':>8}"
        f" {'total':>9} {'math':>9}  target   {'show all':>9}"
    )
    print(header)
    for shape in shapes:
        command = [sys.executable, __file__, "--child", shape, "--runs", str(args.runs)]
        if args.widgets_dir:
            command += ["--widgets-dir", args.widgets_dir]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.limit, check=False)
        except subprocess.TimeoutExpired:
            print(f"{shape:<28} {'':>10} {'':>10} {'> ' + format(args.limit, '.0f') + ' s':>10}  NOT met (killed)")
            continue
        if done.returncode != 0:
            print(f"{shape:<28} failed: {done.stderr.strip()[-500:]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        if base is None:
            base = r["block"]
        ok = "met" if r["block"] <= TARGET_S else "NOT met"
        print(
            f"{shape:<28} {r['chars']:>10,} {r['shown_chars']:>9,} {ms(r['render']):>10} {ms(r['diff']):>9}"
            f" {ms(r['block']):>9} {r['block'] / base:>7.1f}× {ms(r['total']):>9} {r['math'] * 1000:>7.2f}ms  {ok:<7}"
            + (f"  {ms(r['full']):>9}" if r["full"] is not None else "")
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
