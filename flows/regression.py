"""The `post-release-regression` flow: did answer quality regress on any serving tier of a release? Produce, judge,
compare with each tier's baseline release and with the release's baseline tier, gate, report, store the decision.
`judgewatch regress` runs it in-process; `prefect.yaml` deploys it. docs/release_gate.md.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State
from prefect.variables import Variable
from sqlalchemy import Engine

from flows.regression_eval import evaluate_tier, measure_trust, resolve_baselines, resolve_trust
from flows.regression_pairwise import tier_preference
from flows.regression_tasks import (
    Generation,
    Inputs,
    check_endpoints,
    generate_answers,
    judge_answers,
    load_inputs,
    store_recorded_answers,
)
from flows.serving import serve_declared, serve_main
from judges.base import Judge
from judges.factory import chain, judge_links
from judgewatch.judging.costs import release_cost
from judgewatch.redact import mask_url
from judgewatch.regression.gate import GateResult, TierEvaluation, decide
from judgewatch.regression.generation import TierRequest, config_change
from judgewatch.regression.options import DEFAULTS, GateOptions
from judgewatch.regression.report import RegressionReport, write_report
from judgewatch.regression.serving import TierError, TierSpec
from judgewatch.regression.tier_config import baseline_tier
from judgewatch.regression.tier_gap import tier_gaps
from judgewatch.regression.tier_preference import pair_items
from judgewatch.review.routing import RoutingPolicy
from judgewatch.settings import REPO_ROOT, Settings, get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.releases import (
    GateDecision,
    gate_decision_id,
    get_release_tiers,
    record_gate_decision,
    record_release_tier,
)
from judgewatch.storage.types import utcnow

FLOW_NAME = "post-release-regression"
NO_BASELINE_TIER = (
    "no baseline tier declared: within-release tier gaps and tier preference skipped (mark one tier "
    "`baseline: true` in the tiers file, or pass --baseline-tier NAME)"
)


def default_report_path(settings: Settings, release: str) -> Path:
    return settings.data_dir / "reports" / f"regression-{re.sub(r'[^A-Za-z0-9._-]+', '_', release)}.md"


@flow(name=FLOW_NAME, log_prints=True)
async def post_release_regression(
    release: str,
    datasets: list[str],
    tiers: list[str] | None = None,
    answers: list[str] | None = None,
    judge: str | None = None,
    baseline: str = DEFAULTS.baseline,
    margin: float = DEFAULTS.margin,
    max_unscored_share: float = DEFAULTS.max_unscored_share,
    rubric: str = "answer_quality",
    report: str | None = None,
    gap_margin: float | None = DEFAULTS.gap_margin,
    accept_unvalidated_judge: bool = DEFAULTS.accept_unvalidated_judge,
    concurrency: int = DEFAULTS.concurrency,
    answer_max_tokens: int = DEFAULTS.answer_max_tokens,
    database_url: str | None = None,
    fail_on_gate: bool = True,
    tiers_file: str | None = None,
    tiers_variable: str | None = None,
    baseline_tier: str | None = DEFAULTS.baseline_tier,
    junit: str | None = None,
    summary_md: str | None = None,
) -> dict[str, Any] | State[Any]:
    """Run the gate for `release`; returns the gate result (exit_code, summary, reasons...) and report paths. `tiers`:
    "NAME=URL#MODEL" (live); `answers`: "NAME=FILE" (recorded JSONL); `tiers_file`: a tiers YAML file (live tiers with
    their key variable, headers, prompt template and params); `tiers_variable`: the name of a Prefect variable holding
    the same document; `judge`: "reference" or a URL (default: the configured judge URL; no silent fallback to another
    judge); the gate's options as `GateOptions` describes them. With `fail_on_gate` a non-zero exit code ends the flow
    run Failed with the summary as its message (what a CI job triggering the deployment sees). `junit` and
    `summary_md`: paths for the decision as JUnit XML and as a pull-request comment's Markdown."""
    options = GateOptions.model_validate({k: v for k, v in locals().items() if k in GateOptions.model_fields})
    settings = get_settings()
    url = database_url or settings.effective_database_url
    engine = make_engine(url)
    migrate(engine)
    variable = (tiers_variable, await Variable.aget(tiers_variable)) if tiers_variable else None
    inputs, problems = load_inputs(datasets, tiers or [], answers or [], rubric, settings, tiers_file, variable)
    judge_obj = None
    if inputs is not None:
        try:
            judge_obj = chain(
                judge_links(judge, settings, fallback_reference=False, rubric=inputs.rubric, engine=engine)
            )
        except ValueError as exc:
            problems.append(str(exc))
    try:
        result = await _evaluate(engine, release, inputs, judge_obj, problems, options, settings)
    finally:
        if judge_obj is not None:
            await judge_obj.aclose()
    path = Path(report) if report else default_report_path(settings, release)
    ci_files = {"junit": junit, "summary_md": summary_md}
    out = conclude(engine, release, result, path, baseline=baseline, database=mask_url(url), ci_files=ci_files)
    # The release pipeline reads the state message: a judge accepted unvalidated is the first thing it says.
    accepted = f"WARNING: {out['accepted_unvalidated']} | " if out.get("accepted_unvalidated") else ""
    if fail_on_gate and out["exit_code"] != 0:
        return Failed(message=f"{accepted}gate exit {out['exit_code']}: {out['summary']}", data=out)
    return Completed(message=accepted + out["summary"], data=out) if fail_on_gate else out


