"""The pictures of the Tiers and Calibration views, as PNG bytes (matplotlib, Agg backend, no display needed).

- `estimates_png`: per criterion and tier, the judge's raw mean next to the PPI-corrected mean and interval,
  and the tier difference with its interval: the one picture a model owner needs.
- `trend_png`: per criterion, each tier's daily raw judge mean and the weekly corrected estimate over time.
- `agreement_png`: per criterion, each tier's weekly judge-human exact agreement and bias, with intervals.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: render to memory on servers and in flows, never open a window

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from judgewatch.calibration.tiers import TierDifference, TierEstimate
from judgewatch.stats import WindowStats

logger = logging.getLogger(__name__)

DPI = 110
COLORS = plt.get_cmap("tab10")


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)  # laid out by tight_layout: bbox_inches="tight" would draw twice
    plt.close(fig)
    return buffer.getvalue()


NO_VERDICTS = "no scored verdicts yet: `judgewatch regress` or `judgewatch sample`, then `judgewatch calibrate`"
NO_LABELS = "no human labels yet: label items in the review Queue, then `judgewatch calibrate`"


def message_png(message: str) -> bytes:
    """A picture that only says `message`: what an empty plot shows instead of blank axes."""
    fig, ax = plt.subplots(figsize=(7, 1.2), layout="tight")
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=9, wrap=True)
    return _png(fig)


def _dates(ax: Any) -> None:
    """Few, concise date ticks: the default locator makes many and dominates the rendering time."""
    locator = mdates.AutoDateLocator(minticks=3, maxticks=6)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _err(center: float, low: float, high: float) -> list[list[float]] | None:
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return [[center - low], [high - center]]


def estimates_png(estimates: Sequence[TierEstimate], differences: Sequence[TierDifference]) -> bytes:
    """Left: raw judge mean (hollow) vs PPI-corrected mean with interval (filled). Right: tier differences."""
    if not estimates:
        return message_png(NO_VERDICTS)
    criteria = sorted({e.criterion for e in estimates})
    tiers = sorted({e.tier for e in estimates})
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.9 + 0.75 * len(criteria) * len(tiers)), squeeze=True)
    labels = []
    for row, (criterion, tier) in enumerate((c, t) for c in criteria for t in tiers):
        labels.append(f"{criterion} · {tier}")
        match = [e for e in estimates if e.criterion == criterion and e.tier == tier]
        if not match:
            continue
        est, color = match[0], COLORS(tiers.index(tier))
        left.plot(est.raw_mean, row, "o", mfc="white", mec=color, ms=8, label="_raw")
        ppi = est.ppi
        if np.isfinite(ppi.estimate):
            err = _err(ppi.estimate, ppi.low, ppi.high)
            left.errorbar(ppi.estimate, row, xerr=err, fmt="o", color=color, capsize=4, ms=7)
    left.set_yticks(range(len(labels)), labels)
    left.invert_yaxis()
    left.set_xlabel("mean score   (○ judge raw   ● corrected by human labels, 95% CI)")
    left.set_title("Per tier and criterion")
    left.grid(axis="x", alpha=0.3)
    if differences:
        names = [f"{d.criterion}\n{d.tier} − {d.baseline} ({d.method})" for d in differences]
        for row, diff in enumerate(differences):
            right.plot(diff.raw_diff, row, "o", mfc="white", mec="grey", ms=8)
            err = _err(diff.estimate.estimate, diff.estimate.low, diff.estimate.high)
            if np.isfinite(diff.estimate.estimate):
                right.errorbar(diff.estimate.estimate, row, xerr=err, fmt="o", color="black", capsize=4, ms=7)
        right.axvline(0, color="red", lw=1, alpha=0.6)
        right.set_yticks(range(len(names)), names)
        right.invert_yaxis()
        right.set_xlabel("difference   (○ judge raw   ● corrected, 95% CI)")
        right.set_title("Tier difference")
        right.grid(axis="x", alpha=0.3)
    else:
        right.axis("off")
        right.text(0.5, 0.5, "one tier only: no difference", ha="center", va="center")
    fig.tight_layout()
    return _png(fig)


def trend_png(daily: pd.DataFrame, weekly: pd.DataFrame) -> bytes:
    """Per criterion: daily raw judge mean (thin line) and weekly corrected estimate with its interval."""
    if daily.empty:
        return message_png(NO_VERDICTS)
    criteria = sorted(daily["criterion"].unique())
    tiers = sorted(daily["tier"].unique())
    fig, axes = plt.subplots(len(criteria), 1, figsize=(10, 2.6 * len(criteria)), sharex=True, squeeze=False)
    for ax, criterion in zip(axes[:, 0], criteria, strict=True):
        for k, tier in enumerate(tiers):
            color = COLORS(k)
            d = daily[(daily["criterion"] == criterion) & (daily["tier"] == tier)].sort_values("window")
            ax.plot(d["mid"], d["raw_mean"], "-", color=color, alpha=0.45, lw=1.2, label=f"{tier}: judge, daily")
            w = weekly[(weekly["criterion"] == criterion) & (weekly["tier"] == tier)].sort_values("window")
            w = w[np.isfinite(w["ppi"].astype(float))]
            if not w.empty:
                low = (w["ppi"] - w["low"]).fillna(0).clip(lower=0)
                high = (w["high"] - w["ppi"]).fillna(0).clip(lower=0)
                ax.errorbar(
                    w["mid"],
                    w["ppi"],
                    yerr=[low, high],
                    fmt="o-",
                    color=color,
                    capsize=3,
                    lw=1.8,
                    label=f"{tier}: corrected, weekly",
                )
        ax.set_ylabel(criterion)
        ax.grid(alpha=0.3)
        _dates(ax)
    axes[0, 0].legend(loc="best", fontsize=8, ncol=2)
    axes[0, 0].set_title("Scores over time (judge raw vs corrected by human labels)")
    fig.tight_layout()
    return _png(fig)


def agreement_png(points: dict[tuple[str, str], list[WindowStats]]) -> bytes:
    """Top row: exact judge-human agreement per window; bottom row: bias (judge - human); one column per criterion."""
    if not points:
        return message_png(NO_LABELS)
    criteria = sorted({c for _, c in points})
    tiers = sorted({t for t, _ in points})
    fig, axes = plt.subplots(2, len(criteria), figsize=(4.2 * len(criteria), 5.5), sharex=True, squeeze=False)
    for col, criterion in enumerate(criteria):
        for k, tier in enumerate(tiers):
            series = points.get((tier, criterion), [])
            if not series:
                continue
            x = pd.to_datetime([p.window for p in series])
            for row, attr in enumerate(("agreement", "bias")):
                est = [getattr(p, attr) for p in series]
                y = np.array([e.estimate for e in est])
                lo = np.nan_to_num(y - np.array([e.low for e in est]), nan=0.0).clip(min=0)
                hi = np.nan_to_num(np.array([e.high for e in est]) - y, nan=0.0).clip(min=0)
                axes[row, col].errorbar(x, y, yerr=[lo, hi], fmt="o-", color=COLORS(k), capsize=3, label=tier)
        axes[0, col].set_title(criterion)
        axes[0, col].set_ylim(0, 1.05)
        axes[1, col].axhline(0, color="grey", lw=1)
        axes[1, col].set_xlabel("window starting")
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
            _dates(ax)
    axes[0, 0].set_ylabel("exact agreement")
    axes[1, 0].set_ylabel("bias (judge − human)")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def confusion_png(counts: np.ndarray, categories: Sequence[float], title: str) -> bytes:
    """A confusion matrix as a heat map (judge rows, human columns), counts written in the cells."""
    fig, ax = plt.subplots(figsize=(3.6, 3.2))
    ax.imshow(counts, cmap="Blues")
    ticks = [f"{c:g}" for c in categories]
    ax.set_xticks(range(len(ticks)), ticks)
    ax.set_yticks(range(len(ticks)), ticks)
    ax.set_xlabel("human")
    ax.set_ylabel("judge")
    ax.set_title(title, fontsize=9)
    peak = counts.max() if counts.size else 0
    for (i, j), value in np.ndenumerate(counts):
        ax.text(j, i, str(value), ha="center", va="center", color="white" if value > peak / 2 else "black", fontsize=8)
    fig.tight_layout()
    return _png(fig)
