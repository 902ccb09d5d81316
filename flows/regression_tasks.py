"""Tasks of the post-release regression flow: load inputs, check endpoints, store or generate answers, judge.

Each task is safe to run again: answers and verdicts are upserted under deterministic ids and a stored one is
reused, so a re-run resumes. Retries live in one layer, the chat client; no task has Prefect retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import Engine

from judges.base import Judge
from judges.errors import CallError
from judges.factory import describe, is_healthy
from judgewatch.contract.rubric import Rubric, RubricError, load_rubric
from judgewatch.judging.run import JudgingRun
from judgewatch.regression.generation import TierRequest, check_live_tier
from judgewatch.regression.golden import GoldenItem, GoldenSet, GoldenSetError, load_golden_set
from judgewatch.regression.serving import TierError, TierSpec, answer_coverage, load_recorded_answers, parse_tiers
from judgewatch.regression.tier_config import load_configured_tiers
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.settings import Settings
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.releases import regression_source, tier_answers
from judgewatch.storage.runs import RunKind

logger = logging.getLogger(__name__)

STORE_EVERY = 16  # generated answers stored per batch: a crash loses at most this many generations


@dataclass
class Inputs:
    """Everything the flow reads before it calls any endpoint; `recorded` holds tier -> golden id -> answer and
    `unanswered` tier -> golden set -> the ids its answers file lacks (never scored for that tier)."""

    golden: list[GoldenSet]
    tiers: list[TierSpec]
    rubric: Rubric
    recorded: dict[str, dict[str, str]] = field(default_factory=dict)
    unanswered: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @property
    def datasets(self) -> dict[str, str]:
        return {g.name: g.revision for g in self.golden}

    def answered(self, tier: str) -> set[str] | None:
        """The golden ids a recorded tier answered; None for a live tier (asked every item)."""
        return set(self.recorded[tier]) if tier in self.recorded else None


@dataclass
class Generation:
    """What producing one tier's answers to one golden set did."""

    reused: int = 0
    generated: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # reason -> count (not stored: a re-run tries again)
    changed: list[str] = field(default_factory=list)  # recorded ids whose stored answer was replaced


@task(name="load-inputs", cache_policy=NO_CACHE)
def load_inputs(
    datasets: Sequence[str],
    tiers: Sequence[str],
    answers: Sequence[str],
    rubric: str,
    settings: Settings,
    tiers_file: str | None = None,
    tiers_variable: tuple[str, object] | None = None,
) -> tuple[Inputs | None, list[str]]:
    """Parse tiers, load the rubric, golden sets and recorded answers; every problem found, as messages. `tiers_file` is
    a tiers YAML file, `tiers_variable` a (name, content) pair of a Prefect variable holding one."""
    problems: list[str] = []
    specs: list[TierSpec] = []
    try:
        variable, value = tiers_variable or (None, None)
        specs = parse_tiers(
            tiers, answers, configured=load_configured_tiers(tiers_file, variable=variable, value=value)
        )
    except TierError as exc:
        problems.append(str(exc))
    rubric_obj = None
    try:
        rubric_obj = load_rubric(rubric, settings.rubrics_dir)
    except RubricError as exc:
        problems.append(f"rubric invalid: {exc}")
    golden: list[GoldenSet] = []
    for name in dict.fromkeys(datasets):
        try:
            golden.append(load_golden_set(name, datasets_dir=settings.datasets_dir))
        except GoldenSetError as exc:
            problems.append(f"dataset {name} invalid: {exc}")
    if not datasets:
        problems.append("no dataset given (pass --dataset NAME at least once)")
    owner: dict[str, str] = {}
    for g in golden:
        for item in g.items:
            if item.id in owner:
                problems.append(f"item id {item.id} is in both {owner[item.id]} and {g.name}: ids must be unique")
                break
            owner[item.id] = g.name
    recorded: dict[str, dict[str, str]] = {}
    unanswered: dict[str, dict[str, list[str]]] = {}
    ids = {g.name: [item.id for item in g.items] for g in golden}
    for spec in specs:
        if spec.kind == "recorded" and spec.answers_path is not None and not problems:
            try:
                recorded[spec.name] = load_recorded_answers(spec.answers_path, expected_ids=set(owner))
                unanswered[spec.name] = answer_coverage(spec.answers_path, recorded[spec.name], ids)
            except TierError as exc:
                problems.append(f"tier {spec.name}: {exc}")
    if problems or rubric_obj is None:
        return None, problems
    return Inputs(golden=golden, tiers=specs, rubric=rubric_obj, recorded=recorded, unanswered=unanswered), []


@task(name="check-endpoints", cache_policy=NO_CACHE)
async def check_endpoints(tiers: Sequence[TierSpec], judge: Judge) -> tuple[dict[str, str], list[str]]:
    """({tier: why it is down}, [judge problems]): every live endpoint must answer before anything runs."""
    down = {spec.name: why for spec in tiers if (why := await check_live_tier(spec)) is not None}
    problems = [] if await is_healthy(judge) else [f"judge endpoint unreachable: {describe(judge)}"]
    return down, problems


def answer_interaction(
    release: str, spec: TierSpec, golden: GoldenSet, item: GoldenItem, answer: str, **meta: object
) -> Interaction:
    """One tier's answer to one golden item, as the interaction the judge grades."""
    row = Interaction.from_item(item.to_judge_item(answer), source=regression_source(release, spec.name, golden.name))
    row.tier, row.release, row.model = spec.name, release, spec.model
    row.meta = {"dataset": golden.name, "dataset_revision": golden.revision, "answer_source": spec.source, **meta}
    return row


