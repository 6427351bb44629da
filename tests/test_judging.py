"""The judging protocol with a scripted backend: orders, voting, both orders, resume."""

from __future__ import annotations

import threading

import pytest

import fake_backend  # noqa: F401  (registers the "fake" backend)
from fake_backend import FakeBackend, prefer_marker
from pairscope.app.judge.results import item_verdicts, summarize
from pairscope.app.judge.session import JudgeConfig, JudgeSession, sample_orders
from pairscope.app.records import Item, MediaRef, Reference, Response
from pairscope.app.store import VerdictRecord


def pair(i, good_first=True, **kw):
    texts = ("GOOD answer", "BAD answer") if good_first else ("BAD answer", "GOOD answer")
    return Item(
        ext_id=f"it{i}",
        prompt=f"question {i}",
        responses=(Response(0, texts[0]), Response(1, texts[1])),
        category=("general", "hallucination", "reasoning")[i % 3],
        reference=Reference(ranking=(0, 1) if good_first else (1, 0)),
        **kw,
    )


@pytest.fixture
def project(store):
    store.add_items([pair(i, good_first=i % 2 == 0) for i in range(10)])
    return store


def ids(store):
    return [s.id for s in store.item_summaries(0, 100)]


def test_orders_are_seeded_per_item_and_sample():
    a = sample_orders("x", 2, 5, False, seed=1)
    assert a == sample_orders("x", 2, 5, False, seed=1)
    assert [s for s, _ in a] == [0, 1, 2, 3, 4]
    assert {o for _, o in sample_orders("x", 2, 40, False, seed=1)} == {(0, 1), (1, 0)}
    # 40 samples of two orders: another seed, or another item, draws the same ones with p = 2^-40
    forty = sample_orders("x", 2, 40, False, seed=1)
    assert forty != sample_orders("x", 2, 40, False, seed=2)
    assert forty != sample_orders("y", 2, 40, False, seed=1)
    both = sample_orders("x", 2, 3, True, seed=1)
    assert [s for s, _ in both] == [0, 1, 2, 3, 4, 5]
    assert all(both[2 * j + 1][1] == tuple(reversed(both[2 * j][1])) for j in range(3))


def test_good_judge_is_always_right_whatever_the_order(project):
    backend = FakeBackend()
    session = JudgeSession(project, backend, JudgeConfig(k=3, batch_size=4))
    session.judge(ids(project))
    run = session.run
    verdicts = project.verdicts(run.id)
    assert len(verdicts) == 30 and all(v.parsed for v in verdicts)
    orders = {v.order_shown for v in verdicts}
    assert orders == {(0, 1), (1, 0)}  # both orders were shown
    for v in verdicts:  # the choice is stored as a response index, not a position
        item = project.get_item(v.item_id)
        assert item.responses[v.choice].text == "GOOD answer"
    summary = summarize(project, run)
    for convention in summary.conventions.values():
        assert convention.accuracy == 1.0 and convention.accuracy_undecided_wrong == 1.0
    assert run.status == "running" and project.run(run.id).status == "done"
    # temperature 0: each distinct prompt (item, order) is generated once, in batches of 4
    distinct = {(v.item_id, v.order_shown) for v in verdicts}
    assert sum(len(c) for c in backend.calls) == len(distinct) < 30
    assert all(len(c) <= 4 for c in backend.calls) and len(backend.calls[0]) == 4


def test_position_biased_judge_is_inconsistent_across_orders(project):
    backend = FakeBackend(script=lambda r: "Overall Judgment: Answer 1 is better")
    session = JudgeSession(project, backend, JudgeConfig(k=1, both_orders=True))
    session.judge(ids(project))
    judgements = item_verdicts(project, project.run(session.run.id))
    assert all(j.consistent is False and j.choice() is None for j in judgements.values())
    assert summarize(project, project.run(session.run.id)).consistency == 0.0


def test_unparsed_outputs_count_both_ways(project):
    outputs = iter(["I cannot decide."] * 5 + ["Overall Judgment: Answer 1 is better"] * 100)
    backend = FakeBackend(script=lambda r: next(outputs))
    session = JudgeSession(project, backend, JudgeConfig(batch_size=10))
    session.judge(ids(project))
    s = summarize(project, project.run(session.run.id))
    official = s.conventions["official"]
    assert official.decided == 5 and s.with_reference == 10 and s.unparsed == 5 and s.failed == 0
    assert official.accuracy_undecided_wrong == pytest.approx(official.correct / 10)
    assert official.accuracy == pytest.approx(official.correct / 5)


