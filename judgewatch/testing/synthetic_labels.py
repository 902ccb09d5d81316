"""Seeded synthetic calibration data with a known truth: tiers, a judge biased differently per tier, labels.

Written through the real paths (the store's writers, routing, the review queue's lease and submit), so what is read
back is what production would store; the labels carry `via="synthetic"` and the reviewer `synthetic`.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import Engine, select

from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict, VerdictStatus
from judgewatch.review.accounts import ensure_reviewer
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.releases import regression_source
from judgewatch.storage.review import ReviewItem
from judgewatch.storage.verdicts import upsert_verdicts
from judgewatch.testing.settings_env import settings_env

logger = logging.getLogger(__name__)

SYNTHETIC_REVIEWER = "synthetic"


def declared_baseline(tier: str = "full") -> AbstractContextManager[None]:
    """The service declares `tier` its baseline (the `baseline_tier` setting) while the block runs: synthetic
    traffic comes from no release, and nothing else would name the tier the others are compared with."""
    return settings_env(baseline_tier=tier)


@dataclass(frozen=True, slots=True)
class TierTruth:
    human_mean: float  # mean of the true (human) scores before rounding and clipping
    judge_bias: float  # what the judge adds to the true score on this tier


@dataclass(frozen=True, slots=True)
class BiasShift:
    """From day `from_day` on, the judge adds `delta` more on `tier` / `criterion` (an injected drift)."""

    tier: str
    criterion: str
    from_day: int
    delta: float


@dataclass(frozen=True)
class SyntheticSpec:
    judge: JudgeIdentity
    tiers: dict[str, TierTruth] = field(
        default_factory=lambda: {"full": TierTruth(3.9, 0.2), "quantized": TierTruth(3.2, 1.0)}
    )
    days: int = 10
    per_day: int = 30  # interactions per tier and day
    review_share: float = 0.25
    judge_noise: float = 0.6
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    paired: bool = False  # golden-run style: every tier answers the same items (one release)
    shift: BiasShift | None = None
    source: str = "synthetic"
    label_via: str = "synthetic"  # how the labels are stored; tests of people-only paths may say "ui"
    seed: int = 0


def drift_from_day_four(judge: JudgeIdentity, start: datetime) -> SyntheticSpec:
    """Tiers `stable` and `drifting` of one truth over four days; from day 4 the judge turns 2 points harsher on
    `drifting` / faithfulness. Seed 1 raises one drift alert, on that series (a false alarm on `stable` has a 5%
    chance per seed by construction)."""
    tiers = {"stable": TierTruth(3.2, 0.3), "drifting": TierTruth(3.2, 0.3)}
    shift = BiasShift("drifting", "faithfulness", from_day=3, delta=-2.0)
    return SyntheticSpec(judge, tiers, days=4, per_day=25, review_share=0.6, start=start, shift=shift, seed=1)


@dataclass(frozen=True, slots=True)
class SyntheticData:
    """What was written, and the truth to check estimates against: the mean human score per (tier, criterion)."""

    truth: dict[tuple[str, str], float]
    n_verdicts: int
    n_labels: int
    interaction_ids: dict[str, list[str]]  # per tier


def _scores(rng: np.random.Generator, mean: float, size: int, lo: int, hi: int) -> np.ndarray:
    return np.clip(np.rint(rng.normal(mean, 1.0, size)), lo, hi).astype(int)


def doubtful_judge(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human, judge, expected) 1-5 scores of `n` items whose judge errs more where it doubts, for active routing.

    Where it is sure, the judge is right but one time in ten (then one point off) and its probability-weighted
    (expected) score lies 0.1 from the one it wrote; on 30% of the items it overrates them by a point give or
    take 1.5 and its expected score lies 0.75 away (a doubt band above on a 1-5 scale, review/active.py), so an
    estimate that ignored the routing probabilities would be biased."""
    human = _scores(rng, 3.5, n, 1, 5)
    unsure = rng.random(n) < 0.3
    error = np.where(unsure, rng.normal(1.0, 1.5, n), rng.choice([-1.0, 1.0], n) * (rng.random(n) < 0.1))
    judge = np.clip(np.rint(human + error), 1, 5).astype(int)
    away = np.where(unsure, 0.75, 0.1) * rng.choice([-1.0, 1.0], n)
    expected = np.where(np.clip(judge + away, 1, 5) == judge, judge - away, judge + away)
    return human, judge, expected


