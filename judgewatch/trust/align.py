"""`judgewatch judges align`: a judge configuration built from reviewers' labels, measured where it was not built.
Nothing is switched here (`storage.alignments.switch_alignment`). docs/judges.md, section 5.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from pydantic import BaseModel
from sqlalchemy import Engine

from judges.alignment import Alignment, Example
from judges.base import content_key
from judges.openai_judge import OpenAIJudge
from judges.reference import ReferenceJudge
from judges.reference_fit import MIN_PER_CLASS, refit
from judgewatch.contract.pii import Scrubber, scrub_content
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict
from judgewatch.hashing import stable_id
from judgewatch.review.labels import TOLERANCE
from judgewatch.stats.agreement import compare_kappas
from judgewatch.stats.estimate import Estimate
from judgewatch.storage.alignments import JudgeAlignment, alignment_id, save_alignment
from judgewatch.storage.db import session_scope
from judgewatch.trust.align_labels import Labelled, ReviewerLabels, reviewer_labels, split
from judgewatch.trust.figures import rounded, score_column
from judgewatch.trust.policy import TrustPolicy
from judgewatch.trust.records import record_tier_agreement

logger = logging.getLogger(__name__)

EVIDENCE_SOURCE = "held-out reviewers' labels (judges align)"  # the trust records' dataset
ALL_TIERS = "(all tiers)"
MEASURE = "quadratic weighted kappa with the reviewers' labels"

AlignableJudge = OpenAIJudge | ReferenceJudge


class CannotAlign(RuntimeError):
    """Nothing to build or measure (too few labels, nothing to learn from): the message says which."""


class CriterionFigures(BaseModel):
    """One criterion on the held-out items: each judge's kappa and the difference (aligned - current), 95%."""

    n: int
    n_effective: float  # under the items' 1/p weights (Kish): n when every item had the same routing probability
    current: float | None
    current_interval: tuple[float | None, float | None]
    aligned: float | None
    aligned_interval: tuple[float | None, float | None]
    difference: float | None
    interval: tuple[float | None, float | None]
    decisive: bool  # effective held-out items enough (the trust policy's min_items) for the decision to read it
    changed: int  # held-out items the two judges scored differently

    def kappa(self, *, aligned: bool) -> Estimate:
        """One judge's kappa as its trust record holds it (NaN where undefined)."""
        point, (low, high) = (self.aligned, self.aligned_interval) if aligned else (self.current, self.current_interval)
        return Estimate(_nan(point), _nan(low), _nan(high), self.n)


def _nan(value: float | None) -> float:
    return float("nan") if value is None else value


class Comparison(BaseModel):
    """What `judges align` prints and stores: what was built, where it was measured, what was decided."""

    measure: str = MEASURE
    labels: str
    built: str
    fit_items: int
    held_out_items: int
    criteria: dict[str, CriterionFigures]
    unscored: dict[str, int]  # held-out items each judge left unscored
    examples_dropped_on: int = 0  # held-out prompts that left examples out to fit the window
    accepted: bool
    reason: str


@dataclass(frozen=True)
class AlignResult:
    alignment: Alignment
    current: JudgeIdentity
    aligned: JudgeIdentity
    comparison: Comparison
    row_id: str  # the store's row, for `switch_alignment`


async def _verdicts(judge: AlignableJudge, rubric: Rubric, items: Sequence[Labelled]) -> list[Verdict]:
    """One verdict per item (the endpoint judge's own semaphore bounds the concurrency)."""
    return list(await asyncio.gather(*(judge.judge(x.item, rubric) for x in items)))


