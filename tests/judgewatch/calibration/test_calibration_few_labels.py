"""A demo-like store (one release, two tiers, every label a 5, two or three labels per tier): the Tiers report
gives no zero-width interval; below the minimum of labels each estimate reads "too few labels (n=k, need m)"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from judgewatch.calibration.summary import summarize
from judgewatch.cli.report_cmd import app
from judgewatch.contract.rubric import Rubric
from judgewatch.testing.synthetic_labels import TierTruth, write_synthetic

from .conftest import one_release_day

START = datetime(2026, 1, 1, tzinfo=UTC)
NEED = 5  # Settings.min_labels' default


@pytest.fixture
def few_labels(engine: Engine, rubric: Rubric) -> Engine:
    """Golden items of release r1 on two tiers; the true score is 5 everywhere, the judge mostly says 5 too."""
    always_five = TierTruth(human_mean=9.0, judge_bias=0.0)
    # review share: 2-4 labels a tier, as routing falls (rubric 1.1.0's hashes)
    spec = one_release_day({"full": always_five, "quantized": always_five}, per_day=32, review_share=0.12, start=START)
    write_synthetic(engine, rubric, spec)
    return engine


def intervals(node: Any) -> Iterator[dict[str, Any]]:
    """Every mapping in the document that carries an interval (`low` and `high`)."""
    if isinstance(node, dict):
        if "low" in node and "high" in node:
            yield node
        for value in node.values():
            yield from intervals(value)
    elif isinstance(node, list):
        for value in node:
            yield from intervals(value)


def test_the_json_report_has_no_interval_from_fewer_than_the_minimum_of_labels(
    few_labels: Engine, db_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "tiers.json"
    result = CliRunner().invoke(
        app, ["tiers", "--database-url", db_url, "--baseline-tier", "full", "--format", "json", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    labeled = {c["tier"]: c["labeled_items"] for c in doc["label_counts"]}
    assert set(labeled) == {"full", "quantized"} and max(labeled.values()) >= 2, labeled
    assert all(n < NEED for n in labeled.values()), labeled
    assert doc["min_labels"] == NEED
    for row in doc["release"]:
        assert row["low"] is None and row["high"] is None and row["human_low"] is None
        assert row["interval_note"] == f"too few labels (n={row['n_labeled']}, need {NEED})"
    assert doc["gaps"] and all(
        g["low"] is None and g["interval_note"].startswith("too few labels") for g in doc["gaps"]
    )
    assert doc["gaps"][0]["estimand"] == "tier_gap_same_items"
    assert doc["agreement"]
    for row in doc["agreement"]:
        assert row["interval_note"] == f"too few labels (n={row['n']}, need {NEED})"
        assert all(row[k]["low"] is None for k in ("weighted_kappa", "ac1", "bias", "exact", "spearman"))
    widths = [(i["high"] - i["low"]) for i in intervals(doc) if i["low"] is not None and i["high"] is not None]
    assert all(w > 0 for w in widths), widths


def test_the_text_report_reads_too_few_labels_and_explains_a_collapsed_kappa(
    few_labels: Engine, db_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "tiers.md"
    result = CliRunner().invoke(app, ["tiers", "--database-url", db_url, "--output", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert f"need {NEED})" in text and "too few labels (n=" in text
    assert "[5.00, 5.00]" not in text and "[+0.00, +0.00]" not in text
    assert "Gwet's AC1" in text and "kappa collapses" in text
    assert "Per tier and criterion, release r1 (the newest golden verdicts; golden sets) only" in text


def test_with_a_lower_minimum_two_agreeing_labels_still_give_an_interval_wider_than_a_point(
    few_labels: Engine,
) -> None:
    summary = summarize(few_labels, with_trust=False, n_boot=50, min_labels=2)
    rows = [r for r in summary.release if r.n_labeled >= 2]
    assert rows
    for row in rows:
        assert row.interval_note == "" and row.high - row.low > 0.5, row
