"""Read a request-log table through SQLAlchemy, in id or time order after a watermark, in bounded batches."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy import Column, ColumnElement, MetaData, Table, and_, create_engine, false, or_, select
from sqlalchemy.engine import Engine

from judgewatch.traffic.config import SourceConfigError
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.records import RejectedTrafficRow, TrafficRow
from judgewatch.traffic.watermark import Watermark, WatermarkState

logger = logging.getLogger(__name__)


class SqlBatch(NamedTuple):
    """One page of rows in read order; the caller moves the watermark (`state.advance_sql`) row by row."""

    table: str
    id_column: str
    order_column: str
    rows: list[dict[str, Any]]

    def position(self, raw: dict[str, Any]) -> str:
        return f"{self.table}#{self.id_column}={raw[self.id_column]}"


def read_sql(
    mapper: RowMapper, state: WatermarkState, engine: Engine | None = None, until: Watermark | None = None
) -> Iterator[TrafficRow | RejectedTrafficRow]:
    """Every row of `sql_batches`, mapped."""
    for batch in sql_batches(mapper, state, engine, until):
        for raw in batch.rows:
            row_id = raw[batch.id_column]
            state.advance_sql(raw[batch.order_column], row_id)
            yield mapper.map(raw, position=batch.position(raw), fallback_id=str(row_id))


def sql_batches(
    mapper: RowMapper, state: WatermarkState, engine: Engine | None = None, until: Watermark | None = None
) -> Iterator[SqlBatch]:
    """Keyset pagination: each batch is one short query `WHERE (order, id) > watermark ORDER BY order, id`.

    The next query starts after the watermark as the caller left it, so advance it through a batch before
    asking for the next. Rows are read in the order they sort, so a row inserted later with a smaller id (or,
    in time order, an older timestamp) than the watermark is not read; rows with a NULL time are never read in
    time order. `until` (a partition's end) stops at that row, included."""
    config = mapper.config
    own_engine = engine is None
    engine = engine or create_engine(config.database_url())
    try:
        keys = keyset(engine, mapper)
        upper = keys.up_to(until) if until is not None else []
        while True:
            query = select(keys.table).where(*keys.after(state.last_order, state.last_id), *upper)
            query = query.order_by(*keys.ascending).limit(config.batch_size)
            with engine.connect() as conn:
                rows = [dict(record) for record in conn.execute(query).mappings()]
            yield SqlBatch(keys.table.name, keys.id.name, keys.order.name, rows)
            if len(rows) < config.batch_size:
                return
    finally:
        if own_engine:
            engine.dispose()


class Keyset(NamedTuple):
    """The table and the (order, id) pair it is read in: the id alone, or a time column then the id."""

    table: Table
    order: Column[Any]
    id: Column[Any]

    @property
    def by_id(self) -> bool:
        return self.order is self.id

    @property
    def ascending(self) -> list[Column[Any]]:
        return [self.id] if self.by_id else [self.order, self.id]

    @property
    def descending(self) -> list[Any]:
        return [column.desc() for column in self.ascending]

    def after(self, last_order: object, last_id: object) -> list[ColumnElement[bool]]:
        """The rows after a watermark's (order, id); every row (with a time, in time order) without one."""
        if last_id is None:
            return [] if self.by_id else [self.order.is_not(None)]
        row_id = _typed(last_id, self.id)
        if self.by_id:
            return [self.id > row_id]
        order = _typed(last_order, self.order)
        return [or_(self.order > order, and_(self.order == order, self.id > row_id))]

    def up_to(self, mark: Watermark) -> list[ColumnElement[bool]]:
        """The rows at or before a watermark's (order, id)."""
        if mark.last_id is None:
            return [false()]
        row_id = _typed(mark.last_id, self.id)
        if self.by_id:
            return [self.id <= row_id]
        order = _typed(mark.last_order, self.order)
        return [or_(self.order < order, and_(self.order == order, self.id <= row_id))]


def keyset(engine: Engine, mapper: RowMapper) -> Keyset:
    """The source's table, reflected, and its (order, id) columns."""
    config = mapper.config
    schema, _, name = (config.table or "").rpartition(".")
    table = Table(name, MetaData(schema=schema or None), autoload_with=engine)
    id_col = _column(table, str(config.mapping.id))
    order_col = _time_column(table, mapper) if config.order_by == "time" else id_col
    return Keyset(table, order_col, id_col)


def _column(table: Table, name: str) -> Column[Any]:
    if name not in table.c:
        raise SourceConfigError(f"table {table.name} has no column {name!r} (columns: {list(table.c.keys())})")
    return table.c[name]


def _time_column(table: Table, mapper: RowMapper) -> Column[Any]:
    """The first plain-column entry of `mapping.timestamp` that the table has."""
    for segments in mapper.paths["timestamp"]:
        if len(segments) == 1 and segments[0] in table.c:
            return table.c[segments[0]]
    raise SourceConfigError(
        f"order_by: time needs `mapping.timestamp` to name a column of {table.name} (columns: {list(table.c.keys())})"
    )


def _typed(value: object, column: Column[Any]) -> object:
    """A watermark value (JSON-native) back as the column's Python type, so it binds and compares right."""
    if value is None:
        return None
    try:
        kind = column.type.python_type
    except NotImplementedError:
        return value
    if isinstance(value, str):
        if kind is datetime:
            return datetime.fromisoformat(value)
        if kind is date:
            return date.fromisoformat(value)
        if kind is Decimal:
            return Decimal(value)
        if kind is int:
            return int(value)
    return value