def choose_examples(
    items: Sequence[Labelled], verdicts: Sequence[Verdict], max_examples: int
) -> tuple[list[Example], int]:
    """(the examples, how many items disagreed): reviewed disagreements, the largest first, ties by id hash."""
    found: list[tuple[int, str, Example]] = []
    scrubber = Scrubber()
    for labelled, verdict in zip(items, verdicts, strict=True):
        judged = {c: s for c, s in verdict.scores.items() if s is not None and c in labelled.human}
        gap = max((abs(s - labelled.human[c]) for c, s in judged.items()), default=0)
        if gap > TOLERANCE:
            item = scrub_content(labelled.item, scrubber)
            example = Example(item=item, scores=labelled.human, judge_scores=judged)
            found.append((-gap, stable_id("judges-align-example", item.id), example))
    found.sort(key=lambda f: (f[0], f[1]))
    return [example for _, _, example in found[:max_examples]], len(found)


def _build(
    current: AlignableJudge, rubric: Rubric, fit: Sequence[Labelled], verdicts: Sequence[Verdict], max_examples: int
) -> tuple[Alignment, str]:
    """The alignment built from the `fit` items, and what it is in words."""
    base: dict[str, Any] = {"rubric_name": rubric.name, "rubric_hash": rubric.content_hash}
    if isinstance(current, OpenAIJudge):
        examples, disagreeing = choose_examples(fit, verdicts, max_examples)
        if not examples:
            raise CannotAlign(
                f"no labelled item among the {len(fit)} to build from has a score more than {TOLERANCE} point from "
                "the reviewers': no disagreement to learn from, nothing built"
            )
        built = f"{len(examples)} few-shot examples (of {disagreeing} reviewed disagreements, max {max_examples})"
        return Alignment(**base, kind="openai", examples=examples), built
    middle = (rubric.scale.min + rubric.scale.max) / 2
    labelled = [
        (x.item, x.human["faithfulness"] > middle) for x in fit if x.human.get("faithfulness", middle) != middle
    ]
    result = refit(current.models(rubric), labelled, [content_key(x.item.question) for x in fit])
    if not any(result.labels.values()):
        raise CannotAlign(
            f"too few faithfulness labels to refit on ({len(labelled)} above or below the scale's middle; each "
            f"combiner needs {MIN_PER_CLASS} of each side among the items it scores): nothing built"
        )
    refitted = ", ".join(f"{name} on {n} labels" for name, n in result.labels.items() if n)
    return Alignment(**base, kind="reference", models=result.document), f"faithfulness combiners refit: {refitted}"


def _columns(held: Sequence[Labelled], verdicts: Sequence[Verdict], criterion: str) -> tuple[np.ndarray, np.ndarray]:
    return np.array([x.human.get(criterion, np.nan) for x in held], dtype=float), score_column(verdicts, criterion)


def _figures(
    rubric: Rubric, held: Sequence[Labelled], current: Sequence[Verdict], aligned: Sequence[Verdict], min_items: int
) -> dict[str, CriterionFigures]:
    figures = {}
    for criterion in rubric.criteria:
        human, before = _columns(held, current, criterion.name)
        after = score_column(aligned, criterion.name)
        if not np.isfinite(human).any():
            continue
        weights = [x.weight for x in held]
        c = compare_kappas(
            human, before, after, categories=[float(x) for x in rubric.scale.levels], item_weights=weights
        )
        figures[criterion.name] = CriterionFigures(
            n=c.difference.n, current=rounded(c.a.estimate), current_interval=(rounded(c.a.low), rounded(c.a.high)),
            aligned=rounded(c.b.estimate), aligned_interval=(rounded(c.b.low), rounded(c.b.high)),
            difference=rounded(c.difference.estimate), interval=(rounded(c.difference.low), rounded(c.difference.high)),
            n_effective=round(c.n_effective, 1), decisive=c.n_effective >= min_items,
            changed=int(np.sum(np.isfinite(before) & np.isfinite(after) & (before != after))),
        )  # fmt: skip
    return figures


