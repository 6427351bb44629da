"""The typed result and its JSON: ``stats --json`` keeps its documented keys (pinned here), the
JSON comes from the typed record through one function and reads back into it, and no consumer
reads a run's scores by string key — a renamed field fails mypy in every consumer."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pairscope.app.stats.scores import score_run
from pairscope.app.stats.scores_json import CONVENTION_KEYS, from_json, to_json
from test_judge_metrics import CATS as CATEGORIES
from test_judge_metrics import REF as REFERENCE
from test_judge_metrics import SAMPLES, TAGS, record, run_from, stats

ROOT = Path(__file__).resolve().parents[1]

#: A run entry of ``stats --json`` (docs/STATISTICS.md, "The typed result").
RUN_KEYS = {
    "run_id", "mode", "frames", "k", "both_orders", "judged", "scored", "failed_items", "note", "vote",
    "samples_unparsed", "samples_failed", "samples_ties", "position_consistency", "position_consistency_items",
    "first_position_preference", "human_kappa", "conventions", "score_as", "official", "plurality",
    "acc_plus",  # MM-RLHF's ACC+ read from the mm-rlhf convention, with its group count and Wilson CI
    # the official figures repeated at the top level (``vote`` names the convention)
    "decided", "correct", "unparsed", "overall", "overall_unparsed_wrong", "overall_ci", "overall_unparsed_wrong_ci",
    "per_category", "macro", "macro_categories", "macro_unparsed_wrong", "macro_unparsed_wrong_categories",
    "per_source", "per_query_source", "ties", "best_of_n", "per_error_type", "k_curve",
}  # fmt: skip
CONVENTION = {
    "decided", "correct", "unparsed", "overall", "overall_unparsed_wrong", "overall_ci", "overall_unparsed_wrong_ci",
    "per_category", "macro", "macro_categories", "macro_unparsed_wrong", "macro_unparsed_wrong_categories",
    "per_source", "per_query_source", "ties", "best_of_n", "per_error_type", "k_curve", "k_curve_counts",
    "headline", "headline_rule", "extra", "notes",
}  # fmt: skip
GROUP = {"n", "accuracy", "accuracy_unparsed_wrong", "unparsed", "ci", "ci_unparsed_wrong"}
SCORE_AS = {
    "convention", "headline", "headline_rule", "overall", "overall_unparsed_wrong", "macro", "macro_unparsed_wrong",
    "scored", "decided", "correct", "extra",
}  # fmt: skip


def _scores():
    run = run_from(record(k=3), SAMPLES)
    return score_run(stats(CATEGORIES, REFERENCE, TAGS, [run]), run, categories=["safety"])


def test_stats_json_keeps_its_documented_keys():
    entry = to_json(_scores())
    assert set(entry) == RUN_KEYS
    assert set(CONVENTION_KEYS) == CONVENTION
    for name in ("official", "plurality", *entry["conventions"]):
        c = entry[name] if name in ("official", "plurality") else entry["conventions"][name]
        assert set(c) == CONVENTION, name
        for group in c["per_category"].values():
            assert set(group) == GROUP
        assert set(c["best_of_n"]) == {
            "items", "accuracy", "accuracy_ci", "random", "first_response", "gain_over_random", "gain_over_first",
        }  # fmt: skip
        assert set(c["ties"]) in ({"with_ties", "without_ties"}, set())
    assert {row["convention"] for row in entry["score_as"]} == set(entry["conventions"])
    for row in entry["score_as"]:
        assert set(row) == SCORE_AS
    assert entry["official"] == entry["conventions"]["vlrewardbench"]
    assert set(entry["acc_plus"]) == {"acc_plus", "groups", "groups_right", "ci", "convention"}
    json.loads(json.dumps(entry))  # JSON-ready as it is


def test_the_json_reads_back_into_the_typed_record():
    scores = _scores()
    again = from_json(json.loads(json.dumps(to_json(scores))))
    assert list(again.conventions) == list(scores.conventions)
    for name, c in scores.conventions.items():
        back = again.conventions[name]
        assert back.overall == c.overall and back.per_category == c.per_category and back.k_curve == c.k_curve
        assert back.headline == pytest.approx(c.headline) if c.headline is not None else back.headline is None
    assert (again.judged, again.scored, again.failed_items) == (scores.judged, scores.scored, scores.failed_items)


CONSUMERS = (
    "app/stats/report.py",
    "app/stats/dashboard.py",
    "app/stats/plots.py",
    "app/research.py",
    "app/gui/stats_view.py",
    "app/cli/main.py",
)


def test_no_consumer_reads_run_scores_by_string_key():
    """A run's figures are read by attribute: no ``x["overall"]`` or ``x.get("per_category")``
    on any key of a run's or a convention's JSON in the consumers (only the producer writes them)."""
    keys = {  # the judge figures' own keys (n, ci, accuracy … also name other sections' fields)
        "official", "plurality", "overall", "overall_ci", "overall_unparsed_wrong", "overall_unparsed_wrong_ci",
        "per_category", "macro", "macro_categories", "macro_unparsed_wrong", "per_source", "per_query_source",
        "per_error_type", "k_curve", "best_of_n", "decided", "unparsed", "samples_unparsed", "samples_failed",
        "failed_items", "position_consistency", "first_position_preference", "human_kappa",
        "accuracy_unparsed_wrong", "ci_unparsed_wrong", "headline", "headline_rule",
    }  # fmt: skip
    found = []
    for rel in CONSUMERS:
        tree = ast.parse((ROOT / rel).read_text(), rel)
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                key = node.args[0].value
            if isinstance(key, str) and key in keys:
                found.append(f"{rel}:{node.lineno}: {key!r}")
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_a_renamed_field_fails_mypy_in_every_consumer(tmp_path):
    """Plant ``ConventionScores.per_category`` renamed: mypy (as configured) names every consumer
    that reads it; before the typed record, three of them read ``None`` silently."""
    namespace = tmp_path / "pairscope"
    (namespace / "app" / "stats").mkdir(parents=True)
    for folder in ("models", "widgets"):
        (namespace / folder).symlink_to(ROOT / folder, target_is_directory=True)
    for entry in (ROOT / "app").iterdir():
        if entry.name not in ("stats", "__pycache__"):
            (namespace / "app" / entry.name).symlink_to(entry)
    for entry in (ROOT / "app" / "stats").iterdir():
        if entry.name not in ("scores.py", "__pycache__"):
            (namespace / "app" / "stats" / entry.name).symlink_to(entry)
    source = (ROOT / "app" / "stats" / "scores.py").read_text()  # the record; scores_json.py reads it too
    planted = source.replace(
        "    per_category: dict[str, Accuracy]\n", "    per_category_renamed: dict[str, Accuracy]\n"
    )
    assert planted != source
    (namespace / "app" / "stats" / "scores.py").write_text(planted)
    modules = ["pairscope.app.stats.report", "pairscope.app.stats.dashboard", "pairscope.app.stats.plots"]
    modules += ["pairscope.app.research"]
    args = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    args += ["--cache-dir", str(tmp_path / "cache"), *(a for m in modules for a in ("-m", m))]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=1500, env=dict(os.environ))
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    for consumer in ("report.py", "dashboard.py", "plots.py", "research.py"):
        assert any(consumer in line and "per_category" in line for line in out.splitlines()), (consumer, out)
