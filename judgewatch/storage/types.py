"""Column types and ids shared by every table: UTC timestamps, portable JSON, deterministic ids, and the
judge and rubric identity columns that verdict and trust rows both carry."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine
from typing_extensions import override

from judgewatch.contract.verdicts import JudgeIdentity, RubricIdentity
from judgewatch.hashing import stable_id as stable_id  # the storage modules' ids; defined once there


def utcnow() -> datetime:
    return datetime.now(UTC)


def identity_columns(judge: JudgeIdentity, rubric: RubricIdentity) -> dict[str, Any]:
    """The `judge_*` and `rubric_*` columns of a row measured by `judge` under `rubric`."""
    return {
        "judge_kind": judge.kind,
        "judge_name": judge.name,
        "judge_endpoint": judge.endpoint,
        "judge_config_hash": judge.config_hash,
        "rubric_name": rubric.name,
        "rubric_version": rubric.version,
        "rubric_hash": rubric.hash,
    }


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in, timezone-aware UTC out, also on SQLite (which stores no offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        value = self.process_result_value(value, dialect)  # in UTC (a naive value is taken as UTC already)
        return value.replace(tzinfo=None) if value is not None and dialect.name == "sqlite" else value

    @override
    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class JSONValue(TypeDecorator[Any]):
    """JSON on SQLite, JSONB on PostgreSQL."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":  # PostgreSQL's dialect module loads only for a PostgreSQL store
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())