def _store(engine: Engine, rows: list[Interaction]) -> None:
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)


@task(name="store-recorded-answers", cache_policy=NO_CACHE)
def store_recorded_answers(
    engine: Engine, release: str, spec: TierSpec, golden: GoldenSet, answers: dict[str, str]
) -> Generation:
    """Store a recorded file's answers (source "recorded:<file>") to the items it answered; ids whose stored answer
    changed are reported."""
    with session_scope(engine) as session:
        stored = tier_answers(session=session, release=release, tier=spec.name, dataset=golden.name)
        before = {i.source_id: i.answer for i in stored}
    rows = [
        answer_interaction(release, spec, golden, item, answers[item.id]) for item in golden.items if item.id in answers
    ]
    _store(engine, rows)
    changed = [r.source_id for r in rows if r.source_id in before and before[r.source_id] != r.answer]
    return Generation(reused=len(rows) - len(changed), changed=changed)


@task(name="generate-answers", cache_policy=NO_CACHE)
async def generate_answers(
    engine: Engine,
    release: str,
    spec: TierSpec,
    golden: GoldenSet,
    *,
    max_tokens: int,
    concurrency: int,
    settings: Settings,
) -> Generation:
    """Ask a live tier (its template, params, key and headers) every golden question not answered yet under its
    configuration; a call that fails for good is counted, not stored, so a re-run asks again."""
    request = TierRequest(spec, max_tokens=max_tokens, seed=settings.judge_seed)
    with session_scope(engine) as session:
        stored = tier_answers(session=session, release=release, tier=spec.name, dataset=golden.name)
        done = {i.source_id: i.meta.get("prompt_hash") for i in stored}
    todo = []
    for item in golden.items:
        messages = request.messages(item)
        key = request.request_hash(messages)
        if done.get(item.id) != key:
            todo.append((item, messages, key))
    result = Generation(reused=len(golden.items) - len(todo))
    client = request.client(
        concurrency=concurrency, timeout_s=settings.judge_timeout_s, max_retries=settings.judge_max_retries
    )
    config_hash = request.config_hash

    async def one(item: GoldenItem, messages: list[dict[str, str]], key: str) -> tuple[GoldenItem, str, object]:
        try:
            return item, key, await request.answer(client, messages)
        except CallError as exc:
            return item, key, exc

    failed: Counter[str] = Counter()
    pending: list[Interaction] = []
    try:
        for next_done in asyncio.as_completed([one(*t) for t in todo]):
            item, key, answer = await next_done
            if isinstance(answer, CallError):
                failed[answer.failure.reason.value] += 1
                logger.warning("tier %s: no answer for %s: %s", spec.name, item.id, answer.failure.detail)
                continue
            row = answer_interaction(release, spec, golden, item, str(answer), prompt_hash=key, tier_config=config_hash)
            pending.append(row)
            result.generated += 1
            if len(pending) >= STORE_EVERY:
                await asyncio.to_thread(_store, engine, pending)
                pending = []
        if pending:
            await asyncio.to_thread(_store, engine, pending)
    finally:
        await client.aclose()
    result.failed = dict(failed)
    return result


def regression_run(
    engine: Engine, name: str, golden: GoldenSet, rubric: Rubric, judge: Judge, params: dict[str, Any]
) -> JudgingRun:
    """The judging run of one regression step over one golden set; its identity pins the set's revision."""
    return JudgingRun(
        engine, kind=RunKind.regression, name=name, identity=f"{name}@{golden.revision}", rubric=rubric, judge=judge,
        params=params, scrub_pii=golden.scrub_pii,
    )  # fmt: skip


@task(name="judge-answers", cache_policy=NO_CACHE)
async def judge_answers(
    engine: Engine,
    release: str,
    tier: str,
    golden: GoldenSet,
    rubric: Rubric,
    judge: Judge,
    force: Sequence[str] = (),
    review: RoutingPolicy | None = None,
    items: Collection[str] | None = None,
) -> str | None:
    """Judge the stored answers that have no verdict under this rubric and judge yet; the run id (None: no answers).
    `force` names golden ids judged again anyway (their recorded answer changed). With `review`, the run's verdicts are
    routed to human review (deterministic per verdict, so idempotent). `items`: only these golden ids (the ones a
    recorded tier answered now; an answer stored by an earlier file is not judged again)."""
    with session_scope(engine) as session:
        answers = tier_answers(session=session, release=release, tier=tier, dataset=golden.name)
    if items is not None:
        answers = [a for a in answers if a.source_id in items]
    if not answers:
        return None
    name = f"{release}/{tier}/{golden.name}"
    params = {"release": release, "tier": tier, "dataset": golden.name, "revision": golden.revision}
    with regression_run(engine, name, golden, rubric, judge, params) as run:
        forced = {a.id for a in answers if a.source_id in set(force)}
        batch = await run.judge_stored([(a.id, a.to_item()) for a in answers], force=forced)
        if batch.judged_now:
            logger.info("judged %d answers of %s", batch.judged_now, name)
        if review is not None:
            with session_scope(engine, write=True) as session:
                run.extra["routed_to_review"] = route_verdicts(session=session, policy=review, run_id=run.run_id).routed
    return run.run_id
