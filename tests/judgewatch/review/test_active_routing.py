"""Uncertainty-weighted routing (review/active.py): probabilities that grow with the judge's predicted error above a
floor, scaled to a label budget, stored per day, and estimates that stay unbiased and covering when weighted by them."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest
from scipy.special import ndtr
from sqlalchemy import Engine, select, update

from judgewatch.calibration.estimands import traffic_estimate, traffic_rows
from judgewatch.calibration.score_frame import load_scores
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, ScoreReading, Verdict, VerdictStatus
from judgewatch.review.active import (
    UNIFORM_MIX,
    Plan,
    cell_keys,
    day_plan,
    fit_spreads,
    mean_square,
    scale_to_budget,
)
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.settings import Settings
from judgewatch.stats import ppi_mean, survey_ppi_mean
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.review import ReviewItem, RoutingPlan
from judgewatch.storage.verdicts import VerdictRecord, upsert_verdicts
from judgewatch.testing.synthetic_labels import doubtful_judge, label_routed

JUDGE = JudgeIdentity(kind="fake", name="doubtful", config_hash="doubtful1")
DAY = date(2026, 12, 7)


def _key(score: float, expected: float) -> str:
    return cell_keys("r", {"c": score}, {"c": expected}, 4.0)["c"]


def _fitted(seed: int, n: int, rate: float) -> tuple[dict[str, float], list[str]]:
    """Spreads fitted on a uniform `rate` of labels of `n` doubtful-judge items, and every item's cell."""
    rng = np.random.default_rng(seed)
    human, judge, expected = doubtful_judge(rng, n)
    keys = [_key(j, e) for j, e in zip(judge, expected, strict=True)]
    labeled = rng.random(n) < rate
    spreads = fit_spreads([k for k, lab in zip(keys, labeled, strict=True) if lab], (human - judge)[labeled], 1 / rate)
    return spreads, keys


def test_probability_grows_with_the_doubt_and_never_falls_below_the_uniform_floor() -> None:
    spreads, keys = _fitted(seed=1, n=2000, rate=0.2)
    uniform, scale = scale_to_budget([Plan(0.0, 0.0, spreads).spread([k]) for k in keys], 0.1)
    plan = Plan(uniform, scale, spreads)
    assert uniform == pytest.approx(UNIFORM_MIX * 0.1) and uniform > 0
    for score in range(1, 6):
        sure, unsure, lost = (plan.probability([_key(score, score + d)]) for d in (0.1, 0.75, 2.0))
        assert uniform <= sure <= unsure <= lost <= 1.0
        assert unsure > 1.5 * sure  # the doubtful judge errs far more where it doubts: far more labels there
    # cells no label ever reached, and a rubric nobody fitted, still get the floor and more
    assert plan.probability(["other|x|9|0"]) > uniform
    assert plan.probability([]) > uniform


def test_a_cell_never_predicts_less_error_than_a_lower_doubt_band_of_its_score() -> None:
    keys = ["r|c|3|0"] * 30 + ["r|c|3|2"] * 30 + ["r|c|4|1"] * 30
    errors = np.r_[np.tile([-2.0, 2.0], 15), np.zeros(30), np.tile([-1.0, 1.0], 15)]  # band 2 erred least here
    spreads = fit_spreads(keys, errors, np.ones(90))
    assert mean_square(spreads, "r|c|3|2") >= mean_square(spreads, "r|c|3|1") >= mean_square(spreads, "r|c|3|0")
    assert spreads["r|c|3|2"] < spreads["r|c|3|0"]  # what the labels said, overruled above
    assert mean_square(spreads, "r|c|4|0") > 0  # a cell without labels: its score's and band's spread


@pytest.mark.parametrize("rate", [0.02, 0.1, 0.5])
def test_the_expected_number_routed_meets_the_budget(rate: float) -> None:
    spreads = np.random.default_rng(3).pareto(1.5, 5000)  # heavy-tailed: the largest are capped at 1
    uniform, scale = scale_to_budget(spreads, rate)
    pi = 1 - (1 - uniform) * (1 - np.minimum(1.0, scale * spreads))
    assert pi.sum() == pytest.approx(rate * spreads.size, rel=1e-9)
    assert pi.min() >= uniform > 0 and pi.max() <= 1.0
    assert scale_to_budget(spreads, 1.0) == (1.0, 0.0)  # a budget above the volume routes everything
    flat_u, flat_scale = scale_to_budget(np.zeros(10), rate)  # no spread predicted anywhere: uniform
    assert flat_u + (1 - flat_u) * min(1.0, flat_scale) == pytest.approx(rate)


