"""Uncertainty-weighted review routing: labels drawn where the judge is likelier wrong (docs/review_queue.md;
docs/statistics.md, "Active routing": why the 1 / pi weighted estimates stay unbiased).

What is known of a verdict before its label, per scored criterion, is its cell `rubric|criterion|score|band`:
the score the judge wrote and a doubt band (the larger of |expected score - written score| and |score - its other
criteria's mean|, as a share of the scale's width cut at DOUBT_BANDS). A cell's spread is the weighted mean
squared deviation of label - score about the criterion's mean error over the WINDOW_DAYS before the day, shrunk
towards a prior as though PRIOR_LABELS more labels had it, and never below a lower doubt band's.

A day's plan (`RoutingPlan`) routes a verdict with pi = 1 - (1 - u)(1 - a): a uniform share u = UNIFORM_MIX x
budget / forecast and an active share a = min(1, scale x spread), the scale drawing the budget over the window."""

from __future__ import annotations

import logging
import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sqlalchemy import and_, func, select
from sqlmodel import Session

from judgewatch.contract.verdicts import VerdictStatus
from judgewatch.storage.db import table, upsert
from judgewatch.storage.review import ReviewItem, RoutingPlan
from judgewatch.storage.verdicts import VerdictRecord, is_current

logger = logging.getLogger(__name__)

WINDOW_DAYS = 7  # the days before a day whose verdicts and labels its plan is fitted on
UNIFORM_MIX = 0.2  # share of the budget routed uniformly
PRIOR_LABELS = 10.0  # a cell's spread counts the criterion's as this many labels
DOUBT_BANDS = (0.125, 0.25)  # doubt as a share of the scale's width: bands 0, 1, 2 (0.5 and 1 point on 1-5)
ALL = ""  # the spreads' entry over every label
FORECAST_ROWS = 20_000  # the window's verdicts read to forecast the day's spreads

Widths = Callable[[str], float | None]  # a rubric's scale width (max - min), None when the rubric is unknown


def doubt_band(score: float, expected: float | None, others: Sequence[float], width: float | None) -> int:
    """0, 1 or 2: the larger of |expected - score| and |score - mean(others)| as a share of `width`, banded."""
    signs = [abs(expected - score)] if expected is not None else []
    if others:
        signs.append(abs(score - sum(others) / len(others)))
    return bisect_right(DOUBT_BANDS, max(signs, default=0.0) / width) if width else 0


def cell_keys(
    rubric: str, scores: Mapping[str, float | None], expected: Mapping[str, float] | None, width: float | None
) -> dict[str, str]:
    """{criterion: its cell `rubric|criterion|score|band`} for each scored criterion of a verdict."""
    scored = {name: float(v) for name, v in scores.items() if v is not None}
    keys = {}
    for name, value in scored.items():
        others = [v for other, v in scored.items() if other != name]
        keys[name] = f"{rubric}|{name}|{value:g}|{doubt_band(value, (expected or {}).get(name), others, width)}"
    return keys


def _shrunk(dev: NDArray[np.float64], w: NDArray[np.float64], idx: list[int], prior: float) -> float:
    """The weighted mean of `dev` over `idx`, counting `prior` as PRIOR_LABELS more labels."""
    return (len(idx) * float(np.average(dev[idx], weights=w[idx])) + PRIOR_LABELS * prior) / (len(idx) + PRIOR_LABELS)


def _prior(spreads: Mapping[str, float], key: str) -> float:
    """A cell's squared error before its own labels: its score's times its band's, over the criterion's."""
    rubric, criterion, score, band = key.split("|")
    whole = spreads.get(f"{rubric}|{criterion}", spreads.get(ALL, 1.0))
    if whole <= 0:
        return 0.0
    by_score = spreads.get(f"{rubric}|{criterion}|{score}|*", whole)
    return by_score * spreads.get(f"{rubric}|{criterion}|*|{band}", whole) / whole


