"""Suspect references (issue 26): a synthetic project with known truth, built through the real
paths (a VL-RewardBench file imported, judge runs recorded by ``record_verdicts``, labels saved
by the labeling session), where some references were planted flipped. The planted items rank
at the top of ``pairscope suspects``, an item no evidence contradicts is never a suspect,
"reference is wrong" is stored audited, export writes the corrected reference (or leaves it
out) and the accuracies with and without the suspects are the ones the truth gives."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import fake_run, write_jsonl
from pairscope.app.cli.main import main as cli_main
from pairscope.app.curation.export import export_project
from pairscope.app.importer import import_file
from pairscope.app.judge.results import record_verdicts
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import Label, LabelDraft
from pairscope.app.stats.suspects import SUSPECT_THRESHOLD, Source, Vote, fit_dawid_skene, load_suspects
from pairscope.app.stats.suspects_report import accuracy_under_label_noise
from pairscope.app.store import Store, VerdictRecord
from pairscope.app.store.references import (
    ReferenceReview,
    add_reference_review,
    current_reference_reviews,
    reference_review_history,
)

N_ITEMS = 60
PLANTED = 6  # references flipped against the truth
#: name → (right with probability, confidence when right, confidence when wrong, K); None: no
#: confidence (a judge without log-probabilities).
JUDGES = {
    "judge-strong": (0.85, (0.75, 0.99), (0.5, 0.7), 1),  # calibrated: unsure when wrong
    "judge-medium": (0.75, (0.55, 0.95), (0.55, 0.95), 1),  # confidence says nothing
    "judge-weak": (0.62, None, None, 3),  # K = 3 samples, no confidence
}
#: name → (right with probability, share of the items labeled).
ANNOTATORS = {"alice": (0.95, 0.7), "bob": (0.9, 0.6), "carol": (0.7, 0.5)}
CALM = "VL-calm"  # every judge and annotator agrees with its (true) reference


@dataclass
class Synthetic:
    path: Path
    truth: dict[str, int]  # dataset id → the better response
    reference: dict[str, int]
    planted: list[str]
    runs: dict[str, int] = field(default_factory=dict)
    said: dict[str, dict[str, int | None]] = field(default_factory=dict)  # run → item → decision


def _rows(rng: random.Random) -> tuple[list[dict], dict[str, int], dict[str, int], list[str]]:
    ids = [f"VL-{i:03d}" for i in range(N_ITEMS - 1)] + [CALM]
    planted = sorted(rng.sample(ids[:-1], PLANTED))
    truth, reference, rows = {}, {}, []
    for ext in ids:
        truth[ext] = rng.randrange(2)
        reference[ext] = 1 - truth[ext] if ext in planted else truth[ext]
        ranks = [0, 1] if reference[ext] == 0 else [1, 0]  # VL-RewardBench: each response's rank
        rows.append(
            {
                "id": ext,
                "query": f"<image>\nHow many circles are in picture {ext}?",
                "response": [f"There are {3 + len(ext) % 3} circles ({ext}, A).", f"I count two circles ({ext}, B)."],
                "human_ranking": ranks,
                "image_path": "shared.png",
            }
        )
    return rows, truth, reference, planted


def build_project(folder: Path, seed: int = 26) -> Synthetic:
    """The synthetic project (see the module docstring), deterministic in ``seed``."""
    rng = random.Random(seed)
    rows, truth, reference, planted = _rows(rng)
    (folder / "shared.png").write_bytes(b"\x89PNG fake")
    source = write_jsonl(folder / "vlrewardbench.jsonl", rows)
    syn = Synthetic(folder / "suspects.pairscope", truth, reference, planted)
    with Store.create(syn.path) as store:
        report = import_file(store, source, "vlrewardbench", media_root=folder)
        assert report.added == N_ITEMS
        ids = {ext: store.item_id(ext) for ext in truth}
        for name, (right, conf_right, conf_wrong, k) in JUDGES.items():
            run = fake_run(store, model_path=name, k=k)
            syn.runs[name] = run.id
            samples = []
            for ext, item_id in ids.items():
                for j in range(k):
                    ok = ext == CALM or rng.random() < right
                    choice = truth[ext] if ok else 1 - truth[ext]
                    span = conf_right if ok else conf_wrong
                    confidence = None if span is None else rng.uniform(*span)
                    order = (0, 1) if rng.random() < 0.5 else (1, 0)
                    samples.append(
                        VerdictRecord(
                            run.id, item_id, j, order, f"Answer {order.index(choice) + 1}", choice, None, True,
                            None, confidence=confidence,
                        )
                    )  # fmt: skip
            record_verdicts(store, run, samples)
            syn.said[name] = {ext: store.item_verdict_rows(run.id)[item_id][1] for ext, item_id in ids.items()}
        for name, (right, share) in ANNOTATORS.items():
            session = LabelingSession(store, name)
            for ext, item_id in ids.items():
                if ext != CALM and rng.random() > share:
                    continue
                ok = ext == CALM or rng.random() < right
                preferred = truth[ext] if ok else 1 - truth[ext]
                position = session.order(item_id).index(preferred) + 1  # what the annotator saw
                session.save(item_id, LabelDraft(outcome="prefer", preferred_position=position))
    return syn


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return build_project(tmp_path_factory.mktemp("suspects"))


def precision_at(queue, planted, n):
    top = [s.ext_id for s in queue[:n]]
    return sum(1 for ext in top if ext in planted) / n


def test_planted_flips_rank_at_the_top(synthetic):
    with Store.open(synthetic.path, readonly=True) as store:
        report = load_suspects(store)
    queue = report.queue()
    precision = precision_at(queue, synthetic.planted, PLANTED)
    assert precision >= 0.8, [(s.ext_id, round(s.score, 3)) for s in queue[:10]]
    assert report.converged
    # every planted item is far above an uncontradicted one, and scored a suspect
    scores = {s.ext_id: s.score for s in report.items}
    assert sum(scores[e] >= SUSPECT_THRESHOLD for e in synthetic.planted) >= 5
    # the estimated reference accuracy is near the planted 90 %
    assert 0.8 <= report.reference_accuracy <= 0.97
    # the strong judge is rated above the weak one; alice above carol
    rel = {f.label.split(" · ")[1] if f.kind == "run" else f.key: f.reliability for f in report.sources}
    assert rel["judge-strong"] > rel["judge-weak"] and rel["alice"] > rel["carol"]


def test_an_item_no_evidence_contradicts_is_never_a_suspect(synthetic):
    with Store.open(synthetic.path, readonly=True) as store:
        report = load_suspects(store)
    calm = report.by_id()[next(s.item_id for s in report.items if s.ext_id == CALM)]
    assert not calm.contradicted and all(e.agrees for e in calm.evidence)
    assert len(calm.evidence) == len(JUDGES) + len(ANNOTATORS)  # it was judged and labeled by all
    assert calm.item_id not in {s.item_id for s in report.queue()}
    assert calm.score <= 1 - report.reference_accuracy
    assert calm.score < min(s.score for s in report.queue())
    assert calm.score < 0.01  # six sources agreeing: the reference is almost surely right


def test_the_score_follows_the_model_on_a_hand_worked_case():
    """Two items, one judge of known reliability: the posterior is Bayes' rule on π and q."""
    sources = [Source("annotator", "a", "a")]
    # one item where the annotator disagrees; many items where it agrees fix q near its prior
    n = [2] * 21
    ref = [0] * 21
    votes = [Vote(0, 1, 0)] + [Vote(i, 0, 0) for i in range(1, 21)]
    fit = fit_dawid_skene(n, ref, votes, sources, fixed={i: 0 for i in range(1, 21)})
    q = fit.vote_reliability[0]
    pi = fit.reference_accuracy
    expected = (1 - pi) * q / ((1 - pi) * q + pi * (1 - q))  # P(reference wrong | one vote against)
    assert fit.posterior[0][1] == pytest.approx(expected, abs=1e-5)
    assert q == pytest.approx((20 + fit.posterior[0][1] + 3) / (21 + 4), abs=1e-5)  # Beta(3, 1)-smoothed


