"""Parser profiles, reparsing a stored run, and runs imported from verdicts made elsewhere."""

from __future__ import annotations

import json

import pytest

import fake_backend  # noqa: F401  (registers the "fake" backend)
from fake_backend import FakeBackend
from pairscope.app.cli.main import main
from pairscope.app.judge.derived import VerdictFileError, import_verdicts, reparse
from pairscope.app.judge.modes import MAX_K
from pairscope.app.judge.results import item_verdicts, summarize
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.records import Item, ItemFilter, Reference, Response
from pairscope.app.store import Store
from pairscope.models.parsing import parse_pairwise_strict, parse_score_strict, parse_step_scores_strict


def pair(i):
    return Item(
        ext_id=f"q{i}",
        prompt=f"question {i}",
        responses=(Response(0, "GOOD"), Response(1, "BAD")),
        reference=Reference(ranking=(0, 1)),
    )


@pytest.fixture
def project(store):
    store.add_items([pair(i) for i in range(6)])
    return store


def ids(store):
    return [s.id for s in store.item_summaries(0, 100)]


def test_strict_reads_what_the_official_scorer_reads():
    # VL-RewardBench's cal.py regex (tests/test_parsing.py holds it and checks strict against it)
    for official in (
        "Reasons.\nOverall Judgment: Answer 2 is better.\n",
        "**Overall Judgment: Answer 2 is better**",
        "Overall Judgment:\nAnswer 2 is slightly better\nThanks!",
        "overall judgment: answer 2 is better",
    ):
        assert parse_pairwise_strict(official).choice == 1, official
    for loose in ("Answer 2 is better.", "[[B]]", "Final verdict: Answer 2", "Overall Judgment: Tie"):
        assert not parse_pairwise_strict(loose).parsed, loose
    assert not parse_pairwise_strict("Overall Judgment: Answer 3 is better", 2).parsed
    assert parse_score_strict("ok\nScore: 7/10").score == 7 and not parse_score_strict("Score: 7 / 10").parsed
    assert parse_step_scores_strict("Step 1: 4\nStep 2: 1", 2).scores == (4, 1)
    assert not parse_step_scores_strict("Step 2: 4\nStep 1: 1", 2).parsed


def test_reparse_writes_a_new_run_and_keeps_the_old(project):
    outputs = {0: "Final verdict: Answer {p}", 1: "**Overall Judgment: Answer {p} is better**"}

    calls = []

    def script(request):
        calls.append(1)
        position = 1 if request.prompt.find("GOOD") < request.prompt.find("BAD") else 2
        return "Why.\n" + outputs[len(calls) % 2].format(p=position)

    session = JudgeSession(project, FakeBackend(script=script), JudgeConfig(batch_size=1))
    session.judge(ids(project))
    lenient = project.run(session.run.id)
    assert lenient.parser == "lenient"
    before = project.verdicts(lenient.id)
    strict = reparse(project, lenient.id, "strict")
    assert strict.parser == "strict" and strict.derived_from == lenient.id and strict.id != lenient.id
    assert project.verdicts(lenient.id) == before  # the source run is never edited
    assert summarize(project, lenient).conventions["official"].decided == 6
    assert summarize(project, strict).conventions["official"].decided == 3  # the official rule reads no "Final verdict"
    undecided = ItemFilter(judge_run=strict.id, judge="undecided")
    assert len(project.item_summaries(0, 100, filter=undecided)) == 3


def test_judge_with_the_strict_parser_is_recorded_and_a_separate_run(project):
    cfg = JudgeConfig(parser="strict")
    session = JudgeSession(project, FakeBackend(), cfg)
    session.judge(ids(project))
    assert project.run(session.run.id).parser == "strict"
    other = JudgeSession(project, FakeBackend(), JudgeConfig())
    assert other.start().id != session.run.id


