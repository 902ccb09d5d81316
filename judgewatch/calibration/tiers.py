"""Tier scores model owners can compare: per tier and criterion the judge's raw mean, the PPI-corrected mean with
its interval (`stats.ppi_mean`, weighted by 1 / inclusion probability), and the tier difference: paired on the
same items (golden runs) when enough carry labels on both tiers, else unpaired (docs/statistics.md)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import pandas as pd

from judgewatch.calibration.estimands import group_ppi
from judgewatch.stats import Estimate, PPIEstimate, ppi_diff_unpaired, ppi_mean, time_windows
from judgewatch.stats.estimate import MIN_LABELS, SCALE_BOUNDS, difference_bounds, interval_reason
from judgewatch.stats.unpaired import shares_items

logger = logging.getLogger(__name__)

MIN_PAIRED_LABELS = 10  # items labeled on both tiers needed before the paired difference is used


@dataclass(frozen=True, slots=True)
class TierEstimate:
    """One tier and criterion: `n_verdicts` judge scores, `n_labels` of them with a human label."""

    tier: str
    criterion: str
    n_verdicts: int
    n_labels: int
    n_synthetic_labels: int  # labels made by a program (demo), not by a person: stated wherever shown
    raw_mean: float  # the judge's plain mean: what a dashboard without labels would show
    ppi: PPIEstimate  # judge + labels, corrected and with a valid interval
    human_only: PPIEstimate  # the labels alone: what PPI is compared against


@dataclass(frozen=True, slots=True)
class TierDifference:
    """`tier - baseline` for one criterion: the PPI-corrected difference and the judge's raw one."""

    criterion: str
    tier: str
    baseline: str
    method: str  # "paired" | "unpaired"
    estimate: Estimate
    raw_diff: float
    n_items: int  # paired: items judged on both tiers; unpaired: verdicts on both together
    n_labels: int  # paired: items labeled on both tiers; unpaired: labels on both together
    same_items: bool = True  # False: the tiers answered (mostly) different items
    min_side_labels: int = 0  # unpaired: the labels of the tier with fewer
    interval_note: str = ""  # "too few labels (n=k, need m)" when there is no interval, else ""


def pick_baseline(tiers: Sequence[str], baseline: str | None = None) -> str | None:
    """The tier others are compared with: the one asked for (declared by a tiers file's `baseline: true`,
    `--baseline-tier` or the `baseline_tier` setting), else None: no tier is compared with another. Never chosen
    by what a tier is called, nor by the order of the names."""
    if baseline is not None and baseline not in tiers:
        raise ValueError(f"baseline tier {baseline!r} has no verdicts (tiers: {', '.join(tiers) or 'none'})")
    return baseline


def tier_estimates(
    frame: pd.DataFrame, *, min_labels: int = MIN_LABELS, bounds: tuple[float, float] = SCALE_BOUNDS
) -> list[TierEstimate]:
    """One estimate per (tier, criterion) in the frame, sorted; no interval below `min_labels` labels.
    `bounds`: the rubric's scale (the intervals are for bounded scores, docs/statistics.md)."""
    out = []
    for (tier, criterion), group in frame.groupby(["tier", "criterion"], sort=True):
        est, human = group_ppi(group, min_labels, bounds)
        n_labels = int(group["human"].notna().sum())
        synthetic = int((group["label_via"] == "synthetic").sum())
        judge = float(group["judge"].mean())
        out.append(TierEstimate(str(tier), str(criterion), len(group), n_labels, synthetic, judge, est, human))
    return out


