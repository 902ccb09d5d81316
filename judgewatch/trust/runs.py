"""Validation runs over judges x rubrics x golden sets, as the CLI, the bench and the demo start them.

A judge is validated as itself, never through a fallback chain: an unreachable endpoint is an error here,
not a silent switch to the reference judge (whose figures would then be filed under the wrong judge).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine

from judges.base import Judge
from judges.config import judge_endpoint
from judges.factory import REFERENCE, is_healthy, parse_judge_spec
from judges.openai_judge import OpenAIJudge
from judges.pairwise import OpenAIPairwiseJudge, PairwiseJudge, ReferencePairwiseJudge
from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.regression.golden import GoldenSet, load_golden_set
from judgewatch.settings import Settings, get_settings
from judgewatch.storage.trust import TrustRecord
from judgewatch.trust.policy import TrustPolicy, TrustVerdict, policy_from_settings
from judgewatch.trust.records import trust_for
from judgewatch.trust.validate import validate_judge, validate_pairwise

logger = logging.getLogger(__name__)

DEMO_DATASETS = ("halueval_qa_mini", "halluqa_mini")
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
    spec: str, settings: Settings, model: str | None = None, concurrency: int | None = None
) -> list[JudgeUnderTest]:
    """One JudgeUnderTest per link of `--judge` ("reference" or a URL), built like the gate builds them."""
    result = []
    for part in parse_judge_spec(spec):
        if part == REFERENCE:
            result.append(JudgeUnderTest(REFERENCE, ReferenceJudge(), ReferencePairwiseJudge()))
            continue
        endpoint = judge_endpoint(settings, part, model=model, concurrency=concurrency)
        result.append(JudgeUnderTest(part, OpenAIJudge(endpoint), OpenAIPairwiseJudge(endpoint)))
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
) -> ValidationReport:
    """Every rubric on every golden set (pairwise rubrics with the pairwise judge, both orders), then the verdicts."""
    if not await is_healthy(under_test.pointwise):
        raise JudgeUnreachable(f"the judge at {under_test.label} is not reachable (health check failed)")
    report = ValidationReport()
    for rubric in rubrics:
        for golden in datasets:
            if rubric.kind == "pairwise":
                record = await validate_pairwise(
                    under_test.pairwise,
                    rubric,
                    golden,
                    engine=engine,
                    policy=policy,
                    limit=pairwise_limit if pairwise_limit is not None else limit,
                    seed=seed,
                )
            else:
                record = await validate_judge(
                    under_test.pointwise, rubric, golden, engine=engine, policy=policy, limit=limit, seed=seed
                )
            report.records.append(record)
        judge = under_test.pairwise if rubric.kind == "pairwise" else under_test.pointwise
        report.verdicts.append(trust_for(engine, judge.identity(rubric), rubric.identity, policy=policy))
    return report


async def ademo_trust_step(
    engine: Engine,
    judge_url: str,
    model: str,
    *,
    settings: Settings | None = None,
    datasets: Sequence[str] = DEMO_DATASETS,
    limit: int | None = None,
    pairwise_limit: int | None = 20,
    concurrency: int = 8,
    policy: TrustPolicy | None = None,
) -> TrustVerdict:
    """The demo's trust step: measure the reference judge, then the vLLM judge, on the mini golden sets.

    Returns the vLLM judge's verdict under the `answer_quality` rubric, the one a gate with that judge states
    (its configuration hash is the one `build_judge(judge_url, settings, model)` produces). Pairwise
    validation (both orders, `pairwise_limit` pairs per set) is stored beside it for the Judges page. An
    unreachable judge is not measured: the verdict is then whatever was stored before (unmeasured if nothing).
    2 x 40 x 2 pointwise + 2 x 20 x 2 pairwise calls took 5-6 minutes with SmolLM2 on a shared 2-core machine;
    `limit=20` (still conclusive under the default 20-item minimum) roughly halves that. `concurrency` stays
    low on purpose: a CPU vLLM serves a few requests at a time, and 64 queued requests end in client timeouts
    that would count as unscored.
    """
    settings = settings or get_settings()
    policy = policy or policy_from_settings(settings)
    rubrics = [load_rubric(POINTWISE_RUBRIC, settings.rubrics_dir), load_rubric(PAIRWISE_RUBRIC, settings.rubrics_dir)]
    sets = [load_golden_set(name, datasets_dir=settings.datasets_dir) for name in datasets]
    for spec in (REFERENCE, judge_url):
        [under_test] = judges_under_test(spec, settings, model, concurrency)
        try:
            report = await validate(
                under_test, rubrics, sets, engine=engine, policy=policy, limit=limit, pairwise_limit=pairwise_limit
            )
            for verdict in report.verdicts:
                (logger.info if verdict.trustworthy else logger.warning)("judge trust: %s", verdict.summary)
        except JudgeUnreachable as exc:
            logger.error("%s: the judge stays unmeasured in this run", exc)
        finally:
            await under_test.aclose()
    [vllm] = judges_under_test(judge_url, settings, model)
    try:
        return trust_for(engine, vllm.pointwise.identity(rubrics[0]), rubrics[0].identity, policy=policy)
    finally:
        await vllm.aclose()