async def _evaluate(
    engine: Engine,
    release: str,
    inputs: Inputs | None,
    judge: Judge | None,
    problems: list[str],
    options: GateOptions,
    settings: Settings,
) -> RegressionReport:
    report = RegressionReport(
        release, utcnow(), {}, GateResult(2, "error", ""), options.margin, options.max_unscored_share
    )
    report.accept_unvalidated_judge, report.gap_margin = options.accept_unvalidated_judge, options.gap_margin
    gate = partial(
        decide, margin=options.margin, max_unscored_share=options.max_unscored_share, gap_margin=options.gap_margin
    )
    if inputs is None or judge is None:
        report.gate = decide([], margin=options.margin, problems=problems)
        return report
    report.datasets, report.rubric = inputs.datasets, inputs.rubric.identity
    report.judge = identity = judge.identity(inputs.rubric)
    trust = resolve_trust(engine, identity, inputs.rubric, settings, options.accept_unvalidated_judge)
    down, problems = await check_endpoints(inputs.tiers, judge)
    names = [t.name for t in inputs.tiers]
    try:
        base_tier = baseline_tier(inputs.tiers, options.baseline_tier, settings.baseline_tier)
    except TierError as exc:
        base_tier = None
        problems.append(str(exc))
    baselines, baseline_problems, notes = resolve_baselines(engine, release, names, options.baseline, inputs.datasets)
    problems += baseline_problems
    if trust.trustworthy is None and not trust.accepted_on_purpose and not problems:  # a reachable, unmeasured judge
        measured = await measure_trust(engine, judge, inputs.rubric, inputs.golden, settings)
        trust = measured.verdict
        notes += [line] if (line := measured.note()) else []
    report.trust_summary, report.trustworthy = trust.summary, trust.trustworthy
    refused = trust.trustworthy is not True and not trust.accepted_on_purpose
    if refused or problems:  # nothing to learn from judging: say why now, in seconds
        report.gate = gate([], trust=trust, problems=problems, notes=notes)
        return report
    live = [t for t in inputs.tiers if t.name not in down]
    generations = await asyncio.gather(*(_produce(engine, release, t, inputs, options, settings) for t in live))
    scores: dict[str, dict[str, dict[str, float | None]]] = {}
    evaluations = [TierEvaluation(t, None, endpoint_ok=False, endpoint_detail=why) for t, why in down.items()]
    for spec, gen in zip(live, generations, strict=True):
        base = baselines.get(spec.name)
        run_ids = []
        answered = inputs.answered(spec.name)
        for golden in inputs.golden:
            force = gen[golden.name].changed
            routing = RoutingPolicy.from_settings(settings)
            run_id = await judge_answers(
                engine, release, spec.name, golden, inputs.rubric, judge, force, routing, items=answered
            )
            run_ids += [run_id] if run_id else []
            if base is not None:
                await judge_answers(engine, base, spec.name, golden, inputs.rubric, judge)
        section, scores[spec.name] = evaluate_tier(engine, release, spec, base, inputs, identity.config_hash)
        section.run_ids, section.generation = run_ids, _generation_counts(gen.values())
        section.config = (
            TierRequest(spec, options.answer_max_tokens, settings.judge_seed).summary() if spec.kind == "live" else {}
        )
        notes += _config_notes(engine, spec.name, base, section.config)
        report.tiers.append(section)
        evaluations.append(section.evaluation)
    criteria = [c.name for c in inputs.rubric.criteria]
    reference = report.baseline_tier = base_tier
    if reference is None and len(inputs.tiers) > 1:
        notes.append(NO_BASELINE_TIER)
    for candidate in sorted(scores):  # every tier against the baseline tier (tiers file or --baseline-tier)
        if reference is not None and candidate != reference and reference in scores:
            report.gaps += tier_gaps(
                scores[candidate], scores[reference], criteria, candidate_label=candidate, baseline_label=reference
            )
            both = pair_items(inputs.golden, inputs.answered(candidate), inputs.answered(reference))
            found = await tier_preference(engine, release, candidate, reference, inputs.golden, judge, settings, both)
            report.pairwise_judge, report.pairwise_trust, report.preference_note = found.judge, found.trust, found.note
            report.preferences += found.rows
            report.preference_items += [found.items] if found.items else []
    report.cost, report.review_url = release_cost(engine, release, settings), settings.review_url
    report.gate = gate(evaluations, gaps=report.gaps, trust=trust, problems=problems, notes=notes)
    return report