def fit_spreads(keys: Sequence[str], errors: ArrayLike, weights: ArrayLike) -> dict[str, float]:
    """Mean squared deviation of the error (label - score) about its criterion's weighted mean, over every label
    (`ALL`), per criterion `rubric|criterion`, per score `...|score|*`, per band `...|*|band` and per cell (each
    shrunk towards the one above it; a cell towards its score's x its band's); one key, error and weight (1 / pi,
    or one for all) per label."""
    err = np.asarray(errors, dtype=float)
    w = np.broadcast_to(np.asarray(weights, dtype=float), err.shape)
    if err.size == 0:
        return {}
    groups: dict[str, list[int]] = defaultdict(list)
    margins: dict[str, list[int]] = defaultdict(list)
    cells: dict[str, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        rubric, criterion, score, band = key.split("|")
        groups[f"{rubric}|{criterion}"].append(i)
        margins[f"{rubric}|{criterion}|{score}|*"].append(i)
        margins[f"{rubric}|{criterion}|*|{band}"].append(i)
        cells[key].append(i)
    dev = np.empty_like(err)
    for idx in groups.values():
        dev[idx] = (err[idx] - np.average(err[idx], weights=w[idx])) ** 2
    out = {ALL: float(np.average(dev, weights=w))}
    out.update({name: float(np.average(dev[idx], weights=w[idx])) for name, idx in groups.items()})
    out.update({name: _shrunk(dev, w, idx, out[name.rsplit("|", 2)[0]]) for name, idx in margins.items()})
    out.update({key: _shrunk(dev, w, idx, _prior(out, key)) for key, idx in cells.items()})
    return out


def mean_square(spreads: Mapping[str, float], key: str) -> float:
    """A cell's predicted squared error (its prior where it had no labels; 1 with no labels at all): the largest of
    its own and its lower doubt bands', so it never falls as the doubt grows."""
    prefix, band = key.rsplit("|", 1)
    return max(spreads.get(f"{prefix}|{b}", _prior(spreads, f"{prefix}|{b}")) for b in range(int(band) + 1))


@dataclass(frozen=True, slots=True)
class Plan:
    """One day's routing: every scored verdict's `uniform` share, and its active share `scale` x its spread."""

    uniform: float
    scale: float
    spreads: Mapping[str, float]

    def spread(self, keys: Sequence[str]) -> float:
        """The predicted spread of a verdict's error: the root of its criteria's mean squared error."""
        if not keys:
            return float(np.sqrt(self.spreads.get(ALL, 1.0)))
        return float(np.sqrt(sum(mean_square(self.spreads, k) for k in keys) / len(keys)))

    def active(self, keys: Sequence[str]) -> float:
        return min(1.0, self.scale * self.spread(keys))

    def probability(self, keys: Sequence[str]) -> float:
        """The chance that either independent draw routes the verdict: what its review item stores."""
        return 1.0 - (1.0 - self.uniform) * (1.0 - self.active(keys))


def scale_to_budget(spreads: ArrayLike, rate: float) -> tuple[float, float]:
    """(uniform share, scale) routing verdicts with these `spreads` at `rate` in expectation (module docstring)."""
    if rate >= 1.0:
        return 1.0, 0.0
    uniform = UNIFORM_MIX * rate
    target = (rate - uniform) / (1.0 - uniform)  # the mean active share that tops the uniform one up to `rate`
    s = np.sort(np.asarray(spreads, dtype=float))[::-1]
    if not np.any(s > 0):
        s = np.ones_like(s)  # no spread predicted anywhere: the active share is uniform too
    tail = np.cumsum(s[::-1])[::-1]  # tail[k]: the spreads of all but the k largest
    for k in range(s.size):  # the k largest capped at 1, the rest proportional to their spread
        scale = (target * s.size - k) / tail[k]
        if scale * s[k] <= 1.0:
            return uniform, float(scale)
    return uniform, float("inf")  # unreachable for rate < 1: every verdict capped means a mean share of 1


def _utc(at: datetime) -> datetime:
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC)


def utc_day(at: datetime) -> date:
    """The UTC day a verdict was stored on: the day whose plan routes it."""
    return _utc(at).date()


def _keys(row: Any, widths: Widths) -> dict[str, str]:
    """A stored verdict row's cells."""
    return cell_keys(row.rubric_name, row.scores, row.expected_scores, widths(row.rubric_name))


