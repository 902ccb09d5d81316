"""`regress` with tiers that answered different items: disjoint and partly overlapping recorded answers.

The offline reference judge grades recorded answers to the mini set's 40 items; Prefect runs against a temporary
test server (one per module). The decision logic alone is tested in `tests/judgewatch/regression/test_tier_gap.py`.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import func, select

from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.storage.db import make_engine, session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.releases import regression_source

from .conftest import SET
from .conftest import gate as regress

pytestmark = pytest.mark.usefixtures("prefect_server")
gate = partial(regress, baseline_tier="full")  # every run here compares with tier full


def answers(path: Path, picks: range, *, bad: bool = False) -> str:
    items = load_golden_set(SET).items
    write_recorded_answers(
        path, [(items[k].id, (items[k].bad_answers if bad else items[k].good_answers)[0]) for k in picks]
    )
    return str(path)


def read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def judged(db: str, release: str, tier: str) -> int:
    """How many of the tier's stored answers carry a verdict (scored or not)."""
    from judgewatch.storage.verdicts import VerdictRecord

    i, v = table(Interaction).c, table(VerdictRecord).c
    query = (
        select(func.count(func.distinct(i.id)))
        .join(VerdictRecord, v.interaction_id == i.id)
        .where(i.source == regression_source(release, tier, SET))
    )
    with session_scope(make_engine(db)) as session:
        return int(session.execute(query).scalar_one())


async def test_tiers_answering_disjoint_items_get_an_unpaired_gap_that_the_gap_margin_gates(
    db: str, tmp_path: Path
) -> None:
    full = answers(tmp_path / "full.jsonl", range(0, 20))
    quantized = answers(tmp_path / "quantized.jsonl", range(20, 40), bad=True)
    result = await gate(db, tmp_path, "r1", answers=[f"full={full}", f"quantized={quantized}"], gap_margin=0.25)

    assert result["exit_code"] == 1, result["summary"]
    faith = next(r for r in result["regressions"] if r["criterion"] == "faithfulness")
    assert faith["tier"] == "quantized-vs-full" and faith["basis"].startswith(
        "tier_gap_release_unpaired: different items"
    )
    assert (
        "(tier_gap_release_unpaired: different items (20 quantized, 20 full; 0 answered by both))" in result["summary"]
    )
    notes = "\n".join(result["notes"])
    assert "tier quantized: answered 20 of 40 golden items (50%); 20 not answered (50%), never scored" in notes
    assert judged(db, "r1", "quantized") == 20 and judged(db, "r1", "full") == 20

    data = json.loads(read(result["report_json"]))
    assert {g["estimand"] for g in data["gaps"]} == {"tier_gap_release_unpaired"}
    assert all(not g["paired"] and g["diff"]["method"] == "welch" for g in data["gaps"])
    evaluations = {t["tier"]: t["evaluation"] for t in data["tiers"]}
    items = load_golden_set(SET).items
    assert evaluations["quantized"]["unanswered"] == {SET: sorted(i.id for i in items[:20])}
    assert evaluations["quantized"]["total"] == 20 and evaluations["quantized"]["unscored"] == 0
    assert data["preferences"] == [] and "answered no golden item in common" in data["preference_note"]

    report = read(result["report"])
    assert "## Tier gap: quantized vs full (same release, unpaired: different items)" in report
    assert "the same golden items" not in report


async def test_partly_overlapping_tiers_are_paired_on_the_common_items_and_a_rerun_scores_only_the_file(
    db: str, tmp_path: Path
) -> None:
    full = answers(tmp_path / "full.jsonl", range(0, 40))
    everything = answers(tmp_path / "all.jsonl", range(0, 40))
    first = await gate(db, tmp_path, "r1", answers=[f"full={full}", f"quantized={everything}"], gap_margin=0.25)
    assert first["exit_code"] == 0, first["summary"]

    part = answers(tmp_path / "part.jsonl", range(0, 30))  # the same release again, 10 items fewer
    result = await gate(db, tmp_path, "r1", answers=[f"full={full}", f"quantized={part}"], gap_margin=0.25)
    assert result["exit_code"] == 0, result["summary"]
    assert (
        "tier gap within --gap-margin: quantized vs full (tier_gap_same_items: the same golden items "
        in (result["summary"])
    )
    data = json.loads(read(result["report_json"]))
    faith = next(g for g in data["gaps"] if g["criterion"] == "faithfulness")
    assert (faith["estimand"], faith["paired"], faith["diff"]["n"]) == ("tier_gap_same_items", True, 30)
    assert (faith["common"], faith["only_candidate"], faith["only_baseline"]) == (30, 0, 10)
    quantized = next(t["evaluation"] for t in data["tiers"] if t["tier"] == "quantized")
    assert (quantized["total"], quantized["unanswered_count"]) == (30, 10)  # the earlier file's 10 are not scored

    (pref,) = data["preferences"]
    assert pref["pairs"] == 30 and pref["shares"]["tied"]["n"] == 30  # the same good answers: every pair tied
    assert data["preference_items"] == [
        "quantized vs full: pairwise on the 30 golden items both answered; 0 answered by quantized only and 10 by "
        "full only are not compared pairwise"
    ]
    report = read(result["report"])
    assert "## Tier gap: quantized vs full (same release, paired on the same items)" in report
    assert "0 answered by quantized only and 10 by full only, outside the gap" in report


async def test_a_tier_answering_no_item_of_a_golden_set_exits_2_naming_file_and_set(db: str, tmp_path: Path) -> None:
    full = answers(tmp_path / "full.jsonl", range(0, 40))
    other = "halluqa_mini"
    result = await gate(db, tmp_path, "r1", datasets=[SET, other], answers=[f"full={full}"])
    count = len(load_golden_set(other).items)
    assert result["exit_code"] == 2
    assert result["reasons"] == [f"tier full: {full}: answers no item of golden set {other} ({count} items)"]
