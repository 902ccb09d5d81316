"""The pictures of the Tiers and Calibration views, as PNG bytes (matplotlib, Agg backend, no display needed): each
draws the numbers of a table beside it and names what it covers (docs/statistics.md, "Plots and tables show the same
numbers")."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: render to memory on servers and in flows, never open a window

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from judgewatch.calibration.agreement import AgreementRow
from judgewatch.calibration.estimands import EstimandRow
from judgewatch.calibration.tier_gap import GapRow
from judgewatch.stats import WindowStats

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


def _point_with_interval(ax: Any, x: float, row: int, low: float, high: float, color: Any) -> None:
    """The point at `x` and, where both bounds are finite, the interval [low, high] drawn as it is: around its
    own middle, since a point estimate need not sit inside it (the interval's centre moves towards the middle of
    the scale with few labels, and a PPI estimate can overshoot the scale the interval is cut to)."""
    if np.isfinite(low) and np.isfinite(high):
        ax.errorbar((low + high) / 2, row, xerr=(high - low) / 2, fmt="none", ecolor=color, capsize=4)
    ax.plot(x, row, "o", color=color, ms=7)


def _marks(ax: Any, marks: Sequence[tuple[float, EstimandRow | GapRow, Any, Any]]) -> None:
    """Per row (judge only, its estimate, colour, hollow colour): the judge-only value hollow, the corrected
    estimate filled with its interval; no bar, and the reason annotated, where there is no interval."""
    for row, (judge_only, est, color, hollow) in enumerate(marks):
        ax.plot(judge_only, row, "o", mfc="white", mec=hollow, ms=8)
        if np.isfinite(est.estimate):
            low, high = (np.nan, np.nan) if est.interval_note else (est.low, est.high)
            _point_with_interval(ax, est.estimate, row, low, high, color)
            if est.interval_note:
                ax.annotate(
                    est.interval_note, (est.estimate, row), xytext=(6, 4), textcoords="offset points", fontsize=7
                )
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)


def estimates_png(rows: Sequence[EstimandRow], gaps: Sequence[GapRow], covers: str) -> bytes:
    """Left: judge-only mean (hollow) vs corrected mean with interval (filled), the table's rows for `covers`
    (a release, or production traffic). Right: that population's tier gaps. No bar where there is no interval."""
    if not rows:
        return message_png(NO_VERDICTS)
    tiers = sorted({e.tier for e in rows})
    many_sets = len({e.dataset for e in rows}) > 1
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 1.2 + 0.45 * len(rows)), squeeze=True)
    colors = [COLORS(tiers.index(e.tier)) for e in rows]
    _marks(left, [(e.judge_mean, e, color, color) for e, color in zip(rows, colors, strict=True)])
    labels = [f"{e.criterion} · {e.tier}" + (f" · {e.dataset}" if many_sets else "") for e in rows]
    left.set_yticks(range(len(labels)), labels)
    left.set_xlabel("mean score   (○ judge only   ● corrected by human labels, 95% CI)")
    left.set_title("Per tier and criterion")
    fig.suptitle(f"{covers} only: no other release or population pooled in", fontsize=10)
    if gaps:
        right.axvline(0, color="red", lw=1, alpha=0.6)
        _marks(right, [(g.judge_diff, g, "black", "grey") for g in gaps])
        right.set_yticks(range(len(gaps)), [f"{g.criterion}\n{g.tier} − {g.baseline} ({_gap_kind(g)})" for g in gaps])
        right.set_xlabel("difference (○ judge only ● corrected, 95% CI)")
        right.set_title("Tier difference")
    else:
        right.axis("off")
        right.text(0.5, 0.5, "one tier only: no difference", ha="center", va="center")
    fig.tight_layout()
    return _png(fig)


def _gap_kind(gap: GapRow) -> str:
    if gap.release is None:
        return "mix-adjusted" if gap.reference_mix else "unadjusted"
    return "paired" if gap.paired else "unpaired"


def _span(ax: Any, first: pd.Timestamp, last: pd.Timestamp, pad: pd.Timedelta) -> None:
    """The time axis covers the plotted points' first to last moment, `pad` beyond each, and nothing more."""
    first, last = pd.Timestamp(first), pd.Timestamp(last)
    first = first.tz_localize(None) if first.tzinfo else first
    last = last.tz_localize(None) if last.tzinfo else last
    ax.set_xlim(mdates.date2num(first - pad), mdates.date2num(last + pad))


def trend_criteria(daily: pd.DataFrame) -> tuple[list[str], str]:
    """The criteria a trend can be drawn for (two days or more of verdicts on some tier), and a sentence naming
    the ones left out and why ("" when none is)."""
    if daily.empty:
        return [], NO_VERDICTS
    days = daily.groupby("criterion")["window"].nunique()
    drawn = sorted(str(c) for c, n in days.items() if n >= 2)
    left = sorted(str(c) for c, n in days.items() if n < 2)
    if not left:
        return drawn, ""
    day = pd.Timestamp(daily["window"].min())
    if not drawn:
        return [], (
            f"every verdict of the period falls on one day ({day:%Y-%m-%d}): a trend needs two days or more; "
            "the Tier scores table holds the numbers"
        )
    return drawn, f"left out, one day of verdicts only: {', '.join(left)}"


