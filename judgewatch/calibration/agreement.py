"""Judge-vs-human agreement per tier and criterion, confusion matrices, and reviewer-vs-reviewer agreement, on the
uniformly routed labels only (targeted picks, chosen where the judge is least sure, would understate it). Kappas,
exact agreement and confusion matrices compare categories, so they read the integer the judge wrote; Spearman and
bias read `judge` (`score_frame.load_scores`' reading)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from judgewatch.stats import (
    ConfusionMatrix,
    Estimate,
    WindowStats,
    agreement_series,
    bias,
    cohen_kappa,
    confusion_matrix,
    exact_agreement,
    gwet_ac1,
    krippendorff_alpha,
    spearman,
    time_windows,
    weighted_kappa,
)
from judgewatch.stats.estimate import MIN_LABELS, interval_reason
from judgewatch.storage.review import PickReason

EXTREME_PREVALENCE = 0.8  # one category holding this share of the ratings: kappa collapses, AC1 is shown
ESTIMATES = ("weighted_kappa", "cohen_kappa", "spearman", "bias", "exact", "ac1")  # AgreementRow's statistics


@dataclass(frozen=True, slots=True)
class AgreementRow:
    """One tier and criterion: how the judge agrees with people on `n` labeled items."""

    tier: str
    criterion: str
    n: int
    weighted_kappa: Estimate  # quadratic, over the rubric's scale
    cohen_kappa: Estimate
    spearman: Estimate
    bias: Estimate  # mean of judge - human
    exact: Estimate  # share of identical scores
    ac1: Estimate  # Gwet's AC1: readable where extreme prevalence makes kappa collapse
    interval_note: str = ""  # "too few labels (n=k, need m)" when there are no intervals, else ""
    prevalence_note: str = ""  # why kappa is near zero beside high agreement, when prevalence is extreme


@dataclass(frozen=True, slots=True)
class ReviewerAgreementRow:
    """Reviewer-vs-reviewer agreement on items labeled more than once (Krippendorff's alpha, ordinal)."""

    tier: str
    criterion: str
    n_items: int
    n_reviewers: int
    alpha: Estimate


def agreement_sample(frame: pd.DataFrame) -> pd.DataFrame:
    """Labeled rows from the uniform share of routing (see the module docstring)."""
    mask = frame["human"].notna() & (frame["pick_reason"] == PickReason.uniform.value)
    return frame[mask]


def prevalence_note(judge: np.ndarray, human: np.ndarray) -> str:
    """One line when one category holds most ratings (EXTREME_PREVALENCE): why kappa collapses there."""
    values = np.concatenate([judge, human])
    if values.size == 0:
        return ""
    counts = pd.Series(values).value_counts()
    top_value, share = counts.index[0], counts.iloc[0] / values.size
    if share < EXTREME_PREVALENCE:
        return ""
    return (
        f"{share:.0%} of ratings are {top_value:g}: kappa's chance agreement nears 1 there, so kappa collapses "
        "towards 0 even when the raters almost always agree; Gwet's AC1 does not, read it instead."
    )


def _no_interval(est: Estimate) -> Estimate:
    return Estimate(est.estimate, np.nan, np.nan, est.n)


def agreement_table(
    frame: pd.DataFrame,
    *,
    categories: Sequence[float] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    min_labels: int = MIN_LABELS,
) -> list[AgreementRow]:
    """One row per (tier, criterion) that has labels, in sorted order; no intervals below `min_labels` labels."""
    rows = []
    for (tier, criterion), group in agreement_sample(frame).groupby(["tier", "criterion"], sort=True):
        j, h = _integers(group), group["human"].to_numpy()
        read = group["judge"].to_numpy()
        cats = categories if categories is not None else np.union1d(j, h).tolist()
        row = AgreementRow(
            tier=str(tier),
            criterion=str(criterion),
            n=len(group),
            weighted_kappa=weighted_kappa(j, h, categories=cats, n_boot=n_boot, seed=seed),
            cohen_kappa=cohen_kappa(j, h, categories=cats, n_boot=n_boot, seed=seed),
            spearman=spearman(read, h),
            bias=bias(read, h),
            exact=exact_agreement(j, h),
            ac1=gwet_ac1(j, h, categories=cats, n_boot=n_boot, seed=seed),
            interval_note=interval_reason(len(group), min_labels),
            prevalence_note=prevalence_note(j, h),
        )
        if row.interval_note:
            no_intervals: dict[str, Any] = {f: _no_interval(getattr(row, f)) for f in ESTIMATES}
            row = replace(row, **no_intervals)
        rows.append(row)
    return rows


def weekly_agreement(frame: pd.DataFrame, *, min_labels: int = MIN_LABELS) -> dict[tuple[str, str], list[WindowStats]]:
    """Per (tier, criterion), exact agreement and bias per week over the agreement table's own labels (every
    release pooled, as the table): the plot beside the table shows the same numbers. No interval in a week with
    fewer than `min_labels` labels."""
    out: dict[tuple[str, str], list[WindowStats]] = {}
    for (tier, criterion), group in agreement_sample(frame).groupby(["tier", "criterion"], sort=True):
        weeks = time_windows(group["at"].dt.to_pydatetime(), timedelta(days=7))
        exact = agreement_series(weeks, _integers(group), group["human"])
        read = agreement_series(weeks, group["judge"], group["human"])
        out[(str(tier), str(criterion))] = [
            WindowStats(e.window, e.n, _no_interval(e.agreement), _no_interval(r.bias))
            if e.n < min_labels
            else WindowStats(e.window, e.n, e.agreement, r.bias)
            for e, r in zip(exact, read, strict=True)
        ]
    return out


def confusion_tables(
    frame: pd.DataFrame, *, categories: Sequence[float] | None = None
) -> dict[tuple[str, str], ConfusionMatrix]:
    """(tier, criterion) -> judge (rows) x human (columns) counts over the agreement sample."""
    groups = agreement_sample(frame).groupby(["tier", "criterion"], sort=True)
    return {
        (str(tier), str(criterion)): confusion_matrix(_integers(group), group["human"], categories)
        for (tier, criterion), group in groups
    }


def _integers(group: pd.DataFrame) -> np.ndarray:
    """The integer scores the judge wrote (frames built without `judge_integer` carry them in `judge`)."""
    return group["judge_integer" if "judge_integer" in group else "judge"].to_numpy()


def confusion_frame(cm: ConfusionMatrix) -> pd.DataFrame:
    """A confusion matrix as a table: rows 'judge 1..K', columns 'human 1..K'."""
    labels = [f"{c:g}" for c in cm.categories]
    return pd.DataFrame(cm.counts, index=[f"judge {x}" for x in labels], columns=[f"human {x}" for x in labels])


def reviewer_agreement(labels: pd.DataFrame, *, n_boot: int = 500, seed: int = 0) -> list[ReviewerAgreementRow]:
    """Krippendorff's alpha per (tier, criterion) over items with two or more labels (`labels`: every label,
    `score_frame.load_labels` without `first_only`)."""
    rows: list[ReviewerAgreementRow] = []
    if labels.empty:
        return rows
    for (tier, criterion), group in labels.groupby(["tier", "criterion"], sort=True):
        per_item = group.groupby("review_item_id")["reviewer"].transform("size")
        multi = group[per_item >= 2]
        if multi.empty:
            continue
        matrix = multi.pivot_table(index="reviewer", columns="review_item_id", values="human", aggfunc="first")
        rows.append(
            ReviewerAgreementRow(
                tier=str(tier),
                criterion=str(criterion),
                n_items=int(matrix.shape[1]),
                n_reviewers=int(matrix.shape[0]),
                alpha=krippendorff_alpha(matrix.to_numpy(dtype=float), level="ordinal", n_boot=n_boot, seed=seed),
            )
        )
    return rows
