"""Validation runs: measure a judge on a golden set's known-good and known-bad answers before believing it.

Each item with both grades one good and one bad answer (a `JudgingRun`, verdicts stored); each criterion gets an
AUROC with a seeded paired-bootstrap interval, the mean gap and the unscored rate, beside the offline reference
judge's on the same answers. A pairwise judge compares them in both orders.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from judges.base import Judge, content_key, fit_item_ids
from judges.pairwise import PairwiseJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import Verdict
from judgewatch.judging.pipeline import JudgingResult
from judgewatch.judging.run import JudgingRun
from judgewatch.regression.golden import GoldenItem, GoldenSet
from judgewatch.storage.runs import RunKind
from judgewatch.storage.trust import TrustBasis, TrustEvidence, TrustRecord
from judgewatch.trust.figures import agreement_figures, bounded, known_answer_figures, raw_auroc, rounded, trim_figures
from judgewatch.trust.pairwise import compare_pairs, first_preference, summarize
from judgewatch.trust.policy import TrustPolicy
from judgewatch.trust.records import build_record, store_record

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class KnownPairs:
    """Golden items with one known-good and one known-bad answer each, as JudgeItems `<id>:good` / `<id>:bad`."""

    dataset: str
    revision: str
    good: list[JudgeItem]
    bad: list[JudgeItem]
    skipped: int  # golden items lacking a good or a bad answer, or any reference besides the good answer
    in_sample: int = 0  # golden items the judge was fit on: left out, never trust evidence
    scrub_pii: bool | None = None  # the golden set's `GoldenSet.scrub_pii`


def _independent_references(item: GoldenItem, answer: str) -> dict[str, Any] | None:
    """The item's references without the judged good answer itself (None when nothing else is left). Golden sets often
    hold the right answer as their reference answer (HaluEval) or among their facts (HalluQA): judged against itself,
    any string matcher would look perfect. Another right answer, when there is one, becomes the reference answer
    instead. Good and bad answer get the same references."""
    same = answer.strip()
    facts = [f for f in item.reference_facts if f.strip() != same]
    context = [c for c in item.context if c.strip() != same]
    reference = item.reference_answer if item.reference_answer and item.reference_answer.strip() != same else None
    if reference is None:
        reference = next((g for g in item.good_answers if g.strip() != same), None)
    if not (facts or context or reference):
        return None
    return {"reference_answer": reference, "reference_facts": facts, "context": context}


def known_pairs(golden: GoldenSet, *, limit: int | None = None, fit_items: frozenset[str] = frozenset()) -> KnownPairs:
    """The first good and first bad answer of every item that has both and an independent reference. Items in
    `fit_items` (what the judge was fit on: `judges.base.fit_item_ids`) are left out and counted as in-sample; `limit`
    then takes the first held-out items."""
    good: list[JudgeItem] = []
    bad: list[JudgeItem] = []
    fitted = 0
    for item in golden.items:
        if not (item.good_answers and item.bad_answers):
            continue
        if item.id in fit_items or content_key(item.question) in fit_items:  # the judge was fit on it
            fitted += 1
            continue
        references = _independent_references(item, item.good_answers[0])
        if references is None:
            continue
        good.append(item.to_judge_item(item.good_answers[0], item_id=f"{item.id}:good").model_copy(update=references))
        bad.append(item.to_judge_item(item.bad_answers[0], item_id=f"{item.id}:bad").model_copy(update=references))
    skipped = len(golden.items) - len(good) - fitted
    revision = golden.revision
    if limit is not None and limit < len(good):  # a subset is other evidence: it must not replace the full set's
        good, bad, revision = good[:limit], bad[:limit], f"{revision}[:{limit}]"
    return KnownPairs(golden.name, revision, good, bad, skipped, fitted, scrub_pii=golden.scrub_pii)


def pairs_record(
    engine: Engine | None,
    pairs: KnownPairs,
    judge: Judge | PairwiseJudge,
    rubric: Rubric,
    evidence: TrustEvidence,
    figures: dict[str, Any],
    policy: TrustPolicy,
) -> TrustRecord:
    """The record of one measurement of `judge` on `pairs` (its set and revision, `figures["items"]` of its items),
    stored when `engine` is given."""
    basis = TrustBasis(
        evidence=evidence.value, dataset=pairs.dataset, dataset_revision=pairs.revision, n_items=figures["items"]
    )
    identity = judge.identity(rubric)
    record = build_record(judge=identity, rubric=rubric.identity, basis=basis, figures=figures, policy=policy)
    return store_record(engine, record) if engine is not None else record


def measurable_pairs(golden: GoldenSet, limit: int | None, fit_items: frozenset[str] = frozenset()) -> KnownPairs:
    """The held-out known pairs to measure a judge on; ValueError naming the golden set when it has none."""
    pairs = known_pairs(golden, limit=limit, fit_items=fit_items)
    if not pairs.good and pairs.in_sample:
        raise ValueError(
            f"golden set {golden.name}: all {pairs.in_sample} items with known answers are in-sample (the judge "
            "was fit on them): no trust evidence"
        )
    if not pairs.good:
        raise ValueError(f"golden set {golden.name} has no item with both a good and a bad answer")
    return pairs


async def validation_run(
    judge: Judge, rubric: Rubric, items: list[JudgeItem], engine: Engine | None, pairs: KnownPairs, probe: str = ""
) -> tuple[JudgingResult, str | None]:
    """One validation `JudgingRun` over `items` made from `pairs`: the known answers, or with `probe` (" probes",
    " probes shuffled") the bias probes. Its result and run id."""
    me, dataset, pii = judge.identity(rubric), pairs.dataset, pairs.scrub_pii
    name = f"{'probe' if probe else 'validate'} {me.kind}:{me.name} on {dataset}{probe.removeprefix(' probes')}"
    identity = f"{dataset}@{pairs.revision}{probe}"
    with JudgingRun(
        engine, kind=RunKind.validation, name=name, identity=identity, rubric=rubric, judge=judge, scrub_pii=pii
    ) as run:
        judged = await run.judge_new(items, source=f"{'probe' if probe else 'golden'}:{dataset}")
    return judged, run.run_id


async def measure_judge(
    judge: Judge | PairwiseJudge,
    rubric: Rubric,
    golden: GoldenSet,
    *,
    engine: Engine | None = None,
    policy: TrustPolicy | None = None,
    limit: int | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> TrustRecord:
    """Measure `judge` on `golden`'s known answers; store the record (and the verdicts) when `engine` is given. A
    pointwise judge grades each good and bad answer; a pairwise judge compares them (see `_pairwise_figures`)."""
    pairs = measurable_pairs(golden, limit, fit_item_ids(judge))
    identity = judge.identity(rubric)
    logger.info("validating %s:%s on %s (%d pairs)", identity.kind, identity.name, golden.name, len(pairs.good))
    if isinstance(judge, PairwiseJudge):
        evidence = TrustEvidence.pairwise
        figures = await _pairwise_figures(judge, rubric, pairs, resamples, seed)
    else:
        evidence = TrustEvidence.known_answers
        figures = await _pointwise_figures(judge, rubric, pairs, engine, resamples, seed)
    return pairs_record(engine, pairs, judge, rubric, evidence, figures, policy or TrustPolicy())


async def _pointwise_figures(
    judge: Judge, rubric: Rubric, pairs: KnownPairs, engine: Engine | None, resamples: int, seed: int
) -> dict[str, Any]:
    """Each good and bad answer graded in one judging run: AUROC, gap and unscored rate, and the reference judge."""
    judged, run_id = await validation_run(judge, rubric, pairs.good + pairs.bad, engine, pairs)
    verdicts = judged.verdicts
    good, bad = _graded(pairs, verdicts)
    figures = known_answer_figures(rubric, good, bad, resamples=resamples, seed=seed)
    figures["skipped_items"] = pairs.skipped
    figures["in_sample_items"] = pairs.in_sample
    figures["context_window"] = trim_figures(rubric, good, bad, resamples=resamples, seed=seed)
    figures["cost"] = {"wall_s": judged.summary.wall_s, "latency_ms": judged.summary.latency_ms, "run_id": run_id}
    figures["reference"] = _reference_comparison(judge, rubric, pairs, verdicts, resamples=resamples, seed=seed)
    return figures


def _graded(
    pairs: KnownPairs, verdicts: Sequence[Verdict]
) -> tuple[list[tuple[JudgeItem, Verdict]], list[tuple[JudgeItem, Verdict]]]:
    """The good answers with their verdicts, then the bad ones: verdicts come good answers first."""
    n = len(pairs.good)
    return list(zip(pairs.good, verdicts[:n], strict=True)), list(zip(pairs.bad, verdicts[n:], strict=True))


def _reference_comparison(
    judge: Judge, rubric: Rubric, pairs: KnownPairs, verdicts: Sequence[Verdict], *, resamples: int, seed: int
) -> dict[str, Any]:
    """The offline reference judge on the very same answers: its figures, and agreement with `judge`."""
    reference = judge if isinstance(judge, ReferenceJudge) else ReferenceJudge()
    items = pairs.good + pairs.bad
    # The reference judge is deterministic: when it is the judge under test, its verdicts are already here.
    theirs = list(verdicts) if reference is judge else [reference.judge_sync(item, rubric) for item in items]
    figures = known_answer_figures(rubric, *_graded(pairs, theirs), resamples=resamples, seed=seed)
    identity = reference.identity(rubric)
    return {
        "judge": f"{identity.kind}:{identity.name}",
        "config_hash": identity.config_hash,
        "criteria": {
            name: {k: c[k] for k in ("auroc", "low", "high", "gap", "unscored_rate")}
            for name, c in figures["criteria"].items()
        },
        "raw_auroc": raw_auroc(
            [reference.raw_scores(i) for i in pairs.good], [reference.raw_scores(i) for i in pairs.bad]
        ),
        "agreement": agreement_figures(rubric, verdicts, theirs),
    }


async def _pairwise_figures(
    judge: PairwiseJudge, rubric: Rubric, pairs: KnownPairs, resamples: int, seed: int
) -> dict[str, Any]:
    """Compare each good answer with its bad twin in both orders; the good one should win, in either position. The
    pairwise rubric names one winner per call: its figures are filed under the rubric's first criterion."""
    triples = [
        (good.model_copy(update={"id": good.id.rsplit(":", 1)[0]}), good.answer, bad.answer)
        for good, bad in zip(pairs.good, pairs.bad, strict=True)
    ]
    outcomes = await compare_pairs(judge, rubric, triples, both_orders=True)
    stats = summarize(outcomes)
    preference = first_preference(outcomes, resamples=resamples, seed=seed)
    calls = [call for outcome in outcomes for call in (outcome.forward, outcome.backward) if call is not None]
    reasons = Counter(call.unscored_reason.value for call in calls if call.unscored_reason is not None)

    rates = ("position_consistency", "inconsistency_rate", "a_rate", "unscored_rate")
    criterion = {
        **bounded(preference, "auroc"),  # P(good preferred) + 0.5 P(tie): the pairwise AUROC
        **{rate: rounded(getattr(stats, rate)) for rate in rates},
        "pairs": stats.pairs, "scored": stats.scored, "good_wins": stats.first_wins, "bad_wins": stats.second_wins,
        "ties": stats.ties,
    }  # fmt: skip
    return {
        "criteria": {rubric.criteria[0].name: criterion},
        "in_sample_items": pairs.in_sample,
        "items": stats.pairs,
        "calls": 2 * stats.pairs,
        "unscored_reasons": dict(reasons),
        "pairs": [o.row() for o in outcomes],
    }
