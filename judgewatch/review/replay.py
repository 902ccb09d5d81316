"""Replay labels people already gave through the same service layer the review app uses (lease, then submit,
skip or flag, as the reviewer; stored with via="replay"), and PandaLM's 999 human-annotated pairs as
interactions, the baseline judges' verdicts and review items, with the three annotators' labels replayed."""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason, Verdict, VerdictStatus
from judgewatch.review.accounts import ensure_reviewer
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.routing import Route, insert_review_items, item_row
from judgewatch.review.rubrics import pandalm_preference_rubric
from judgewatch.review.sql import ITEMS
from judgewatch.review.views import ReviewError
from judgewatch.stats.pandalm import TESTSET, load_pandalm
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.review import PickReason
from judgewatch.storage.types import stable_id, utcnow
from judgewatch.storage.verdicts import upsert_verdicts, verdict_id

logger = logging.getLogger(__name__)

PANDALM_SOURCE = "pandalm:testset-v1"
# PandaLM codes (1 = response 1 better, 2 = response 2 better, 0 = tie) on the review rubric's 1-3 scale.
PANDALM_LEVEL = {1: 1, 0: 2, 2: 3}


@dataclass
class ReplayReport:
    rows: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # submitted / skipped / flagged / refused
    problems: list[str] = field(default_factory=list)  # "line N: why", first 50 kept

    def refuse(self, line: int, why: str) -> None:
        self.outcomes["refused"] += 1
        if len(self.problems) < 50:
            self.problems.append(f"line {line}: {why}")


def read_label_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON: {exc.msg}") from exc
    return rows


def _item_id(queue: ReviewQueue, row: dict[str, Any]) -> str:
    if row.get("item_id"):
        return str(row["item_id"])
    if not row.get("interaction_id"):
        raise ReviewError("needs item_id or interaction_id")
    query = select(ITEMS.c.id).where(ITEMS.c.interaction_id == str(row["interaction_id"]))
    if row.get("rubric"):
        query = query.where(ITEMS.c.rubric_name == str(row["rubric"]))
    with session_scope(queue.engine) as session:
        ids = list(session.execute(query).scalars())
    if len(ids) != 1:
        raise ReviewError(f"interaction {row['interaction_id']}: {len(ids)} review items (give item_id or rubric)")
    return str(ids[0])


def replay_labels(queue: ReviewQueue, rows: Iterable[dict[str, Any]]) -> ReplayReport:
    """Lease and label each row's item as its reviewer; a refused row is counted and reported, not fatal."""
    report = ReplayReport()
    known: set[str] = set()
    for line, row in enumerate(rows, start=1):
        report.rows += 1
        reviewer = str(row.get("reviewer") or "")
        item_id = None
        try:
            if reviewer not in known:
                with session_scope(queue.engine) as session:
                    ensure_reviewer(session=session, name=reviewer)
                known.add(reviewer)
            item_id = _item_id(queue, row)
            shown = queue.lease_item(reviewer, item_id)
            comment = str(row.get("comment") or "")
            if row.get("skipped_reason"):
                queue.skip(reviewer, item_id, str(row["skipped_reason"]), via="replay")
                report.outcomes["skipped"] += 1
            elif row.get("flagged"):
                queue.flag(reviewer, item_id, comment, scores=row.get("scores") or {}, via="replay")
                report.outcomes["flagged"] += 1
            else:
                scores = row.get("scores") or {}
                version = shown.rubric_version
                queue.submit(reviewer, item_id, scores, rubric_version_shown=version, comment=comment, via="replay")
                report.outcomes["submitted"] += 1
        except (ReviewError, ValueError) as exc:
            report.refuse(line, str(exc))
            if item_id is not None:
                queue.release(reviewer, item_id)  # a refused label must not keep the item out of the queue
    logger.info("replayed %d rows: %s", report.rows, dict(report.outcomes))
    return report


