"""The Tiers report: every section, valid PNG plots beside the Markdown, inline in the HTML; the CLI command."""

from __future__ import annotations

import base64
import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from PIL import Image
from sqlalchemy import Engine
from typer.testing import CliRunner

from judges.reference import ReferenceJudge
from judgewatch.calibration.anchors import ensure_anchor_verdicts, freeze_anchor_set
from judgewatch.calibration.page_snapshots import save_views
from judgewatch.calibration.summary import summarize
from judgewatch.calibration.tiers_report import SECTIONS, write_report
from judgewatch.cli.report_cmd import app
from judgewatch.contract.rubric import Rubric
from judgewatch.storage.calibration import DriftAlert, upsert_alert
from judgewatch.storage.db import session_scope
from judgewatch.testing.synthetic_labels import SyntheticSpec, write_synthetic

from .conftest import JUDGE_A

START = datetime(2026, 1, 1, tzinfo=UTC)


def assert_png(data: bytes) -> None:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG" and image.width > 200 and image.height > 50
    image.verify()


@pytest.fixture
def store(engine: Engine, rubric: Rubric) -> Engine:
    """Two tiers with synthetic labels, one open drift alert, and anchors re-judged by a second judge."""
    write_synthetic(engine, rubric, SyntheticSpec(judge=JUDGE_A, days=3, per_day=30, review_share=0.3, start=START))
    alert = DriftAlert(
        id="", judge_config_hash=JUDGE_A.config_hash, judge_name=JUDGE_A.name, rubric_name="answer_quality",
        rubric_version="1.0.0", tier="quantized", criterion="faithfulness", window="daily",
        window_start=datetime(2026, 1, 3, tzinfo=UTC), window_end=datetime(2026, 1, 4, tzinfo=UTC),
        reference_start=START, kind="bias_shift", n_ref=40, n_cur=12, agreement_ref=0.6, agreement_cur=0.2,
        bias_ref=0.3, bias_cur=-1.2, p_agreement_drop=0.001, p_bias_shift=1e-6, alpha=0.004, test="stated",
        message="judge drift on tier quantized",
    )  # fmt: skip
    with session_scope(engine, write=True) as session:
        upsert_alert(session=session, alert=alert)
    freeze_anchor_set(engine, name="anchors", rubric_name="answer_quality", size=12)
    import asyncio

    asyncio.run(ensure_anchor_verdicts(engine, anchor_set="anchors", judge=ReferenceJudge(), rubric=rubric))
    return engine