def test_active_ppi_is_unbiased_and_covers_the_truth_at_the_nominal_rate() -> None:
    """Known truth: fresh populations of the doubtful judge (the mean of clip(round(N(3.5, 1)), 1, 5) is exact),
    routed by a plan fitted on an earlier, independent period. 400 replications: the mean estimate lies within
    4 Monte-Carlo standard errors of the truth, and coverage is at least 95% less 3 of its standard errors."""
    spreads, keys = _fitted(seed=20261207, n=1000, rate=0.1)
    uniform, scale = scale_to_budget([Plan(0.0, 0.0, spreads).spread([k]) for k in keys], 0.1)
    plan = Plan(uniform, scale, spreads)
    edges = np.r_[-np.inf, np.arange(1.5, 5.0), np.inf]
    truth = float(np.arange(1, 6) @ (ndtr(edges[1:] - 3.5) - ndtr(edges[:-1] - 3.5)))
    rng = np.random.default_rng(7)
    reps, n = 400, 1000
    found: dict[str, list[tuple[float, float, float]]] = {"release": [], "traffic": [], "uniform": []}
    for _ in range(reps):
        human, judge, expected = doubtful_judge(rng, n)
        pairs, where = np.unique(np.stack([judge, expected]), axis=1, return_inverse=True)
        pi = np.array([plan.probability([_key(j, e)]) for j, e in pairs.T])[where.ravel()]
        routed, sampled = rng.random(n) < pi, rng.random(n) < 0.5
        est = ppi_mean(human[routed], judge[routed], judge, inclusion_prob=pi[routed])
        two_phase = survey_ppi_mean(
            judge[sampled], np.full(sampled.sum(), 0.5), np.where(routed, human, np.nan)[sampled], pi[sampled]
        )
        flat = rng.random(n) < 0.1
        uni = ppi_mean(human[flat], judge[flat], judge, inclusion_prob=np.full(flat.sum(), 0.1))
        for name, e in (("release", est), ("traffic", two_phase), ("uniform", uni)):
            found[name].append((e.estimate, float(e.low <= truth <= e.high), e.high - e.low))
    for name in ("release", "traffic"):
        estimates, covered, _ = np.array(found[name]).T
        assert abs(estimates.mean() - truth) < 4 * estimates.std() / np.sqrt(reps), name
        assert covered.mean() >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps), name
    active_width, uniform_width = np.array(found["release"])[:, 2].mean(), np.array(found["uniform"])[:, 2].mean()
    assert active_width < 0.97 * uniform_width  # the same labels, spent where the judge doubts: narrower


def _write_day(engine: Engine, rubric: Rubric, day: date, n: int, seed: int) -> tuple[list[str], dict[str, dict]]:
    """`n` traffic interactions judged by the doubtful judge, their verdicts stored on `day` (UTC noon)."""
    rng = np.random.default_rng(seed)
    criteria = [c.name for c in rubric.criteria]
    drawn = {c: doubtful_judge(rng, n) for c in criteria}
    rows, verdicts, human = [], [], {}
    for k in range(n):
        iid = interaction_id("traffic:doubt", f"{day}-{k}")
        rows.append(
            Interaction(
                id=iid, source="traffic:doubt", source_id=f"{day}-{k}", question=f"q{k}", answer=f"a{k}",
                reference_facts=[f"f{k}"], language="en", tier="full",
                meta={"inclusion_probability": 1.0, "stratum": "full"},
            )
        )  # fmt: skip
        scores: dict[str, int | None] = {c: int(drawn[c][1][k]) for c in criteria}
        expected = {c: float(drawn[c][2][k]) for c in criteria}
        verdict = Verdict(
            item_id=f"{day}-{k}", status=VerdictStatus.scored, scores=scores, expected_scores=expected,
            score_reading=ScoreReading.expected, overall=rubric.overall(scores), judge=JUDGE, rubric=rubric.identity,
        )  # fmt: skip
        verdicts.append((iid, verdict))
        human[iid] = {c: int(drawn[c][0][k]) for c in criteria}
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=rows)
        upsert_verdicts(session=session, run_id=None, verdicts=verdicts)
        v = table(VerdictRecord).c
        noon = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
        session.execute(update(table(VerdictRecord)).where(v.interaction_id.in_(list(human))).values(created_at=noon))
        ids = list(session.scalars(select(v.id).where(v.interaction_id.in_(list(human)))))
    return ids, human


def _items(engine: Engine, verdict_ids: list[str]) -> dict[str, tuple[float, str]]:
    c = table(ReviewItem).c
    with session_scope(engine) as session:
        rows = session.execute(select(c.verdict_id, c.inclusion_probability, c.pick_reason))
        return {vid: (p, reason) for vid, p, reason in rows if vid in set(verdict_ids)}


