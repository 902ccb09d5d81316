"""Tier gaps with their intervals and p-values: on traffic (unadjusted, and adjusted for the request mix) and on
a release's golden items (docs/statistics.md, "Tier gaps on traffic" and "Tier roles and release gaps")."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from judgewatch.calibration.estimands import RELEASE, effective_n, regression_rows, survey_inputs, traffic_rows
from judgewatch.calibration.tiers import pick_baseline, tier_differences, tier_estimates
from judgewatch.regression.tier_gap import GAP_RELEASE_UNPAIRED, GAP_SAME_ITEMS  # one label per estimand, the gate's
from judgewatch.stats import SurveyEstimate, difference, survey_ppi_mean, two_sided_p
from judgewatch.stats.estimate import MIN_LABELS, SCALE_BOUNDS, interval_reason, t_quantile

GAP_TRAFFIC = "tier_gap_traffic"
GAP_ADJUSTED = "tier_gap_traffic_mix_adjusted"
PROMPT_BANDS = (200, 1000)  # prompt characters: short < 200 <= medium < 1000 <= long
# Request-side covariates only: what the request was, never what the tier answered (module docstring).
MIX_COLUMNS = ("route", "language", "request_stratum", "prompt_band", "department", "category")
MIX_CELL = "route x language x stratum x prompt length (<200, 200-999, >=1000 characters) x department x category"


@dataclass(frozen=True, slots=True)
class GapRow:
    """`tier - baseline` on one criterion for one estimand, with its two-sided p-value (H0: no gap)."""

    estimand: str  # GAP_TRAFFIC | GAP_ADJUSTED | GAP_SAME_ITEMS | GAP_RELEASE_UNPAIRED
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
    n_effective: float  # estimands.effective_n of the difference; NaN without an interval, and on release gaps
    reference_mix: str  # what the gap is adjusted to ("" when unadjusted)
    left_out: int = 0  # sampled items in cells only one tier served (adjusted gap only)
    dropped_cells: tuple[str, ...] = ()  # those cells (route|language|stratum|prompt band|department|category)
    dropped_share: float | None = None  # share of both tiers' traffic the dropped cells held (sampling-weighted)
    paired: bool | None = None  # release gaps: whether the estimate is paired per item (None on traffic)
    interval_note: str = ""  # why there is no interval ("too few labels (n=k, need m)"), else ""


@dataclass(frozen=True, slots=True)
class MixAdjustment:
    """Weights moving two tiers' samples to the pooled mix of the cells both served, and what was dropped."""

    weight_a: np.ndarray
    weight_b: np.ndarray
    common: list[str]  # cells both tiers served
    dropped: list[str]  # cells only one tier served: outside the adjusted gap
    dropped_share: float  # share of both tiers' traffic (sampling-weighted) those cells held


def request_stratum(frame: pd.DataFrame) -> pd.Series:
    """The sampling stratum without its tier part ("quantized/chat" -> "chat"): the request side of the stratum."""
    stratum = frame["stratum"] if "stratum" in frame else pd.Series(None, index=frame.index, dtype=object)
    tier = frame["tier"].astype(str) + "/"
    text = stratum.fillna("-").astype(str)
    own = pd.Series([s[len(t) :] if s.startswith(t) else s for s, t in zip(text, tier, strict=True)], index=frame.index)
    return own.where(own != frame["tier"].astype(str), "-")


def mix_cell(frame: pd.DataFrame) -> pd.Series:
    """The request-mix cell of each row, from request-side covariates only (`MIX_COLUMNS`). Columns the frame lacks
    count as one value ("-"); the answer, which the tier produced, never enters."""
    prompt = frame["prompt_chars"] if "prompt_chars" in frame else pd.Series(0, index=frame.index)
    band = np.searchsorted(np.asarray(PROMPT_BANDS), prompt.fillna(0).to_numpy(dtype=float), side="right")
    parts = {
        "request_stratum": request_stratum(frame),
        "prompt_band": pd.Series(np.array(["short", "medium", "long"])[band], index=frame.index),
    }
    cell = pd.Series("", index=frame.index)
    for k, name in enumerate(MIX_COLUMNS):
        column = parts[name] if name in parts else frame.get(name, pd.Series(None, index=frame.index, dtype=object))
        cell = cell + ("|" if k else "") + column.fillna("-").astype(str)
    return cell


def mix_weights(a: pd.DataFrame, b: pd.DataFrame) -> MixAdjustment:
    """Per-item weights moving tiers a and b to the pooled mix of the cells both served (see `MixAdjustment`)."""
    ca, cb = mix_cell(a), mix_cell(b)
    wa = (1.0 / a["sample_prob"]).groupby(ca).sum()
    wb = (1.0 / b["sample_prob"]).groupby(cb).sum()
    common = sorted(set(wa.index) & set(wb.index))
    dropped = sorted(set(wa.index) ^ set(wb.index))
    total = float(wa.sum() + wb.sum())
    gone = float(wa.drop(common).sum() + wb.drop(common).sum())
    ref = (wa[common] + wb[common]) / float((wa[common] + wb[common]).sum())
    share_a, share_b = wa[common] / float(wa[common].sum()), wb[common] / float(wb[common].sum())
    ma = ca.map(ref / share_a).fillna(0.0).to_numpy(dtype=float)
    mb = cb.map(ref / share_b).fillna(0.0).to_numpy(dtype=float)
    return MixAdjustment(ma, mb, common, dropped, gone / total if total > 0 else float("nan"))