def trend_png(daily: pd.DataFrame, weekly: pd.DataFrame, covers: str = "") -> bytes:
    """Per criterion with two days or more: daily raw judge mean and weekly corrected estimate with its interval
    (none where the week has too few labels); the title says what a day pools (`covers`: which releases, traffic)."""
    criteria, why = trend_criteria(daily)
    if not criteria:
        return message_png(why)
    daily = daily[daily["criterion"].isin(criteria)]
    tiers = sorted(daily["tier"].unique())
    fig, axes = plt.subplots(len(criteria), 1, figsize=(10, 2.6 * len(criteria)), sharex=True, squeeze=False)
    for ax, criterion in zip(axes[:, 0], criteria, strict=True):
        for k, tier in enumerate(tiers):
            color = COLORS(k)
            d = daily[(daily["criterion"] == criterion) & (daily["tier"] == tier)].sort_values("window")
            ax.plot(d["mid"], d["raw_mean"], ".-", color=color, alpha=0.45, lw=1.2, label=f"{tier}: judge, daily")
            w = weekly[(weekly["criterion"] == criterion) & (weekly["tier"] == tier)].sort_values("window")
            w = w[np.isfinite(w["ppi"].astype(float))]
            if not w.empty:
                low = (w["ppi"] - w["low"]).fillna(0).clip(lower=0)
                high = (w["high"] - w["ppi"]).fillna(0).clip(lower=0)
                label = f"{tier}: corrected, weekly"
                ax.errorbar(w["mid"], w["ppi"], yerr=[low, high], fmt="o-", color=color, capsize=3, lw=1.8, label=label)
        ax.set_ylabel(criterion)
        ax.grid(alpha=0.3)
        _dates(ax)
        _span(ax, daily["mid"].min(), daily["mid"].max(), pd.Timedelta(hours=12))
    axes[0, 0].legend(loc="best", fontsize=8, ncol=2)
    title = f"Scores over time, per day: {covers}" if covers else "Scores over time, per day"
    axes[0, 0].set_title(title + (f"\n({why})" if why else ""))
    fig.tight_layout()
    return _png(fig)


def agreement_weeks(points: dict[tuple[str, str], list[WindowStats]]) -> tuple[list[str], str]:
    """The criteria with labels in two weeks or more (a weekly line to draw), and a sentence naming the ones left
    out and why ("" when none is)."""
    if not points:
        return [], NO_LABELS
    weeks: dict[str, set[Any]] = {}
    for (_, criterion), series in points.items():
        weeks.setdefault(criterion, set()).update(p.window for p in series if p.n)
    drawn = sorted(c for c, w in weeks.items() if len(w) >= 2)
    left = sorted(c for c, w in weeks.items() if len(w) < 2)
    if not left:
        return drawn, ""
    if not drawn:
        return [], (
            "every label of the period falls in one week: a weekly trend needs two weeks or more; the agreement "
            "table holds the numbers"
        )
    return drawn, f"left out, labels in one week only: {', '.join(left)}"


def agreement_png(points: dict[tuple[str, str], list[WindowStats]], overall: Sequence[AgreementRow] = ()) -> bytes:
    """Top row: exact judge-human agreement per week; bottom row: bias (judge - human); one column per criterion with
    labels in two weeks or more. The weekly points come from the same labels as the agreement table (`overall`), whose
    all-period value is drawn as a dashed line, so plot and table show the same numbers."""
    criteria, why = agreement_weeks(points)
    if not criteria:
        return message_png(why)
    tiers = sorted({t for t, _ in points})
    starts = [pd.Timestamp(p.window) for (_, c), series in points.items() if c in criteria for p in series]
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
            for a in overall:
                if (a.tier, a.criterion) == (tier, criterion):
                    axes[0, col].axhline(a.exact.estimate, color=COLORS(k), ls="--", lw=1, label=f"{tier}: all weeks")
                    axes[1, col].axhline(a.bias.estimate, color=COLORS(k), ls="--", lw=1)
        axes[0, col].set_title(criterion)
        axes[0, col].set_ylim(0, 1.05)
        axes[1, col].axhline(0, color="grey", lw=1)
        axes[1, col].set_xlabel("week starting")
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
            _dates(ax)
            _span(ax, min(starts), max(starts), pd.Timedelta(days=1))
    axes[0, 0].set_ylabel("exact agreement")
    axes[1, 0].set_ylabel("bias (judge − human)")
    axes[0, 0].legend(fontsize=8)
    if why:
        fig.suptitle(why, fontsize=8)
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