def _cells(engine: Engine, verdict_ids: list[str]) -> dict[str, list[str]]:
    v = table(VerdictRecord).c
    with session_scope(engine) as session:
        rows = session.execute(select(v.id, v.scores, v.expected_scores).where(v.id.in_(verdict_ids)))
        return {vid: list(cell_keys("answer_quality", s, e, 4.0).values()) for vid, s, e in rows}


def test_a_day_is_routed_by_its_stored_plan_and_estimates_weigh_the_stored_probabilities(
    engine: Engine, rubric: Rubric
) -> None:
    earlier_ids, earlier_human = _write_day(engine, rubric, DAY - timedelta(days=1), 200, seed=1)
    label_routed(engine, rubric, earlier_human, review_share=0.25, verdict_ids=earlier_ids)  # the window's labels
    ids, human = _write_day(engine, rubric, DAY, 200, seed=2)
    policy = RoutingPolicy(double_label_share=0.0, review_budget=20.0)
    with session_scope(engine) as session:
        report = route_verdicts(session=session, policy=policy, verdict_ids=ids)
    with session_scope(engine) as session:
        row = session.get(RoutingPlan, DAY.isoformat())
        assert row is not None and (row.n_verdicts, row.n_days, row.budget) == (200, 1, 20.0)
        assert 0 < row.n_labels <= 3 * 200 and row.uniform_rate == pytest.approx(UNIFORM_MIX * 20 / 200)
        plan = Plan(row.uniform_rate, row.scale, dict(row.spreads))
    # the window's verdicts would have drawn the budget in expectation; this day's, alike, about as many
    assert sum(plan.probability(k) for k in _cells(engine, earlier_ids).values()) == pytest.approx(20.0)
    today = _cells(engine, ids)
    assert sum(plan.probability(k) for k in today.values()) == pytest.approx(20.0, rel=0.25)
    items = _items(engine, ids)
    assert report.routed == len(items) and set(report.by_reason) <= {"uniform", "active"} and len(items) > 5
    for vid, (p, _) in items.items():
        assert p == pytest.approx(plan.probability(today[vid]))
    with session_scope(engine) as session:  # routing again: the same plan, the same items, nothing new
        assert route_verdicts(session=session, policy=policy, verdict_ids=ids).created == 0
        assert day_plan(session, DAY, 999.0, fallback_share=0.5, widths=lambda _: 4.0).scale == row.scale
    assert _items(engine, ids) == items

    label_routed(engine, rubric, human, review_share=0.0, verdict_ids=ids)  # label today's routed items
    frame = traffic_rows(load_scores(engine, rubric_name=rubric.name))
    todays = frame[frame["verdict_id"].isin(ids) & frame["human"].notna()]
    assert len(todays) == 3 * len(items)
    assert all(p == items[vid][0] for vid, p in zip(todays["verdict_id"], todays["inclusion_prob"], strict=True))
    group = frame[frame["verdict_id"].isin(ids) & (frame["criterion"] == "faithfulness")]
    est = traffic_estimate(group)[0]
    lab = group[group["human"].notna()]
    by_hand = survey_ppi_mean(
        group["judge"], np.ones(len(group)), group["human"], group["inclusion_prob"].fillna(1.0)
    )  # the stored probabilities, passed by hand
    assert est.n_labeled == len(lab) and est.estimate == pytest.approx(by_hand.estimate)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_day_without_history_routes_the_uniform_review_share(engine: Engine, rubric: Rubric) -> None:
    ids, _ = _write_day(engine, rubric, DAY, 200, seed=3)
    with session_scope(engine) as session:
        route_verdicts(session=session, policy=RoutingPolicy(review_share=0.2, review_budget=5.0), verdict_ids=ids)
        row = session.get(RoutingPlan, DAY.isoformat())
        assert row is not None and (row.uniform_rate, row.scale, row.n_verdicts) == (0.2, 0.0, 0)
    assert {p for p, _ in _items(engine, ids).values()} == {0.2}


def test_the_budget_setting_turns_routing_uncertainty_weighted_unless_a_share_is_given() -> None:
    assert RoutingPolicy.from_settings(Settings(review_budget=40)).review_budget == 40
    assert RoutingPolicy.from_settings(Settings()).review_budget is None
    assert RoutingPolicy.from_settings(Settings(review_budget=40), review_share=0.3).review_budget is None
    with pytest.raises(ValueError, match="review_budget"):
        RoutingPolicy(review_budget=0.0)
