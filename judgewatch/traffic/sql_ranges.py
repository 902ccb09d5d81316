"""Split a table's rows after a watermark into contiguous (order, id) ranges, for partitions read at once; how the
cuts are found and how each range's de-duplication window is warmed: docs/sampling.md ("SQL partitions")."""

from __future__ import annotations

import logging
from datetime import date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy import Connection, create_engine, func, select
from sqlalchemy.engine import Engine

from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.sql import Keyset, keyset
from judgewatch.traffic.watermark import Watermark, WatermarkState

logger = logging.getLogger(__name__)

Key = tuple[Any, Any]  # (order value, id) of one row


class KeyRange(NamedTuple):
    """Rows after `since` up to `until` (None: to the end); `warmup`: the rows after it up to `since` warm the
    de-duplication window (`Watermark()`: from the table's start; None: no warm-up, the first range)."""

    since: Watermark | None
    until: Watermark | None
    warmup: Watermark | None


def key_ranges(
    config: SourceConfig, since: Watermark | None, parts: int, window_rows: int, engine: Engine | None = None
) -> list[KeyRange]:
    """At most `parts` ranges covering every row after `since`; one when there are fewer rows than parts."""
    own_engine = engine is None
    engine = engine or create_engine(config.database_url())
    try:
        keys = keyset(engine, RowMapper(config))
        after = keys.after(since.last_order, since.last_id) if since else keys.after(None, None)
        with engine.connect() as conn:
            cuts = _cuts(conn, keys, after, parts) if parts > 1 else []
            ends = [_mark(key) for key in cuts]
            warm = [_warmup(conn, keys, after, end, window_rows, since) if window_rows else None for end in ends]
    finally:
        if own_engine:
            engine.dispose()
    # each range runs from the end of the one before to its own cut (the last to the table's end)
    ranges = [KeyRange(*bounds) for bounds in zip([since, *ends], [*ends, None], [None, *warm], strict=True)]
    logger.info("table %s: %d ranges after %s", keys.table.name, len(ranges), since)
    return ranges


def _cuts(conn: Connection, keys: Keyset, after: list[Any], parts: int) -> list[Key]:
    """The last row of each range but the last, in order, distinct, none of them the table's last row."""
    lo, hi = conn.execute(select(func.min(keys.order), func.max(keys.order)).where(*after)).one()
    if lo is None:
        return []
    if _spaced(lo):
        found = [_last_at_or_before(conn, keys, after, _between(lo, hi, k, parts)) for k in range(1, parts)]
    else:
        n = conn.execute(select(func.count()).select_from(keys.table).where(*after)).scalar_one()
        offsets = sorted({k * n // parts - 1 for k in range(1, parts)} - {-1})
        ascending = _keys(keys, after).order_by(*keys.ascending)
        found = [_key(conn.execute(ascending.offset(i).limit(1)).one()) for i in offsets]
    last = _key(conn.execute(_keys(keys, after).order_by(*keys.descending).limit(1)).one())
    cuts: list[Key] = []
    for key in found:  # in keyset order already; equal neighbours are one cut
        if key is not None and key != last and (not cuts or key != cuts[-1]):
            cuts.append(key)
    return cuts


def _spaced(value: object) -> bool:
    """Can evenly spaced values be computed between two of these?"""
    return isinstance(value, int | float | Decimal | datetime | date) and not isinstance(value, bool)


def _between(lo: Any, hi: Any, k: int, parts: int) -> Any:
    if isinstance(lo, int):
        return lo + (hi - lo) * k // parts
    return lo + (hi - lo) * k / parts


def _keys(keys: Keyset, where: list[Any]) -> Any:
    return select(*keys.ascending).where(*where)


def _key(row: Any) -> Key:
    return (row[0], row[-1])  # a single id column is both the order and the id


def _last_at_or_before(conn: Connection, keys: Keyset, after: list[Any], value: Any) -> Key | None:
    row = conn.execute(_keys(keys, [*after, keys.order <= value]).order_by(*keys.descending).limit(1)).one_or_none()
    return None if row is None else _key(row)


def _mark(key: Key) -> Watermark:
    state = WatermarkState(None)
    state.advance_sql(key[0], key[1])
    return state.snapshot()


def _warmup(
    conn: Connection, keys: Keyset, after: list[Any], end: Watermark, window_rows: int, since: Watermark | None
) -> Watermark:
    """Where the last `window_rows` rows up to `end` (after `since`) start: the row just before them."""
    rows = _keys(keys, [*after, *keys.up_to(end)]).order_by(*keys.descending).offset(window_rows).limit(1)
    before = conn.execute(rows).one_or_none()
    if before is None:
        return since or Watermark()
    return _mark(_key(before))
