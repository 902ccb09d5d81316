"""Judge drift: agreement and bias per time window, and tests for a change, each over two hypotheses (exact
agreement fell, one-sided; the bias judge - human moved, two-sided), Bonferroni: an alert when either p-value is
below alpha / 2. `drift_monitor` is the anytime-valid check a service runs every period (`stats.sequential`);
`drift_test` the single-look test of one window against another, valid for a one-off comparison only."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from judgewatch.stats.agreement import bias, exact_agreement
from judgewatch.stats.estimate import (
    SCALE_BOUNDS,
    SCALE_STEP,
    Estimate,
    as_float_array,
    difference_bounds,
    t_bounds,
    wilson_bounds,
)
from judgewatch.stats.sequential import T_STAR, shift_p_values, window_stretches

logger = logging.getLogger(__name__)

_N_TESTS = 2


@dataclass(frozen=True, slots=True)
class WindowStats:
    """Judge-vs-human exact agreement and bias (judge - human) in one window; `n` = pairs both scored."""

    window: object
    n: int
    agreement: Estimate
    bias: Estimate


@dataclass(frozen=True, slots=True)
class DriftTest:
    """Reference vs current window: the estimates, the p-values, and the Bonferroni-corrected alert. From
    `drift_monitor`: anytime-valid p-values, the current window the stretch from `stretch_start` (its first pair's
    index) to now; from `drift_test`: single-look p-values, `stretch_start` -1."""

    agreement_ref: Estimate
    agreement_cur: Estimate
    bias_ref: Estimate
    bias_cur: Estimate
    p_agreement_drop: float
    p_bias_shift: float
    alpha: float
    alert: bool
    stretch_start: int = -1


def time_windows(timestamps: Sequence[datetime] | ArrayLike, width: timedelta) -> NDArray[np.datetime64]:
    """Start of the fixed-width window (aligned to the Unix epoch, UTC) each timestamp falls in."""
    if width <= timedelta(0):
        raise ValueError(f"window width must be positive, got {width}")
    values = [
        v.astimezone(UTC).replace(tzinfo=None) if isinstance(v, datetime) and v.tzinfo else v
        for v in np.asarray(timestamps, dtype=object).ravel()
    ]
    t = np.asarray(values, dtype="datetime64[us]")
    step = np.timedelta64(width, "us")
    return (t - (t - np.datetime64(0, "us")) % step).astype("datetime64[us]")


def agreement_series(
    windows: ArrayLike, judge: ArrayLike, human: ArrayLike, *, level: float = 0.95
) -> list[WindowStats]:
    """Per-window exact agreement (Wilson interval) and bias (t interval), windows in sorted order. `windows` labels
    each pair (e.g. from `time_windows`); pairs with a NaN side are dropped."""
    j, h = as_float_array(judge, "judge"), as_float_array(human, "human")
    labels = np.asarray(windows)
    if not (labels.shape == j.shape == h.shape):
        raise ValueError("windows, judge and human must have the same length")
    keep = ~(np.isnan(j) | np.isnan(h))
    names, idx = np.unique(labels[keep], return_inverse=True)
    d = (j - h)[keep]
    size = names.size
    n = np.bincount(idx, minlength=size)
    hits = np.bincount(idx, weights=(d == 0).astype(float), minlength=size)
    mean = np.bincount(idx, weights=d, minlength=size) / np.maximum(n, 1)
    sq = np.bincount(idx, weights=(d - mean[idx]) ** 2, minlength=size)
    with np.errstate(divide="ignore", invalid="ignore"):
        # at least one scale point of spread over the window: agreeing labels never give a zero-width interval
        sd = np.maximum(np.sqrt(sq / (n - 1)), SCALE_STEP / np.sqrt(n))
    a_low, a_high = wilson_bounds(hits, n, level)
    b_low, b_high = t_bounds(mean, sd, n, level)
    return [
        WindowStats(
            window=names[k].item(),
            n=int(n[k]),
            agreement=Estimate(float(hits[k] / n[k]), float(a_low[k]), float(a_high[k]), int(n[k])),
            bias=Estimate(float(mean[k]), float(b_low[k]), float(b_high[k]), int(n[k])),
        )
        for k in range(size)
    ]


def _agreement_drop_p(ref: Estimate, cur: Estimate) -> float:
    """One-sided pooled two-proportion z-test, H1: current agreement < reference agreement."""
    if ref.n == 0 or cur.n == 0:
        return float("nan")
    pooled = (ref.estimate * ref.n + cur.estimate * cur.n) / (ref.n + cur.n)
    se = np.sqrt(pooled * (1.0 - pooled) * (1.0 / ref.n + 1.0 / cur.n))
    if se == 0:
        return 1.0  # both windows agree on every pair, or on none: no drop
    return float(sps.norm.sf((ref.estimate - cur.estimate) / se))


def _bias_shift_p(d_ref: NDArray[np.float64], d_cur: NDArray[np.float64]) -> float:
    """Two-sided Welch t-test on judge - human differences; identical constant windows give p = 1."""
    if d_ref.size < 2 or d_cur.size < 2:
        return float("nan")
    if d_ref.std() == 0 and d_cur.std() == 0:
        return 1.0 if d_ref[0] == d_cur[0] else 0.0
    return float(sps.ttest_ind(d_ref, d_cur, equal_var=False).pvalue)


def drift_test(
    ref_judge: ArrayLike,
    ref_human: ArrayLike,
    cur_judge: ArrayLike,
    cur_human: ArrayLike,
    *,
    alpha: float = 0.05,
    level: float = 0.95,
) -> DriftTest:
    """Test the current window against the reference for an agreement drop or a bias shift (see module doc). A p-value
    is NaN when a window has too few pairs (n = 0 for agreement, n < 2 for bias); NaN never alerts."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    agree_ref = exact_agreement(ref_judge, ref_human, level=level)
    agree_cur = exact_agreement(cur_judge, cur_human, level=level)
    bias_ref = bias(ref_judge, ref_human, level=level)
    bias_cur = bias(cur_judge, cur_human, level=level)

    def diffs(judge: ArrayLike, human: ArrayLike) -> NDArray[np.float64]:
        d = as_float_array(judge, "judge") - as_float_array(human, "human")
        return d[~np.isnan(d)]

    p_agree = _agreement_drop_p(agree_ref, agree_cur)
    p_bias = _bias_shift_p(diffs(ref_judge, ref_human), diffs(cur_judge, cur_human))
    threshold = alpha / _N_TESTS
    alert = bool(p_agree < threshold or p_bias < threshold)
    if alert:
        logger.warning("judge drift: p(agreement drop)=%.3g, p(bias shift)=%.3g", p_agree, p_bias)
    return DriftTest(agree_ref, agree_cur, bias_ref, bias_cur, p_agree, p_bias, alpha, alert)


