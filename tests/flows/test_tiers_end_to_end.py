"""End to end, the real pieces chained: sampling a two-tier traffic log, routing, labels entered through the
review queue, a release's golden sets through the regression gate, the calibration flow, then
`judgewatch report tiers --format json`: each estimate names its estimand and its n's, and no golden
(regression) item or label ever enters a traffic estimate.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import Engine, select, text
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.review.accounts import add_reviewer
from judgewatch.review.queue import ReviewQueue
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine, session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import ReviewItem, ReviewLabel

DEMO = REPO_ROOT / "examples" / "traffic"
SET = "halueval_qa_mini"
RATES = {"full": 0.2, "quantized": 0.1}  # unequal: an unweighted mean would describe the sample, not the traffic

pytestmark = pytest.mark.usefixtures("prefect_server")  # tests/flows/conftest.py: one server per module


def source_config(tmp_path: Path) -> Path:
    log = tmp_path / "gateway.jsonl"
    shutil.copyfile(DEMO / "halluqa_gateway_log.jsonl", log)
    config = yaml.safe_load((DEMO / "demo_source.yaml").read_text(encoding="utf-8"))
    config["paths"] = [str(log)]
    config["sampling"]["rates"] = RATES
    path = tmp_path / "source.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def label_everything(engine: Engine) -> Counter[str]:
    """Two reviewers work the queue through the review service until it is empty; labels per population."""
    with session_scope(engine, write=True) as session:
        for name in ("alice", "bob"):
            add_reviewer(session=session, name=name, password="correct horse battery")
    queue = ReviewQueue(engine)
    for reviewer in ("alice", "bob"):
        while (item := queue.lease_next(reviewer)) is not None:
            # Blind: the reviewer sees no verdict; a score from the answer's length keeps the labels varied.
            score = 2 + len(item.answer) % 4
            scores = {c.name: (score if c.applicable else None) for c in item.criteria}
            queue.submit(reviewer, item.item_id, scores, rubric_version_shown=item.rubric_version)
    i, r, h = table(Interaction).c, table(ReviewItem).c, table(ReviewLabel).c
    query = (
        select(i.source)
        .join_from(table(ReviewLabel), table(ReviewItem), r.id == h.review_item_id)
        .join(table(Interaction), i.id == r.interaction_id)
        .where(h.skipped_reason.is_(None))
    )
    with session_scope(engine) as session:
        rows = session.execute(query).scalars().all()
    return Counter("traffic" if s.startswith("traffic:") else "golden" for s in rows)


def traffic_counts(engine: Engine, criterion: str) -> dict[str, tuple[int, int]]:
    """Per tier: (traffic verdicts scoring `criterion`, of them items labeled on it), straight from the store."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT i.tier, count(DISTINCT v.id), count(DISTINCT CASE WHEN "
                "json_extract(h.scores, '$.' || :criterion) IS NOT NULL THEN v.id END) "
                "FROM verdict v JOIN interaction i ON i.id = v.interaction_id "
                "JOIN criterion_score c ON c.verdict_id = v.id AND c.criterion = :criterion AND c.score IS NOT NULL "
                "LEFT JOIN review_item r ON r.interaction_id = i.id "
                "LEFT JOIN review_label h ON h.review_item_id = r.id AND h.skipped_reason IS NULL AND NOT h.flagged "
                "WHERE i.source LIKE 'traffic:%' AND v.status = 'scored' AND v.rubric_name = 'answer_quality' "
                "GROUP BY i.tier"
            ),
            {"criterion": criterion},
        ).all()
    return {str(tier): (int(n), int(labeled)) for tier, n, labeled in rows}


async def test_sampled_traffic_and_golden_sets_reach_the_tier_report_as_separate_estimands(tmp_path: Path) -> None:
    from flows.calibration import calibration
    from flows.regression import post_release_regression
    from flows.sampling import traffic_sampling

    db = f"sqlite:///{tmp_path / 'jw.db'}"
    sampled = await traffic_sampling(source=str(source_config(tmp_path)), judge="reference", database_url=db)
    assert {s: v["rate"] for s, v in sampled["strata"].items()} == RATES and sampled["routed"]["uniform"] > 0

    items = load_golden_set(SET).items
    answers = tmp_path / "good.jsonl"
    write_recorded_answers(answers, [(i.id, i.good_answers[0]) for i in items])
    gate: Any = await post_release_regression(
        release="r1",
        datasets=[SET],
        answers=[f"full={answers}", f"quantized={answers}"],
        baseline_tier="full",  # the release declares its baseline tier: the report compares with the same one
        judge="reference",
        report=str(tmp_path / "r1.md"),
        database_url=db,
        fail_on_gate=False,
    )
    assert gate["exit_code"] == 0, gate["summary"]

    engine = make_engine(db)
    labels = label_everything(engine)
    assert labels["traffic"] > 20 and labels["golden"] > 0  # golden verdicts are routed to people too

    calibrated = await calibration(judge="reference", anchor_size=10, lookback_days=36500, database_url=db)
    assert calibrated["tiers"] == ["full", "quantized"] and calibrated["labeled"] > 0

    out = tmp_path / "tiers.json"
    result = CliRunner().invoke(
        get_app(), ["report", "tiers", "--format", "json", "--output", str(out), "--database-url", db]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text(encoding="utf-8"))

    assert set(report["estimands"]) == {"traffic_quality", "release_quality"}
    assert {r["estimand"] for r in report["traffic"]} == {"traffic_quality"}
    assert {r["estimand"] for r in report["release"]} == {"release_quality"}
    gaps = {g["estimand"] for g in report["gaps"]}
    assert {"tier_gap_traffic", "tier_gap_traffic_mix_adjusted", "tier_gap_same_items"} <= gaps
    assert all(g["p_value"] is None or 0.0 <= g["p_value"] <= 1.0 for g in report["gaps"])

    # The traffic estimate rests on the sampled traffic and its labels only: the n's match the store's
    # traffic rows exactly, so none of the 2 x 40 golden verdicts or their labels is counted in it.
    store = traffic_counts(engine, "faithfulness")
    engine.dispose()
    faith = {r["tier"]: r for r in report["traffic"] if r["criterion"] == "faithfulness"}
    assert set(faith) == {"full", "quantized"}
    for tier, row in faith.items():
        n_sampled, n_labeled = store[tier]
        assert (row["n_sampled"], row["n_labeled"]) == (n_sampled, n_labeled), tier
        assert row["n_effective"] > 0 and row["low"] < row["estimate"] < row["high"]
        assert row["release"] is None and row["dataset"] is None
        # Each pick stands for 1 / rate interactions: the estimate describes the traffic, not the sample.
        assert row["population"] == pytest.approx(n_sampled / RATES[tier])
    release = {r["tier"]: r for r in report["release"] if r["criterion"] == "faithfulness"}
    assert {(r["release"], r["dataset"], r["n_sampled"]) for r in release.values()} == {("r1", SET, len(items))}
    assert sum(r["n_labeled"] for r in report["release"] if r["criterion"] == "faithfulness") <= labels["golden"]
    assert "traffic:halluqa-demo" in report["traffic_covers"]