def decide(figures: dict[str, CriterionFigures], min_items: int) -> tuple[bool, str]:
    """(accepted?, why): on every decisive criterion the aligned kappa is at least the current one's, and it changed
    some held-out score."""
    decisive = {name: f for name, f in figures.items() if f.decisive}
    if not decisive:
        return False, f"no criterion has {min_items} held-out items both judges scored: the comparison decides nothing"
    if not any(f.changed for f in decisive.values()):
        return False, "refused: the aligned judge scored every held-out item as the current one: nothing to gain"
    worse = [name for name, f in decisive.items() if f.difference is None or f.difference < 0]
    if worse:
        return False, f"refused: out of fit, the aligned judge agrees less with the reviewers on {', '.join(worse)}"
    return True, "accepted: out of fit, the aligned judge agrees with the reviewers at least as well on " + ", ".join(
        decisive
    )


async def align_judge(
    engine: Engine, rubric: Rubric, current: AlignableJudge, *, policy: TrustPolicy, holdout: float, max_examples: int
) -> AlignResult:
    """Build, measure and store an aligned configuration of `current` under `rubric` (see the module doc)."""
    labels: ReviewerLabels = reviewer_labels(engine, rubric)
    fit, held = split(labels.items, holdout)
    if len(held) < policy.min_items or not fit:
        raise CannotAlign(
            f"{labels.describe()}: {len(fit)} to build from and {len(held)} held out; the held-out side needs at "
            f"least {policy.min_items} (JUDGEWATCH_TRUST_MIN_ITEMS) and the other at least one"
        )
    before = await _verdicts(current, rubric, [*fit, *held])
    alignment, built = _build(current, rubric, fit, before[: len(fit)], max_examples)
    alignments = {**current.alignments, alignment.rubric_name: alignment}  # in place of what it had under the rubric
    twin = OpenAIJudge(current.endpoint, alignments) if isinstance(current, OpenAIJudge) else ReferenceJudge(alignments)
    try:
        after = await _verdicts(twin, rubric, held)
    finally:
        await twin.aclose()
    before = before[len(fit) :]
    figures = _figures(rubric, held, before, after, policy.min_items)
    accepted, reason = decide(figures, policy.min_items)
    judged = (("current", before), ("aligned", after))
    unscored = {name: sum(v.unscored_reason is not None for v in vs) for name, vs in judged}
    comparison = Comparison(
        labels=labels.describe(), built=built, fit_items=len(fit), held_out_items=len(held), criteria=figures,
        unscored=unscored, examples_dropped_on=sum(bool(v.trimmed and v.trimmed.examples_dropped) for v in after),
        accepted=accepted, reason=reason,
    )  # fmt: skip
    row_id = alignment_id(alignment.kind, rubric.name, alignment.digest)
    result = AlignResult(alignment, current.identity(rubric), twin.identity(rubric), comparison, row_id)
    _store(engine, rubric, result, policy)
    logger.info("judges align: %s", reason)
    return result


def _store(engine: Engine, rubric: Rubric, result: AlignResult, policy: TrustPolicy) -> None:
    """Each configuration's held-out kappas, as printed, as a trust record (by config hash); the alignment as a row."""
    record = partial(
        record_tier_agreement, engine, rubric=rubric.identity, tier=ALL_TIERS, source=EVIDENCE_SOURCE, policy=policy
    )
    for judge, aligned in ((result.current, False), (result.aligned, True)):
        record(judge=judge, kappas={name: f.kappa(aligned=aligned) for name, f in result.comparison.criteria.items()})
    alignment = result.alignment
    row = JudgeAlignment(
        id="", rubric_name=rubric.name, rubric_hash=rubric.content_hash, judge_kind=alignment.kind,
        digest=alignment.digest, config_hash=result.aligned.config_hash, based_on=result.current.config_hash,
        alignment=alignment.model_dump(mode="json"), comparison=result.comparison.model_dump(mode="json"),
        accepted=result.comparison.accepted,
    )  # fmt: skip
    with session_scope(engine, write=True) as session:
        save_alignment(session=session, row=row)
