"""Labels derived from a golden set's own human annotations (docs/operations.md), entered through the review queue
as what they are: HaluEval's and HalluQA's good and bad answers were written or checked by people, so a tier's
answer that is word for word one of them gets a faithfulness label, shown as such and never trust evidence."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select

from judgewatch.regression.golden import GoldenItem, GoldenSetError, load_golden_set
from judgewatch.review.accounts import ensure_reviewer, set_active
from judgewatch.review.queue import ReviewQueue
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import ItemState, LabelVia, ReviewItem

logger = logging.getLogger(__name__)

ACCOUNT = "dataset-annotation"
CRITERION = "faithfulness"
KNOWN_GOOD, KNOWN_BAD = 5, 1
_GOLDEN = re.compile(r"^release:(?P<release>[^/]+)/(?P<tier>[^/]+)/(?P<dataset>.+)$")


@dataclass(frozen=True, slots=True)
class AnnotationLabels:
    """What one pass did over the routed, unlabeled golden items; `describe()` is the line to print."""

    routed: int  # routed golden items without a label yet
    known_good: int
    known_bad: int
    unknown: int  # answers that are neither, items without references, sets that could not be read
    labeled: int

    def describe(self) -> str:
        return (
            f"{self.labeled} labels derived from the golden sets' annotations (label_via=dataset_annotation, not a "
            f"reviewer's): of {self.routed} routed golden items, {self.known_good} known-good answers "
            f"(faithfulness {KNOWN_GOOD}), {self.known_bad} known-bad (faithfulness {KNOWN_BAD}), "
            f"{self.unknown} of unknown quality left for people."
        )


def normalize(text: str) -> str:
    return " ".join(text.split()).casefold()


def known_quality(item: GoldenItem, answer: str) -> str | None:
    """ "good", "bad" or None: is `answer` one of the item's annotated known-good or known-bad answers?"""
    a = normalize(answer)
    if any(a == normalize(g) for g in item.good_answers):
        return "good"
    if any(a == normalize(b) for b in item.bad_answers):
        return "bad"
    return None


def _routed_golden(engine: Engine, rubric_name: str) -> list[tuple[str, str, str, str, bool]]:
    """(review item, source, source id, answer, has references) of routed golden items nobody labeled yet."""
    r, i = table(ReviewItem).c, table(Interaction).c
    query = (
        select(r.id, i.source, i.source_id, i.answer, i.reference_answer, i.reference_facts, i.context)
        .join(table(Interaction), i.id == r.interaction_id)
        .where(r.rubric_name == rubric_name, r.labels_done == 0, r.state == ItemState.available.value)
        .where(i.source.like("release:%"))
        .order_by(r.id)
    )
    with session_scope(engine) as session:
        rows = session.execute(query).all()
    return [(rid, src, sid, ans or "", bool(ra or rf or ctx)) for rid, src, sid, ans, ra, rf, ctx in rows]


def label_from_annotations(
    engine: Engine, *, rubric_name: str = "answer_quality", datasets_dir: Path | None = None
) -> AnnotationLabels:
    """Label every routed, unlabeled golden item whose answer the dataset annotated (see the module doc)."""
    rows = _routed_golden(engine, rubric_name)
    with session_scope(engine, write=True) as session:
        ensure_reviewer(session=session, name=ACCOUNT)  # a random password nobody knows
        set_active(session=session, name=ACCOUNT, active=True)  # for this pass only
    counts: dict[str | None, int] = {"good": 0, "bad": 0, None: 0}
    try:
        labeled = _label(ReviewQueue(engine), rows, counts, datasets_dir)
    finally:
        with session_scope(engine, write=True) as session:
            set_active(session=session, name=ACCOUNT, active=False)  # no session can ever log in as it
    result = AnnotationLabels(len(rows), counts["good"], counts["bad"], counts[None], labeled)
    logger.info("%s", result.describe())
    return result


def _label(
    queue: ReviewQueue,
    rows: list[tuple[str, str, str, str, bool]],
    counts: dict[str | None, int],
    datasets_dir: Path | None,
) -> int:
    sets: dict[str, dict[str, GoldenItem]] = {}
    labeled = 0
    for item_id, source, source_id, answer, has_refs in rows:
        match = _GOLDEN.match(source)
        name = match["dataset"] if match else ""
        if name not in sets:
            try:
                sets[name] = {g.id: g for g in load_golden_set(name, datasets_dir=datasets_dir).items}
            except (GoldenSetError, OSError) as exc:
                logger.warning("dataset labels: golden set %r cannot be read (%s); its items stay unlabeled", name, exc)
                sets[name] = {}
        golden = sets[name].get(source_id)
        quality = known_quality(golden, answer) if golden is not None and has_refs else None
        counts[quality] += 1
        if quality is None:
            continue
        shown = queue.lease_item(ACCOUNT, item_id)
        score = {CRITERION: KNOWN_GOOD if quality == "good" else KNOWN_BAD}
        version, via = shown.rubric_version, LabelVia.dataset_annotation.value
        queue.submit(ACCOUNT, item_id, score, rubric_version_shown=version, via=via, partial=True)
        labeled += 1
    return labeled