async def _produce(
    engine: Engine, release: str, spec: TierSpec, inputs: Inputs, options: GateOptions, settings: Settings
) -> dict[str, Generation]:
    """Store (recorded) or generate (live) one tier's answers to every golden set."""
    out: dict[str, Generation] = {}
    for golden in inputs.golden:
        if spec.kind == "recorded":
            out[golden.name] = store_recorded_answers(engine, release, spec, golden, inputs.recorded[spec.name])
        else:
            out[golden.name] = await generate_answers(
                engine,
                release,
                spec,
                golden,
                max_tokens=options.answer_max_tokens,
                concurrency=options.concurrency,
                settings=settings,
            )
    return out


def _config_notes(engine: Engine, tier: str, baseline: str | None, config: dict[str, Any]) -> list[str]:
    """A note when the tier's configuration (e.g. its prompt template) differs from its baseline release's."""
    if baseline is None or not config:
        return []
    with session_scope(engine) as session:
        rows = get_release_tiers(session=session, release=baseline, tier=tier)
        before = rows[0].config if rows else None
    note = config_change(tier, baseline, before, config)
    return [note] if note else []


def _generation_counts(generations: Iterable[Generation]) -> dict[str, int]:
    total: dict[str, int] = {"reused": 0, "generated": 0, "failed": 0, "replaced": 0}
    for gen in generations:
        total["reused"] += gen.reused
        total["generated"] += gen.generated
        total["failed"] += sum(gen.failed.values())
        total["replaced"] += len(gen.changed)
    return total


@task(name="conclude", cache_policy=NO_CACHE)
def conclude(
    engine: Engine,
    release: str,
    report: RegressionReport,
    path: Path,
    *,
    baseline: str,
    database: str,
    ci_files: dict[str, str | None],
) -> dict[str, Any]:
    """Write the report (and the CI files asked for), record the release's tiers and the gate decision; the gate
    result as a dict."""
    from judgewatch.cli.regress_cmd import write_ci_files

    report.flow_run_id = str(flow_run.id) if flow_run.id else None
    md_path, json_path = write_report(report, path)
    written = write_ci_files(report, **ci_files)
    gate = report.gate
    run_ids = [r for s in report.tiers for r in s.run_ids]
    rubric_hash = report.rubric.hash if report.rubric else None
    judge_hash = report.judge.config_hash if report.judge else None
    key = json.dumps([sorted(report.datasets), sorted(s.tier for s in report.tiers), rubric_hash, judge_hash, baseline])
    with session_scope(engine, write=True) as session:
        for s in report.tiers:
            record_release_tier(
                session=session, release=release, tier=s.tier, source=s.source, datasets=report.datasets,
                model=s.source.partition("#")[2] if s.source.startswith("live:") else None, run_ids=s.run_ids,
                config=s.config or None, baseline=s.tier == report.baseline_tier,
            )  # fmt: skip
        detail = {"regressions": [r.__dict__ for r in gate.regressions], "power": [asdict(p) for p in gate.power]}
        decision = GateDecision(
            id=gate_decision_id(release, key), release=release, exit_code=gate.exit_code, outcome=gate.outcome,
            summary=gate.summary, reasons=gate.reasons, notes=[f"WARNING: {w}" for w in gate.warnings] + gate.notes,
            baselines={s.tier: s.evaluation.baseline_release for s in report.tiers}, run_ids=run_ids,
            rubric_hash=rubric_hash, judge_config_hash=judge_hash, report_path=str(md_path),
            flow_run_id=report.flow_run_id, detail={**detail, "datasets": report.datasets, "margin": report.margin},
        )  # fmt: skip
        record_gate_decision(session=session, decision=decision)
    paths = {"report": str(md_path), "report_json": str(json_path), "run_ids": run_ids, "database": database}
    # the judge's cost of the release so far: gates are never paused by the spend cap
    return {**gate.to_dict(), "release": release, **paths, **written, "cost": report.cost}


if __name__ == "__main__":  # `python -m flows.regression serve`: serves the deployment as prefect.yaml declares it
    from flows.regression import post_release_regression as declared  # the importable module's flow, not __main__'s

    serve_main("flows.regression", lambda: serve_declared(declared, FLOW_NAME, REPO_ROOT / "prefect.yaml"))
