"""One estimand per question, never pooled (docs/statistics.md), read from a row's interaction source: traffic quality
from `traffic:<name>` rows (`stats.survey_ppi_mean`, weighted by sampling x routing probability), release quality
from `release:<R>/<tier>/<set>` golden items (`stats.ppi_mean`, corrected by labels on those golden items only);
anything else (files judged by hand, judge validation runs) enters no estimate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgewatch.stats import PPIEstimate, SurveyEstimate, classical_mean, ppi_mean, survey_ppi_mean
from judgewatch.stats.estimate import MIN_LABELS, SCALE_BOUNDS, interval_reason
from judgewatch.stats.sequential import batch_cs

TRAFFIC = "traffic_quality"
RELEASE = "release_quality"
ESTIMAND_TEXT = {
    TRAFFIC: "mean human score over all production interactions of the period that a sampling stratum could "
    "pick (sampling and routing probabilities weighted back, PPI++ corrected)",
    RELEASE: "mean human score over a release's golden-set items, per tier (PPI corrected with labels on those "
    "golden items only)",
}
GOLDEN_SOURCE = r"^release:(?P<release>[^/]+)/[^/]+/(?P<dataset>.+)$"


@dataclass(frozen=True, slots=True)
class EstimandRow:
    """One estimate, labeled with what it estimates and what it rests on."""

    estimand: str  # TRAFFIC | RELEASE
    tier: str
    criterion: str
    release: str | None  # release quality only
    dataset: str | None  # golden set, release quality only
    estimate: float  # judge corrected by the labels (PPI++)
    low: float  # its interval: NaN below the minimum of labels (`interval_note` says so)
    high: float
    se: float
    n_sampled: int  # judge scores (verdicts) it uses
    n_labeled: int  # of those, items with a human label
    n_effective: float  # labels the human-only estimate would need for the same se (`effective_n`; NaN: no interval)
    judge_mean: float  # the judge alone (traffic: sampling-weighted), what a dashboard without labels shows
    human_only: float  # the labels alone, same estimand
    human_low: float
    human_high: float
    n_synthetic_labels: int  # labels made by a program (demo, synthetic), not by people
    n_dataset_labels: int  # labels derived from a golden set's own annotations (label_via=dataset_annotation)
    population: float | None = None  # traffic: interactions the sample stands for (sum of 1 / pi)
    interval_note: str = ""  # why there is no interval ("too few labels (n=k, need m)"), else ""


def effective_n(value: float, interval_note: str) -> float:
    """n effective as every table shows it (one definition, docs/statistics.md): NaN (shown "-") where the estimate
    has no interval."""
    return float("nan") if interval_note or not np.isfinite(value) else float(value)


def split_populations(frame: pd.DataFrame) -> pd.Series:
    """ "traffic", "regression" or "other" per row, from the interaction's source."""
    source = frame["source"].astype(str)
    kind = np.select(
        [source.str.startswith("traffic:"), source.str.match(GOLDEN_SOURCE)], ["traffic", "regression"], default="other"
    )
    return pd.Series(kind, index=frame.index)


def traffic_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Traffic rows that carry their sampling probability (the only ones a traffic estimate can weight)."""
    rows = frame[split_populations(frame) == "traffic"]
    return rows[np.isfinite(rows["sample_prob"].to_numpy(dtype=float))]


def regression_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Golden regression rows, with their `release` and golden `dataset` parsed from the source."""
    rows = frame[split_populations(frame) == "regression"]
    parts = rows["source"].astype(str).str.extract(GOLDEN_SOURCE)
    return rows.assign(release=parts["release"], dataset=parts["dataset"])


