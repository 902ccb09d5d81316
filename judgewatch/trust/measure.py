"""Measure a judge before a gate rests on it: known answers, then the bias probes, on the gate's golden sets; only
what the stored records lack. docs/judges.md, "Before a gate".
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine

from judges.base import Judge, fit_item_ids
from judgewatch.contract.rubric import Rubric
from judgewatch.regression.golden import GoldenSet
from judgewatch.storage.db import session_scope
from judgewatch.storage.trust import TrustEvidence, TrustRecord, get_trust_records
from judgewatch.trust.policy import TrustPolicy, TrustVerdict, dataset_label
from judgewatch.trust.probes import probe_judge
from judgewatch.trust.records import trust_for
from judgewatch.trust.validate import known_pairs, measure_judge

logger = logging.getLogger(__name__)

DEFAULT_ITEMS = 20  # known-answer pairs and probe items per golden set: the policy's minimum per measurement


@dataclass
class GateTrust:
    """The verdict a gate rests on, and what was measured to reach it (nothing when it came from the cache)."""

    verdict: TrustVerdict
    measured: list[TrustRecord] = field(default_factory=list)
    unmeasurable: str | None = None  # why nothing could be measured

    def note(self) -> str | None:
        """One line for the report: what was measured now (None when the stored records were enough)."""
        if self.unmeasurable:
            return f"judge trust could not be measured: {self.unmeasurable}"
        if not self.measured:
            return None
        outcome = {True: "passed", False: "FAILED", None: "inconclusive"}
        parts = [
            f"{r.evidence.replace('_', ' ')} on {dataset_label(r.dataset, r.dataset_revision)} "
            f"({r.n_items} items: {outcome[r.trustworthy]})"
            for r in self.measured
        ]
        return "judge measured before this gate (stored, reused by the next gate with this config): " + "; ".join(parts)


def _stored(engine: Engine, judge_config_hash: str, rubric: Rubric) -> set[tuple[str, str | None]]:
    """(evidence, dataset) of every record stored for this judge configuration and rubric."""
    with session_scope(engine) as session:
        rows = get_trust_records(session=session, judge_config_hash=judge_config_hash, rubric_name=rubric.name)
        return {(r.evidence, r.dataset) for r in rows if r.rubric_hash == rubric.identity.hash}


async def measure_for_gate(
    judge: Judge,
    rubric: Rubric,
    golden: Sequence[GoldenSet],
    *,
    engine: Engine,
    policy: TrustPolicy,
    items: int = DEFAULT_ITEMS,
    seed: int = 0,
) -> GateTrust:
    """The judge's verdict under `rubric`, measured first on `golden` when the stored records do not decide it."""
    identity, rubric_id = judge.identity(rubric), rubric.identity
    verdict = trust_for(engine, identity, rubric_id, policy=policy)
    if verdict.trustworthy is not None:
        return GateTrust(verdict)
    fit = fit_item_ids(judge)
    usable = [g for g in golden if known_pairs(g, limit=1, fit_items=fit).good]
    if not usable:
        names = ", ".join(g.name for g in golden)
        why = f"no golden set ({names}) carries known-good and known-bad answers the judge was not fit on"
        return GateTrust(verdict, unmeasurable=why)
    stored = _stored(engine, identity.config_hash, rubric)
    out = GateTrust(verdict)
    for g in usable:
        if (TrustEvidence.known_answers.value, g.name) not in stored:
            logger.info("measuring judge %s on %s's known answers before the gate", identity.config_hash, g.name)
            out.measured.append(
                await measure_judge(judge, rubric, g, engine=engine, policy=policy, limit=items, seed=seed)
            )
    out.verdict = trust_for(engine, identity, rubric_id, policy=policy)
    if out.verdict.trustworthy is False:  # the probes can only take trust away: nothing left to learn
        return out
    for g in usable:
        if (TrustEvidence.bias_probes.value, g.name) not in stored:
            logger.info("probing judge %s on %s before the gate", identity.config_hash, g.name)
            pairs = known_pairs(g, limit=items, fit_items=fit)
            out.measured.append(await probe_judge(judge, rubric, pairs, engine=engine, policy=policy, seed=seed))
    out.verdict = trust_for(engine, identity, rubric_id, policy=policy)
    return out
