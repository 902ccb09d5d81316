"""One store reading turned into Prometheus metric families, with the labels `names` declares. Pure functions over
typed rows (tested without a store); missing states and exit codes are exported as 0, so an alert on "more than
zero" and a stacked panel see every series from the first scrape."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from sqlalchemy import Row

from judgewatch.judging.spend_cap import DaySpend
from judgewatch.metrics import names
from judgewatch.metrics.queries import Count
from judgewatch.settings import ModelPrice
from judgewatch.storage.review import ItemState
from judgewatch.storage.verdict_counts import LATENCY_BUCKETS, NO_VALUE

# The rows a reading holds: plain result rows (attribute access by column name) of `verdict_count` (every
# column), `calibration_snapshot` (rubric_name, payload) and `trust_record` (judge_name, dataset, figures).
VerdictRow: TypeAlias = Row[Any]
SnapshotRow: TypeAlias = Row[Any]
TrustRow: TypeAlias = Row[Any]

QUEUE_STATES: dict[str, str] = {
    ItemState.available.value: "waiting",
    ItemState.leased.value: "leased",
    ItemState.done.value: "labeled",
    ItemState.adjudication.value: "adjudication",
    ItemState.flagged.value: "flagged",
}
GATE_EXIT_CODES = ("0", "1", "2")
AGREEMENT_MEASURES = ("weighted_kappa", "cohen_kappa", "spearman", "exact", "bias")
RUN_FLOWS: dict[str, str] = {
    "sampling": "traffic-sampling",
    "file": "judge-file",
    "validation": "judge-validation",
    "anchor": "anchor",
}


@dataclass
class StoreReading:
    """What one scrape read from the store; every list holds bounded, aggregated values only."""

    verdicts: Sequence[VerdictRow] = field(default_factory=list)
    queue: list[Count] = field(default_factory=list)
    labels: list[Count] = field(default_factory=list)
    snapshots: Sequence[SnapshotRow] = field(default_factory=list)
    drift: list[Count] = field(default_factory=list)
    model_change: list[Count] = field(default_factory=list)
    gates: list[Count] = field(default_factory=list)
    successes: list[Count] = field(default_factory=list)
    gate_success: float | None = None
    trust: Sequence[TrustRow] = field(default_factory=list)
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)  # judge model -> price (settings.judge_prices)
    currency: str = "USD"
    spend: DaySpend | None = None  # today's judge spend and the daily cap (judging.spend_cap)
    paused_picks: int = 0  # picks waiting for judging while the cap held


def _counter(spec: names.MetricSpec) -> CounterMetricFamily:
    return CounterMetricFamily(spec.name, spec.help, labels=list(spec.labels))


def _gauge(spec: names.MetricSpec) -> GaugeMetricFamily:
    return GaugeMetricFamily(spec.name, spec.help, labels=list(spec.labels))


def _counts(family: GaugeMetricFamily | CounterMetricFamily, rows: list[Count]) -> Metric:
    for row in rows:
        family.add_metric(list(row.labels), row.value)
    return family


def families(reading: StoreReading) -> Iterator[Metric]:
    """Every family of the catalogue except the scrape's own health (the collector adds those)."""
    yield from _verdict_families(reading.verdicts)
    yield _cost_family(reading)
    yield from _spend_families(reading)
    yield from _review_families(reading.queue, reading.labels)
    yield from _calibration_families(reading.snapshots)
    yield _counts(_gauge(names.DRIFT), reading.drift)
    yield _counts(_gauge(names.SERVED_MODEL_CHANGE), reading.model_change)
    by_code = {row.labels[0]: row.value for row in reading.gates}
    codes = sorted(set(GATE_EXIT_CODES) | set(by_code))
    yield _counts(_counter(names.GATE), [Count((code,), by_code.get(code, 0.0)) for code in codes])
    yield _success_family(reading)
    yield _trust_family(reading.trust)


def _verdict_families(rows: Sequence[VerdictRow]) -> Iterator[Metric]:
    """Counters from what was written (they never go down: a re-judge adds), one gauge from what is current."""
    written: dict[tuple[str, ...], float] = defaultdict(float)
    current: dict[tuple[str, ...], float] = defaultdict(float)
    unscored: dict[tuple[str, ...], float] = defaultdict(float)
    fallback: dict[tuple[str, ...], float] = defaultdict(float)
    tokens: dict[tuple[str, ...], float] = defaultdict(float)
    latency: dict[str, list[float]] = {}
    for r in rows:
        labels = (r.judge, r.rubric, r.tier, r.source, r.status)
        written[labels] += r.written
        current[labels] += r.current
        if r.status == "unscored":
            unscored[(r.judge, r.reason)] += r.written
        if r.from_judge:
            fallback[(r.from_judge, r.judge)] += r.written
        tokens[(r.judge, "prompt")] += r.prompt_tokens
        tokens[(r.judge, "completion")] += r.completion_tokens
        tokens[(r.judge, "cached")] += r.cached_tokens
        sums = latency.setdefault(r.judge, [0.0] * (len(LATENCY_BUCKETS) + 2))  # per bucket, then count, sum
        sums[min(r.latency_bucket, len(LATENCY_BUCKETS))] += r.written
        sums[-1] += r.latency_sum_s
    families: tuple[tuple[names.MetricSpec, dict[tuple[str, ...], float]], ...] = (
        (names.VERDICTS, written),
        (names.VERDICTS_CURRENT, current),
        (names.UNSCORED, unscored),
        (names.FALLBACK, fallback),
        (names.TOKENS, tokens),
    )
    for spec, values in families:
        family = _counter(spec) if spec.kind == "counter" else _gauge(spec)
        yield _counts(family, [Count(key, figure) for key, figure in sorted(values.items())])
    histogram = HistogramMetricFamily(names.LATENCY.name, names.LATENCY.help, labels=list(names.LATENCY.labels))
    for judge, sums in sorted(latency.items()):
        cumulative = list(itertools.accumulate(sums[: len(LATENCY_BUCKETS) + 1]))
        buckets = [(_le(bound), cumulative[k]) for k, bound in enumerate(LATENCY_BUCKETS)] + [("+Inf", cumulative[-1])]
        histogram.add_metric([judge], buckets, sum_value=sums[-1])
    yield histogram