def survey_inputs(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(judge, sampling probability, human label or NaN, routing probability or NaN) of traffic rows."""
    human = group["human"].to_numpy(dtype=float)
    route = group["inclusion_prob"].to_numpy(dtype=float)
    human = np.where(np.isfinite(route), human, np.nan)  # a label without its routing probability cannot weigh
    return group["judge"].to_numpy(dtype=float), group["sample_prob"].to_numpy(dtype=float), human, route


def traffic_estimate(
    group: pd.DataFrame, *, min_labels: int = MIN_LABELS, bounds: tuple[float, float] = SCALE_BOUNDS
) -> tuple[SurveyEstimate, SurveyEstimate, float]:
    """(corrected, human-only, judge-only) for one tier and criterion of traffic rows; `bounds`: the scale."""
    f, pi, y, rho = survey_inputs(group)
    est = survey_ppi_mean(f, pi, y, rho, min_labels=min_labels, bounds=bounds)
    human = survey_ppi_mean(f, pi, y, rho, lam=0.0, min_labels=min_labels, bounds=bounds)
    judge = float((f / pi).sum() / (1.0 / pi).sum()) if f.size else np.nan
    return est, human, judge


def _row(
    keys: tuple[str, str, str, str | None, str | None],
    est: SurveyEstimate | PPIEstimate,
    human: SurveyEstimate | PPIEstimate,
    judge_mean: float,
    group: pd.DataFrame,
    n: tuple[int, int],
    min_labels: int,
    population: float | None = None,
) -> EstimandRow:
    """One estimate's row; `keys`: estimand, tier, criterion, release, golden set; `n`: (sampled, labeled)."""
    via = group.loc[group["human"].notna(), "label_via"]
    synthetic, annotated = int((via == "synthetic").sum()), int((via == "dataset_annotation").sum())
    note = interval_reason(n[1], min_labels)
    return EstimandRow(
        *keys, est.estimate, est.low, est.high, est.se, *n, effective_n(est.effective_n, note), judge_mean,
        human.estimate, human.low, human.high, synthetic, annotated, population, note,
    )  # fmt: skip


def traffic_estimates(
    frame: pd.DataFrame, *, min_labels: int = MIN_LABELS, bounds: tuple[float, float] = SCALE_BOUNDS
) -> list[EstimandRow]:
    """Traffic quality per tier and criterion (see the module docstring); no interval below `min_labels` labels."""
    out = []
    for (tier, criterion), group in traffic_rows(frame).groupby(["tier", "criterion"], sort=True):
        est, human, judge = traffic_estimate(group, min_labels=min_labels, bounds=bounds)
        keys = (TRAFFIC, str(tier), str(criterion), None, None)
        out.append(_row(keys, est, human, judge, group, (est.n_sampled, est.n_labeled), min_labels, est.population))
    return out


@dataclass(frozen=True, slots=True)
class MonitoredRow:
    """Traffic quality as a check that looks every day reads it: the mean over `periods` days of each day's
    traffic quality (PPI++, days with at least the minimum of labels), with a confidence sequence that holds at
    every look together (`stats.batch_cs`), where the single-look interval of `traffic_estimates` holds at one."""

    tier: str
    criterion: str
    first_day: str
    periods: int
    estimate: float
    low: float
    high: float
    n_labeled: int
    validity: str = "anytime-valid (confidence sequence over the daily estimates)"


def traffic_monitor(
    frame: pd.DataFrame, *, min_labels: int = MIN_LABELS, bounds: tuple[float, float] = SCALE_BOUNDS
) -> list[MonitoredRow]:
    """The monitored traffic quality per tier and criterion (see `MonitoredRow`); a tier without a day of
    enough labels has no row."""
    rows = traffic_rows(frame)
    days = rows["at"].dt.floor("D").dt.strftime("%Y-%m-%d")
    out = []
    for (tier, criterion), group in rows.assign(day=days).groupby(["tier", "criterion"], sort=True):
        daily = [
            (day, survey_ppi_mean(*survey_inputs(g), min_labels=min_labels, bounds=bounds))
            for day, g in group.groupby("day", sort=True)
        ]
        kept = [(day, e) for day, e in daily if np.isfinite(e.se) and e.se > 0]
        if not kept:
            continue
        cs = batch_cs([e.estimate for _, e in kept], [e.se for _, e in kept], alpha=0.05)
        low, high = max(cs.low[-1], bounds[0]), min(cs.high[-1], bounds[1])
        labels = sum(e.n_labeled for _, e in kept)
        out.append(MonitoredRow(str(tier), str(criterion), kept[0][0], len(kept), cs.mean[-1], low, high, labels))
    return out


def group_ppi(
    group: pd.DataFrame,
    min_labels: int = 2,
    bounds: tuple[float, float] = SCALE_BOUNDS,
    *,
    weighted_labels_only: bool = False,
) -> tuple[PPIEstimate, PPIEstimate]:
    """(PPI++ estimate, human-only estimate) of one group of score-frame rows, weighted by the labels' inclusion
    probabilities when every labelled row has one. `weighted_labels_only` (release quality): labelled rows without
    a probability are left out instead of dropping the weights."""
    lab = group[group["human"].notna()]
    if weighted_labels_only:
        lab = lab[np.isfinite(lab["inclusion_prob"].to_numpy(dtype=float))]
    y, f, pi = lab["human"].to_numpy(), lab["judge"].to_numpy(), lab["inclusion_prob"].to_numpy(dtype=float)
    weights = pi if len(lab) and np.all(np.isfinite(pi)) else None
    est = ppi_mean(y, f, group["judge"].to_numpy(), inclusion_prob=weights, min_labels=min_labels, bounds=bounds)
    return est, classical_mean(y, inclusion_prob=weights, min_labels=min_labels, bounds=bounds)


def release_estimates(
    frame: pd.DataFrame, *, min_labels: int = MIN_LABELS, bounds: tuple[float, float] = SCALE_BOUNDS
) -> list[EstimandRow]:
    """Release quality per release, tier, golden set and criterion: golden items and their labels only."""
    out = []
    keys = ["release", "tier", "dataset", "criterion"]
    for (release, tier, dataset, criterion), group in regression_rows(frame).groupby(keys, sort=True):
        est, human = group_ppi(group, min_labels, bounds, weighted_labels_only=True)
        row_keys = (RELEASE, str(tier), str(criterion), str(release), str(dataset))
        out.append(_row(row_keys, est, human, float(group["judge"].mean()), group, (est.n_all, est.n), min_labels))
    return out


def traffic_coverage(frame: pd.DataFrame) -> str:
    """One sentence saying what the traffic estimand covers: sources, period, strata and their rates."""
    rows = traffic_rows(frame)
    if rows.empty:
        return "No sampled production traffic with stored sampling probabilities: no traffic estimate."
    sources = ", ".join(sorted(rows["source"].astype(str).unique()))
    strata = rows.drop_duplicates("interaction_id").groupby("stratum", dropna=False)["sample_prob"].agg(["min", "max"])
    rates = ", ".join(
        f"{name}={lo:.3g}" if lo == hi else f"{name}={lo:.3g}..{hi:.3g}" for name, (lo, hi) in strata.iterrows()
    )
    start, end = rows["at"].min(), rows["at"].max()
    return (
        f"Traffic of {sources} from {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC, sampling strata {rates}. "
        "Interactions that no stratum could pick (rate 0) or that the source's filters dropped are outside the "
        "estimand."
    )
