"""Cold start of the shipped forms of the app against a bare QMainWindow, in one run.

Each form runs the window's self-test on the demo project (``PAIRSCOPE_SELFTEST=1``: process
start → first item shown → key ``1`` pressed through the window's shortcuts → label read back
from the file → exit); the baseline is the bare QMainWindow process of
bench/annotation_bench.py (start → first paint → exit). Wall time of each whole process,
alternating, after one warm-up; medians and ratios to the baseline.

    python bench/bundle_bench.py [--runs N] NAME=COMMAND ...

e.g. ``bundle=dist/pairscope/pairscope base=/tmp/base/bin/pairscope-gui``. The baseline
runs with this interpreter (its PySide6). Reported in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotation_bench import BARE_CHILD  # noqa: E402


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("forms", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args()
    forms = {name: shlex.split(command) for name, _, command in (f.partition("=") for f in args.forms)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "HOME": str(work),
            "XDG_CONFIG_HOME": str(work / "config"),
            "XDG_DATA_HOME": str(work / "data"),
        }
        first = next(iter(forms.values()))
        subprocess.run([*first, "demo", str(work / "demo.pairscope")], env=env, check=True, capture_output=True)
        commands = {"bare QMainWindow": [sys.executable, "-c", BARE_CHILD]}
        for name, command in forms.items():
            commands[name] = [*command, str(work / "demo.pairscope"), "--annotator", "bench"]
        selftest = {**env, "PAIRSCOPE_SELFTEST": "1"}
        times: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(args.runs + 1):  # the first round warms the page cache
            for name, command in commands.items():
                elapsed = timed(command, env if name == "bare QMainWindow" else selftest)
                if round_:
                    times[name].append(elapsed)
    base = median(times["bare QMainWindow"])
    print(f"cold start, whole process, median of {args.runs} (alternating, after one warm-up):")
    for name, runs in times.items():
        print(f"  {name:18s} {median(runs):.2f} s  ({median(runs) / base:.2f}x)  runs {[round(r, 2) for r in runs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
