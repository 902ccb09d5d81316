"""`judgewatch export` and `judgewatch compare` on the store the quick demo leaves (r1 good, r3's quantized tier
answering the golden sets' known-bad answers on some items, r4's quantized tier down)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from datasets import load_from_disk
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.storage.db import session_scope
from judgewatch.testing.quick_demo import QuickDemo
from judgewatch.workbench.compare import Side, compare, word_diff
from judgewatch.workbench.export import collect
from judgewatch.workbench.items import ItemFilter, LabelStatus, find_items

pytestmark = pytest.mark.slow


def run(*args: str) -> str:
    result = CliRunner().invoke(get_app(), list(args))
    assert result.exit_code == 0, result.output
    return result.output


def expected_rows(demo: QuickDemo, filt: ItemFilter) -> list[dict[str, object]]:
    with session_scope(demo.engine) as session:
        rows, _ = collect(session, filt)
    return rows


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "hf"])
def test_an_export_reads_back_column_for_column(quick_demo: QuickDemo, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / ("export" if fmt == "hf" else f"export.{fmt}")
    said = run(
        "export", "--format", fmt, "--output", str(out), "--release", "r3", "--database-url", quick_demo.database_url
    )
    want = expected_rows(quick_demo, ItemFilter(release="r3"))
    assert f"exported {len(want)} verdicts" in said and len(want) > 100
    if fmt == "parquet":
        got = pd.read_parquet(out).astype(object).where(lambda f: f.notna(), None).to_dict("records")
        meta = json.loads(pq.read_schema(out).metadata[b"judgewatch"])
    elif fmt == "jsonl":
        got = (
            pd.read_json(out, lines=True, dtype=False, precise_float=True)
            .astype(object)
            .where(lambda f: f.notna(), None)
        )
        got = got.to_dict("records")
        meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    else:
        dataset = load_from_disk(str(out))
        got = dataset.to_list()
        meta = json.loads(dataset.info.description)
    assert got == want
    assert meta["rows"] == len(want) and meta["filter"] == {"release": "r3"}
    assert meta["judge_config_hashes"] and all(
        h in {r["judge_config_hash"] for r in want} for h in meta["judge_config_hashes"]
    )
    assert any(r.startswith("answer_quality@") for r in meta["rubrics"])
    assert meta["label_provenance"].get("dataset_annotation", 0) > 0  # the demo's labels, named as such


def test_an_export_filtered_by_score_and_label_status_holds_only_those_items(
    quick_demo: QuickDemo, tmp_path: Path
) -> None:
    out = tmp_path / "low.jsonl"
    run(
        "export", "--format", "jsonl", "--output", str(out), "--release", "r3", "--tier", "quantized",
        "--criterion", "faithfulness", "--score-max", "2", "--database-url", quick_demo.database_url,
    )  # fmt: skip
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(r["tier"] == "quantized" and r["release"] == "r3" for r in rows)
    assert all(json.loads(r["scores"])["faithfulness"] <= 2 for r in rows)
    with session_scope(quick_demo.engine) as session:
        labeled, total = find_items(session, ItemFilter(label_status=LabelStatus.labeled), limit=None)
        assert total is None and labeled and all(r.labels and r.status is LabelStatus.labeled for r in labeled)
        unlabeled, _ = find_items(session, ItemFilter(label_status=LabelStatus.unlabeled), limit=5)
        assert len(unlabeled) == 5 and all(not r.labels for r in unlabeled)


def test_an_export_with_a_bad_filter_or_no_match_fails_in_one_line(quick_demo: QuickDemo, tmp_path: Path) -> None:
    url = quick_demo.database_url
    bad = CliRunner().invoke(
        get_app(),
        ["export", "--format", "jsonl", "--output", str(tmp_path / "x"), "--label-status", "x", "--database-url", url],
    )
    assert bad.exit_code == 2 and "--label-status" in bad.output
    none = CliRunner().invoke(
        get_app(),
        ["export", "--format", "jsonl", "--output", str(tmp_path / "y"), "--release", "r99", "--database-url", url],
    )
    assert none.exit_code == 2 and f"nothing in {url} matches" in none.output and not (tmp_path / "y").exists()


def test_comparing_two_releases_lists_the_regressions_first_with_their_answers_marked(quick_demo: QuickDemo) -> None:
    with session_scope(quick_demo.engine) as session:
        comparison = compare(session, Side.parse("r1"), Side.parse("r3"))
    faith = next(c for c in comparison.criteria if c.criterion == "faithfulness")
    assert faith.estimate < 0 and faith.high < 0 and faith.n == 160  # both tiers, every golden item
    assert comparison.regressions and all(min(p.delta.values()) < 0 for p in comparison.regressions)
    worst = [min(p.delta.values()) for p in comparison.regressions]
    assert worst == sorted(worst)  # largest drop first
    assert all(p.key.startswith("quantized/") for p in comparison.regressions[:5])  # r3 broke the quantized tier
    first = comparison.regressions[0]
    assert "[-" in word_diff(first.answer_a, first.answer_b) and "{+" in word_diff(first.answer_a, first.answer_b)


def test_comparing_two_tiers_of_a_release_pairs_their_items(quick_demo: QuickDemo, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    said = run(
        "compare",
        "r3/full",
        "r3/quantized",
        "--format",
        "json",
        "--output",
        str(out),
        "--database-url",
        quick_demo.database_url,
    )
    doc = json.loads(out.read_text())
    assert doc["a"] == "r3/full" and doc["b"] == "r3/quantized" and "regressed" in said
    assert {c["criterion"] for c in doc["criteria"]} >= {"faithfulness", "completeness", "relevance"}
    faith = next(c for c in doc["criteria"] if c["criterion"] == "faithfulness")
    assert faith["n_pairs"] == 80 and faith["high"] < 0
    assert doc["regressions"][0]["answer_diff"] and doc["regressions"][0]["interaction_a"]


def test_items_unscored_on_either_side_are_listed_apart_not_dropped(quick_demo: QuickDemo) -> None:
    from sqlalchemy import update

    from judgewatch.storage.db import table
    from judgewatch.storage.verdicts import VerdictRecord

    with session_scope(quick_demo.engine) as session:
        rows, _ = find_items(session, ItemFilter(release="r2", tier="quantized", rubric="answer_quality"), limit=1)
        target = rows[0].verdict.id
    v = table(VerdictRecord).c
    with session_scope(quick_demo.engine, write=True) as session:
        session.execute(
            update(VerdictRecord).where(v.id == target).values(status="unscored", unscored_reason="timeout")
        )
    try:
        with session_scope(quick_demo.engine) as session:
            comparison = compare(session, Side.parse("r1/quantized"), Side.parse("r2/quantized"))
        assert [p.unscored for p in comparison.unscored] == [{"b": "timeout"}]
        assert all(p.key != comparison.unscored[0].key for p in comparison.regressions + comparison.improvements)
    finally:
        with session_scope(quick_demo.engine, write=True) as session:
            session.execute(update(VerdictRecord).where(v.id == target).values(status="scored", unscored_reason=None))


def test_compare_names_what_it_cannot_compare(quick_demo: QuickDemo) -> None:
    result = CliRunner().invoke(get_app(), ["compare", "r1", "r99", "--database-url", quick_demo.database_url])
    assert result.exit_code == 2 and "r99" in result.output and "Traceback" not in result.output


def test_the_gate_reports_worst_items_link_to_the_items_page_and_it_states_the_judge_cost(
    quick_demo: QuickDemo,
) -> None:
    import re

    from judgewatch.workbench.items import item_detail

    report = (quick_demo.folder / "r3.md").read_text()
    links = re.findall(r"\]\(http://127\.0\.0\.1:7860/\?item=([0-9a-f]+)\)", report)
    assert links, report[:2000]
    with session_scope(quick_demo.engine) as session:
        opened = [item_detail(session, i) for i in links]
    assert all(d is not None and d.interaction.release == "r3" for d in opened)
    assert "judge cost of this release so far: 0.0000 USD for" in report  # the offline judge spends no tokens
    cost = json.loads((quick_demo.folder / "r3.json").read_text())["cost"]
    assert cost["currency"] == "USD" and cost["verdicts"] > 0 and cost["unpriced_models"] == {}
