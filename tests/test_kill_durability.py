"""A labeling process killed with SIGKILL at random moments loses no acknowledged label."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import pytest

from pairscope.app.records import Item, Response
from pairscope.app.store import Store

# The child labels random items as fast as it can and prints "ACK <uuid>" only after
# LabelingSession.save has returned, i.e. once the label is acknowledged to the user.
CHILD = r"""
import random, sys
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import LabelDraft
from pairscope.app.store import Store

store = Store.open(sys.argv[1])
session = LabelingSession(store, "killer")
rng = random.Random(int(sys.argv[2]))
ids = [s.id for s in store.item_summaries(0, 1000)]
print("READY", flush=True)
while True:
    draft = rng.choice([
        LabelDraft(preferred_position=rng.choice([1, 2]), strength=rng.choice(["slightly", "clearly", "much"])),
        LabelDraft(outcome="tie", note="n" * rng.randint(0, 2000)),
        LabelDraft(outcome="both_bad"),
        LabelDraft(),
    ])
    label = session.save(rng.choice(ids), draft)
    if label is not None:
        print("ACK", label.uuid, flush=True)
"""


@pytest.mark.slow
def test_sigkill_never_loses_an_acknowledged_label(tmp_path):
    path = tmp_path / "kill.pairscope"
    with Store.create(path) as store:
        store.add_items(
            [Item(ext_id=f"k{i}", prompt="p", responses=(Response(0, "a"), Response(1, "b"))) for i in range(200)]
        )
    rng = random.Random(1234)
    acked: list[str] = []
    kills = 0
    for run in range(60):
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        deadline = time.monotonic() + rng.uniform(0.0, 0.25)
        os_set_blocking(proc.stdout)
        buffer = ""
        while time.monotonic() < deadline:
            buffer += read_available(proc.stdout)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        buffer += proc.stdout.read() or ""
        # Only whole lines count: a half-printed line was never acknowledged.
        acked += [
            line.split()[1]
            for line in buffer.splitlines(keepends=True)
            if line.endswith("\n") and line.startswith("ACK ")
        ]
    assert kills >= 50 and len(acked) > 100
    with Store.open(path) as store:
        assert store.integrity_check() == "ok"
        stored = {row[0] for row in store.query("SELECT uuid FROM labels")}
    missing = [u for u in acked if u not in stored]
    assert not missing, f"{len(missing)} acknowledged labels lost"


def os_set_blocking(stream) -> None:
    import os

    os.set_blocking(stream.fileno(), False)


def read_available(stream) -> str:
    try:
        return stream.read() or ""
    except (BlockingIOError, TypeError):
        return ""