def write(tmp_path, rows, name="verdicts.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_import_verdicts_from_outputs_choices_and_orders(project, tmp_path):
    rows = [
        {"item": "q0", "sample": 0, "order": [1, 0], "output": "Overall Judgment: Answer 2 is better"},  # → 0
        {"item": "q0", "sample": 1, "choice": 0},
        {"item": "q0", "sample": 2, "choice": "tie"},
        {"item": "q1", "sample": 0, "choice": 1},
        {"item": "q1", "sample": 1, "choice": None},
        {"item": "q2", "output": "I cannot tell."},
    ]
    run = import_verdicts(project, write(tmp_path, rows), "gpt-judge", k=3)
    assert (run.mode, run.k, run.model_path, run.backend, run.status) == ("pairwise", 3, "gpt-judge", "import", "done")
    verdicts = item_verdicts(project, run)
    q0, q1, q2 = (project.item_id(f"q{i}") for i in range(3))
    assert verdicts[q0].choice("official") == 0  # 2 of K = 3: the mapped output and the choice
    assert verdicts[q1].choice("official") is None and verdicts[q1].choice("plurality") == 1
    assert verdicts[q2].unparsed == 1
    summary = summarize(project, run)
    assert summary.conventions["official"].correct == 1 and summary.ties == 1


def test_import_scores_from_a_reward_model(project, tmp_path):
    rows = [{"item": f"q{i}", "scores": [0.9, 0.1] if i < 4 else [0.2, 0.7]} for i in range(6)]
    run = import_verdicts(project, write(tmp_path, rows), "rm")
    assert run.mode == "pointwise" and run.k == 1
    assert summarize(project, run).conventions["official"].accuracy == pytest.approx(4 / 6)


def test_bad_rows_name_file_and_line_and_nothing_is_written(project, tmp_path):
    rows = [
        {"item": "q0", "choice": 0},
        "{not json",
        {"item": "nope", "choice": 0},
        {"item": "q1", "choice": 5},
        {"item": "q0", "choice": 1},
        {"item": "q2", "order": [0, 0], "choice": 0},
        {"item": "q3", "choice": 0, "output": "x"},
        {"item": "q4", "scores": [1]},
    ]
    path = write(tmp_path, rows)
    with pytest.raises(VerdictFileError) as err:
        import_verdicts(project, path, "bad")
    text = str(err.value)
    for line, words in (
        (2, "not valid JSON"),
        (3, "no item 'nope'"),
        (4, "'choice' must be"),
        (5, "already given on line 1"),
        (6, "'order'"),
        (7, "exactly one of"),
        (8, "one file is one run"),
    ):
        assert words in text, (line, words)
    assert f"{path}:2:" in text and f"{path}:5 [" in text
    assert project.runs() == []


def test_cli_import_verdicts_and_reparse(project, tmp_path, capsys):
    path = write(tmp_path, [{"item": f"q{i}", "output": "Overall Judgment: Answer 1 is better"} for i in range(6)])
    project.close()
    assert main(["import-verdicts", str(path), "--db", str(project.path), "--name", "api"]) == 0
    out, err = capsys.readouterr()
    assert "imported run 1" in err and "official vote 100.0%" in out
    assert main(["reparse", "--db", str(project.path), "--run", "1", "--parser", "strict"]) == 0
    out, err = capsys.readouterr()
    assert "run 2: run 1 reparsed with the strict parser" in err
    bad = write(tmp_path, [{"item": "zz", "choice": 0}], "bad.jsonl")
    assert main(["import-verdicts", str(bad), "--db", str(project.path), "--name", "x"]) == 1
    err = capsys.readouterr().err
    assert "nothing imported" in err and f"{bad}:1: no item 'zz'" in err


# -- bounded inputs (issue 31, item 5) -------------------------------------------------------------


def test_a_huge_sample_index_is_that_rows_error_not_a_huge_vote_table(project, tmp_path):
    """``"sample": 2000000000`` allocated a 2e9-wide vote table (OOM-killed at 21 GB)."""
    rows = [{"item": "q0", "sample": 2_000_000_000, "choice": 0}, {"item": "q1", "sample": MAX_K, "choice": 0}]
    path = write(tmp_path, rows)
    with pytest.raises(VerdictFileError) as err:
        import_verdicts(project, path, "huge")
    text = str(err.value)
    assert f"{path}:1 ['q0']: 'sample' must be a whole number 0–{MAX_K - 1}" in text
    assert f"{path}:2 ['q1']: 'sample' must be" in text
    assert project.runs() == []
    last = write(tmp_path, [{"item": "q0", "sample": MAX_K - 1, "choice": 0}], "last.jsonl")
    assert import_verdicts(project, last, "ok").k == MAX_K


@pytest.mark.parametrize("k", ["-3", "0", str(MAX_K + 1), "1000000000000"])
def test_k_out_of_range_is_refused_with_a_message(project, tmp_path, capsys, k):
    path = write(tmp_path, [{"item": "q0", "choice": 0}])
    project.close()
    for argv in (
        ["import-verdicts", str(path), "--db", str(project.path), "--name", "x", "--k", k],
        ["judge", "--db", str(project.path), "--model", "m", "--backend", "fake", "--k", k],
    ):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert f"--k: must be a whole number from 1 to {MAX_K}, got {k}" in err, err
    with pytest.raises(ValueError, match=f"1 to {MAX_K}"):
        JudgeConfig(k=-3)
    with Store.open(project.path) as store, pytest.raises(ValueError, match=f"1 to {MAX_K}"):
        import_verdicts(store, path, "x", k=0)


def test_reparse_of_a_run_that_does_not_exist_says_so(project, capsys):
    project.close()
    assert main(["reparse", "--db", str(project.path), "--run", "999", "--parser", "strict"]) == 1
    err = capsys.readouterr().err
    assert "error: no judge run 999 in" in err and "pairscope info" in err and "internal error" not in err
