"""Trust records: how well one judge configuration did on one body of evidence, when it was measured."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel
from sqlmodel import Field, Session, SQLModel

from judgewatch.storage.db import select_matching, table
from judgewatch.storage.types import JSONValue, UTCDateTime, stable_id, utcnow


class TrustEvidence(StrEnum):
    """What a trust record rests on."""

    known_answers = "known_answers"  # a golden set's known-good vs known-bad answers, scored one by one
    pairwise = "pairwise"  # the same answers compared A vs B, in both orders
    human_labels = "human_labels"  # agreement with human labels (calibration), per tier
    bias_probes = "bias_probes"  # answers changed in ways that must not matter (length, confidence...): shifts


class TrustBasis(BaseModel):
    """What one trust measurement rests on: the kind of evidence, its data set and revision, the tier, the size."""

    evidence: str  # a TrustEvidence value
    dataset: str | None = None  # golden set name, or the label source for human labels
    dataset_revision: str | None = None
    tier: str | None = None
    n_items: int = 0


class TrustRecord(SQLModel, table=True):
    __tablename__ = "trust_record"

    id: str = Field(primary_key=True, max_length=32)
    judge_kind: str
    judge_name: str = Field(index=True)
    judge_endpoint: str | None = None
    judge_config_hash: str = Field(index=True)
    rubric_name: str = Field(index=True)
    rubric_version: str
    rubric_hash: str
    evidence: str  # the TrustBasis fields, kept in this place so the columns and JSON keep their order
    dataset: str | None = None
    dataset_revision: str | None = None
    tier: str | None = None
    n_items: int = 0
    trustworthy: bool | None = None  # the policy's verdict on this record alone, when it was measured
    summary: str = ""
    figures: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)
    policy: dict[str, Any] = Field(default_factory=dict, sa_type=JSONValue)
    measured_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime, index=True)

    def basis(self) -> TrustBasis:
        """What this record rests on."""
        return TrustBasis.model_validate(self, from_attributes=True)


def save_trust_record(*, session: Session, record: TrustRecord) -> TrustRecord:
    """Insert or replace the record with the same judge configuration, rubric, evidence, data revision and tier
    (its id is derived from them, never taken from the caller)."""
    basis = (record.evidence, record.dataset or "", record.dataset_revision or "", record.tier or "")
    record.id = stable_id("trust", record.judge_config_hash, record.rubric_hash, *basis)
    merged = session.merge(record)
    session.flush()
    return merged


def get_trust_records(
    *,
    session: Session,
    judge_config_hash: str | None = None,
    judge_name: str | None = None,
    rubric_name: str | None = None,
    evidence: str | None = None,
    dataset: str | None = None,
) -> list[TrustRecord]:
    """Records matching every given filter, newest measurement first."""
    tbl = table(TrustRecord)
    query = select_matching(
        TrustRecord,
        judge_config_hash=judge_config_hash,
        judge_name=judge_name,
        rubric_name=rubric_name,
        evidence=evidence,
        dataset=dataset,
    )
    return list(session.scalars(query.order_by(tbl.c.measured_at.desc(), tbl.c.id)))
