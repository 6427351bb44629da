"""Regression tests for the reported drift between copies of the vote: every reader (CLI
summary, judge panel wording, review panel, filters, statistics) now reads one item verdict."""

from __future__ import annotations

import threading

import pytest

import fake_backend  # noqa: F401  (registers the "fake" backend)
from fake_backend import FakeBackend
from pairscope.app.judge.results import item_verdicts, summarize
from pairscope.app.judge.review import review_data
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.records import Item, ItemFilter, Reference, Response, Step
from pairscope.app.stats.data import load_stats_data
from pairscope.app.stats.judge_metrics import run_metrics


def scored(request) -> str:
    return "Looks right.\nScore: 8/10" if "GOOD" in request.prompt else "Some doubt.\nScore: 3/10"


def items(n=4):
    return [
        Item(
            ext_id=f"p{i}",
            prompt=f"question {i}",
            responses=(
                Response(0, "GOOD answer", steps=(Step("look", True), Step("count", True))),
                Response(1, "BAD answer", steps=(Step("look", True), Step("guess", False))),
            ),
            reference=Reference(ranking=(0, 1)),
        )
        for i in range(n)
    ]


@pytest.fixture
def project(store):
    store.add_items(items())
    return store


def ids(store):
    return [s.id for s in store.item_summaries(0, 100)]


def test_review_reads_pointwise_and_step_samples(project):
    """The review panel parsed every sample as pairwise and raised on pointwise/step runs."""
    JudgeSession(project, FakeBackend(script=scored), JudgeConfig(mode="pointwise")).judge(ids(project))
    steps = FakeBackend(script=lambda r: "Step 1: 5\nStep 2: 2")
    JudgeSession(project, steps, JudgeConfig(mode="step")).judge(ids(project))
    item = project.get_item(ids(project)[0])
    review = review_data(project, item, (1, 0))  # the reviewer sees response 1 first
    readings = [v.choice for v in review.verdicts]
    assert "R2 scored 8" in readings and "R1 scored 3" in readings
    assert "R2 step scores 5, 2" in readings
    spans = [v.decisive for v in review.verdicts]
    assert all(span is not None for span in spans)  # the deciding line is highlighted in every mode


def test_cancelled_pointwise_run_lone_score_is_no_vote_anywhere(project):
    """After a cancelled pointwise run, a lone score counted as a vote in the CLI summary and
    the judge panel while statistics said undecided."""
    cancel = threading.Event()
    calls = []

    def script(request):
        calls.append(1)
        if len(calls) == 3:  # the first item is scored twice, the second once, then Ctrl-C
            cancel.set()
        return scored(request)

    session = JudgeSession(project, FakeBackend(script=script), JudgeConfig(mode="pointwise", batch_size=1))
    session.judge(ids(project), cancel=cancel)
    run = project.run(session.run.id)
    assert run.status == "cancelled"
    verdicts = item_verdicts(project, run)
    first, second = ids(project)[:2]
    assert verdicts[first].choice() == 0 and verdicts[second].choice() is None
    summary = summarize(project, run)
    official = summary.conventions["official"]
    data = load_stats_data(project)
    metrics = run_metrics(data, next(r for r in data.runs if r.run.id == run.id))
    assert (official.decided, official.correct) == (metrics["decided"], metrics["correct"]) == (1, 1)
    undecided = {s.id for s in project.item_summaries(0, 100, filter=ItemFilter(judge_run=run.id, judge="undecided"))}
    assert undecided == {second}


def test_step_runs_claim_no_preference_accuracy(project):
    session = JudgeSession(project, FakeBackend(script=lambda r: "Step 1: 5\nStep 2: 2"), JudgeConfig(mode="step"))
    session.judge(ids(project))
    line = summarize(project, project.run(session.run.id)).line()
    assert "accuracy" not in line and "%" not in line and "no preference votes" in line


def test_a_run_whose_samples_all_failed_says_why_in_one_line(store):
    from pairscope.app.records import MediaRef

    store.add_items(
        [
            Item(
                ext_id=f"m{i}",
                prompt="q",
                responses=(Response(0, "a"), Response(1, "b")),
                media=(MediaRef("image", f"gone{i}.png", None, "not found"),),
                reference=Reference(ranking=(0, 1)),
            )
            for i in range(4)
        ]
    )
    session = JudgeSession(store, FakeBackend(), JudgeConfig(k=2, temperature=0.5))
    session.judge(ids(store))
    line = summarize(store, store.run(session.run.id)).line()
    assert line.startswith("8 of 8 samples failed: media") and "pairscope info --missing" in line
    assert session.media_decodes == 4  # media are tried once per item, not once per sample


def test_media_decoded_once_per_item_per_run(project, tmp_path):
    from PIL import Image

    from pairscope.app.records import MediaRef

    path = tmp_path / "pic.png"
    Image.new("RGB", (8, 8), "red").save(path)
    project.add_items(
        [
            Item(
                ext_id="img",
                prompt="q",
                responses=(Response(0, "GOOD"), Response(1, "BAD")),
                media=(MediaRef("image", "pic.png", str(path)),),
                reference=Reference(ranking=(0, 1)),
            )
        ]
    )
    session = JudgeSession(project, FakeBackend(), JudgeConfig(k=5, both_orders=True, temperature=0.7, batch_size=3))
    session.judge([project.item_id("img")])
    assert len(project.verdicts(session.run.id)) == 10 and session.media_decodes == 1


def test_rerun_of_a_complete_run_does_nothing_without_new_run(project, capsys):
    from pairscope.app.cli.main import main

    project.close()
    args = ["judge", "--db", str(project.path), "--model", "m", "--backend", "fake"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "run 1 is complete" in err and "official vote" in out
    assert main(args + ["--new-run"]) == 0
    out, err = capsys.readouterr()
    assert "run 2 (pairwise" in err


@pytest.mark.parametrize(("mode", "both_orders"), [("pairwise", False), ("pairwise", True), ("pointwise", False)])
def test_a_run_decided_as_one_table_gives_each_item_the_verdict_it_gets_alone(mode, both_orders):
    """``item_verdicts`` decides a run's items as one vote table (fast); each row must be what
    the item's samples decide on their own, whatever the other rows hold (missing, extra or
    failed samples, ties, items with more responses)."""
    import random

    from pairscope.app.judge.modes import get_mode
    from pairscope.app.store import VerdictRecord

    rng = random.Random(11)
    judging, k = get_mode(mode), 3
    for _trial in range(30):
        ids, n_responses, per_item = [], [], []
        for item_id in range(1, rng.randint(2, 9)):
            n = rng.choice((2, 2, 3, 4))
            width = judging.planned_votes(k, both_orders) * (n if mode == "pointwise" else 1)
            samples = []
            for s in rng.sample(range(width + 2), rng.randint(0, width + 2)):  # gaps and extras
                error = rng.random() < 0.1
                parsed = not error and rng.random() < 0.85
                choice = rng.choice([None, *range(n)]) if parsed else None
                scores = (float(rng.randint(1, 10)),) if mode == "pointwise" and parsed else None
                samples.append(
                    VerdictRecord(1, item_id, s, tuple(range(n)), "x", choice, scores, parsed, None,
                                  error="oom" if error else None)
                )  # fmt: skip
            ids.append(item_id)
            n_responses.append(n)
            per_item.append(samples)
        together = judging.item_verdicts(ids, n_responses, per_item, k, both_orders)
        alone = [judging.item_verdict(i, n, s, k, both_orders) for i, n, s in zip(ids, n_responses, per_item)]
        assert repr(together) == repr(alone)  # repr: NaN (a missing sample) equals itself