def test_reference_is_wrong_is_stored_audited_and_final(synthetic, tmp_path):
    path = tmp_path / "review.pairscope"
    with Store.open(synthetic.path, readonly=True) as src:
        src.conn.execute("VACUUM INTO ?", (str(path),))
    ext = synthetic.planted[0]
    with Store.open(path) as store:
        item_id = store.item_id(ext)
        with pytest.raises(ValueError, match="is the reference itself"):
            add_reference_review(store, ReferenceReview(item_id, "dana", "wrong", synthetic.reference[ext]))
        with pytest.raises(ValueError, match="has no response 5"):
            add_reference_review(store, ReferenceReview(item_id, "dana", "wrong", 5))
        assert reference_review_history(store, item_id) == []  # nothing written by the refusals
        stored = add_reference_review(
            store, ReferenceReview(item_id, "dana", "wrong", synthetic.truth[ext], "the image shows two circles")
        )
        assert stored.original == synthetic.reference[ext] and stored.created_at and stored.uuid
        # append-only: the audit trail cannot be edited or erased
        for sql in ("UPDATE reference_reviews SET reason = 'x'", "DELETE FROM reference_reviews"):
            with pytest.raises(Exception, match="append-only"):
                with store.transaction() as conn:
                    conn.execute(sql)
        report = load_suspects(store)
        marked = report.by_id()[item_id]
        assert marked.status == "wrong" and marked.score == pytest.approx(1.0)
        assert marked.alternative == synthetic.truth[ext]
        assert any(e.source == "review" and "two circles" in e.note for e in marked.evidence)
        assert marked.item_id not in {s.item_id for s in report.queue(reviewed=False)}
        # withdrawn: the item is open again, and the history keeps both rows
        add_reference_review(store, ReferenceReview(item_id, "dana", "withdrawn", reason="asked alice"))
        assert item_id not in current_reference_reviews(store)
        assert [r.verdict for r in reference_review_history(store, item_id)] == ["wrong", "withdrawn"]
        assert load_suspects(store).by_id()[item_id].status == "open"


