"""Issue 23's gaps to the official scripts, through a real project and the CLI: the official vote
counts the samples present (VL-RewardBench cal.py), failed items are failures not judge errors,
pointwise ties are ties, and every convention scores the same samples side by side."""

from __future__ import annotations

import json

import pytest

from helpers import fake_run
from pairscope.app.cli.main import main
from pairscope.app.judge.derived import import_verdicts
from pairscope.app.judge.results import record_verdicts, summarize
from pairscope.app.records import SCORING_CONVENTIONS, Item, Reference, Response
from pairscope.app.stats.report import compute_stats, report_json, summary_text
from pairscope.app.store import Store, VerdictRecord


def _items(store: Store, n: int, responses: int = 2) -> list[int]:
    store.add_items(
        [
            Item(
                ext_id=f"q{i}",
                prompt="Which answer is better?",
                category="general",
                responses=tuple(Response(r, f"answer {r}") for r in range(responses)),
                reference=Reference(ranking=tuple(range(responses))),  # response 0 is the reference
            )
            for i in range(n)
        ]
    )
    return [s.id for s in store.item_summaries(0, 100)]


def _verdict_file(tmp_path, rows) -> str:
    path = tmp_path / "verdicts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


def cal_py_accuracy(per_item: list[list[str]]) -> float:
    """VL-RewardBench cal.py written out independently: ``classify`` over the answers present
    (agree = the reference, reject = the other, doesntMatch = unparsed), then agree / (agree +
    reject) over the items classified agree or reject."""
    agree_items = reject_items = 0
    for answers in per_item:
        agree = answers.count("A")
        reject = answers.count("B")
        total = agree + reject + answers.count("U")
        if agree > total / 2:
            agree_items += 1
        elif reject > total / 2:
            reject_items += 1
    return agree_items / (agree_items + reject_items)


def test_the_issue_repro_missing_samples_are_not_counted_in_k(store, tmp_path, capsys):
    """Votes [A,A,U], [B], [A,A,A,B,U] with K = 5, reference A: cal.py 66.7 % (2/3); PairScope
    said 100 % (1/1) because the missing samples counted in K."""
    q = _items(store, 3)
    code = {"A": 0, "B": 1, "U": None}
    votes = [["A", "A", "U"], ["B"], ["A", "A", "A", "B", "U"]]
    rows = [
        {"item": f"q{i}", "sample": j, "choice": code[v]}
        for i, answers in enumerate(votes)
        for j, v in enumerate(answers)
    ]
    run = import_verdicts(store, _verdict_file(tmp_path, rows), "api-judge", k=5)
    assert cal_py_accuracy(votes) == pytest.approx(2 / 3)
    official = compute_stats(store, bootstrap=0)["judges"][str(run.id)].official.overall
    assert (official.decided, official.correct, official.accuracy) == (3, 2, pytest.approx(2 / 3))
    assert summarize(store, run).conventions["official"].accuracy == pytest.approx(2 / 3)
    assert "official vote 66.7% (2/3" in summarize(store, run).line()
    store.close()
    assert main(["stats", "--db", str(tmp_path / "project.pairscope"), "--json", "--bootstrap", "0"]) == 0
    entry = json.loads(capsys.readouterr().out)["judges"][str(run.id)]
    assert entry["official"]["overall"] == pytest.approx(2 / 3) and entry["decided"] == 3
    assert len(q) == 3


def _failed_run(store: Store, item_ids: list[int], fail: set[int]) -> int:
    run = fake_run(store, model_path="api-judge", template_text="", template_hash="t", status="done")
    verdicts = [
        VerdictRecord(
            run.id,
            item_id,
            0,
            (0, 1),
            None if item_id in fail else "Overall Judgment: Answer 1 is better",
            None if item_id in fail else 0,
            None,
            item_id not in fail,
            None,
            error="HTTP 503: upstream unavailable" if item_id in fail else None,
        )
        for item_id in item_ids
    ]
    record_verdicts(store, run, verdicts)
    return run.id


def test_a_run_whose_samples_all_failed_is_not_0_percent_accurate(store):
    ids = _items(store, 4)
    run_id = _failed_run(store, ids, set(ids))
    scores = compute_stats(store, bootstrap=0)["judges"][str(run_id)]
    assert scores.failed_items == 4 and scores.scored == 0
    for c in scores.conventions.values():
        assert c.overall.accuracy is None and c.overall.accuracy_all is None  # n/a, never 0.0 %
    text = summary_text(compute_stats(store, bootstrap=0))
    assert "4 items failed (every sample failed: not scored)" in text
    assert "0.0%" not in text.split("judge run")[1]
    line = summarize(store, store.run(run_id)).line()
    assert line.startswith("4 of 4 samples failed: HTTP 503") and "0.0%" not in line


def test_failed_items_leave_the_denominator_and_are_shown(store):
    ids = _items(store, 4)
    run_id = _failed_run(store, ids, {ids[0]})  # one item failed, three judged right
    scores = compute_stats(store, bootstrap=0)["judges"][str(run_id)]
    assert (scores.failed_items, scores.scored) == (1, 3)
    assert scores.official.overall.accuracy_all == 1.0  # 3 of 3, not 3 of 4
    summary = summarize(store, store.run(run_id))
    assert summary.conventions["official"].accuracy_undecided_wrong == 1.0
    assert "1 failed items left out" in summary.line()