def write_synthetic(engine: Engine, rubric: Rubric, spec: SyntheticSpec) -> SyntheticData:
    """Write interactions, verdicts, review items and synthetic labels for `spec`; return the truth."""
    rng = np.random.default_rng(spec.seed)
    lo, hi = rubric.scale.min, rubric.scale.max
    criteria = [c.name for c in rubric.criteria]
    n = spec.days * spec.per_day
    day = np.repeat(np.arange(spec.days), spec.per_day)
    offsets = [timedelta(days=int(d), seconds=int(s)) for d, s in zip(day, rng.integers(0, 86_400, n), strict=True)]
    truth_table: dict[tuple[str, str], float] = {}
    human: dict[str, dict[str, int]] = {}
    rows: list[Interaction] = []
    verdicts: list[tuple[str, Verdict]] = []
    ids: dict[str, list[str]] = {}
    for tier, truth in spec.tiers.items():
        # unpaired data is sampled production traffic of one stratum per tier, every interaction picked
        source = regression_source("r1", tier, spec.source) if spec.paired else f"traffic:{spec.source}-{tier}"
        meta = {} if spec.paired else {"inclusion_probability": 1.0, "stratum": tier}
        true = {c: _scores(rng, truth.human_mean, n, lo, hi) for c in criteria}
        judged = {}
        for c in criteria:
            bias = np.full(n, truth.judge_bias)
            if spec.shift and spec.shift.tier == tier and spec.shift.criterion == c:
                bias = bias + np.where(day >= spec.shift.from_day, spec.shift.delta, 0.0)
            judged[c] = np.clip(np.rint(true[c] + bias + rng.normal(0.0, spec.judge_noise, n)), lo, hi).astype(int)
            truth_table[(tier, c)] = float(true[c].mean())
        ids[tier] = []
        for k in range(n):
            source_id = f"item-{k:05d}"
            iid = interaction_id(source, source_id)
            ids[tier].append(iid)
            rows.append(
                Interaction(
                    id=iid,
                    source=source,
                    source_id=source_id,
                    question=f"question {k}",
                    answer=f"{tier} answer {k}",
                    reference_facts=[f"fact {k}"],
                    language="en",
                    tier=tier,
                    release="r1",
                    created_at=spec.start + offsets[k],
                    meta=meta,
                )
            )
            scores: dict[str, int | None] = {c: int(judged[c][k]) for c in criteria}
            verdict = Verdict(
                item_id=source_id,
                status=VerdictStatus.scored,
                scores=scores,
                overall=rubric.overall(scores),
                reason="synthetic",
                judge=spec.judge,
                rubric=rubric.identity,
            )
            verdicts.append((iid, verdict))
            human[iid] = {c: int(true[c][k]) for c in criteria}
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
        upsert_verdicts(session=session, run_id=None, verdicts=verdicts)
    n_labels = label_routed(engine, rubric, human, review_share=spec.review_share, via=spec.label_via)
    return SyntheticData(truth_table, len(verdicts), n_labels, ids)


def label_routed(
    engine: Engine,
    rubric: Rubric,
    human: dict[str, dict[str, int]],
    *,
    review_share: float,
    reviewer: str = SYNTHETIC_REVIEWER,
    via: str = "synthetic",
    verdict_ids: list[str] | None = None,
) -> int:
    """Route verdicts (uniform `review_share`, single labels) and label every routed item whose interaction has
    scores in `human`, through the review queue. Returns the number of labels written."""
    policy = RoutingPolicy(review_share=review_share, double_label_share=0.0)
    with session_scope(engine, write=True) as session:
        route_verdicts(session=session, policy=policy, verdict_ids=verdict_ids)
        ensure_reviewer(session=session, name=reviewer)
        c = table(ReviewItem).c
        items = session.execute(select(c.id, c.interaction_id).where(c.labels_done == 0, c.state == "available")).all()
    queue = ReviewQueue(engine)
    written = 0
    for item_id, iid in items:
        if iid not in human:
            continue
        queue.lease_item(reviewer, item_id)
        queue.submit(reviewer, item_id, dict(human[iid]), rubric_version_shown=rubric.version, via=via)
        written += 1
    logger.info("synthetic labels: %d written by %s", written, reviewer)
    return written