def drift_monitor(
    judge: ArrayLike,
    human: ArrayLike,
    window: ArrayLike,
    *,
    alpha: float = 0.05,
    reference_windows: int = 28,
    min_reference: int = 20,
    min_current: int = 10,
    t_star: float = T_STAR,
    bounds: tuple[float, float] = SCALE_BOUNDS,
    looks: ArrayLike | None = None,
) -> tuple[DriftTest, NDArray[np.float64], NDArray[np.float64]]:
    """The anytime-valid drift check of one series (pairs in time order, `window`: each pair's window number
    from the series' first): its test at the last look, and the agreement-drop and bias-shift p-values at each of
    `looks` (pairs seen; default: all of them, one look). Pairs with a NaN side are dropped. `t_star`: the
    stretch length (pairs) where the sequences are tightest (tuning, never the guarantee)."""
    j, h = as_float_array(judge, "judge"), as_float_array(human, "human")
    keep = ~(np.isnan(j) | np.isnan(h))
    j, h, w = j[keep], h[keep], np.asarray(window)[keep]
    stretches = window_stretches(w, reference_windows)
    at = np.array([j.size]) if looks is None else np.asarray(looks)
    shift = partial(
        shift_p_values,
        stretches=stretches,
        looks=at,
        min_reference=min_reference,
        min_current=min_current,
        t_star=t_star,
    )
    p_agree, k_agree = shift((j == h).astype(float), bounds=(0.0, 1.0), one_sided=True)
    p_bias, k_bias = shift(j - h, bounds=difference_bounds(bounds))
    k = int(k_agree[-1] if p_agree[-1] <= p_bias[-1] else k_bias[-1])
    start = int(stretches.start[k]) if k >= 0 else j.size
    ref = int(stretches.ref_start[k]) if k >= 0 else 0
    cur, past = slice(start, j.size), slice(ref, start)
    alert = bool(min(p_agree[-1], p_bias[-1]) < alpha / _N_TESTS)
    test = DriftTest(
        exact_agreement(j[past], h[past]),
        exact_agreement(j[cur], h[cur]),
        bias(j[past], h[past]),
        bias(j[cur], h[cur]),
        float(p_agree[-1]),
        float(p_bias[-1]),
        alpha,
        alert,
        start if k >= 0 else -1,
    )
    return test, p_agree, p_bias