def _pandalm_question(row: dict[str, Any]) -> str:
    extra = str(row.get("input") or "").strip()
    return str(row["instruction"]) + (f"\n\nInput:\n{extra}" if extra else "")


def _pandalm_answer(row: dict[str, Any]) -> str:
    return f"**Response 1**\n\n{row['response1']}\n\n---\n\n**Response 2**\n\n{row['response2']}"


def _baseline_verdict(idx: int, judge: str, code: float) -> Verdict:
    rubric = pandalm_preference_rubric().identity
    identity = JudgeIdentity(kind="baseline", name=judge, config_hash=stable_id("pandalm-baseline", judge)[:16])
    if math.isnan(code):
        return Verdict.unscored(str(idx), UnscoredReason.parse_error, judge=identity, rubric=rubric)
    level = PANDALM_LEVEL[int(code)]
    reason = f"{judge} verdict from the PandaLM repository"
    return Verdict(item_id=str(idx), status=VerdictStatus.scored, scores={"preference": level}, overall=float(level),
                   reason=reason, judge=identity, rubric=rubric)  # fmt: skip


def prepare_pandalm(
    engine: Engine, folder: Path, *, limit: int | None = None, judge: str = "gpt-3.5-turbo"
) -> list[dict[str, Any]]:
    """Store the pairs as interactions, both baseline judges' verdicts, and one review item per pair (routed from
    `judge`'s verdict, inclusion probability 1, three labels needed); returns the annotators' label rows. Idempotent:
    preparing again changes nothing and returns the same rows."""
    tests = json.loads((folder / TESTSET).read_text(encoding="utf-8"))[:limit]
    baselines = load_pandalm(folder).judges  # each judge's code per pair index, NaN where it gave none
    if judge not in baselines:
        raise ValueError(f"unknown PandaLM baseline judge {judge!r} (use {', '.join(baselines)})")
    rubric = pandalm_preference_rubric()
    now = utcnow()
    interactions: list[Interaction] = []
    verdicts: list[tuple[str, Verdict]] = []
    items: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for t in tests:
        idx = int(t["idx"])
        iid = interaction_id(PANDALM_SOURCE, str(idx))
        meta = {"cmp_key": t.get("cmp_key"), "motivation_app": t.get("motivation_app")}
        interactions.append(
            Interaction(id=iid, source=PANDALM_SOURCE, source_id=str(idx), question=_pandalm_question(t),
                        answer=_pandalm_answer(t), language="en", meta=meta, created_at=now)
        )  # fmt: skip
        by_judge = {name: _baseline_verdict(idx, name, codes[idx]) for name, codes in baselines.items()}
        verdicts.extend((iid, v) for v in by_judge.values())
        routed = by_judge[judge]
        vid = verdict_id(iid, routed.rubric.hash, routed.judge.config_hash)
        item = item_row(vid, iid, rubric.name, rubric.version, Route(PickReason.uniform, 1.0, 3), now=now)
        items.append(item)
        for k in (1, 2, 3):
            scores = {"preference": PANDALM_LEVEL[int(t[f"annotator{k}"])]}
            rows.append({"item_id": item["id"], "reviewer": f"pandalm-annotator{k}", "scores": scores})
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=interactions, update_columns=["question", "answer"])
        upsert_verdicts(session=session, run_id=None, verdicts=verdicts)
        created = insert_review_items(session=session, rows=items)
    logger.info("pandalm: %d pairs stored, %d new review items (judge shown: %s)", len(tests), created, judge)
    return rows


def replay_pandalm(
    queue: ReviewQueue, folder: Path, *, limit: int | None = None, judge: str = "gpt-3.5-turbo"
) -> ReplayReport:
    """PandaLM's three human annotators, replayed as reviewers pandalm-annotator1..3 through the queue."""
    return replay_labels(queue, prepare_pandalm(queue.engine, folder, limit=limit, judge=judge))
