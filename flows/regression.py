"""The `post-release-regression` flow: did answer quality regress on any serving tier of a release?

For a release, golden sets and tiers (live endpoints or recorded answers): produce every tier's answers, judge
them, compare each tier with its baseline release item by item (paired bootstrap per criterion), compare the
quantized tier with the full one, apply the gate, write the report and store the decision. `judgewatch regress`
runs it in-process (Prefect ephemeral mode); `prefect.yaml` deploys it for `run_deployment`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from flows.regression_eval import evaluate_tier, resolve_baselines, resolve_trust
from flows.regression_tasks import (
    Generation,
    Inputs,
    check_endpoints,
    generate_answers,
    judge_answers,
    load_inputs,
    store_recorded_answers,
)
from judges.base import Judge
from judges.factory import build_judge
from judgewatch.gate import Comparison, GateResult, TierEvaluation, TrustLike, compare_scores, decide
from judgewatch.reports.regression import RegressionReport, write_report
from judgewatch.settings import Settings, get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.releases import GateDecision, gate_decision_id, record_gate_decision, record_release_tier
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

FLOW_NAME = "post-release-regression"
GAP_PAIRS = (("quantized", "full"),)  # (candidate tier, reference tier) compared within the same release


def default_report_path(settings: Settings, release: str) -> Path:
    return settings.data_dir / "reports" / f"regression-{re.sub(r'[^A-Za-z0-9._-]+', '_', release)}.md"


def display_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


@flow(name=FLOW_NAME, log_prints=True)
async def post_release_regression(
    release: str,
    datasets: list[str],
    tiers: list[str] | None = None,
    answers: list[str] | None = None,
    judge: str | None = None,
    baseline: str = "accepted",
    margin: float = 0.25,
    max_unscored_share: float = 0.2,
    rubric: str = "answer_quality",
    report: str | None = None,
    gap_margin: float | None = None,
    accept_unvalidated_judge: bool = False,
    concurrency: int = 8,
    answer_max_tokens: int = 256,
    database_url: str | None = None,
    fail_on_gate: bool = True,
) -> dict[str, Any] | State[Any]:
    """Run the gate for `release`; returns the gate result (exit_code, summary, reasons...) and report paths.

    `tiers`: "NAME=URL#MODEL" (live); `answers`: "NAME=FILE" (recorded JSONL); `judge`: "reference" or a URL
    (default: the configured judge URL; no silent fallback to another judge). `baseline`: "accepted" (each
    tier's accepted baseline) or a release id. With `fail_on_gate` a non-zero exit code ends the flow run
    Failed with the summary as its message (what a CI job triggering the deployment sees).
    """
    settings = get_settings()
    url = database_url or settings.effective_database_url
    engine = make_engine(url)
    migrate(engine)
    report_path = Path(report) if report else default_report_path(settings, release)
    inputs, problems = load_inputs(datasets, tiers or [], answers or [], rubric, settings)
    judge_obj = build_judge(judge, settings, concurrency=None, fallback_reference=False) if inputs else None
    try:
        result = await _evaluate(
            engine, release, inputs, judge_obj, problems, baseline=baseline, margin=margin,
            max_unscored_share=max_unscored_share, gap_margin=gap_margin, accept_unvalidated=accept_unvalidated_judge,
            concurrency=concurrency, answer_max_tokens=answer_max_tokens, settings=settings,
        )  # fmt: skip
    finally:
        if judge_obj is not None:
            await judge_obj.aclose()
    out = conclude(engine, release, result, report_path, baseline=baseline, database=display_url(url))
    if fail_on_gate and out["exit_code"] != 0:
        return Failed(message=f"gate exit {out['exit_code']}: {out['summary']}", data=out)
    return Completed(message=out["summary"], data=out) if fail_on_gate else out


async def _evaluate(
    engine: Engine,
    release: str,
    inputs: Inputs | None,
    judge: Judge | None,
    problems: list[str],
    *,
    baseline: str,
    margin: float,
    max_unscored_share: float,
    gap_margin: float | None,
    accept_unvalidated: bool,
    concurrency: int,
    answer_max_tokens: int,
    settings: Settings,
) -> RegressionReport:
    report = RegressionReport(release, utcnow(), {}, GateResult(2, "error", ""), margin, max_unscored_share)
    report.accept_unvalidated_judge, report.gap_margin = accept_unvalidated, gap_margin
    if inputs is None or judge is None:
        report.gate = decide([], margin=margin, problems=problems)
        return report
    report.datasets, report.rubric = inputs.datasets, inputs.rubric.identity
    report.judge = identity = judge.identity(inputs.rubric)
    trust = resolve_trust(engine, identity, inputs.rubric, settings, accept_unvalidated)
    report.trust_summary, report.trustworthy = trust.summary, trust.trustworthy
    down, problems = await check_endpoints(inputs.tiers, judge)
    baselines, baseline_problems = resolve_baselines(engine, release, [t.name for t in inputs.tiers], baseline)
    problems += baseline_problems
    if trust.trustworthy is False or problems:  # nothing to learn from judging: say why now, in seconds
        report.gate = _decide(report, [], [], trust, problems, max_unscored_share, gap_margin)
        return report
    live = [t for t in inputs.tiers if t.name not in down]
    generations = await asyncio.gather(
        *(_produce(engine, release, t, inputs, concurrency, answer_max_tokens, settings) for t in live)
    )
    scores: dict[str, dict[str, dict[str, float | None]]] = {}
    evaluations = [TierEvaluation(t, None, endpoint_ok=False, endpoint_detail=why) for t, why in down.items()]
    for spec, gen in zip(live, generations, strict=True):
        run_ids = []
        for golden in inputs.golden:
            force = gen[golden.name].changed
            run_ids.append(await judge_answers(engine, release, spec.name, golden, inputs.rubric, judge, force))
            if (base := baselines.get(spec.name)) is not None:
                await judge_answers(engine, base, spec.name, golden, inputs.rubric, judge)
        section, scores[spec.name] = evaluate_tier(
            engine, release, spec, baselines.get(spec.name), inputs.golden, inputs.rubric, identity
        )
        section.run_ids, section.generation = run_ids, _generation_counts(gen.values())
        report.tiers.append(section)
        evaluations.append(section.evaluation)
    criteria = [c.name for c in inputs.rubric.criteria]
    for candidate, reference in GAP_PAIRS:
        if candidate in scores and reference in scores:
            report.gaps += compare_scores(
                scores[candidate], scores[reference], criteria, candidate_label=candidate, baseline_label=reference
            )
    report.gate = _decide(report, evaluations, report.gaps, trust, problems, max_unscored_share, gap_margin)
    return report


def _decide(
    report: RegressionReport,
    evaluations: Sequence[TierEvaluation],
    gaps: Sequence[Comparison],
    trust: TrustLike,
    problems: list[str],
    max_unscored_share: float,
    gap_margin: float | None,
) -> GateResult:
    return decide(
        evaluations,
        margin=report.margin,
        max_unscored_share=max_unscored_share,
        trust=trust,
        gaps=gaps,
        gap_margin=gap_margin,
        problems=problems,
    )


async def _produce(
    engine: Engine, release: str, spec: Any, inputs: Inputs, concurrency: int, max_tokens: int, settings: Settings
) -> dict[str, Generation]:
    """Store (recorded) or generate (live) one tier's answers to every golden set."""
    out: dict[str, Generation] = {}
    for golden in inputs.golden:
        if spec.kind == "recorded":
            out[golden.name] = store_recorded_answers(engine, release, spec, golden, inputs.recorded[spec.name])
        else:
            out[golden.name] = await generate_answers(
                engine, release, spec, golden, max_tokens=max_tokens, concurrency=concurrency, settings=settings
            )
    return out


def _generation_counts(generations: Any) -> dict[str, int]:
    total: dict[str, int] = {"reused": 0, "generated": 0, "failed": 0, "replaced": 0}
    for gen in generations:
        total["reused"] += gen.reused
        total["generated"] += gen.generated
        total["failed"] += sum(gen.failed.values())
        total["replaced"] += len(gen.changed)
    return total


@task(name="conclude", cache_policy=NO_CACHE)
def conclude(
    engine: Engine, release: str, report: RegressionReport, path: Path, *, baseline: str, database: str
) -> dict[str, Any]:
    """Write the report, record the release's tiers and the gate decision; the gate result as a dict."""
    report.flow_run_id = str(flow_run.id) if flow_run.id else None
    md_path, json_path = write_report(report, path)
    gate = report.gate
    run_ids = [r for s in report.tiers for r in s.run_ids]
    key = repr((sorted(report.datasets), sorted(s.tier for s in report.tiers), report.rubric, report.judge, baseline))
    with session_scope(engine, write=True) as session:
        for section in report.tiers:
            record_release_tier(
                session=session,
                release=release,
                tier=section.tier,
                source=section.source,
                model=section.source.partition("#")[2] if section.source.startswith("live:") else None,
                datasets=report.datasets,
                run_ids=section.run_ids,
            )
        decision = GateDecision(
            id=gate_decision_id(release, key),
            release=release,
            exit_code=gate.exit_code,
            outcome=gate.outcome,
            summary=gate.summary,
            reasons=gate.reasons,
            notes=gate.notes + gate.warnings,
            baselines={s.tier: s.evaluation.baseline_release for s in report.tiers},
            run_ids=run_ids,
            rubric_hash=report.rubric.hash if report.rubric else None,
            judge_config_hash=report.judge.config_hash if report.judge else None,
            report_path=str(md_path),
            flow_run_id=report.flow_run_id,
            detail={"regressions": [r.__dict__ for r in gate.regressions], "datasets": report.datasets},
        )
        record_gate_decision(session=session, decision=decision)
    return {
        **gate.to_dict(),
        "release": release,
        "report": str(md_path),
        "report_json": str(json_path),
        "run_ids": run_ids,
        "database": database,
    }
