"""What every judge is: rubric + item -> Verdict, never an exception for a per-item failure."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict, VerdictStatus


@runtime_checkable
class Judge(Protocol):
    """A judge grades one item under one rubric. `judge` must return a Verdict for every item: scored, or unscored with
    its reason. Only programming errors may raise. `identity(rubric)` names the judge and hashes everything that can
    change its scores."""

    kind: str

    def identity(self, rubric: Rubric) -> JudgeIdentity: ...

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class FittedJudge(Protocol):
    """A judge fitted on data: it names the golden items it was fit on, so validation can leave them out.
    `fit_item_ids()` returns golden item ids (e.g. "halueval_qa-0001") and/or `content_key`s of their questions; a
    validation item whose id or question key is among them is in-sample, never trust evidence."""

    def fit_item_ids(self) -> frozenset[str]: ...


def content_key(question: str) -> str:
    """How a fitted judge names an item by content: sha256 of the whitespace-normalized question, 16 hex digits."""
    return hashlib.sha256(" ".join(question.split()).encode()).hexdigest()[:16]


def fit_item_ids(judge: object) -> frozenset[str]:
    """The items `judge` was fit on (empty for a judge that was not fit on golden items)."""
    return judge.fit_item_ids() if isinstance(judge, FittedJudge) else frozenset()


def config_hash(rubric: Rubric, **params: object) -> str:
    """Hash of the judge's scoring-relevant configuration and the rubric's content (16 hex digits)."""
    payload = json.dumps({"rubric": rubric.content_hash, **params}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def plan(rubric: Rubric, item: JudgeItem) -> tuple[list[str], list[str]]:
    """(criteria to score, criteria not applicable) for a judge: reference-needing criteria need references. Check
    criteria are in neither list: no judge is asked them; `scored_verdict` adds their scores."""
    applicable = {c.name for c in rubric.applicable(item.has_references)}
    model = [c.name for c in rubric.criteria if c.check is None]
    return [name for name in model if name in applicable], [name for name in model if name not in applicable]


@dataclass
class Checked:
    """The rubric's check criteria on one item: scores (max level pass, min level fail), N/A, one reason."""

    scores: dict[str, int] = field(default_factory=dict)
    not_applicable: list[str] = field(default_factory=list)
    reason: str = ""


def run_checks(rubric: Rubric, item: JudgeItem) -> Checked:
    """Score every check criterion of `rubric` on `item` (deterministic, no I/O)."""
    checked = Checked()
    parts: list[str] = []
    for criterion in rubric.check_criteria:
        assert criterion.check is not None
        result = criterion.check.evaluate(item)
        if result.outcome == "not_applicable":
            checked.not_applicable.append(criterion.name)
        else:
            checked.scores[criterion.name] = rubric.scale.max if result.outcome == "pass" else rubric.scale.min
        parts.append(f"{criterion.name} {result.outcome}: {result.reason}")
    if parts:
        checked.reason = "checks: " + "; ".join(parts)
    return checked


def unscored(
    item: JudgeItem, rubric: Rubric, identity: JudgeIdentity, reason: UnscoredReason, detail: str | None, **kw: object
) -> Verdict:
    """`item` unscored under `rubric` by the judge `identity`, for `reason` (`detail`: in words)."""
    return Verdict.unscored(item.id, reason, judge=identity, rubric=rubric.identity, detail=detail, **kw)


def none_scored(rubric: Rubric) -> dict[str, object]:
    """The fields of a verdict that scored no criterion of `rubric` (each one not applicable)."""
    return {"not_applicable": [c.name for c in rubric.criteria], "scores": {c.name: None for c in rubric.criteria}}


def no_reference_verdict(item: JudgeItem, rubric: Rubric, identity: JudgeIdentity) -> Verdict:
    """Every judge criterion needs references and the item has none: unscored, not guessed. The rubric's check criteria
    are still scored when any applies (the judged criteria are N/A)."""
    if rubric.check_criteria and run_checks(rubric, item).scores:
        return scored_verdict(item, rubric, identity, {}, plan(rubric, item)[1], "")
    detail = "every criterion needs reference material and the item has none"
    return unscored(item, rubric, identity, UnscoredReason.no_reference, detail, **none_scored(rubric))


def scored_verdict(
    item: JudgeItem,
    rubric: Rubric,
    identity: JudgeIdentity,
    scores: dict[str, int],
    not_applicable: list[str],
    reason: str,
    **extra: object,
) -> Verdict:
    """A scored verdict with N/A criteria as None and the rubric's weighted overall. The rubric's check criteria are
    scored here, merged with the judge's scores, and named in the reason."""
    if rubric.check_criteria:
        checked = run_checks(rubric, item)
        scores = {**scores, **checked.scores}
        not_applicable = [*not_applicable, *checked.not_applicable]
        reason = f"{reason} | {checked.reason}" if reason else checked.reason
    all_scores: dict[str, int | None] = {c.name: scores.get(c.name) for c in rubric.criteria}
    return Verdict(
        item_id=item.id, status=VerdictStatus.scored, scores=all_scores, not_applicable=not_applicable,
        overall=rubric.overall(all_scores), reason=reason, judge=identity, rubric=rubric.identity,
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip
