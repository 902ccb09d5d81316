"""The calibration data: one pandas row per (scored verdict, criterion), the judge's score and the human label.

`judge` is the score the estimates read (`load_scores(reading=...)`: the integer the judge wrote, or its
probability-weighted score where it has one). A human label belongs to the interaction, not to the verdict that
routed it (reviewers never see the verdict), so a new judge configuration's verdicts meet the labels already
given; of several labels, an adjudicated score wins, else the first submitted."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from typing import Literal

import numpy as np
import pandas as pd
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from judgewatch.calibration.estimands import GOLDEN_SOURCE
from judgewatch.contract.verdicts import VerdictStatus
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import NOT_BY_PEOPLE, ReviewItem, ReviewLabel
from judgewatch.storage.verdicts import CriterionScore, VerdictRecord, is_current

NO_TIER = "(no tier)"
ScoreReadingChoice = Literal["integer", "expected"]
LABEL_COLUMNS = ["human", "inclusion_prob", "pick_reason", "label_via", "reviewer"]


def pair_key(source: pd.Series, source_id: pd.Series, interaction_id: pd.Series) -> pd.Series:
    """What makes two tiers' rows the same item: a golden item of one release (`release:R/TIER/SET` sources
    become `R/SET#id`); any other interaction only pairs with itself, since tiers answer different traffic."""
    parts = source.str.extract(GOLDEN_SOURCE)
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
    interaction_ids: list[str] | None = None,
    reading: ScoreReadingChoice = "integer",
) -> pd.DataFrame:
    """Per (scored verdict, criterion with a score): judge score, tier, time, and the human label if any.
    `reading="expected"`: `judge` is the probability-weighted score where the verdict carries one (`judge_reading` says
    which, per row; `judge_integer` keeps the integer). `at` is the interaction's time, which `since` filters on.
    `sample_prob` and `stratum` are the sampling pick's (traffic only); `route`, `language`, `prompt_chars`,
    `department` and `category` describe the request mix a tier served (never the answer, which the tier produced)."""
    v, c, i = table(VerdictRecord).c, table(CriterionScore).c, table(Interaction).c
    meta = i["metadata"]
    query = (
        select(
            v.id.label("verdict_id"), v.interaction_id, i.source, i.source_id, i.tier, i.release,
            i.created_at.label("at"), v.judge_config_hash, v.rubric_version, c.criterion, c.score.label("judge"),
            i.route, i.language, func.length(i.answer).label("answer_chars"),
            func.length(i.question).label("prompt_chars"), i.department, meta["category"].as_string().label("category"),
            meta["inclusion_probability"].as_float().label("sample_prob"), meta["stratum"].as_string().label("stratum"),
            c.expected.label("judge_expected"),
        )
        .join(table(CriterionScore), c.verdict_id == v.id)
        .join(table(Interaction), i.id == v.interaction_id)
        .where(v.rubric_name == rubric_name, v.status == VerdictStatus.scored.value, c.score.is_not(None))
        .where(is_current())  # a superseded (fallback) verdict is history: never counted beside its replacement
    )  # fmt: skip
    for column, value in ((v.rubric_version, rubric_version), (v.judge_config_hash, judge_config_hash)):
        if value is not None:
            query = query.where(column == value)
    if since is not None:
        query = query.where(i.created_at >= since)
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
    """Long frame of counted human labels (no skips, no bare flags): one row per (label, criterion), read in `engine`'s
    own session or in the session given (which sees its own transaction's writes). With `first_only`, one label per item
    and criterion: the adjudicated score, else the first submitted. `people_only`: no label a program made or derived
    from a dataset's annotations (`storage.review.NOT_BY_PEOPLE`)."""
    r, lab, i = table(ReviewItem).c, table(ReviewLabel).c, table(Interaction).c
    query = (
        select(
            r.id.label("review_item_id"), r.interaction_id, r.verdict_id, i.tier, r.rubric_version, lab.reviewer,
            lab.via, lab.submitted_at, r.inclusion_probability.label("inclusion_prob"), r.pick_reason,
            r.final_scores, lab.scores,  # these two last: the label's scores, read below
        )
        .join(table(ReviewLabel), lab.review_item_id == r.id)
        .join(table(Interaction), i.id == r.interaction_id)
        .where(r.rubric_name == rubric_name, lab.skipped_reason.is_(None), lab.flagged.is_(False))
    )  # fmt: skip
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
