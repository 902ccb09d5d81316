"""Build, store and read trust records (the table: `storage.trust`); the verdict a gate or report states for its
judge, under the policy in force now."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from numpy.typing import ArrayLike
from sqlalchemy import Engine

from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity
from judgewatch.stats.agreement import weighted_kappa
from judgewatch.stats.estimate import Estimate
from judgewatch.storage.db import session_scope
from judgewatch.storage.trust import TrustBasis, TrustEvidence, TrustRecord, get_trust_records, save_trust_record
from judgewatch.storage.types import identity_columns
from judgewatch.trust.figures import rounded
from judgewatch.trust.policy import TrustPolicy, TrustVerdict, evaluate, evaluate_record

logger = logging.getLogger(__name__)


def build_record(
    *, judge: JudgeIdentity, rubric: RubricIdentity, basis: TrustBasis, figures: dict[str, Any], policy: TrustPolicy
) -> TrustRecord:
    """A record carrying its figures and the policy's verdict on it at measurement time."""
    passed, detail = evaluate_record(basis.evidence, figures, basis.n_items, policy)
    return TrustRecord(
        id="",  # derived from the identity when saved
        **identity_columns(judge, rubric),
        **basis.model_dump(),
        trustworthy=passed,
        summary=detail,
        figures=figures,
        policy=policy.model_dump(),
    )


def store_record(engine: Engine, record: TrustRecord) -> TrustRecord:
    """Save (replace on the same identity) and return a detached copy safe to read after the session closes."""
    with session_scope(engine, write=True) as session:
        data = save_trust_record(session=session, record=record).model_dump()
    return TrustRecord.model_validate(data)


def trust_for(
    engine: Engine | None,
    judge: JudgeIdentity,
    rubric: RubricIdentity,
    *,
    policy: TrustPolicy | None = None,
    tier: str | None = None,
) -> TrustVerdict:
    """The verdict on `judge` under `rubric` from its stored records (None = unmeasured when there are none). Records
    are matched on the judge configuration hash (which covers the rubric's content) and the rubric's name and hash, so a
    changed rubric or judge setting starts unmeasured."""
    policy = policy or TrustPolicy()
    records: list[TrustRecord] = []
    if engine is not None:
        with session_scope(engine) as session:
            found = get_trust_records(session=session, judge_config_hash=judge.config_hash, rubric_name=rubric.name)
            records = [TrustRecord.model_validate(r.model_dump()) for r in found if r.rubric_hash == rubric.hash]
    verdict = evaluate(
        records,
        policy,
        judge_name=f"{judge.kind}:{judge.name}",
        judge_config_hash=judge.config_hash,
        rubric=f"{rubric.name} {rubric.version}",
        tier=tier,
    )
    logger.info("judge trust: %s", verdict.summary)
    return verdict


def record_tier_agreement(
    engine: Engine,
    *,
    judge: JudgeIdentity,
    rubric: RubricIdentity,
    tier: str,
    kappas: Mapping[str, Estimate],
    source: str = "review",
    policy: TrustPolicy | None = None,
) -> TrustRecord:
    """Store judge-vs-human agreement of one tier: per criterion, the weighted kappa the calibration computed. `n_items`
    is the largest number of labeled pairs behind any criterion; re-recording the same judge configuration, rubric, tier
    and `source` replaces the record."""
    criteria = {
        name: {"kappa": rounded(e.estimate), "low": rounded(e.low), "high": rounded(e.high), "n": e.n}
        for name, e in kappas.items()
    }
    n_items = max((e.n for e in kappas.values()), default=0)
    basis = TrustBasis(evidence=TrustEvidence.human_labels.value, dataset=source, tier=tier, n_items=n_items)
    record = build_record(
        judge=judge, rubric=rubric, basis=basis, figures={"criteria": criteria}, policy=policy or TrustPolicy()
    )
    return store_record(engine, record)


def record_human_agreement(
    engine: Engine,
    *,
    judge: JudgeIdentity,
    rubric: RubricIdentity,
    tier: str,
    judge_scores: Mapping[str, ArrayLike],
    human_scores: Mapping[str, ArrayLike],
    categories: Iterable[float] | None = None,
    source: str = "review",
    policy: TrustPolicy | None = None,
    seed: int = 0,
) -> TrustRecord:
    """`record_tier_agreement` from aligned score arrays per criterion (NaN where either side is missing)."""
    cats = None if categories is None else [float(c) for c in categories]
    kappas = {
        name: weighted_kappa(judge_scores[name], human_scores[name], categories=cats, seed=seed)
        for name in judge_scores
        if name in human_scores
    }
    return record_tier_agreement(
        engine, judge=judge, rubric=rubric, tier=tier, kappas=kappas, source=source, policy=policy
    )
