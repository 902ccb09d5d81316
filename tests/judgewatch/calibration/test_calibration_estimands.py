"""Estimands kept apart: traffic quality (sampling x routing weights) and release quality (golden sets only),
and tier gaps on traffic adjusted for the request mix each tier served."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine

from judgewatch.calibration.estimands import (
    RELEASE,
    TRAFFIC,
    release_estimates,
    split_populations,
    traffic_coverage,
    traffic_estimates,
    traffic_monitor,
)
from judgewatch.calibration.score_frame import load_scores
from judgewatch.calibration.summary import summarize
from judgewatch.calibration.tier_gap import (
    GAP_ADJUSTED,
    GAP_RELEASE_UNPAIRED,
    GAP_SAME_ITEMS,
    GAP_TRAFFIC,
    same_item_gaps,
    traffic_gaps,
)
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict, VerdictStatus
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.releases import regression_source
from judgewatch.storage.verdicts import upsert_verdicts
from judgewatch.testing.synthetic_labels import label_routed

from .conftest import JUDGE_A

START = datetime(2026, 3, 1, tzinfo=UTC)
RATES = {"chat": 0.1, "code": 0.5}


def _write(engine: Engine, rubric: Rubric) -> dict[str, dict[str, int]]:
    """Sampled traffic (two tiers, two strata at unequal rates), golden items of release r1, one stray file
    item; the judge overrates traffic by one point. Returns the true scores per interaction."""
    rng = np.random.default_rng(5)
    rows, verdicts, human = [], [], {}

    def add(source: str, sid: str, tier: str | None, true: int, judged: int, meta: dict, route: str | None) -> None:
        iid = interaction_id(source, sid)
        rows.append(
            Interaction(
                id=iid, source=source, source_id=sid, question=f"q {sid}", answer="a" * (50 + 10 * true), tier=tier,
                reference_facts=["f"], language="en", route=route, release="r1",
                created_at=START + timedelta(minutes=len(rows)), meta=meta,
            )
        )  # fmt: skip
        scores: dict[str, int | None] = {c.name: judged for c in rubric.criteria}
        verdict = Verdict(item_id=sid, status=VerdictStatus.scored, scores=scores, overall=float(judged),
                          reason="t", judge=JUDGE_A, rubric=rubric.identity)  # fmt: skip
        verdicts.append((iid, verdict))
        human[iid] = {c.name: true for c in rubric.criteria}

    for tier in ("full", "int4"):
        for route, rate in RATES.items():
            for k in range(120):
                true = int(rng.integers(4, 6) if route == "chat" else rng.integers(1, 3))
                meta = {"inclusion_probability": rate, "stratum": f"{tier}/{route}"}
                add(f"traffic:gw-{tier}", f"{route}-{k}", tier, true, min(true + 1, 5), meta, route)
        for k in range(40):  # golden items: the judge is right on them, and they are all good
            add(regression_source("r1", tier, "golden"), f"g{k}", tier, 5, 5, {}, None)
    add("file:/tmp/items.jsonl", "x", "full", 1, 1, {}, None)
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
        upsert_verdicts(session=session, run_id=None, verdicts=verdicts)
    label_routed(engine, rubric, human, review_share=0.5)
    return human


@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_traffic_and_release_estimates_never_share_items_or_labels(engine: Engine, rubric: Rubric) -> None:
    _write(engine, rubric)
    frame = load_scores(engine, rubric_name="answer_quality")
    kinds = split_populations(frame)
    assert kinds.value_counts().to_dict() == {"traffic": 480 * 3, "regression": 80 * 3, "other": 3}
    traffic = traffic_estimates(frame)
    assert {(e.estimand, e.tier) for e in traffic} == {(TRAFFIC, "full"), (TRAFFIC, "int4")}
    for e in traffic:
        mine = frame[(kinds == "traffic") & (frame["tier"] == e.tier) & (frame["criterion"] == e.criterion)]
        assert e.n_sampled == 240 and e.n_labeled == int(mine["human"].notna().sum()) > 60
        assert e.population == pytest.approx(120 / 0.1 + 120 / 0.5)
        # the stratum sampled at 10% is the good one (4-5): weighting it back raises the mean well above
        # the plain mean of the sample, and the labels take the judge's +1 back off
        assert e.judge_mean > float(mine["judge"].mean()) + 0.8
        assert e.low <= e.estimate <= e.high and e.estimate < e.judge_mean - 0.5
        assert e.n_effective > 0 and e.human_low <= e.human_only <= e.human_high
    release = release_estimates(frame)
    assert {(e.estimand, e.release, e.dataset, e.tier) for e in release} == {
        (RELEASE, "r1", "golden", "full"),
        (RELEASE, "r1", "golden", "int4"),
    }
    for e in release:
        assert e.n_sampled == 40 and e.estimate == pytest.approx(5.0) and e.n_labeled > 5
    assert "traffic:gw-full" in traffic_coverage(frame) and "full/chat=0.1" in traffic_coverage(frame)


def test_same_item_gap_pairs_the_golden_items_of_each_release(engine: Engine, rubric: Rubric) -> None:
    _write(engine, rubric)
    gaps = same_item_gaps(load_scores(engine, rubric_name="answer_quality"), baseline="full")
    assert {(g.estimand, g.release, g.tier, g.baseline) for g in gaps} == {(GAP_SAME_ITEMS, "r1", "int4", "full")}
    for g in gaps:  # paired when enough items were labeled on both tiers, else the two means' difference
        assert g.n_sampled == (40 if g.reference_mix.startswith("paired") else 80)
        assert g.estimate == pytest.approx(0.0) and g.p_value > 0.05


@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_the_default_series_is_the_latest_judge_that_graded_tiers_not_a_newer_validation_run(
    engine: Engine, rubric: Rubric
) -> None:
    _write(engine, rubric)
    validator = JudgeIdentity(kind="openai", name="smollm2", endpoint="http://x/v1", config_hash="b" * 16)
    iid = interaction_id("file:/tmp/validation.jsonl", "v1")
    row = Interaction(id=iid, source="file:/tmp/validation.jsonl", source_id="v1", question="q", answer="a",
                      reference_facts=["f"], created_at=START + timedelta(days=30))  # fmt: skip
    scores: dict[str, int | None] = {c.name: 3 for c in rubric.criteria}
    verdict = Verdict(item_id="v1", status=VerdictStatus.scored, scores=scores, overall=3.0, reason="t",
                      judge=validator, rubric=rubric.identity)  # fmt: skip
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=[row])
        upsert_verdicts(session=session, run_id=None, verdicts=[(iid, verdict)])
    summary = summarize(engine, with_trust=False, n_boot=50)
    assert summary.series is not None and summary.series.judge.config_hash == JUDGE_A.config_hash
    assert "graded tiered items" in summary.series_reason and summary.traffic and summary.release
    asked = summarize(engine, judge_config_hash=validator.config_hash, with_trust=False, n_boot=50)
    assert asked.series is not None and asked.series.judge == validator and not asked.traffic


def _traffic_frame(rng: np.random.Generator) -> pd.DataFrame:
    """Within each request type the tiers are equally good; int4 serves far more of the hard (code) type."""
    rows = []
    for tier, code_share in (("full", 0.2), ("int4", 0.8)):
        for k in range(4000):
            code = rng.random() < code_share
            pi = 0.5 if code else 0.1
            if rng.random() >= pi:
                continue
            true = float(np.clip(round(rng.normal(2.0 if code else 4.0, 0.7)), 1, 5))
            routed = rng.random() < 0.2
            rows.append(
                {
                    "source": f"traffic:{tier}", "tier": tier, "criterion": "faithfulness", "route": "code" if code
                    else "chat", "language": "en", "answer_chars": 300, "sample_prob": pi, "judge": min(true + 1, 5.0),
                    "human": true if routed else np.nan, "inclusion_prob": 0.2 if routed else np.nan,
                    "label_via": "ui" if routed else None, "interaction_id": f"{tier}{k}", "stratum": tier,
                    "at": pd.Timestamp(START),
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_monitored_traffic_quality_is_a_sequence_over_the_days_wider_than_one_look() -> None:
    frame = _traffic_frame(np.random.default_rng(9))
    frame["at"] = pd.Timestamp(START) + pd.to_timedelta(np.arange(len(frame)) % 10, unit="D")  # ten days
    frame.loc[(frame["at"].dt.day == START.day) & (frame["tier"] == "full"), "human"] = np.nan  # day 1: no labels
    monitored = {m.tier: m for m in traffic_monitor(frame)}
    single = {e.tier: e for e in traffic_estimates(frame)}
    full = monitored["full"]
    assert full.periods == 9 and monitored["int4"].periods == 10  # a day without labels is not a period
    assert full.first_day == (START + timedelta(days=1)).strftime("%Y-%m-%d") and "anytime-valid" in full.validity
    assert full.low < single["full"].estimate < full.high
    assert full.high - full.low > single["full"].high - single["full"].low  # holding at every look costs width
    assert full.n_labeled == int(frame.loc[frame["tier"] == "full", "human"].notna().sum())


def test_mix_adjusted_gap_removes_the_gap_that_only_the_request_mix_made() -> None:
    frame = _traffic_frame(np.random.default_rng(9))
    gaps = {g.estimand: g for g in traffic_gaps(frame, baseline="full")}
    raw, adjusted = gaps[GAP_TRAFFIC], gaps[GAP_ADJUSTED]
    assert (raw.tier, raw.baseline) == ("int4", "full")
    assert raw.high < -0.8 and raw.p_value < 1e-6  # unadjusted: int4 looks much worse
    assert adjusted.low <= 0.0 <= adjusted.high and adjusted.p_value > 0.01  # same requests: no gap
    assert "over the 2 route x language x stratum x prompt length" in adjusted.reference_mix
    assert adjusted.left_out == 0 and adjusted.dropped_cells == () and adjusted.dropped_share == 0.0
    assert raw.n_labeled == adjusted.n_labeled > 100 and raw.reference_mix == ""


def test_a_tier_that_truncates_its_answers_keeps_its_gap_after_the_mix_adjustment() -> None:
    """The answer is what the tier produced: its length must not form the cells, or the gap is adjusted away."""
    frame = _traffic_frame(np.random.default_rng(9))
    frame = frame[frame["route"] == "chat"].copy()
    int4 = frame["tier"] == "int4"
    frame.loc[int4, "answer_chars"] = 40  # int4 truncates every answer ...
    frame.loc[int4, "human"] = (frame.loc[int4, "human"] - 2).clip(lower=1)  # ... and is worse for it
    frame.loc[int4, "judge"] = (frame.loc[int4, "judge"] - 2).clip(lower=1)
    gaps = {g.estimand: g for g in traffic_gaps(frame, baseline="full")}
    adjusted = gaps[GAP_ADJUSTED]
    assert adjusted.high < -1.0 and adjusted.left_out == 0  # the gap is measured, nothing dropped


def test_cells_only_one_tier_served_are_named_with_their_share_of_traffic() -> None:
    frame = _traffic_frame(np.random.default_rng(9))
    only = (frame["tier"] == "int4") & (frame["route"] == "chat") & (frame.index % 3 == 0)
    frame.loc[only, "route"] = "search"  # a route only int4 serves
    adjusted = next(g for g in traffic_gaps(frame, baseline="full") if g.estimand == GAP_ADJUSTED)
    assert adjusted.dropped_cells == ("search|en|-|short|-|-",) and adjusted.left_out == int(only.sum())
    weights = 1.0 / frame["sample_prob"]
    share = weights[only].sum() / weights.sum()
    assert adjusted.dropped_share == pytest.approx(share)
    assert f"holding {share:.1%} of the traffic: search|en|-|short|-|-" in adjusted.reference_mix


def _release_frame(rng: np.random.Generator, *, same_items: bool) -> pd.DataFrame:
    """Release r1's golden items on two tiers, 60 each, a third labeled; `same_items=False`: disjoint items."""
    rows = []
    for tier, mean in (("full", 4.2), ("int4", 3.6)):
        for k in range(60):
            key = f"g{k}" if same_items else f"{tier}-g{k}"
            true = float(np.clip(round(rng.normal(mean, 0.8)), 1, 5))
            labeled = k % 3 == 0
            rows.append(
                {
                    "source": f"release:r1/{tier}/golden", "tier": tier, "criterion": "faithfulness",
                    "item_key": key, "judge": true, "human": true if labeled else np.nan,
                    "inclusion_prob": 1 / 3 if labeled else np.nan, "label_via": "ui" if labeled else None,
                    "at": pd.Timestamp(START),
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_tiers_that_answered_different_items_get_an_unpaired_gap_never_labelled_same_items() -> None:
    (gap,) = same_item_gaps(_release_frame(np.random.default_rng(4), same_items=False), baseline="full")
    assert gap.estimand == GAP_RELEASE_UNPAIRED and gap.paired is False
    assert "different items" in gap.reference_mix and "the same golden items" not in gap.reference_mix
    assert gap.low < gap.estimate < gap.high and gap.interval_note == ""
    (paired,) = same_item_gaps(_release_frame(np.random.default_rng(4), same_items=True), baseline="full")
    assert paired.estimand == GAP_SAME_ITEMS and paired.paired is True
    assert "paired: the same golden items of release r1" in paired.reference_mix
