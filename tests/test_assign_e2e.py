"""End to end (issue 28): assign 3 annotators with overlap 2 and 10 % gold, label each pack
through the labeling session (the window's save path), merge the packs back, and check the
lead's report against figures computed here independently (sklearn, statsmodels, scipy)."""

from __future__ import annotations

import json
import math

import numpy as np
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from helpers import good_bad_items
from pairscope.app.cli.main import main
from pairscope.app.curation.assign import assign_project, gold_from_reference
from pairscope.app.curation.teamwork import merge_projects
from pairscope.app.labeling.session import LabelingSession
from pairscope.app.records import LabelDraft
from pairscope.app.research import Project
from pairscope.app.stats.team_report import report_lines, team_report
from pairscope.app.store import Store
from pairscope.app.store.assignments import assignments, set_gold_items

TEAM = ["ana", "ben", "chen"]


def choose(name: str, ext_id: str, order: tuple[int, ...], gold_ids: set[str]) -> int:
    """The response each simulated annotator prefers: ana the GOOD one (0) always; ben the GOOD
    one except on gold items; chen the one shown first (position bias)."""
    if name == "chen":
        return order[0]
    if name == "ben" and ext_id in gold_ids:
        return 1
    return 0


def test_assign_label_merge_report(tmp_path, capsys):
    lead = Store.create(tmp_path / "lead.pairscope")
    lead.add_items(good_bad_items(60))
    gold_ext = {f"it{i}" for i in range(50, 60)}
    lead.add_to_collection("checks", [lead.item_id(e) for e in sorted(gold_ext)])
    set_gold_items(lead, gold_from_reference(lead, "checks")[0])
    result = assign_project(lead, TEAM, 2, tmp_path / "packs", gold_share=0.1, seed=11)
    assert sorted(result.new.values()) == [33, 33, 34] and set(result.gold.values()) == {4}
    held = {name: {a.item_id for a in assignments(lead, name)} for name in TEAM}
    lead_path = lead.path
    ext = dict(lead.query("SELECT id, ext_id FROM items"))
    lead.close()

    chosen: dict[str, dict[str, tuple[int, tuple[int, ...]]]] = {}
    for name in TEAM:
        with Store.open(tmp_path / "packs" / f"{name}.pairscope") as pack:
            assert {pack.get_item(i).ext_id for i in pack.item_ids()} == {ext[i] for i in held[name]}
            session = LabelingSession(pack, name)
            chosen[name] = {}
            for item_id in sorted(pack.item_ids()):
                e = pack.get_item(item_id).ext_id
                order = session.order(item_id)
                pick = choose(name, e, order, gold_ext)
                session.save(item_id, LabelDraft(preferred_position=order.index(pick) + 1))
                chosen[name][e] = (pick, order)
            session.close()
    report = merge_projects(lead_path, [tmp_path / "packs" / f"{n}.pairscope" for n in TEAM])
    assert report.labels_added == sum(len(v) for v in chosen.values())

    with Store.open(lead_path) as store:
        rows = {r.annotator: r for r in team_report(store)}
        text = "\n".join(report_lines(list(rows.values())))
    print(text)
    for name in TEAM:
        row = rows[name]
        mine = chosen[name]
        assert row.assigned == row.done == len(held[name]) == len(mine)
        gold_seen = [e for e in mine if e in gold_ext]
        correct = sum(mine[e][0] == 0 for e in gold_seen)
        assert (row.gold_labeled, row.gold_correct) == (len(gold_seen), correct)
        low, high = proportion_confint(correct, len(gold_seen), method="wilson")
        assert row.gold_ci == [low, high]
        firsts = sum(pick == order[0] for pick, order in mine.values())
        assert row.first_shown_share == firsts / len(mine)
        assert row.position_p == binomtest(firsts, len(mine), 0.5).pvalue
        for other in TEAM:
            if other == name:
                continue
            shared = sorted(set(mine) & set(chosen[other]))
            a = [mine[e][0] for e in shared]
            b = [chosen[other][e][0] for e in shared]
            expected = cohen_kappa_score(a, b) if len(set(a) | set(b)) > 1 else math.nan
            got = row.kappa[other]
            assert (got is None and math.isnan(expected)) or np.isclose(got, expected), (name, other, got, expected)
    assert rows["ana"].gold_accuracy == 1.0 and rows["ana"].flags == []
    assert rows["ben"].gold_accuracy == 0.0 and "fails gold" in rows["ben"].flags
    assert rows["chen"].first_shown_share == 1.0 and "position bias" in rows["chen"].flags
    assert "ben: " in text and "FLAGS: fails gold" in text

    with Project(lead_path) as project:
        frame = project.team_report()
    assert list(frame.index) == TEAM and frame.loc["ben", "gold_accuracy"] == 0.0
    assert frame.loc["ana", "gold_ci_low"] == rows["ana"].gold_ci[0]

    # the same report in `pairscope stats` (text and --json), as the team report command gives it
    capsys.readouterr()  # what the steps above printed
    assert main(["stats", "--db", str(lead_path), "--json", "--bootstrap", "0"]) == 0
    team = json.loads(capsys.readouterr().out)["team"]
    assert [r["annotator"] for r in team["annotators"]] == TEAM
    assert team["annotators"][TEAM.index("ben")]["flags"] == rows["ben"].flags
    assert main(["stats", "--db", str(lead_path), "--bootstrap", "0"]) == 0
    assert "FLAGS: fails gold" in capsys.readouterr().out


def test_stats_of_a_project_nobody_assigned_has_no_team_section(tmp_path, capsys):
    path = tmp_path / "p.pairscope"
    with Store.create(path) as store:
        store.add_items(good_bad_items(4))
    assert main(["stats", "--db", str(path), "--json", "--bootstrap", "0"]) == 0
    assert "team" not in json.loads(capsys.readouterr().out)