def truth_accuracy(syn: Synthetic, name: str, items: list[str], against: dict[str, int]) -> tuple[int, int]:
    decided = [e for e in items if syn.said[name][e] is not None]
    return sum(syn.said[name][e] == against[e] for e in decided), len(decided)


def test_accuracy_with_and_without_suspects(synthetic, tmp_path):
    path = tmp_path / "acc.pairscope"
    with Store.open(synthetic.path, readonly=True) as src:
        src.conn.execute("VACUUM INTO ?", (str(path),))
    with Store.open(path) as store:
        for ext in synthetic.planted:  # a reviewer corrects every planted flip
            add_reference_review(
                store, ReferenceReview(store.item_id(ext), "dana", "wrong", synthetic.truth[ext], "planted")
            )
        report = load_suspects(store)
    figures = {a.run_id: a for a in accuracy_under_label_noise(report)}
    everything = list(synthetic.truth)
    for name, run_id in synthetic.runs.items():
        a = figures[run_id]
        assert (a.all.correct, a.all.decided) == truth_accuracy(synthetic, name, everything, synthetic.reference)
        # with every flip corrected, the accuracy is the one against the truth
        assert (a.corrected.correct, a.corrected.decided) == truth_accuracy(
            synthetic, name, everything, synthetic.truth
        )
        # confirmed references are true ones: there the reference and the truth agree
        assert 0 < a.confirmed.decided < a.all.decided
        assert a.without_suspects.decided <= a.all.decided - len(synthetic.planted)
        assert a.all.ci is not None and a.all.ci[0] < a.all.accuracy < a.all.ci[1]
    # the planted noise cost the judges accuracy: corrected, they score higher together
    assert sum(a.corrected.correct for a in figures.values()) > sum(a.all.correct for a in figures.values())


