"""Regression flow steps that read the store: baselines, the judge's trust (measured first when the store has none),
a tier's scores. Only verdicts of this rubric and judge configuration are compared; a baseline judged by another
judge is judged again by this one first (its answers are stored).
"""

from __future__ import annotations

from collections.abc import Sequence

from prefect import task
from prefect.cache_policies import NO_CACHE
from sqlalchemy import Engine

from flows.regression_tasks import Inputs
from judges.base import Judge
from judges.checks import CheckJudge
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.regression.golden import GoldenSet
from judgewatch.regression.report import TierSection
from judgewatch.regression.scores import find_baselines, tier_section
from judgewatch.regression.serving import TierSpec
from judgewatch.settings import Settings
from judgewatch.storage.db import session_scope
from judgewatch.trust.measure import GateTrust, measure_for_gate
from judgewatch.trust.policy import TrustVerdict, policy_from_settings
from judgewatch.trust.records import trust_for


@task(name="resolve-baselines", cache_policy=NO_CACHE)
def resolve_baselines(
    engine: Engine, release: str, tiers: Sequence[str], baseline: str, datasets: dict[str, str]
) -> tuple[dict[str, str | None], list[str], list[str]]:
    """(tier -> baseline release or None for a first release, problems, notes): see `find_baselines`."""
    with session_scope(engine) as session:
        found = find_baselines(session=session, release=release, tiers=tiers, baseline=baseline, datasets=datasets)
    return found.by_tier, found.problems, found.notes


def resolve_trust(
    engine: Engine, identity: JudgeIdentity, rubric: Rubric, settings: Settings, accept_unvalidated: bool
) -> TrustVerdict:
    """The judge's measured trust under this rubric; `accept_unvalidated` turns a refusal into a loud warning.

    The check judge (kind `check`) applies the rubric's deterministic rules and has no model to measure: it is
    trusted by construction, and the report says so."""
    if identity.kind == CheckJudge.kind:
        return TrustVerdict(
            judge_name=identity.name,
            judge_config_hash=identity.config_hash,
            rubric=f"{rubric.name} {rubric.version}",
            trustworthy=True,
            summary=f"judge {identity.kind}:{identity.name} (config {identity.config_hash[:12]}), rubric "
            f"{rubric.name} {rubric.version}: deterministic checks, no model to measure: trusted by construction",
        )
    verdict = trust_for(engine, identity, rubric.identity, policy=policy_from_settings(settings))
    return verdict.accept_unvalidated() if accept_unvalidated else verdict


@task(name="measure-judge-trust", cache_policy=NO_CACHE)
async def measure_trust(
    engine: Engine, judge: Judge, rubric: Rubric, golden: Sequence[GoldenSet], settings: Settings
) -> GateTrust:
    """Measure an unmeasured judge on the golden sets' known answers before the gate rests on it (cached by
    config hash in the trust records): see `judgewatch.trust.measure`."""
    policy = policy_from_settings(settings)
    return await measure_for_gate(
        judge, rubric, golden, engine=engine, policy=policy, items=settings.trust_gate_items, seed=settings.judge_seed
    )


@task(name="evaluate-tier", cache_policy=NO_CACHE)
def evaluate_tier(
    engine: Engine, release: str, spec: TierSpec, baseline: str | None, inputs: Inputs, judge_config_hash: str
) -> tuple[TierSection, dict[str, dict[str, float | None]]]:
    """One tier's section of the report and its scores: see `tier_section`."""
    golden, rubric, unanswered = inputs.golden, inputs.rubric, inputs.unanswered.get(spec.name)
    with session_scope(engine) as session:
        return tier_section(session, release, spec, baseline, golden, rubric, judge_config_hash, unanswered)
