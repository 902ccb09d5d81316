"""The figures of a known-answers validation: per criterion, how well the judge separates good from bad answers.
Unscored answers are counted beside AUROC and the mean gap, never dropped silently; probability-weighted verdicts
also get the figures of that reading (`expected`), while the policy judges the integers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from judges.base import plan
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import UnscoredReason, Verdict
from judgewatch.stats.auroc import auroc, auroc_interval


def rounded(value: float | None) -> float | None:
    """A figure as records store it: rounded to 4 places, never -0.0; NaN, inf (no figure) and None as None."""
    return None if value is None or not math.isfinite(value) else round(float(value), 4) + 0.0


def bounded(estimate: Any, name: str) -> dict[str, float | None]:
    """An estimate (with `estimate`, `low` and `high`) as records store it: the point as `name`, its bounds."""
    return {name: rounded(estimate.estimate), "low": rounded(estimate.low), "high": rounded(estimate.high)}


def score_column(verdicts: Sequence[Verdict], criterion: str, *, expected: bool = False) -> np.ndarray:
    """The criterion's scores (the probability-weighted ones with `expected`), NaN where there is none."""
    values = [(v.expected_scores if expected else v.scores).get(criterion) for v in verdicts]
    return np.array([np.nan if s is None else float(s) for s in values], dtype=float)


def criterion_figures(
    rubric: Rubric,
    criterion: str,
    good: Sequence[tuple[JudgeItem, Verdict]],
    bad: Sequence[tuple[JudgeItem, Verdict]],
    *,
    resamples: int,
    seed: int,
    expected: bool = False,
) -> dict[str, Any] | None:
    """AUROC with its paired bootstrap interval, mean gap and unscored rate; None when never applicable. `expected`: of
    the probability-weighted scores instead of the integers."""
    applies = [criterion in plan(rubric, item)[0] for item, _ in [*good, *bad]]
    judged = sum(applies)
    if judged == 0:
        return None
    g = score_column([v for _, v in good], criterion, expected=expected)
    b = score_column([v for _, v in bad], criterion, expected=expected)
    n_good, n_bad = int(np.isfinite(g).sum()), int(np.isfinite(b).sum())
    unscored = judged - n_good - n_bad
    estimate = auroc_interval(g, b, paired=True, resamples=resamples, seed=seed)
    mean_good = float(np.nanmean(g)) if n_good else math.nan
    mean_bad = float(np.nanmean(b)) if n_bad else math.nan
    return {
        **bounded(estimate, "auroc"), "n_good": n_good, "n_bad": n_bad, "mean_good": rounded(mean_good),
        "mean_bad": rounded(mean_bad), "gap": rounded(mean_good - mean_bad), "judged": judged, "unscored": unscored,
        "unscored_rate": rounded(unscored / judged),
    }  # fmt: skip


def known_answer_figures(
    rubric: Rubric,
    good: Sequence[tuple[JudgeItem, Verdict]],
    bad: Sequence[tuple[JudgeItem, Verdict]],
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Figures of every criterion that applies (and of its probability-weighted reading, when verdicts carry
    one), the unscored reasons over all answers and how many verdicts were read each way."""
    verdicts = [v for _, v in [*good, *bad]]
    weighted = any(v.expected_scores for v in verdicts)
    criteria: dict[str, Any] = {}
    for criterion in rubric.criteria:
        figures = criterion_figures(rubric, criterion.name, good, bad, resamples=resamples, seed=seed)
        if figures is None:
            continue
        if weighted:
            figures["expected"] = criterion_figures(
                rubric, criterion.name, good, bad, resamples=resamples, seed=seed, expected=True
            )
        criteria[criterion.name] = figures
    reasons = Counter(v.unscored_reason.value for v in verdicts if v.unscored_reason is not None)
    readings = Counter(v.score_reading.value for v in verdicts if v.unscored_reason is None)
    return {
        "criteria": criteria,
        "items": len(good),
        "answers": len(verdicts),
        "unscored_verdicts": sum(reasons.values()),
        "unscored_reasons": dict(reasons),
        "score_readings": dict(readings),
    }


def trim_figures(
    rubric: Rubric,
    good: Sequence[tuple[JudgeItem, Verdict]],
    bad: Sequence[tuple[JudgeItem, Verdict]],
    **bootstrap: int,
) -> dict[str, Any]:
    """How many answers needed their reference material trimmed to fit the judge's window, and the figures
    of the pairs judged whole apart from those where either answer was trimmed (only when some were)."""
    pairs = list(zip(good, bad, strict=True))
    is_trimmed = [g[1].trimmed is not None or b[1].trimmed is not None for g, b in pairs]
    trimmed = [pair for pair, cut in zip(pairs, is_trimmed, strict=True) if cut]
    result: dict[str, Any] = {
        "answers_trimmed": sum(v.trimmed is not None for _, v in [*good, *bad]),
        "items_trimmed": len(trimmed),
        "answers_too_long": sum(v.unscored_reason == UnscoredReason.too_long for _, v in [*good, *bad]),
    }
    if trimmed:
        whole = [pair for pair, cut in zip(pairs, is_trimmed, strict=True) if not cut]
        for name, subset in (("whole", whole), ("trimmed", trimmed)):
            figures = known_answer_figures(rubric, [g for g, _ in subset], [b for _, b in subset], **bootstrap)
            result[name] = {"items": len(subset), "criteria": figures["criteria"]}
    return result


def agreement_figures(rubric: Rubric, mine: Sequence[Verdict], theirs: Sequence[Verdict]) -> dict[str, dict[str, Any]]:
    """Per criterion, on the same answers: exact agreement and mean difference (mine - theirs) where both scored."""
    result: dict[str, dict[str, Any]] = {}
    for criterion in rubric.criteria:
        a, b = score_column(mine, criterion.name), score_column(theirs, criterion.name)
        both = np.isfinite(a) & np.isfinite(b)
        n = int(both.sum())
        if n == 0:
            continue
        result[criterion.name] = {
            "n": n,
            "exact_agreement": rounded(float((a[both] == b[both]).mean())),
            "mean_diff": rounded(float((a[both] - b[both]).mean())),
        }
    return result


def raw_auroc(good: Sequence[dict[str, float]], bad: Sequence[dict[str, float]]) -> dict[str, float | None]:
    """AUROC of continuous raw scores (the reference judge's coverage) per criterion, before integer cuts."""
    names = sorted({name for row in [*good, *bad] for name in row})
    return {
        name: rounded(auroc([row.get(name, math.nan) for row in good], [row.get(name, math.nan) for row in bad]))
        for name in names
    }