def test_cli_lists_the_queue_with_evidence(synthetic, capsys):
    assert cli_main(["suspects", "--db", str(synthetic.path), "--top", str(PLANTED), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    top = [s["item"] for s in doc["queue"]]
    assert len(top) == PLANTED and sum(e in synthetic.planted for e in top) >= 5
    first = doc["queue"][0]
    assert first["score"] >= SUSPECT_THRESHOLD and first["reference"] == synthetic.reference[first["item"]]
    against = [e for e in first["evidence"] if e["agrees"] is False]
    assert against and all(e["reliability"] is not None for e in against)
    assert {a["run"] for a in doc["accuracy"]} == set(synthetic.runs.values())
    assert set(doc["accuracy"][0]) >= {"all", "confirmed_reference", "without_suspects", "corrected_reference"}
    assert cli_main(["suspects", "--db", str(synthetic.path), "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "estimated reference accuracy" in text and "disagrees" in text and "   1. VL-" in text
    assert "   3. " not in text  # --top 2
    assert "judge-strong" in text and "confidence" in text


def test_cli_refuses_bad_input(synthetic, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli_main(["suspects", "--db", str(synthetic.path), "--top", "0"])
    assert exit_.value.code == 2 and "--top: must be 1 or more" in capsys.readouterr().err
    assert cli_main(["suspects", "--db", str(synthetic.path), "--runs", "99"]) == 1
    assert "no judge run 99" in capsys.readouterr().err


def test_a_reparse_counts_once(synthetic, tmp_path):
    """A run derived from another (the same generations read again) is left out, said why."""
    path = tmp_path / "reparse.pairscope"
    with Store.open(synthetic.path, readonly=True) as src:
        src.conn.execute("VACUUM INTO ?", (str(path),))
    with Store.open(path) as store:
        source = synthetic.runs["judge-strong"]
        copy = fake_run(store, model_path="judge-strong", derived_from=source)
        samples = [
            VerdictRecord(copy.id, v.item_id, v.sample_idx, v.order_shown, v.raw_output, v.choice, None, True, None)
            for v in store.verdicts(source)
        ]
        record_verdicts(store, copy, samples)
        report = load_suspects(store)
    assert [r for r, _why in report.left_out_runs] == [copy.id]
    assert copy.id not in {r.id for r in report.runs}


def test_export_writes_corrected_references_with_provenance_or_leaves_them_out(synthetic, tmp_path):
    path = tmp_path / "export.pairscope"
    with Store.open(synthetic.path, readonly=True) as src:
        src.conn.execute("VACUUM INTO ?", (str(path),))
    fixed, unsure = synthetic.planted[:2]
    with Store.open(path) as store:
        add_reference_review(store, ReferenceReview(store.item_id(fixed), "dana", "wrong", synthetic.truth[fixed], "B"))
        add_reference_review(store, ReferenceReview(store.item_id(unsure), "dana", "wrong", None, "both wrong"))
        out = export_project(store, tmp_path / "apply", "jsonl", source="reference", reference_corrections="apply")
        left = export_project(
            store, tmp_path / "out", "vlrewardbench", source="reference", reference_corrections="leave-out"
        )
        plain = export_project(store, tmp_path / "plain", "jsonl", source="reference")
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "apply" / "items.jsonl").read_text().splitlines())}
    row = rows[fixed]
    assert row["reference"]["ranking"][0] == synthetic.truth[fixed]
    assert row["preference"]["ranking"][0] == synthetic.truth[fixed]
    corrected = row["reference_corrected"]
    assert corrected["by"] == "dana" and corrected["why"] == "B" and corrected["at"]
    assert corrected["original_ranking"][0] == synthetic.reference[fixed]
    assert unsure not in rows  # marked wrong, no corrected response: it cannot be written
    assert "reference_corrected" not in rows[synthetic.planted[2]]
    assert out.n_items == N_ITEMS - 1
    manifest = json.loads((tmp_path / "apply" / "manifest.json").read_text())
    assert manifest["reference_corrections"]["mode"] == "apply"
    assert {c["id"] for c in manifest["reference_corrections"]["items"]} == {fixed, unsure}
    assert left.n_items == N_ITEMS - 2
    assert {i for i, _r in left.skipped} == {fixed, unsure}
    assert all("reference marked wrong by dana" in r for _i, r in left.skipped)
    assert plain.n_items == N_ITEMS  # by default the dataset's reference, as imported
    plain_rows = {r["id"]: r for r in map(json.loads, (tmp_path / "plain" / "items.jsonl").read_text().splitlines())}
    assert plain_rows[fixed]["reference"]["ranking"][0] == synthetic.reference[fixed]
    with Store.open(path) as store, pytest.raises(ValueError, match="reference_corrections"):
        export_project(store, tmp_path / "bad", "jsonl", reference_corrections="fix")


def test_a_project_read_without_the_table_has_no_reviews(tmp_path):
    """A project file older than the reviews (read without upgrading) has none, says why on write."""
    from pairscope.app.store.references import has_reference_reviews

    path = tmp_path / "old.pairscope"
    with Store.create(path) as store:
        assert has_reference_reviews(store)
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER reference_reviews_no_delete")
    conn.execute("DROP TABLE reference_reviews")
    conn.close()

    # (the store refuses a file whose schema is not its version's, so check the readers directly)
    class Bare:
        def __init__(self, c):
            self.c, self.path = c, path

        def query(self, sql, params=()):
            return self.c.execute(sql, params).fetchall()

    bare = Bare(sqlite3.connect(path))
    assert current_reference_reviews(bare) == {} and reference_review_history(bare, 1) == []
    with pytest.raises(ValueError, match="predates reference reviews"):
        add_reference_review(bare, ReferenceReview(1, "dana", "confirmed"))


def test_human_decisions_fix_the_truth(synthetic, tmp_path):
    """An adjudication is final; a 'confirmed' review holds the reference even against every vote."""
    path = tmp_path / "adj.pairscope"
    with Store.open(synthetic.path, readonly=True) as src:
        src.conn.execute("VACUUM INTO ?", (str(path),))
    first, second = synthetic.planted[:2]
    with Store.open(path) as store:
        a, b = store.item_id(first), store.item_id(second)
        truth = synthetic.truth[first]
        store.add_label(Label(a, "eve", "prefer", ranking=(truth, 1 - truth), kind="adjudication"))
        add_reference_review(store, ReferenceReview(b, "dana", "confirmed", reason="checked the image"))
        report = load_suspects(store).by_id()
    assert report[a].status == "adjudicated" and report[a].score == pytest.approx(1.0)
    assert report[b].status == "confirmed" and report[b].score == pytest.approx(0.0)


def test_cli_export_applies_the_corrections(synthetic, tmp_path, capsys):
    path = tmp_path / "cli.pairscope"
    with Store.open(synthetic.path, readonly=True) as src:
        src.conn.execute("VACUUM INTO ?", (str(path),))
    ext = synthetic.planted[0]
    with Store.open(path) as store:
        add_reference_review(store, ReferenceReview(store.item_id(ext), "dana", "wrong", synthetic.truth[ext], "why"))
    out = tmp_path / "vl"
    args = ["export", "--db", str(path), "--format", "vlrewardbench", "--source", "reference", "--out", str(out)]
    assert cli_main([*args, "--reference-corrections", "apply"]) == 0
    rows = {r["id"]: r for r in map(json.loads, (out / "vlrewardbench.jsonl").read_text().splitlines())}
    best = synthetic.truth[ext]
    assert rows[ext]["human_ranking"][best] == 0  # the corrected response ranks first
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["filters"]["reference_corrections"] == "apply"
    assert manifest["reference_corrections"]["items"][0]["by"] == "dana"
    with pytest.raises(SystemExit):
        cli_main([*args, "--force", "--reference-corrections", "fix"])
    assert "--reference-corrections: invalid choice" in capsys.readouterr().err