def test_markdown_report_has_every_section_and_valid_png_plots_beside_it(
    store: Engine, rubric: Rubric, tmp_path: Path
) -> None:
    summary = summarize(store, categories=rubric.scale.levels, n_boot=200, baseline="full")
    assert summary.series is not None and summary.series.judge == JUDGE_A  # anchor re-judging is not the series
    written = write_report(summary, tmp_path / "out" / "tiers.md", "md")
    md = written[0].read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f"\n## {section}\n" in md
    assert [p.name for p in written[1:]] == ["tiers_estimates.png", "tiers_trend.png", "tiers_agreement.png"]
    for png in written[1:]:
        assert f"]({png.name})" in md
        assert_png(png.read_bytes())
    assert "SYNTHETIC LABELS" in md and JUDGE_A.config_hash in md
    assert re.search(r"\| quantized \| faithfulness \| [0-9.]+ \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \|", md)
    assert "| faithfulness | quantized − full |" in md
    assert "| quantized | faithfulness | daily | 2026-01-03 | bias_shift |" in md  # the open alert
    assert "Anchor set anchors (12 items)" in md and "mean shift [95% CI]" in md
    assert "| full | 90 |" in md  # scored verdicts per tier: what the numbers rest on


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # rendering and the CLI: the store is covered above
@pytest.mark.usefixtures("store")
def test_report_command_writes_one_html_file_with_the_plots_inline(db_url: str, tmp_path: Path) -> None:
    out = tmp_path / "r" / "tiers.html"
    result = CliRunner().invoke(app, ["tiers", "--database-url", db_url, "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert f"tier report: {out}" in result.output and "SYNTHETIC LABELS" in result.output
    assert list(out.parent.iterdir()) == [out]
    html = out.read_text(encoding="utf-8")
    assert all(f"<h2>{section}</h2>" in html for section in SECTIONS)
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 3
    for data in images:
        assert_png(base64.b64decode(data))


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_json_report_names_each_estimand_with_its_ns_and_p_values(
    store: Engine, rubric: Rubric, db_url: str, tmp_path: Path
) -> None:
    # a release's golden items next to the traffic: they get their own estimand and never enter the traffic one
    write_synthetic(
        store, rubric, SyntheticSpec(judge=JUDGE_A, days=1, per_day=40, review_share=0.5, start=START, paired=True)
    )
    out = tmp_path / "tiers.json"
    result = CliRunner().invoke(
        app, ["tiers", "--database-url", db_url, "--baseline-tier", "full", "--format", "json", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert set(doc["estimands"]) == {"traffic_quality", "release_quality"}
    assert {(e["estimand"], e["tier"]) for e in doc["traffic"]} == {
        ("traffic_quality", "full"),
        ("traffic_quality", "quantized"),
    }
    assert all(e["n_sampled"] == 90 and 0 < e["n_labeled"] < 90 and e["n_effective"] > 0 for e in doc["traffic"])
    assert {(e["estimand"], e["release"], e["n_sampled"]) for e in doc["release"]} == {("release_quality", "r1", 40)}
    kinds = {g["estimand"] for g in doc["gaps"]}
    assert kinds == {"tier_gap_traffic", "tier_gap_traffic_mix_adjusted", "tier_gap_same_items"}
    assert all(0.0 <= g["p_value"] <= 1.0 and g["low"] <= g["estimate"] <= g["high"] for g in doc["gaps"])
    assert "traffic:synthetic-full" in doc["traffic_covers"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_report_command_refuses_a_bad_since_or_an_unknown_judge(db_url: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["tiers", "--database-url", db_url, "--since", "last tuesday"])
    assert result.exit_code == 2 and "--since 'last tuesday'" in result.output
    out = tmp_path / "x.md"
    result = CliRunner().invoke(
        app, ["tiers", "--database-url", db_url, "--judge-config", "nope", "--output", str(out)]
    )
    assert result.exit_code == 2 and "nope" in result.output and not out.exists()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_the_report_reads_the_calibration_snapshot_and_computes_only_without_one(
    store: Engine, db_url: str, tmp_path: Path
) -> None:
    def report(*args: str) -> tuple[str, dict]:
        out = tmp_path / "tiers.json"
        result = CliRunner().invoke(
            app, ["tiers", "--database-url", db_url, "--format", "json", "--output", str(out), *args]
        )
        assert result.exit_code == 0, result.output
        return result.output, json.loads(out.read_text(encoding="utf-8"))

    output, computed = report()  # no snapshot yet: computed, and said so
    assert "no calibration snapshot for this period and judge series: computing from the store now" in output
    assert computed["provenance"].startswith("Computed from the store")

    save_views(store, rubric_name="answer_quality", periods=("",))  # what the calibration flow stores
    output, stored = report()
    assert "Read from the snapshot the calibration flow stored at" in output and "computing" not in output
    assert stored["provenance"].startswith("Read from the snapshot") and "judge-a" in stored["provenance"]
    estimates = [(e["estimand"], e["tier"], e["criterion"], e["n_sampled"], e["n_labeled"]) for e in stored["traffic"]]
    assert estimates == [
        (e["estimand"], e["tier"], e["criterion"], e["n_sampled"], e["n_labeled"]) for e in computed["traffic"]
    ]
    assert all("p_value" in g and "n_effective" in g for g in stored["gaps"])

    for forced in (["--compute"], ["--since", "2026-01-02"], ["--baseline", "quantized"]):
        output, _ = report(*forced)  # what the flow does not store is computed
        assert "computing from the store now" in output, forced

    md = tmp_path / "md" / "tiers.md"
    result = CliRunner().invoke(app, ["tiers", "--database-url", db_url, "--output", str(md)])
    assert result.exit_code == 0 and "Read from the snapshot" in md.read_text(encoding="utf-8")
    assert len(list(md.parent.glob("tiers_*.png"))) == 3
