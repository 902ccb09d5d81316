"""What every judge is: rubric + item -> Verdict, never an exception for a per-item failure."""

from __future__ import annotations

import hashlib
import json
from typing import Protocol, runtime_checkable

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict, VerdictStatus


@runtime_checkable
class Judge(Protocol):
    """A judge grades one item under one rubric.

    `judge` must return a Verdict for every item: scored, or unscored with its reason. Only programming
    errors may raise. `identity(rubric)` names the judge and hashes everything that can change its scores.
    """

    kind: str

    def identity(self, rubric: Rubric) -> JudgeIdentity: ...

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict: ...

    async def aclose(self) -> None: ...


def config_hash(rubric: Rubric, **params: object) -> str:
    """Hash of the judge's scoring-relevant configuration and the rubric's content (16 hex digits)."""
    payload = json.dumps({"rubric": rubric.content_hash, **params}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def plan(rubric: Rubric, item: JudgeItem) -> tuple[list[str], list[str]]:
    """(criteria to score, criteria not applicable): reference-needing criteria need references."""
    applicable = {c.name for c in rubric.applicable(item.has_references)}
    to_score = [c.name for c in rubric.criteria if c.name in applicable]
    not_applicable = [c.name for c in rubric.criteria if c.name not in applicable]
    return to_score, not_applicable


def no_reference_verdict(item: JudgeItem, rubric: Rubric, identity: JudgeIdentity) -> Verdict:
    """Every criterion needs references and the item has none: unscored, not guessed."""
    return Verdict.unscored(
        item.id,
        UnscoredReason.no_reference,
        judge=identity,
        rubric=rubric.identity,
        detail="every criterion needs reference material and the item has none",
        not_applicable=[c.name for c in rubric.criteria],
        scores={c.name: None for c in rubric.criteria},
    )


def scored_verdict(
    item: JudgeItem,
    rubric: Rubric,
    identity: JudgeIdentity,
    scores: dict[str, int],
    not_applicable: list[str],
    reason: str,
    **extra: object,
) -> Verdict:
    """A scored verdict with N/A criteria as None and the rubric's weighted overall."""
    all_scores: dict[str, int | None] = {c.name: scores.get(c.name) for c in rubric.criteria}
    return Verdict(
        item_id=item.id,
        status=VerdictStatus.scored,
        scores=all_scores,
        not_applicable=not_applicable,
        overall=rubric.overall(all_scores),
        reason=reason,
        judge=identity,
        rubric=rubric.identity,
        **extra,  # type: ignore[arg-type]
    )
