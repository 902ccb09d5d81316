"""The Tiers report and page lead with the gate's question (which tier, which criterion, by how much against the
baseline release, with its interval); the headline plot names the one release it covers; over-time plots with
one day (week) of data say so instead of drawing empty axes; n effective and "labels by" read alike on like rows
(issue 35 §6.6)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from judgewatch.calibration import plots
from judgewatch.calibration.summary import summarize
from judgewatch.calibration.tiers_report import GATE_SECTION, blocks, fmt_n
from judgewatch.cli.report_cmd import app
from judgewatch.contract.rubric import Rubric
from judgewatch.stats import Estimate, WindowStats
from judgewatch.storage.db import session_scope
from judgewatch.storage.releases import GateDecision, record_gate_decision
from judgewatch.testing.synthetic_labels import TierTruth, write_synthetic

from .conftest import JUDGE_A, one_release_day

START = datetime(2026, 1, 1, tzinfo=UTC)
REGRESSIONS = [  # as the gate stores them: candidate - baseline release, per tier and criterion
    {"tier": "quantized", "criterion": "relevance", "baseline": "r0", "estimate": -0.71, "low": -1.09, "high": -0.41},
    {
        "tier": "quantized",
        "criterion": "completeness",
        "baseline": "r0",
        "estimate": -1.41,
        "low": -1.85,
        "high": -1.02,
    },
]


@pytest.fixture
def gated(engine: Engine, rubric: Rubric) -> Engine:
    """Release r1 on two tiers (a one-day store, few labels), and the gate's decisions on r1 (regression) and
    r2 (could not evaluate, decided later) by the same judge."""
    truth = TierTruth(human_mean=3.5, judge_bias=0.0)
    spec = one_release_day({"full": truth, "quantized": truth}, per_day=24, review_share=0.12, start=START)
    write_synthetic(engine, rubric, spec)
    decisions = [
        GateDecision(
            id="g1",
            release="r1",
            exit_code=1,
            outcome="regression",
            summary="REGRESSION (exit 1): ...",
            judge_config_hash=JUDGE_A.config_hash,
            decided_at=START + timedelta(hours=2),
            detail={"regressions": REGRESSIONS, "margin": 0.25},
        ),
        GateDecision(
            id="g2",
            release="r2",
            exit_code=2,
            outcome="error",
            summary="COULD NOT EVALUATE (exit 2): x",
            reasons=["tier quantized: endpoint unreachable"],
            judge_config_hash=JUDGE_A.config_hash,
            decided_at=START + timedelta(hours=3),
        ),
        GateDecision(
            id="g3",
            release="r9",
            exit_code=1,
            outcome="regression",
            summary="another judge's",
            judge_config_hash="b" * 16,
            decided_at=START + timedelta(hours=4),
        ),
    ]
    with session_scope(engine, write=True) as session:
        for decision in decisions:
            record_gate_decision(session=session, decision=decision)
    return engine


def test_the_report_leads_with_the_regressing_tier_criterion_and_gap_against_the_baseline(gated: Engine) -> None:
    summary = summarize(gated, with_trust=False, n_boot=50)
    content = blocks(summary)
    kinds = [(b.kind, b.text) for b in content]
    first_h2 = next(i for i, (kind, _) in enumerate(kinds) if kind == "h2")
    assert content[first_h2].text == GATE_SECTION  # before the warnings, the judge and every table
    assert all(kind != "warn" for kind, _ in kinds[:first_h2])
    lead = content[first_h2 + 1].text
    assert lead.startswith("Latest gate: release r2, could not evaluate (tier quantized: endpoint unreachable).")
    assert (
        "Release r1 regressed: tier quantized, completeness -1.41 [-1.85, -1.02] (candidate − baseline) against "
        "baseline release r0, margin 0.25; 2 tier-criterion pair(s) regressed in all." in lead
    )
    table = content[first_h2 + 2]
    rows = [dict(zip(table.headers, row, strict=True)) for row in table.rows]
    assert [(r["release"], r["criterion"]) for r in rows] == [("r2", "-"), ("r1", "completeness"), ("r1", "relevance")]
    assert rows[1]["candidate − baseline [95% CI]"] == "-1.41 [-1.85, -1.02]" and rows[1]["baseline"] == "r0"
    assert "r9" not in {r["release"] for r in rows}  # another judge series' decision is not this page's
    trend = next(b for b in content if b.kind == "image" and b.name == "trend")
    assert trend.text.startswith("Scores over time, per day: release r1 (golden sets) (every verdict")  # one day
    image = next(b for b in content if b.kind == "image" and b.name == "estimates")
    assert image.text == "Per tier and criterion, release r1 (the regressing release the gate names; golden sets) only"


def test_json_and_html_reports_carry_the_same_lead(gated: Engine, db_url: str, tmp_path: Path) -> None:
    for fmt in ("json", "html"):
        out = tmp_path / f"tiers.{fmt}"
        result = CliRunner().invoke(app, ["tiers", "--database-url", db_url, "--output", str(out), "--format", fmt])
        assert result.exit_code == 0, result.output
        text = out.read_text(encoding="utf-8")
        if fmt == "json":
            doc = json.loads(text)
            assert doc["gate_question"].startswith("Latest gate: release r2") and len(doc["gate"]) == 3
            assert doc["gate"][1]["estimate"] == -1.41 and doc["gate"][0]["estimate"] is None
        else:
            assert text.index(GATE_SECTION.replace("'", "&#x27;")) < text.index("Judge and trust")


def test_n_effective_and_labels_by_read_alike_on_like_rows(gated: Engine) -> None:
    summary = summarize(gated, with_trust=False, n_boot=50)
    table = next(
        b for b in blocks(summary) if b.kind == "table" and "n effective" in b.headers and "labels by" in b.headers
    )
    rows = [dict(zip(table.headers, row, strict=True)) for row in table.rows]
    assert rows
    for row in rows:
        labeled, note = int(row["n labeled"]), row["corrected [95% CI]"].startswith("too few labels")
        assert (row["n effective"] == "-") == note, row  # one definition: defined exactly where there is an interval
        assert row["n effective"] == "-" or int(row["n effective"]) > 0
        assert (row["labels by"] == "-") == (labeled == 0), row  # never "people" with 0 labels
        assert "people" not in row["labels by"] or labeled > 0
    for est in summary.release + summary.traffic:
        assert math.isnan(est.n_effective) == bool(est.interval_note)  # the JSON's null, the table's "-"
    assert fmt_n(40, 0, float("nan")) == ["40", "0", "-"] and fmt_n(40, 9, 12.4) == ["40", "9", "12"]


def test_over_time_plots_with_one_day_or_week_say_why_instead_of_drawing_empty_axes() -> None:
    day = pd.Timestamp("2026-01-01")
    daily = pd.DataFrame(
        {
            "tier": ["full", "full", "full"],
            "criterion": ["faithfulness", "faithfulness", "relevance"],
            "window": [day, day + timedelta(days=1), day],
            "mid": [day, day + timedelta(days=1), day],
            "raw_mean": [4.0, 4.2, 3.0],
        }
    )
    drawn, why = plots.trend_criteria(daily)
    assert drawn == ["faithfulness"] and why == "left out, one day of verdicts only: relevance"
    drawn, why = plots.trend_criteria(daily[daily["criterion"] == "relevance"])
    assert drawn == [] and "falls on one day (2026-01-01): a trend needs two days or more" in why
    one = Estimate(0.9, 0.8, 1.0, 10)
    weeks = {("full", "faithfulness"): [WindowStats(day, 10, one, one)]}
    drawn, why = plots.agreement_weeks(weeks)
    assert drawn == [] and "one week: a weekly trend needs two weeks or more" in why
    weeks[("full", "faithfulness")].append(WindowStats(day + timedelta(days=7), 10, one, one))
    assert plots.agreement_weeks(weeks) == (["faithfulness"], "")
