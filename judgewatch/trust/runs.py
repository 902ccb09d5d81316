"""Validation runs over judges x rubrics x golden sets, as the CLI, the bench and the demo start them.

A judge is validated as itself, never through a fallback chain: an unreachable endpoint is an error here,
not a silent switch to the reference judge (whose figures would then be filed under the wrong judge).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine

from judges.base import Judge, fit_item_ids
from judges.config import judge_endpoint
from judges.factory import REFERENCE, active_alignments, is_healthy, parse_judge_spec
from judges.openai_judge import OpenAIJudge
from judges.pairwise import OpenAIPairwiseJudge, PairwiseJudge, ReferencePairwiseJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.regression.golden import GoldenSet, load_golden_set
from judgewatch.settings import Settings, get_settings
from judgewatch.storage.trust import TrustRecord
from judgewatch.trust.policy import TrustPolicy, TrustVerdict, policy_from_settings
from judgewatch.trust.probes import probe_judge
from judgewatch.trust.progress import CallMeter, MeteredJudge, MeteredPairwiseJudge
from judgewatch.trust.records import trust_for
from judgewatch.trust.validate import known_pairs, measure_judge

logger = logging.getLogger(__name__)

DEMO_DATASETS = ("halueval_qa_mini", "halluqa_mini")
DEMO_PAIRWISE_DATASETS = ("halueval_qa_mini",)
DEMO_LIMIT = 20  # known-answer pairs per set: the trust policy's default minimum, so the record is conclusive
POINTWISE_RUBRIC = "answer_quality"
PAIRWISE_RUBRIC = "pairwise_preference"


class JudgeUnreachable(RuntimeError):
    """The judge to validate does not answer its health check: nothing can be measured."""


@dataclass
class JudgeUnderTest:
    """One judge configuration as both a pointwise and a pairwise judge (same endpoint and model)."""

    label: str
    pointwise: Judge
    pairwise: PairwiseJudge

    async def aclose(self) -> None:
        await self.pointwise.aclose()
        await self.pairwise.aclose()


@dataclass
class ValidationReport:
    records: list[TrustRecord] = field(default_factory=list)
    verdicts: list[TrustVerdict] = field(default_factory=list)  # one per (judge, rubric)


def judges_under_test(
    spec: str,
    settings: Settings,
    model: str | None = None,
    concurrency: int | None = None,
    engine: Engine | None = None,
) -> list[JudgeUnderTest]:
    """One JudgeUnderTest per link of `--judge` ("reference" or a URL), built like the gate builds them (with the
    store's alignments in use when given it)."""
    aligned = active_alignments(engine) if engine is not None else {}
    result = []
    for part in parse_judge_spec(spec):
        if part == REFERENCE:
            result.append(JudgeUnderTest(REFERENCE, ReferenceJudge(aligned.get("reference")), ReferencePairwiseJudge()))
            continue
        endpoint = judge_endpoint(settings, part, model=model, concurrency=concurrency)
        result.append(JudgeUnderTest(part, OpenAIJudge(endpoint, aligned.get("openai")), OpenAIPairwiseJudge(endpoint)))
    return result


async def validate(
    under_test: JudgeUnderTest,
    rubrics: Sequence[Rubric],
    datasets: Sequence[GoldenSet],
    *,
    engine: Engine | None,
    policy: TrustPolicy,
    limit: int | None = None,
    pairwise_limit: int | None = None,
    seed: int = 0,
    probe_items: int | None = None,
) -> ValidationReport:
    """Every rubric on every golden set (pairwise rubrics with the pairwise judge, both orders), then the verdicts. With
    `probe_items`, each pointwise rubric is also probed for bias on that many items of each set (a `bias_probes` record
    beside the known-answers one; see `judgewatch.trust.probes`)."""
    if not await is_healthy(under_test.pointwise):
        raise JudgeUnreachable(f"the judge at {under_test.label} is not reachable (health check failed)")
    report = ValidationReport()
    for rubric in rubrics:
        for golden in datasets:
            pairwise = rubric.kind == "pairwise"
            record = await measure_judge(
                under_test.pairwise if pairwise else under_test.pointwise,
                rubric,
                golden,
                engine=engine,
                policy=policy,
                limit=pairwise_limit if pairwise and pairwise_limit is not None else limit,
                seed=seed,
            )
            if not pairwise and probe_items is not None:
                report.records.append(record)
                pairs = known_pairs(golden, limit=probe_items, fit_items=fit_item_ids(under_test.pointwise))
                record = await probe_judge(under_test.pointwise, rubric, pairs, engine=engine, policy=policy, seed=seed)
            report.records.append(record)
        judge = under_test.pairwise if rubric.kind == "pairwise" else under_test.pointwise
        report.verdicts.append(trust_for(engine, judge.identity(rubric), rubric.identity, policy=policy))
    return report


def planned_calls(
    sets: Sequence[GoldenSet], pairwise_sets: Sequence[GoldenSet], limit: int | None, pairwise_limit: int | None
) -> int:
    """Judge calls a validation makes: a good and a bad answer per pointwise pair, both orders per pairwise pair."""
    pointwise = sum(2 * len(known_pairs(golden, limit=limit).good) for golden in sets)
    return pointwise + sum(2 * len(known_pairs(golden, limit=pairwise_limit).good) for golden in pairwise_sets)


async def ademo_trust_step(
    engine: Engine,
    judge_url: str,
    model: str,
    *,
    settings: Settings | None = None,
    datasets: Sequence[str] = DEMO_DATASETS,
    limit: int | None = DEMO_LIMIT,
    pairwise_limit: int | None = DEMO_LIMIT,
    concurrency: int = 8,
    policy: TrustPolicy | None = None,
    include_reference: bool = True,
    echo: Callable[[str], None] | None = None,
    every_s: float = 5.0,
) -> TrustVerdict:
    """The demo's trust step: measure the vLLM judge (and, unless told not to, the reference judge first); its verdict
    under `answer_quality`, as a gate with that judge states it. Pairwise validation is stored beside it for the Judges
    page; an unreachable judge keeps what was stored; `echo` prints a progress line. Defaults: 120 calls, about 2
    minutes with SmolLM2 on a shared 2-core machine. `concurrency` stays low: a CPU vLLM serves a few requests at a
    time, and 64 queued ones end in client timeouts counted as unscored."""
    settings = settings or get_settings()
    policy = policy or policy_from_settings(settings)
    pointwise = load_rubric(POINTWISE_RUBRIC, settings.rubrics_dir)
    pairwise = load_rubric(PAIRWISE_RUBRIC, settings.rubrics_dir)
    sets = [load_golden_set(name, datasets_dir=settings.datasets_dir) for name in datasets]
    pair_sets = [load_golden_set(name, datasets_dir=settings.datasets_dir) for name in DEMO_PAIRWISE_DATASETS]
    for spec in (REFERENCE, judge_url) if include_reference else (judge_url,):
        [under_test] = judges_under_test(spec, settings, model, concurrency, engine)
        if echo is not None and spec != REFERENCE:
            total = planned_calls(sets, pair_sets, limit, pairwise_limit)
            echo(
                f"{total} judge calls planned ({len(sets)} sets x {limit} known-answer pairs, both answers;"
                f" {len(pair_sets)} set x {pairwise_limit} pairs, both orders)"
            )
            meter = CallMeter(total, echo, every_s=every_s)  # every call ticks it: a progress line for a slow judge
            judges = MeteredJudge(under_test.pointwise, meter), MeteredPairwiseJudge(under_test.pairwise, meter)
            under_test = JudgeUnderTest(under_test.label, *judges)
        try:
            # The reference judge is probed too (seconds); an LLM judge's probes (12 calls per item) are left to
            # the gate, which measures them only for a judge that passed its known answers.
            probes = DEMO_LIMIT if spec == REFERENCE else None
            report = await validate(
                under_test, [pointwise], sets, engine=engine, policy=policy, limit=limit, probe_items=probes
            )
            if pair_sets:
                pair_report = await validate(
                    under_test, [pairwise], pair_sets, engine=engine, policy=policy, limit=pairwise_limit
                )
                report.records += pair_report.records
                report.verdicts += pair_report.verdicts
            for verdict in report.verdicts:
                (logger.info if verdict.trustworthy else logger.warning)("judge trust: %s", verdict.summary)
        except JudgeUnreachable as exc:
            logger.error("%s: the judge stays unmeasured in this run", exc)
        finally:
            await under_test.aclose()
    [vllm] = judges_under_test(judge_url, settings, model, engine=engine)
    try:
        return trust_for(engine, vllm.pointwise.identity(pointwise), pointwise.identity, policy=policy)
    finally:
        await vllm.aclose()