def tier_difference(
    a: pd.DataFrame,
    b: pd.DataFrame,
    ppi_a: PPIEstimate,
    ppi_b: PPIEstimate,
    key: tuple[str, str, str],
    *,
    min_labels: int = MIN_LABELS,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> TierDifference:
    """`tier - baseline` on one criterion (`key`: criterion, tier, baseline), paired when the tiers share items
    labeled on both sides. No interval (NaN bounds, `interval_note` says why) below `min_labels` labels a side."""
    one_each = [t[["item_key", "judge", "human", "inclusion_prob"]].drop_duplicates("item_key") for t in (a, b)]
    both = one_each[0].merge(one_each[1], on="item_key", suffixes=("_a", "_b"))  # one row per item key
    labeled = both[both["human_a"].notna() & both["human_b"].notna()]
    same = shares_items(len(both), a["item_key"].nunique(), b["item_key"].nunique())  # the gate's rule too
    if same and len(labeled) >= max(MIN_PAIRED_LABELS, min_labels):
        pi = (labeled["inclusion_prob_a"] * labeled["inclusion_prob_b"]).to_numpy(dtype=float)
        # PPI on the per-item differences: the item's own difficulty cancels out
        est = ppi_mean(
            labeled["human_a"] - labeled["human_b"],
            labeled["judge_a"] - labeled["judge_b"],
            both["judge_a"] - both["judge_b"],
            inclusion_prob=pi if np.all(np.isfinite(pi)) else None,
            min_labels=min_labels,
            bounds=difference_bounds(bounds),
        )
        raw = float((both["judge_a"] - both["judge_b"]).mean())
        ci = Estimate(est.estimate, est.low, est.high, est.n)
        return TierDifference(*key, "paired", ci, raw, len(both), len(labeled), True, len(labeled))
    if same and len(labeled) < MIN_PAIRED_LABELS:
        logger.info("%s vs %s on %s: %d shared items but only %d labeled on both tiers; using the unpaired "
                    "difference", key[1], key[2], key[0], len(both), len(labeled))  # fmt: skip
    raw = float(a["judge"].mean() - b["judge"].mean())
    n_items, n_labels, fewest = len(a) + len(b), ppi_a.n + ppi_b.n, min(ppi_a.n, ppi_b.n)
    note = interval_reason(fewest, min_labels)
    diff = ppi_diff_unpaired(ppi_a, ppi_b)
    if note:
        diff = Estimate(diff.estimate, np.nan, np.nan, diff.n)
    return TierDifference(*key, "unpaired", diff, raw, n_items, n_labels, same, fewest, note)


def tier_differences(
    frame: pd.DataFrame,
    estimates: Sequence[TierEstimate],
    *,
    baseline: str | None = None,
    min_labels: int = MIN_LABELS,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> list[TierDifference]:
    """Every other tier minus the baseline tier, per criterion."""
    tiers = sorted(frame["tier"].unique().tolist()) if not frame.empty else []
    base = pick_baseline(tiers, baseline)
    if base is None:
        return []
    by_key = {(e.tier, e.criterion): e.ppi for e in estimates}
    out = []
    for criterion in sorted(frame["criterion"].unique()):
        rows = frame[frame["criterion"] == criterion]
        for tier in tiers:
            if tier != base and (tier, criterion) in by_key and (base, criterion) in by_key:
                a, b = rows[rows["tier"] == tier], rows[rows["tier"] == base]
                key = (str(criterion), tier, base)
                ppi_a, ppi_b = by_key[(tier, criterion)], by_key[(base, criterion)]
                out.append(tier_difference(a, b, ppi_a, ppi_b, key, min_labels=min_labels, bounds=bounds))
    return out


def trend(
    frame: pd.DataFrame,
    *,
    width: timedelta = timedelta(days=1),
    min_labels: int = MIN_LABELS,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> pd.DataFrame:
    """Per (tier, criterion, window): the judge's raw mean and count, and the PPI estimate on that window's labels
    (NaN bounds below `min_labels`); `mid`: the mean time of its verdicts. Windows are the drift alerts'
    (`stats.time_windows`), so a weekly point and a weekly alert cover the same days."""
    columns = ["tier", "criterion", "window", "mid", "raw_mean", "n", "n_labels", "ppi", "low", "high"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    windows = pd.to_datetime(time_windows(frame["at"].dt.to_pydatetime(), width))
    rows = []
    for (tier, criterion, window), group in frame.assign(window=windows).groupby(["tier", "criterion", "window"]):
        est, _ = group_ppi(group, min_labels, bounds)
        mid = group["at"].dt.tz_localize(None).mean()  # where the window's verdicts sit in time, for plotting
        raw = group["judge"].mean()
        rows.append((tier, criterion, window, mid, raw, len(group), est.n, est.estimate, est.low, est.high))
    return pd.DataFrame(rows, columns=columns)