def _gap(
    estimand: str,
    key: tuple[str, str, str],
    a_est: SurveyEstimate,
    b_est: SurveyEstimate,
    judge_diff: float,
    min_labels: int,
) -> GapRow:
    criterion, tier, base = key
    fewest = min(a_est.n_labeled, b_est.n_labeled)
    note = interval_reason(fewest, min_labels)
    d = difference(a_est.estimate, a_est.se, b_est.estimate, b_est.se, df=fewest - 1)
    low, high, p = (np.nan, np.nan, np.nan) if note else (d.low, d.high, d.p_value)
    n_sampled, n_labeled = a_est.n_sampled + b_est.n_sampled, a_est.n_labeled + b_est.n_labeled
    n_effective = effective_n(_gap_effective_n(a_est, b_est), note)
    return GapRow(estimand, criterion, tier, base, None, d.estimate, low, high, d.se, p, judge_diff, n_sampled,
                  n_labeled, n_effective, "", interval_note=note)  # fmt: skip


def _gap_effective_n(a: SurveyEstimate, b: SurveyEstimate) -> float:
    """`effective_n` of a difference of two independent estimates: labels on both sides x (labels-only variance /
    corrected variance) of the difference, each side's labels-only variance read back from its own n effective."""
    if not (a.n_labeled and b.n_labeled and np.isfinite(a.se) and np.isfinite(b.se)):
        return float("nan")
    human = a.effective_n * a.se**2 / a.n_labeled + b.effective_n * b.se**2 / b.n_labeled
    corrected = a.se**2 + b.se**2
    return (a.n_labeled + b.n_labeled) * human / corrected if corrected > 0 else float("nan")


def _hajek(f: np.ndarray, pi: np.ndarray, m: np.ndarray | None = None) -> float:
    w = (np.ones_like(f) if m is None else m) / pi
    return float(w @ f / w.sum()) if w.sum() > 0 else np.nan


def _mix_text(tier: str, base: str, mix: MixAdjustment) -> str:
    text = f"pooled traffic of {tier} and {base} over the {len(mix.common)} {MIX_CELL} cells both served"
    if not mix.dropped:
        return text + "; no cell dropped"
    return (
        f"{text}; {len(mix.dropped)} cell(s) served by one tier only dropped, holding "
        f"{mix.dropped_share:.1%} of the traffic: {', '.join(mix.dropped)}"
    )


def traffic_gaps(
    frame: pd.DataFrame,
    *,
    baseline: str | None = None,
    min_labels: int = MIN_LABELS,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> list[GapRow]:
    """Every other tier minus the baseline tier on traffic, per criterion: unadjusted and mix-adjusted.
    `bounds`: the rubric's scale."""
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
            ea, eb = survey_ppi_mean(fa, pa, ya, ra, bounds=bounds), survey_ppi_mean(fb, pb, yb, rb, bounds=bounds)
            key = (str(criterion), str(tier), base)
            out.append(_gap(GAP_TRAFFIC, key, ea, eb, _hajek(fa, pa) - _hajek(fb, pb), min_labels))
            mix = mix_weights(a, b)
            ma, mb = mix.weight_a, mix.weight_b
            aa = survey_ppi_mean(fa, pa, ya, ra, weight=ma, bounds=bounds)
            ab = survey_ppi_mean(fb, pb, yb, rb, weight=mb, bounds=bounds)
            row = _gap(GAP_ADJUSTED, key, aa, ab, _hajek(fa, pa, ma) - _hajek(fb, pb, mb), min_labels)
            out.append(
                replace(
                    row,
                    reference_mix=_mix_text(str(tier), base, mix),
                    left_out=int((ma == 0).sum() + (mb == 0).sum()),
                    dropped_cells=tuple(mix.dropped),
                    dropped_share=mix.dropped_share,
                )
            )
    return out


def same_item_gaps(
    frame: pd.DataFrame,
    *,
    baseline: str | None = None,
    min_labels: int = MIN_LABELS,
    bounds: tuple[float, float] = SCALE_BOUNDS,
) -> list[GapRow]:
    """Per release: tier minus baseline on its golden items: paired on the same items when the tiers answered the
    same items and enough carry labels on both tiers; otherwise unpaired, and labelled so when the items differ."""
    out = []
    for release, group in regression_rows(frame).groupby("release", sort=True):
        if group["tier"].nunique() < 2:
            continue
        estimates = tier_estimates(group, min_labels=min_labels, bounds=bounds)
        try:
            diffs = tier_differences(group, estimates, baseline=baseline, min_labels=min_labels, bounds=bounds)
        except ValueError:  # the asked-for baseline did not serve this release
            continue
        for d in diffs:
            e = d.estimate
            df = d.n_labels - 1 if d.method == "paired" else d.min_side_labels - 1
            se = (e.high - e.low) / (2 * t_quantile(df, 0.95)) if np.isfinite(e.high - e.low) else np.nan
            estimand = GAP_SAME_ITEMS if d.same_items else GAP_RELEASE_UNPAIRED
            items = "the same golden items" if d.same_items else "each tier's own golden items (different items)"
            mix = f"{d.method}: {items} of release {release} ({RELEASE})"
            out.append(
                GapRow(estimand, d.criterion, d.tier, d.baseline, str(release), e.estimate, e.low, e.high, se,
                       two_sided_p(e.estimate, se, df), d.raw_diff, d.n_items, d.n_labels, np.nan, mix,
                       paired=d.method == "paired", interval_note=d.interval_note)
            )  # fmt: skip
    return out
