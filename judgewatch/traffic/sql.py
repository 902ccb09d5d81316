"""Read a request-log table through SQLAlchemy, in id or time order after a watermark, in bounded batches."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy import Column, MetaData, Table, and_, create_engine, or_, select
from sqlalchemy.engine import Engine

from judgewatch.traffic.config import SourceConfigError
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.records import RejectedTrafficRow, TrafficRow
from judgewatch.traffic.watermark import WatermarkState

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
    mapper: RowMapper, state: WatermarkState, engine: Engine | None = None
) -> Iterator[TrafficRow | RejectedTrafficRow]:
    """Every row of `sql_batches`, mapped."""
    for batch in sql_batches(mapper, state, engine):
        for raw in batch.rows:
            row_id = raw[batch.id_column]
            state.advance_sql(raw[batch.order_column], row_id)
            yield mapper.map(raw, position=batch.position(raw), fallback_id=str(row_id))


def sql_batches(mapper: RowMapper, state: WatermarkState, engine: Engine | None = None) -> Iterator[SqlBatch]:
    """Keyset pagination: each batch is one short query `WHERE (order, id) > watermark ORDER BY order, id`.

    The next query starts after the watermark as the caller left it, so advance it through a batch before
    asking for the next. Rows are read in the order they sort, so a row inserted later with a smaller id (or,
    in time order, an older timestamp) than the watermark is not read; rows with a NULL time are never read in
    time order.
    """
    config = mapper.config
    own_engine = engine is None
    engine = engine or create_engine(config.database_url())
    try:
        table = _reflect(engine, config.table or "")
        id_col = _column(table, str(config.mapping.id))
        order_col = _time_column(table, mapper) if config.order_by == "time" else id_col
        while True:
            query = select(table).order_by(order_col, id_col).limit(config.batch_size)
            if state.last_id is not None:
                last_id = _typed(state.last_id, id_col)
                if order_col is id_col:
                    query = query.where(id_col > last_id)
                else:
                    last_order = _typed(state.last_order, order_col)
                    query = query.where(or_(order_col > last_order, and_(order_col == last_order, id_col > last_id)))
            elif order_col is not id_col:
                query = query.where(order_col.is_not(None))
            with engine.connect() as conn:
                rows = [dict(record) for record in conn.execute(query).mappings()]
            yield SqlBatch(table.name, id_col.name, order_col.name, rows)
            if len(rows) < config.batch_size:
                return
    finally:
        if own_engine:
            engine.dispose()


def _reflect(engine: Engine, name: str) -> Table:
    schema, _, table = name.rpartition(".")
    return Table(table, MetaData(schema=schema or None), autoload_with=engine)


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