def _le(bound: float) -> str:
    return f"{bound:g}" if bound != int(bound) else f"{bound:.1f}"


def _review_families(queue: list[Count], labels: list[Count]) -> Iterator[Metric]:
    states: dict[str, float] = dict.fromkeys(QUEUE_STATES.values(), 0.0)
    for row in queue:
        state = QUEUE_STATES.get(row.labels[0], "other")
        states[state] = states.get(state, 0.0) + row.value
    yield _counts(_gauge(names.QUEUE), [Count((state,), value) for state, value in states.items()])
    yield _counts(_counter(names.LABELS), labels)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _calibration_families(snapshots: Sequence[SnapshotRow]) -> Iterator[Metric]:
    agreement, scores = _gauge(names.AGREEMENT), _gauge(names.TIER_SCORE)
    for snapshot in snapshots:
        rubric = snapshot.rubric_name or NO_VALUE
        payload = snapshot.payload or {}
        for row in payload.get("agreement") or []:
            for measure in AGREEMENT_MEASURES:
                value = _number((row.get(measure) or {}).get("estimate"))
                if value is not None:
                    agreement.add_metric([rubric, str(row["tier"]), str(row["criterion"]), measure], value)
        for row in payload.get("estimates") or []:
            ppi = row.get("ppi") or {}
            kinds = {
                "raw": row.get("raw_mean"),
                "corrected": ppi.get("estimate"),
                "corrected_low": ppi.get("low"),
                "corrected_high": ppi.get("high"),
            }
            for kind, raw in kinds.items():
                value = _number(raw)
                if value is not None:
                    scores.add_metric([rubric, str(row["tier"]), str(row["criterion"]), kind], value)
    yield agreement
    yield scores


def _success_family(reading: StoreReading) -> Metric:
    family = _gauge(names.LAST_SUCCESS)
    for row in reading.successes:
        kind = row.labels[0]
        flow = RUN_FLOWS.get(kind, "calibration" if kind == "calibration" else None)
        if flow is not None:
            family.add_metric([flow], row.value)
    if reading.gate_success is not None:
        family.add_metric(["post-release-regression"], reading.gate_success)
    return family


def _trust_family(records: Sequence[TrustRow]) -> Metric:
    """The newest AUROC per (judge, dataset, criterion); records arrive newest first."""
    family = _gauge(names.TRUST_AUROC)
    seen: set[tuple[str, str, str]] = set()
    for record in records:
        for criterion, figures in sorted(((record.figures or {}).get("criteria") or {}).items()):
            key = (record.judge_name, record.dataset or NO_VALUE, str(criterion))
            value = _number((figures or {}).get("auroc"))
            if key in seen or value is None:
                continue
            seen.add(key)
            family.add_metric(list(key), value)
    return family


def _spend_families(reading: StoreReading) -> Iterator[Metric]:
    """Today's spend, whether the daily cap pauses sampling-side judging, and the picks waiting for it."""
    today, paused, waiting = _gauge(names.SPEND_TODAY), _gauge(names.SPEND_CAP_PAUSED), _gauge(names.PAUSED_PICKS)
    if reading.spend is not None:
        today.add_metric([reading.spend.cost.currency], reading.spend.cost.amount)
    paused.add_metric([], 1.0 if reading.spend is not None and reading.spend.paused else 0.0)
    waiting.add_metric([], float(reading.paused_picks))
    yield from (today, paused, waiting)


def _cost_family(reading: StoreReading) -> Metric:
    """Each priced judge's tokens in money (prices are linear, so pricing the summed tokens is exact)."""
    tokens: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in reading.verdicts:
        sums = tokens[r.judge]
        sums[0], sums[1], sums[2] = sums[0] + r.prompt_tokens, sums[1] + r.completion_tokens, sums[2] + r.cached_tokens
    family = _counter(names.COST)
    for judge, (prompt, completion, cached) in sorted(tokens.items()):
        if (price := reading.prices.get(judge)) is not None:
            family.add_metric([judge, reading.currency], price.of(int(prompt), int(completion), int(cached)))
    return family