def _window(session: Session, day: date) -> tuple[int, int, list[Any], list[Any]]:
    """The scored verdicts of the WINDOW_DAYS before `day`: how many, over how many days (from the first, at most
    the window), FORECAST_ROWS of them (by id: a hash, so a random sample), and those of labelled interactions."""
    v, items = table(VerdictRecord).c, table(ReviewItem)
    start = datetime.combine(day, time(), tzinfo=UTC)
    since = start - timedelta(days=WINDOW_DAYS)
    window = (v.status == VerdictStatus.scored.value, is_current(), v.created_at >= since, v.created_at < start)
    count, first = session.execute(select(func.count(), func.min(v.created_at)).where(*window)).one()
    if not count:
        return 0, 0, [], []
    days = min(WINDOW_DAYS, math.ceil((start - _utc(first)) / timedelta(days=1)))
    columns = select(v.interaction_id, v.rubric_name, v.rubric_version, v.scores, v.expected_scores).where(*window)
    sample = list(session.execute(columns.order_by(v.id).limit(FORECAST_ROWS)))
    same = and_(items.c.interaction_id == v.interaction_id, items.c.rubric_version == v.rubric_version)
    labelled = list(session.execute(columns.join(items, same).where(items.c.labels_done > 0)))
    return int(count), days, sample, labelled


def _labels(session: Session, rubric_names: set[str]) -> dict[tuple[str, str, str], tuple[float, float]]:
    """{(interaction, rubric version, criterion): (human score, inclusion probability)}: one label each."""
    from judgewatch.calibration.score_frame import load_labels  # pandas: only when a day's plan is fitted

    out = {}
    for name in sorted(rubric_names):
        frame = load_labels(session, rubric_name=name, first_only=True)
        cols = ["interaction_id", "rubric_version", "criterion", "human", "inclusion_prob"]
        for iid, version, criterion, human, prob in frame[cols].itertuples(index=False):
            out[(iid, version, criterion)] = (float(human), float(prob))
    return out


def fit_plan(session: Session, day: date, budget: float, *, fallback_share: float, widths: Widths) -> dict[str, Any]:
    """The `RoutingPlan` row of `day`, fitted on the WINDOW_DAYS before it (see the module docstring)."""
    count, days, sample, labelled = _window(session, day)
    spreads: dict[str, float] = {}
    uniform, scale, errors = fallback_share, 0.0, []
    if count:
        labels = _labels(session, {r.rubric_name for r in labelled})
        label_keys, weights = [], []
        for r in labelled:
            for criterion, key in _keys(r, widths).items():
                if (found := labels.get((r.interaction_id, r.rubric_version, criterion))) is not None:
                    label_keys.append(key)
                    errors.append(found[0] - float(r.scores[criterion]))
                    weights.append(1.0 / found[1])
        spreads = fit_spreads(label_keys, errors, weights)
        forecast = [Plan(0.0, 0.0, spreads).spread(list(_keys(r, widths).values())) for r in sample]
        uniform, scale = scale_to_budget(forecast, budget * days / count)
    logger.info("active routing %s: %d verdicts before it, %d labels: uniform %.4f", day, count, len(errors), uniform)
    return {
        "day": day.isoformat(),
        "budget": budget,
        "uniform_rate": uniform,
        "scale": scale,
        "spreads": spreads,
        "n_verdicts": count,
        "n_days": days,
        "n_labels": len(errors),
    }


def day_plan(session: Session, day: date, budget: float, *, fallback_share: float, widths: Widths) -> Plan:
    """`day`'s stored plan, fitted and stored first when it has none (another process's, if it stored one first)."""
    row = session.get(RoutingPlan, day.isoformat())
    if row is None:
        fitted = fit_plan(session, day, budget, fallback_share=fallback_share, widths=widths)
        upsert(session, table(RoutingPlan), [fitted], update_columns=None)
        row = session.get(RoutingPlan, day.isoformat())
    assert row is not None  # inserted above, or by whoever inserted first
    return Plan(row.uniform_rate, row.scale, dict(row.spreads))