def test_vote_majority_and_ties():
    from pairscope.app.judge.results import judge_item
    from pairscope.app.store import RunRecord

    def run(k):
        return RunRecord(1, "u", "t", "fake", "m", None, None, "", "", "pairwise", k, False, None, 0, {}, "done")

    def v(sample, choice, parsed=True):
        return VerdictRecord(1, 1, sample, (0, 1), "x", choice, None, parsed, None)

    three = judge_item(run(3), [v(0, 1), v(1, 1), v(2, 0)])
    assert three.choice("official") == 1 and three.choice("plurality") == 1
    assert judge_item(run(2), [v(0, 1), v(1, 0)]).choice("plurality") is None  # tied votes → undecided
    one_unparsed = judge_item(run(2), [v(0, 1), v(1, None, parsed=False)])
    assert one_unparsed.choice("plurality") == 1  # plurality ignores the unparsed sample
    assert one_unparsed.choice("official") is None  # 1 of K = 2 is not more than half


def test_cancelled_run_resumes_where_it_stopped(project):
    cancel = threading.Event()
    calls = []

    def script(request):
        calls.append(1)
        if len(calls) == 6:
            cancel.set()  # "Ctrl-C" during the second batch
        return prefer_marker()(request)

    session = JudgeSession(project, FakeBackend(script=script), JudgeConfig(batch_size=4))
    session.judge(ids(project), cancel=cancel)
    first = project.run(session.run.id)
    assert first.status == "cancelled"
    done = len(project.verdicts(first.id))
    assert 4 <= done < 10
    again = JudgeSession(project, FakeBackend(), JudgeConfig(batch_size=4))
    again.judge(ids(project))
    assert again.run.id == first.id  # same config: the run continues
    assert sum(len(c) for c in again.backend.calls) == 10 - done
    assert len(project.verdicts(first.id)) == 10 and project.run(first.id).status == "done"
    fresh = JudgeSession(project, FakeBackend(), JudgeConfig(batch_size=4, seed=7))
    fresh.start()
    assert fresh.run.id != first.id  # a different protocol is a different run


def test_missing_media_is_an_error_verdict_and_retried_on_resume(store, tmp_path):
    store.add_items([pair(0, media=(MediaRef("image", "gone.png", None, "not found"),))])
    session = JudgeSession(store, FakeBackend(), JudgeConfig())
    session.judge(ids(store))
    [verdict] = store.verdicts(session.run.id)
    assert verdict.error.startswith("media:") and not verdict.parsed
    assert store.done_samples(session.run.id) == set()


def test_pointwise_picks_the_higher_score(project):
    backend = FakeBackend(script=lambda r: "Fine.\nScore: 8/10" if "GOOD" in r.prompt else "Score: 3/10")
    session = JudgeSession(project, backend, JudgeConfig(mode="pointwise"))
    session.judge(ids(project))
    assert summarize(project, project.run(session.run.id)).conventions["official"].accuracy == 1.0
    assert len(project.verdicts(session.run.id)) == 20  # one request per response


def test_stream_one_item(project):
    chunks = []
    session = JudgeSession(project, FakeBackend(), JudgeConfig(k=2, temperature=0.7))
    stored = session.judge_stream(ids(project)[0], lambda sample, text: chunks.append((sample, text)))
    assert len(stored) == 2 and {s for s, _ in chunks} == {0, 1}
    assert "".join(t for s, t in chunks if s == 0).endswith("is better")


def test_cli_judge_prints_progress_and_summary(project, capsys):
    from pairscope.app.cli.main import main

    project.close()
    assert (
        main(["judge", "--db", str(project.path), "--model", "m", "--backend", "fake", "--k", "3", "--batch-size", "5"])
        == 0
    )
    out, err = capsys.readouterr()
    assert "30/30 samples" in err
    assert "official vote 100.0% (10/10, undecided excluded), 100.0% (undecided counted wrong)" in out
    assert "plurality vote 100.0%" in out


def test_cli_judge_reports_a_bad_model_folder(project, tmp_path, capsys):
    from pairscope.app.cli.main import main

    project.close()
    code = main(["judge", "--db", str(project.path), "--model", str(tmp_path / "nope")])
    assert code == 1 and "no model folder" in capsys.readouterr().err
