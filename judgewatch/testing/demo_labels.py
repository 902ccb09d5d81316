"""Demo labels for the Tiers page: SYNTHESIZED from the golden sets' known-good and known-bad answers.

Not human labels: a tier answer that is word for word a golden item's known-good answer gets 5 on every criterion,
a known-bad one faithfulness 1, completeness 1 and relevance 4 (a wrong answer to the right question); any other
answer none. They go through the real routing and review queue with `via="synthetic"`, so every report and page
says they are synthetic. `write_demo_answers` writes a tier's recorded answers from those known answers.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select

from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import VerdictStatus
from judgewatch.hashing import UnitHash, hash_unit
from judgewatch.regression.golden import GoldenSet, load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.review.dataset_labels import known_quality, normalize
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction, upsert_interactions
from judgewatch.storage.releases import regression_source
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.synthetic_labels import label_routed

logger = logging.getLogger(__name__)

DEMO_REVIEWER = "synthetic-golden"
KNOWN_GOOD = {"relevance": 5, "faithfulness": 5, "completeness": 5}
KNOWN_BAD = {"relevance": 4, "faithfulness": 1, "completeness": 1}
DISCLOSURE = (
    "SYNTHESIZED labels, not human labels: tier answers that are a golden item's known-good answer were scored "
    "5/5/5, known-bad answers relevance 4, faithfulness 1, completeness 1; other answers were left unlabeled."
)
_SOURCE = re.compile(r"^release:(?P<release>[^/]+)/(?P<tier>[^/]+)/(?P<dataset>.+)$")


@dataclass(frozen=True, slots=True)
class DemoLabels:
    """What the demo labeling did; `describe()` is the line to print."""

    kind: str
    known_good: int  # verdicts whose answer is a known-good answer
    known_bad: int
    unknown: int  # answers that are neither: never labeled
    labeled: int  # labels written (routed items among the known ones)
    review_share: float

    def describe(self) -> str:
        return (
            f"{DISCLOSURE} Matched {self.known_good} known-good and {self.known_bad} known-bad answers "
            f"({self.unknown} unknown); routed {self.review_share:.0%} uniformly and wrote {self.labeled} synthetic "
            "labels through the review queue."
        )


def _tiered_answers(engine: Engine, rubric_name: str) -> list[tuple[str, str, str, str, str]]:
    """(interaction id, source, source_id, question, answer) of tiered interactions with a scored verdict."""
    i, v = table(Interaction).c, table(VerdictRecord).c
    scored = select(v.interaction_id).where(v.rubric_name == rubric_name, v.status == VerdictStatus.scored.value)
    query = select(i.id, i.source, i.source_id, i.question, i.answer).where(
        i.tier.is_not(None), i.id.in_(scored.scalar_subquery())
    )
    with session_scope(engine) as session:
        return [tuple(row) for row in session.execute(query.order_by(i.id))]


def synthesize_golden_labels(
    engine: Engine,
    *,
    rubric: Rubric,
    datasets: Sequence[str],
    datasets_dir: Path | None = None,
    review_share: float = 0.25,
) -> DemoLabels:
    """Route the tiers' scored verdicts and label the routed ones whose answer is known (see the module doc)."""
    unknown_criteria = {c.name for c in rubric.criteria} - set(KNOWN_GOOD)
    if unknown_criteria:
        raise ValueError(f"demo labels cover answer_quality's criteria only, not {sorted(unknown_criteria)}")
    sets = {name: load_golden_set(name, datasets_dir=datasets_dir) for name in datasets}
    by_id = {(g.name, item.id): item for g in sets.values() for item in g.items}
    by_question = {normalize(item.question): item for g in sets.values() for item in g.items}
    human: dict[str, dict[str, int]] = {}
    counts = {"good": 0, "bad": 0, None: 0}
    for iid, source, source_id, question, answer in _tiered_answers(engine, rubric.name):
        match = _SOURCE.match(source)
        item = by_id.get((match["dataset"], source_id)) if match else None
        item = item or by_question.get(normalize(question))
        quality = known_quality(item, answer) if item is not None else None
        counts[quality] += 1
        if quality is not None and item is not None:
            has_refs = bool(item.reference_answer or item.reference_facts or item.context)
            applicable = {c.name for c in rubric.applicable(has_refs)}
            scores = KNOWN_GOOD if quality == "good" else KNOWN_BAD
            human[iid] = {k: v for k, v in scores.items() if k in applicable}
    labeled = label_routed(engine, rubric, human, review_share=review_share, reviewer=DEMO_REVIEWER)
    result = DemoLabels(
        "synthesized-from-golden-known-answers", counts["good"], counts["bad"], counts[None], labeled, review_share
    )
    logger.warning("%s", result.describe())
    return result


def demo_answers(golden: GoldenSet, *, bad_share: float, salt: str) -> list[tuple[str, str]]:
    """(id, answer) per item: its first known-bad answer for a hash-chosen `bad_share` of items, else known-good."""
    out = []
    for item in golden.items:
        bad = item.bad_answers and hash_unit(item.id, f"{salt}:{golden.name}", variant=UnitHash.LABELED) < bad_share
        pool = item.bad_answers if bad else (item.good_answers or [item.reference_answer or ""])
        if pool and pool[0]:
            out.append((item.id, pool[0]))
    return out


def write_demo_answers(golden: GoldenSet, path: Path, *, bad_share: float, salt: str = "demo") -> int:
    """Write a tier's recorded answers file (JSONL id/answer) from known answers; returns the count."""
    return write_recorded_answers(path, demo_answers(golden, bad_share=bad_share, salt=salt))


async def store_golden_tier(
    engine: Engine,
    rubric: Rubric,
    golden: GoldenSet,
    tier: str,
    answers: list[tuple[str, str]],
    release: str = "demo-1",
) -> None:
    """One tier's answers to a golden set, stored as a release's golden items and judged by the reference judge."""
    from judges.reference import ReferenceJudge
    from judgewatch.judging.pipeline import judge_items

    by_id = {item.id: item for item in golden.items}
    source = regression_source(release, tier, golden.name)
    items = [by_id[item_id].to_judge_item(answer) for item_id, answer in answers]
    rows = [Interaction.from_item(item, source=source) for item in items]
    for row in rows:
        row.tier, row.release = tier, release
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
    await judge_items(items, rubric, ReferenceJudge(), engine=engine, source=source)
