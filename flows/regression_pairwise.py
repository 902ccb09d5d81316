"""The regression flow's pairwise step: the tier preference on the same items (`regression.tier_preference`).
Pairs are interactions judged through a `JudgingRun`, so a re-run judges only pairs whose answers changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import Engine, select

from flows.regression_tasks import regression_run
from judges.base import Judge
from judges.pairwise import PairwiseJudge
from judgewatch.contract.rubric import Rubric, RubricError, load_rubric
from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.regression.golden import GoldenSet
from judgewatch.regression.tier_preference import (
    PairItems,
    PreferenceRow,
    TierPairJudge,
    pair_interactions,
    pair_items,
    pair_source,
    pairwise_counterpart,
    read_preferences,
)
from judgewatch.settings import Settings
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.releases import tier_answers
from judgewatch.trust.policy import policy_from_settings
from judgewatch.trust.records import trust_for

logger = logging.getLogger(__name__)

PAIRWISE_RUBRIC = "pairwise_preference"


@dataclass
class TierPreference:
    """What the pairwise step found for one release: the judge, the rows, the runs, or why it did not run."""

    judge: JudgeIdentity | None = None
    trust: str | None = None  # the pairwise judge's measured trust under the pairwise rubric, first line
    rows: list[PreferenceRow] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    note: str | None = None
    items: str | None = None  # which items were compared: those both tiers answered, and how many only one did


@task(name="judge-tier-pairs", cache_policy=NO_CACHE)
async def judge_tier_pairs(
    engine: Engine,
    release: str,
    candidate: str,
    reference: str,
    golden: GoldenSet,
    rubric: Rubric,
    judge: PairwiseJudge,
    wanted: set[str],
) -> str | None:
    """Store the pairs of one golden set's `wanted` items (those both tiers answered) and judge those not judged
    yet (or whose answers changed); the run id."""
    source = pair_source(release, candidate, reference, golden.name)
    with session_scope(engine) as session:
        cand = tier_answers(session=session, release=release, tier=candidate, dataset=golden.name)
        ref = tier_answers(session=session, release=release, tier=reference, dataset=golden.name)
        stored = session.scalars(select(Interaction).where(table(Interaction).c.source == source))
        before = {i.source_id: i.meta.get("answers_hash") for i in stored}
    rows = [r for r in pair_interactions(release, golden.name, cand, ref) if r.source_id in wanted]
    if not rows:
        return None
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
    changed = {r.id for r in rows if before.get(r.source_id) not in (None, r.meta["answers_hash"])}
    pair_judge = TierPairJudge(judge, {r.source_id: r.meta["second_answer"] for r in rows})
    name = f"{release}/{candidate}~{reference}/{golden.name}"
    params = {"release": release, "candidate": candidate, "reference": reference, "dataset": golden.name}
    with regression_run(engine, name, golden, rubric, pair_judge, params) as run:
        batch = await run.judge_stored([(r.id, r.to_item()) for r in rows], force=changed)
        if batch.judged_now:
            logger.info("pairwise: judged %d pairs of %s in both orders", batch.judged_now, name)
    return run.run_id


async def tier_preference(
    engine: Engine,
    release: str,
    candidate: str,
    reference: str,
    golden: Sequence[GoldenSet],
    judge: Judge,
    settings: Settings,
    items: PairItems | None = None,
) -> TierPreference:
    """Judge the pair of answers to every golden item both tiers answered (`items`; None: every item) with the
    pairwise counterpart of `judge`, then count them."""
    items = items or pair_items(golden, None, None)
    if items.common == 0:
        return TierPreference(
            note=f"tier preference not measured: {candidate} and {reference} answered no golden item in common",
            items=items.text(candidate, reference),
        )
    pairwise = pairwise_counterpart(judge)
    if pairwise is None:
        return TierPreference(note=f"no pairwise counterpart of the {judge.kind} judge: tier preference not measured")
    try:
        rubric = load_rubric(PAIRWISE_RUBRIC, settings.rubrics_dir)
    except RubricError as exc:
        await pairwise.aclose()
        return TierPreference(note=f"pairwise rubric invalid: {exc}")
    identity = pairwise.identity(rubric)
    trust = trust_for(engine, identity, rubric.identity, policy=policy_from_settings(settings))
    first_line = trust.summary.splitlines()[0] if trust.summary else None
    out = TierPreference(judge=identity, trust=first_line, items=items.text(candidate, reference))
    try:
        for g in golden:
            wanted = items.by_set.get(g.name, set())
            run_id = await judge_tier_pairs(engine, release, candidate, reference, g, rubric, pairwise, wanted)
            out.run_ids += [run_id] if run_id else []
    finally:
        await pairwise.aclose()
    with session_scope(engine) as session:
        out.rows = read_preferences(
            session=session, release=release, candidate=candidate, reference=reference,
            datasets=[g.name for g in golden], rubric=rubric, judge_config_hash=identity.config_hash, items=items,
        )  # fmt: skip
    return out