def test_pointwise_equal_top_scores_are_ties_in_the_run_summary(store, tmp_path):
    """The summary said '0 ties' where samples gave equal top scores, and counted unparsed per
    response: a pointwise sample scores every response, and one sample is one vote."""
    _items(store, 3)
    rows = [
        {"item": "q0", "scores": [7, 7]},  # a tie
        {"item": "q1", "scores": [8, 3]},  # response 0
        {"item": "q2", "scores": [None, None]},  # unparsed: one sample, two unread scores
    ]
    run = import_verdicts(store, _verdict_file(tmp_path, rows), "scorer")
    s = summarize(store, run)
    assert (s.samples, s.ties, s.unparsed) == (3, 1, 1)
    assert "Samples: 3, 1 unparsed, 1 ties, 0 failed" in s.line()
    scores = compute_stats(store, bootstrap=0)["judges"][str(run.id)]
    assert (scores.samples.ties, scores.samples.unparsed) == (1, 1)
    # RewardBench 2 gives the tied item 1/2 (1 / #responses at the top score)
    rb2 = scores.conventions["rewardbench2"].overall
    assert (rb2.scored, rb2.correct) == (3, pytest.approx(1.5))


def test_score_as_lists_every_convention_in_text_and_json(store, tmp_path, capsys):
    _items(store, 3)
    rows = [
        {"item": f"q{i}", "sample": j, "choice": c}
        for i, cs in enumerate([[0, 0, 1], [1, 1, None], [0]])
        for j, c in enumerate(cs)
    ]
    run = import_verdicts(store, _verdict_file(tmp_path, rows), "judge", k=3)
    store.close()
    db = str(tmp_path / "project.pairscope")
    assert main(["stats", "--db", db, "--bootstrap", "0"]) == 0
    text = capsys.readouterr().out
    table = text[text.index("score as:") :]
    for name in SCORING_CONVENTIONS:
        assert f" {name} " in table
    assert main(["stats", "--db", db, "--json", "--bootstrap", "0", "--convention", "vlmevalkit"]) == 0
    entry = json.loads(capsys.readouterr().out)["judges"][str(run.id)]
    assert [row["convention"] for row in entry["score_as"]] == list(SCORING_CONVENTIONS)
    assert entry["vote"] == "vlmevalkit"
    # VLMEvalKit: one generation per item (the first: 0, 1, 0 against reference 0), undecided wrong
    assert entry["overall_unparsed_wrong"] == pytest.approx(2 / 3)
    with Store.open(tmp_path / "project.pairscope") as s:
        report = compute_stats(s, bootstrap=0)
    assert report_json(report)["judges"][str(run.id)]["vote"] == "official"
    assert main(["stats", "--db", db, "--convention", "official", "--bootstrap", "0"]) == 0  # the alias
    assert "judge run" in capsys.readouterr().out


def test_the_dashboard_shows_every_convention_and_states_no_rule_of_its_own(store, tmp_path):
    from pairscope.app.stats import dashboard
    from pairscope.app.stats.conventions import REGISTRY

    _items(store, 3)
    rows = [{"item": f"q{i}", "sample": 0, "choice": c} for i, c in enumerate([0, 1, None])]
    import_verdicts(store, _verdict_file(tmp_path, rows), "judge")
    _, d = dashboard.compute_dashboard(store, bootstrap=0)
    assert d.score_as is not None
    assert [d.score_as.value(r, "convention") for r in range(len(d.score_as.rows))] == list(SCORING_CONVENTIONS)
    # VLMEvalKit: 1 of 3 (the unparsed item counts wrong); cal.py: 1 of 2 decided
    assert d.score_as.value(SCORING_CONVENTIONS.index("vlmevalkit"), "headline %") == "33.3"
    assert d.score_as.value(SCORING_CONVENTIONS.index("vlrewardbench"), "headline %") == "50.0"
    vote_help = next(c.help for c in d.judge_runs.columns if c.name == "vote")
    assert REGISTRY["vlrewardbench"].rule in vote_help and REGISTRY["plurality"].rule in vote_help


def test_an_older_project_has_its_stored_verdicts_decided_again_under_the_present_samples_rule(store, tmp_path):
    """The filters read the stored item verdicts (``judge_items``): a project decided under the
    old rule (missing samples counted in K) gets them decided again when opened for writing, so
    the filters and ``stats`` agree; a read-only open leaves the file as it is."""
    import sqlite3

    from pairscope.app.project import open_project

    _items(store, 1)
    rows = [{"item": "q0", "sample": j, "choice": c} for j, c in enumerate([0, 0, None])]
    run = import_verdicts(store, _verdict_file(tmp_path, rows), "api-judge", k=5)
    path = tmp_path / "project.pairscope"
    assert store.query("SELECT verdict FROM judge_items")[0][0] == "right"
    store.close()
    with sqlite3.connect(path) as conn:  # as the previous release left it: undecided, no rule mark
        conn.execute("UPDATE judge_items SET choice = NULL, verdict = 'undecided'")
        conn.execute("DELETE FROM meta WHERE key = 'judge_items_rule'")
    conn.close()
    with open_project(path, readonly=True) as reader:
        assert reader.item_verdicts_stale()
        assert reader.query("SELECT verdict FROM judge_items")[0][0] == "undecided"
    with open_project(path) as writer:
        assert not writer.item_verdicts_stale()
        assert writer.query("SELECT run_id, choice, verdict FROM judge_items") == [(run.id, 0, "right")]
