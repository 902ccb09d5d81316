"""The calibration data: every scored verdict's per-criterion judge score, with the human label where one exists.

One long pandas frame, one row per (verdict, criterion): `judge` is the judge's score (`judge_integer` the integer
it wrote, `judge_expected` its probability-weighted score when the verdict has one; `load_scores(reading=...)`
says which of the two `judge` is, so estimates switch reading by a choice, never silently); `human`, `inclusion_prob`,
`pick_reason` and `label_via` are set on the rows whose interaction was routed to people and labeled (NaN/None
elsewhere). A human label belongs to the interaction, not to the verdict that routed it (reviewers never see
the verdict), so a new judge configuration's verdicts meet the labels already given. When an item has several
labels, an adjudicated score wins, else the first label submitted: agreement needs one integer per item.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
import pandas as pd
from sqlalchemy import Engine, func, or_, select
from sqlalchemy.orm import Session

from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity, VerdictStatus
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import NOT_BY_PEOPLE, ReviewItem, ReviewLabel
from judgewatch.storage.runs import EvalRun, RunKind
from judgewatch.storage.verdicts import CriterionScore, VerdictRecord, is_current

logger = logging.getLogger(__name__)

NO_TIER = "(no tier)"
ScoreReadingChoice = Literal["integer", "expected"]
LABEL_COLUMNS = ["human", "inclusion_prob", "pick_reason", "label_via", "reviewer"]


@dataclass(frozen=True, slots=True)
class Series:
    """The judge configuration and rubric version a set of numbers rests on."""

    judge: JudgeIdentity
    rubric: RubricIdentity
    last_verdict_at: datetime


def current_series(
    engine: Engine,
    *,
    rubric_name: str,
    rubric_version: str | None = None,
    judge_config_hash: str | None = None,
) -> Series | None:
    """The judge configuration (and rubric version) with the most recent scored verdict under `rubric_name`.

    Verdicts of anchor re-judging runs do not count: re-judging the anchors with a candidate configuration
    must not make it the series every number rests on.
    """
    runs_t = table(EvalRun)
    v, runs = table(VerdictRecord).c, runs_t.c
    query = (
        select(
            v.judge_kind,
            v.judge_name,
            v.judge_endpoint,
            v.judge_config_hash,
            v.rubric_version,
            v.rubric_hash,
            v.updated_at,
        )
        .outerjoin(runs_t, runs.id == v.run_id)
        .where(v.rubric_name == rubric_name, v.status == VerdictStatus.scored.value, is_current())
        .where(or_(runs.kind.is_(None), runs.kind != RunKind.anchor.value))
        .order_by(v.updated_at.desc(), v.id)
        .limit(1)
    )
    for column, value in ((v.rubric_version, rubric_version), (v.judge_config_hash, judge_config_hash)):
        if value is not None:
            query = query.where(column == value)
    with session_scope(engine) as session:
        row = session.execute(query).first()
    if row is None:
        return None
    kind, name, endpoint, config_hash, version, rubric_hash, at = row
    judge = JudgeIdentity(kind=kind, name=name, endpoint=endpoint, config_hash=config_hash)
    return Series(judge, RubricIdentity(name=rubric_name, version=version, hash=rubric_hash), at)


def pair_key(source: pd.Series, source_id: pd.Series, interaction_id: pd.Series) -> pd.Series:
    """What makes two tiers' rows the same item: a golden item of one release (`release:R/TIER/SET` sources

    become `R/SET#id`); any other interaction only pairs with itself, since tiers answer different traffic.
    """
    parts = source.str.extract(r"^release:(?P<release>[^/]+)/[^/]+/(?P<dataset>.+)$")
    golden = parts["release"].notna()
    return pd.Series(
        np.where(golden, parts["release"] + "/" + parts["dataset"] + "#" + source_id, interaction_id),
        index=source.index,
    )


def load_scores(
    engine: Engine,
    *,
    rubric_name: str,
    rubric_version: str | None = None,
    judge_config_hash: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    interaction_ids: list[str] | None = None,
    reading: ScoreReadingChoice = "integer",
) -> pd.DataFrame:
    """Per (scored verdict, criterion with a score): judge score, tier, time, and the human label if any.

    `reading="expected"`: `judge` is the probability-weighted score where the verdict carries one, the integer
    elsewhere (`judge_reading` says which, per row); the default keeps the integers.

    `at` is the interaction's time (when the traffic happened); `since`/`until` filter on it. `sample_prob` and
    `stratum` are the sampling pick's (traffic only, NaN/None elsewhere); `route`, `language`, `prompt_chars`,
    `department` and `category` (the interaction metadata's) describe the request mix a tier served; the answer's
    length (`answer_chars`) is what the tier produced and never enters the mix.
    """
    scores_t, interactions_t = table(CriterionScore), table(Interaction)
    v, c, i = table(VerdictRecord).c, scores_t.c, interactions_t.c
    query = (
        select(
            v.id.label("verdict_id"),
            v.interaction_id,
            i.source,
            i.source_id,
            i.tier,
            i.release,
            i.created_at.label("at"),
            v.judge_config_hash,
            v.rubric_version,
            c.criterion,
            c.score.label("judge"),
            i.route,
            i.language,
            func.length(i.answer).label("answer_chars"),
            func.length(i.question).label("prompt_chars"),
            i.department,
            i["metadata"]["category"].as_string().label("category"),
            i["metadata"]["inclusion_probability"].as_float().label("sample_prob"),
            i["metadata"]["stratum"].as_string().label("stratum"),
            c.expected.label("judge_expected"),
        )
        .join(scores_t, c.verdict_id == v.id)
        .join(interactions_t, i.id == v.interaction_id)
        .where(v.rubric_name == rubric_name, v.status == VerdictStatus.scored.value, c.score.is_not(None))
        .where(is_current())  # a superseded (fallback) verdict is history: never counted beside its replacement
    )
    for column, value in ((v.rubric_version, rubric_version), (v.judge_config_hash, judge_config_hash)):
        if value is not None:
            query = query.where(column == value)
    if since is not None:
        query = query.where(i.created_at >= since)
    if until is not None:
        query = query.where(i.created_at < until)
    if interaction_ids is not None:
        query = query.where(v.interaction_id.in_(interaction_ids))
    with session_scope(engine) as session:
        result = session.execute(query)
        frame = pd.DataFrame(result.all(), columns=list(result.keys()))
    frame["judge"] = frame["judge"].astype("float64")
    frame["judge_integer"] = frame["judge"]
    frame["judge_expected"] = pd.to_numeric(frame["judge_expected"], errors="coerce").astype("float64")
    weighted = frame["judge_expected"].notna() if reading == "expected" else pd.Series(False, index=frame.index)
    frame["judge"] = frame["judge"].where(~weighted, frame["judge_expected"])
    frame["judge_reading"] = np.where(weighted, "expected", "integer")
    frame["sample_prob"] = pd.to_numeric(frame["sample_prob"], errors="coerce").astype("float64")
    frame["tier"] = frame["tier"].fillna(NO_TIER).astype(str)
    frame["at"] = pd.to_datetime(frame["at"], utc=True)
    frame["item_key"] = pair_key(frame["source"], frame["source_id"], frame["interaction_id"])
    labels = load_labels(engine, rubric_name=rubric_name, rubric_version=rubric_version, first_only=True)
    return attach_labels(frame, labels)


def count_scored(engine: Engine, *, rubric_name: str, since: datetime | None = None) -> int:
    """Scored verdicts under `rubric_name` (of every judge configuration) on interactions since `since`."""
    v, i = table(VerdictRecord).c, table(Interaction).c
    query = (
        select(func.count())
        .select_from(table(VerdictRecord).join(table(Interaction), i.id == v.interaction_id))
        .where(v.rubric_name == rubric_name, v.status == VerdictStatus.scored.value, is_current())
    )
    if since is not None:
        query = query.where(i.created_at >= since)
    with session_scope(engine) as session:
        return int(session.execute(query).scalar_one())


def load_labels(
    engine: Engine | Session,
    *,
    rubric_name: str,
    rubric_version: str | None = None,
    first_only: bool = False,
    people_only: bool = False,
) -> pd.DataFrame:
    """Long frame of counted human labels (no skips, no bare flags): one row per (label, criterion), read in
    `engine`'s own session or in the session given (which sees its own transaction's writes).

    Columns: review_item_id, interaction_id, verdict_id, tier, rubric_version, reviewer, via, submitted_at,
    inclusion_prob, pick_reason, criterion, human, adjudicated. With `first_only`, one label per item and
    criterion: the adjudicated score, else the first label submitted. `people_only`: no label a program made or
    derived from a dataset's annotations (`storage.review.NOT_BY_PEOPLE`).
    """
    labels_t, interactions_t = table(ReviewLabel), table(Interaction)
    r, lab, i = table(ReviewItem).c, labels_t.c, interactions_t.c
    query = (
        select(
            r.id.label("review_item_id"),
            r.interaction_id,
            r.verdict_id,
            i.tier,
            r.rubric_version,
            lab.reviewer,
            lab.via,
            lab.submitted_at,
            r.inclusion_probability.label("inclusion_prob"),
            r.pick_reason,
            r.final_scores,  # these two last: the label's scores, read below
            lab.scores,
        )
        .join(labels_t, lab.review_item_id == r.id)
        .join(interactions_t, i.id == r.interaction_id)
        .where(r.rubric_name == rubric_name, lab.skipped_reason.is_(None), lab.flagged.is_(False))
    )
    if rubric_version is not None:
        query = query.where(r.rubric_version == rubric_version)
    if people_only:
        query = query.where(lab.via.not_in(NOT_BY_PEOPLE))
    with nullcontext(engine) if isinstance(engine, Session) else session_scope(engine) as session:
        result = session.execute(query)
        keys, rows = list(result.keys())[:-2], result.all()
    records: list[tuple[object, ...]] = []
    for row in rows:
        *head, final, scores = row
        chosen = final if (first_only and final) else scores
        records.extend((*head, bool(first_only and final), name, value) for name, value in (chosen or {}).items())
    frame = pd.DataFrame(records, columns=[*keys, "adjudicated", "criterion", "human"])
    frame["human"] = pd.to_numeric(frame["human"], errors="coerce").astype("float64")
    frame["tier"] = frame["tier"].fillna(NO_TIER).astype(str)
    frame["submitted_at"] = pd.to_datetime(frame["submitted_at"], utc=True)
    frame = frame.dropna(subset=["human"])
    if first_only:
        frame = frame.sort_values(["adjudicated", "submitted_at"], ascending=[False, True], kind="stable")
        frame = frame.drop_duplicates(["review_item_id", "criterion"])
    return frame.reset_index(drop=True)


def attach_labels(scores: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Left-join one human label per (verdict, criterion): from the item this verdict routed, else the oldest
    item of the same interaction and rubric version."""
    out = scores.copy()
    if labels.empty or scores.empty:
        for name in LABEL_COLUMNS:
            out[name] = np.nan if name in ("human", "inclusion_prob") else None
        return out
    keep = ["interaction_id", "rubric_version", "criterion", "verdict_id", "submitted_at", *LABEL_COLUMNS]
    lab = labels.rename(columns={"via": "label_via"})[keep].rename(columns={"verdict_id": "routed_by"})
    merged = out.reset_index().merge(lab, on=["interaction_id", "rubric_version", "criterion"], how="left")
    merged["own"] = merged["routed_by"] == merged["verdict_id"]
    merged = merged.sort_values(["index", "own", "submitted_at"], ascending=[True, False, True], kind="stable")
    merged = merged.drop_duplicates("index").set_index("index").sort_index()
    merged.index.name = None
    return merged.drop(columns=["routed_by", "own", "submitted_at"])


def labeled(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows with both a judge score and a human label."""
    return frame[frame["human"].notna()]
