"""Tier gaps with their intervals and p-values: on traffic (unadjusted, and adjusted for the request mix) and
on the same golden items of a release.

On traffic each tier serves its own requests, so a tier that gets harder requests looks worse. The adjusted
gap reweights each tier's sample to one reference mix: the pooled traffic of both tiers over the cells
(route x language x answer-length band) that both tiers served, estimated from the sampling weights. A cell
only one tier served cannot be compared and is left out of the adjusted figure (and counted). The unadjusted
gap, the plain difference of the two traffic estimates, is kept beside it.
On golden items both tiers answered the same items, so the release gap is paired (`tiers.tier_difference`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgewatch.calibration.estimands import RELEASE, regression_rows, survey_inputs, traffic_rows
from judgewatch.calibration.tiers import pick_baseline, tier_differences, tier_estimates
from judgewatch.stats import SurveyEstimate, difference, survey_ppi_mean, two_sided_p
from judgewatch.stats.estimate import z_value

logger = logging.getLogger(__name__)

GAP_TRAFFIC = "tier_gap_traffic"
GAP_ADJUSTED = "tier_gap_traffic_mix_adjusted"
GAP_SAME_ITEMS = "tier_gap_same_items"
LENGTH_BANDS = (0, 200, 1000)  # answer characters: short < 200 <= medium < 1000 <= long
MIX_CELL = "route x language x answer length (<200, 200-999, >=1000 characters)"


@dataclass(frozen=True, slots=True)
class GapRow:
    """`tier - baseline` on one criterion for one estimand, with its two-sided p-value (H0: no gap)."""

    estimand: str  # GAP_TRAFFIC | GAP_ADJUSTED | GAP_SAME_ITEMS
    criterion: str
    tier: str
    baseline: str
    release: str | None
    estimate: float
    low: float
    high: float
    se: float
    p_value: float
    judge_diff: float  # the judge alone, same estimand
    n_sampled: int
    n_labeled: int
    n_effective: float
    reference_mix: str  # what the gap is adjusted to ("" when unadjusted)
    left_out: int = 0  # sampled items in cells only one tier served (adjusted gap only)


def mix_cell(frame: pd.DataFrame) -> pd.Series:
    """The request-mix cell of each row: route | language | answer-length band."""
    band = np.searchsorted(np.asarray(LENGTH_BANDS[1:]), frame["answer_chars"].fillna(0).to_numpy(), side="right")
    names = np.array(["short", "medium", "long"])[band]
    route = frame["route"].fillna("-").astype(str)
    lang = frame["language"].fillna("-").astype(str)
    return route + "|" + lang + "|" + pd.Series(names, index=frame.index)


def mix_weights(a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per-item weights moving tiers a and b to the pooled mix of the cells both served; and those cells."""
    ca, cb = mix_cell(a), mix_cell(b)
    wa = (1.0 / a["sample_prob"]).groupby(ca).sum()
    wb = (1.0 / b["sample_prob"]).groupby(cb).sum()
    common = sorted(set(wa.index) & set(wb.index))
    ref = (wa[common] + wb[common]) / float((wa[common] + wb[common]).sum())
    share_a, share_b = wa[common] / float(wa[common].sum()), wb[common] / float(wb[common].sum())
    ma = ca.map(ref / share_a).fillna(0.0).to_numpy(dtype=float)
    mb = cb.map(ref / share_b).fillna(0.0).to_numpy(dtype=float)
    return ma, mb, common


def _gap(
    estimand: str,
    key: tuple[str, str, str],
    a_est: SurveyEstimate,
    b_est: SurveyEstimate,
    judge_diff: float,
    mix: str,
    left: int,
    level: float,
) -> GapRow:
    criterion, tier, base = key
    d = difference(a_est.estimate, a_est.se, b_est.estimate, b_est.se, level=level)
    return GapRow(
        estimand,
        criterion,
        tier,
        base,
        None,
        d.estimate,
        d.low,
        d.high,
        d.se,
        d.p_value,
        judge_diff,
        a_est.n_sampled + b_est.n_sampled,
        a_est.n_labeled + b_est.n_labeled,
        a_est.effective_n + b_est.effective_n,
        mix,
        left,
    )


def _hajek(f: np.ndarray, pi: np.ndarray, m: np.ndarray | None = None) -> float:
    w = (np.ones_like(f) if m is None else m) / pi
    return float(w @ f / w.sum()) if w.sum() > 0 else np.nan


def traffic_gaps(frame: pd.DataFrame, *, baseline: str | None = None, level: float = 0.95) -> list[GapRow]:
    """Every other tier minus the baseline tier on traffic, per criterion: unadjusted and mix-adjusted."""
    rows = traffic_rows(frame)
    try:
        base = pick_baseline(sorted(rows["tier"].unique().tolist()), baseline) if not rows.empty else None
    except ValueError:  # the asked-for baseline served no traffic
        return []
    if base is None:
        return []
    out = []
    for criterion, crit_rows in rows.groupby("criterion", sort=True):
        b = crit_rows[crit_rows["tier"] == base]
        fb, pb, yb, rb = survey_inputs(b)
        for tier, a in crit_rows.groupby("tier", sort=True):
            if tier == base or b.empty:
                continue
            fa, pa, ya, ra = survey_inputs(a)
            ea, eb = survey_ppi_mean(fa, pa, ya, ra, level=level), survey_ppi_mean(fb, pb, yb, rb, level=level)
            key = (str(criterion), str(tier), base)
            out.append(_gap(GAP_TRAFFIC, key, ea, eb, _hajek(fa, pa) - _hajek(fb, pb), "", 0, level))
            ma, mb, common = mix_weights(a, b)
            aa = survey_ppi_mean(fa, pa, ya, ra, weight=ma, level=level)
            ab = survey_ppi_mean(fb, pb, yb, rb, weight=mb, level=level)
            left = int((ma == 0).sum() + (mb == 0).sum())
            mix = f"pooled traffic of {tier} and {base} over the {len(common)} {MIX_CELL} cells both served"
            judge = _hajek(fa, pa, ma) - _hajek(fb, pb, mb)
            out.append(_gap(GAP_ADJUSTED, key, aa, ab, judge, mix, left, level))
    return out


def same_item_gaps(frame: pd.DataFrame, *, baseline: str | None = None, level: float = 0.95) -> list[GapRow]:
    """Per release: tier minus baseline on the same golden items (paired when labeled on both tiers)."""
    rows = regression_rows(frame)
    z = z_value(level)
    out = []
    for release, group in rows.groupby("release", sort=True):
        tiers = sorted(group["tier"].unique().tolist())
        if len(tiers) < 2:
            continue
        try:
            diffs = tier_differences(group, tier_estimates(group, level=level), baseline=baseline, level=level)
        except ValueError:  # the asked-for baseline did not serve this release
            continue
        for d in diffs:
            e = d.estimate
            se = (e.high - e.low) / (2 * z) if np.isfinite(e.high - e.low) else np.nan
            out.append(
                GapRow(
                    GAP_SAME_ITEMS,
                    d.criterion,
                    d.tier,
                    d.baseline,
                    str(release),
                    e.estimate,
                    e.low,
                    e.high,
                    se,
                    two_sided_p(e.estimate, se),
                    d.raw_diff,
                    d.n_items,
                    d.n_labels,
                    np.nan,
                    f"{d.method}: the same golden items of release {release} ({RELEASE})",
                )
            )
    return out
