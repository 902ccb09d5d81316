"""Columnar batch readers: JSONL lines parsed a block at a time by pyarrow, Parquet batches kept as columns.

A `RowBlock` maps a row in full only on request (`item(i)`, the row path's own mapping). What the block path would not
read exactly as the row path does is read by the row path's own line code, so quarantine records keep their line
numbers and a bad row never costs the rows around it."""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from judgewatch.traffic.columnar.line_blocks import LineBlock
from judgewatch.traffic.columnar.line_scan import MappedReader
from judgewatch.traffic.files import (
    Item,
    OpenLog,
    drain,
    line_item,
    map_binary_safe,
    open_jsonl,
    parquet_batches,
)
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.records import QuarantineReason, RejectedTrafficRow
from judgewatch.traffic.watermark import Watermark, WatermarkState

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from judgewatch.traffic.sql import SqlBatch

logger = logging.getLogger(__name__)

BLOCK_BYTES = 1 << 24  # JSONL bytes per columnar block (about 20,000 gateway-log lines)
BLOCK_ROWS = 32_768  # Parquet rows per columnar block
ROW_PATH_LINES = 256  # a JSONL block pyarrow refuses is halved down to this many lines, then mapped line by line


class RowBlock:
    """A batch of rows as columns; `item(i)` maps row i as the row path would, `mark(i)` moves the watermark."""

    def __init__(
        self,
        table: pa.Table,
        positions: Callable[[int], tuple[str, int | None]],
        item: Callable[[int], Item | None],
        mark: Callable[[int], None],
        line_sizes: np.ndarray | None = None,
    ) -> None:
        self.table = table
        self.n = table.num_rows
        self.position = positions  # (position text, line or row number) of row i
        self.key_of: Callable[[int], str] | None = None  # the id of a row without one (None: its position)
        self.item = item
        self.prefetch: Callable[[list[int]], None] = lambda _rows: None  # rows item() will be asked for soon
        self.mark = mark
        self.line_sizes = line_sizes

    # No attribute refers back to the block (a lambda over `self` would): a block is freed as soon as it is
    # done, not at the next full garbage collection, so its Arrow buffers never pile up.
    def fallback_id(self, i: int) -> str:
        """The id of row i when it has none: its key column (SQL), else its position ("path:line")."""
        return self.key_of(i) if self.key_of is not None else self.position(i)[0]


Block = RowBlock | Item


def sql_blocks(
    mapper: RowMapper, state: WatermarkState, engine: Engine | None, until: Watermark | None = None
) -> Iterator[Block]:
    """A table's keyset pages (up to `until`) as blocks; a page pyarrow cannot hold as columns is mapped row by row."""
    from judgewatch.traffic.sql import sql_batches

    for batch in sql_batches(mapper, state, engine, until):
        rows = batch.rows

        def position(i: int, batch: SqlBatch = batch) -> tuple[str, int | None]:
            return batch.position(batch.rows[i]), None

        def item(i: int, batch: SqlBatch = batch) -> Item:
            raw = batch.rows[i]
            return mapper.map(raw, position=batch.position(raw), fallback_id=str(raw[batch.id_column]))

        def mark(i: int, batch: SqlBatch = batch) -> None:
            state.advance_sql(batch.rows[i][batch.order_column], batch.rows[i][batch.id_column])

        def key_of(i: int, batch: SqlBatch = batch) -> str:  # a row whose mapped id is empty: as the row path keys it
            return str(batch.rows[i][batch.id_column])

        try:
            table = pa.Table.from_pylist(rows)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            table = None
        if table is None or not rows:
            for i in range(len(rows)):
                mark(i)
                yield item(i)
            continue
        block = RowBlock(table, position, item, mark)
        block.key_of = key_of
        yield block


def parquet_blocks(path: str, mapper: RowMapper, state: WatermarkState) -> Iterator[Block]:
    """Row groups after the watermark as Arrow batches; a row is turned into a dict only when asked for."""
    for found in parquet_batches(path, mapper, state, BLOCK_ROWS):
        yield (
            found if isinstance(found, RejectedTrafficRow) else _parquet_block(path, mapper, state, found[1], found[0])
        )


def _parquet_block(path: str, mapper: RowMapper, state: WatermarkState, batch: pa.RecordBatch, first: int) -> RowBlock:
    def position(i: int) -> tuple[str, int]:
        return f"{path}#row={first + i}", first + i

    raws: dict[int, dict[str, object]] = {}

    def prefetch(rows: list[int]) -> None:  # the picks of a block, turned into dicts in one call
        raws.update(zip(rows, batch.take(pa.array(rows, pa.int64())).to_pylist(), strict=True))

    def item(i: int) -> Item:
        where, row = position(i)
        raw = raws.pop(i, None) or batch.slice(i, 1).to_pylist()[0]
        return map_binary_safe(raw, where, row, mapper)

    def mark(i: int) -> None:
        state.files[path] = (first + i, None)

    block = RowBlock(pa.Table.from_batches([batch]), position, item, mark)
    block.prefetch = prefetch
    return block


def jsonl_blocks(path: str, mapper: RowMapper, state: WatermarkState) -> Iterator[Block]:
    """Blocks of whole lines after the watermark; an unfinished last line is left for the next read."""
    log = open_jsonl(path, mapper, state)
    if not isinstance(log, OpenLog):
        yield log  # the file's own quarantine record
        return
    with log.f:
        yield from _blocks_of(log, path, mapper, state)


def _blocks_of(log: OpenLog, path: str, mapper: RowMapper, state: WatermarkState) -> Iterator[Block]:
    f, gz, limit = log.f, log.gz, mapper.config.max_row_bytes
    reader = MappedReader(mapper)
    line_no, offset, skip, carry = log.line_no, log.offset, log.skip, b""
    try:
        while True:
            data = f.read(BLOCK_BYTES)
            buf = carry + data if carry else data
            if not data:
                if buf:  # an unterminated last line
                    item = line_item(buf.rstrip(b"\r\n"), f"{path}:{line_no + 1}", line_no + 1, mapper,
                                     partial_ok=not gz)  # fmt: skip
                    if item is not None:
                        state.files[path] = (line_no + 1, None if gz else offset + len(buf))
                        yield item
                return
            cut = buf.rfind(b"\n") + 1
            carry = buf[cut:]
            if len(carry) > limit + 2:  # a line longer than any row may be: quarantined, the rest skipped
                lines = LineBlock(buf[:cut], carry[: limit + 2], drain(f, carry))
                carry = b""
            else:
                lines = LineBlock(buf[:cut])
            if line_no + lines.n <= skip:  # gzip: lines read by an earlier run
                line_no, offset = line_no + lines.n, offset + lines.total
                continue
            if line_no < skip:
                head = skip - line_no
                line_no, offset = skip, offset + int(lines.lengths[:head].sum())
                lines = lines.after(head)
            yield from _jsonl_block(path, mapper, state, lines, line_no, None if gz else offset, reader)
            line_no, offset = line_no + lines.n, offset + lines.total
    except (EOFError, OSError, zlib.error) as exc:
        detail = f"stopped reading: {exc}"
        yield mapper.quarantine(f"{path}:{line_no}", QuarantineReason.unreadable, detail, "", line_no)


def _jsonl_block(
    path: str,
    mapper: RowMapper,
    state: WatermarkState,
    lines: LineBlock,
    before: int,
    offset: int | None,
    reader: MappedReader,
) -> Iterator[Block]:
    """Lines `before + 1...` as one RowBlock, or one by one when the block path would not read them exactly. A block
    pyarrow refuses is halved until its readable halves are found: a bad line slows at most `ROW_PATH_LINES` lines."""
    ends = np.cumsum(lines.lengths) + offset if offset is not None else None

    def position(i: int) -> tuple[str, int]:
        return f"{path}:{before + i + 1}", before + i + 1

    def item(i: int) -> Item | None:
        where, line = position(i)
        return line_item(lines.body(i), where, line, mapper, partial_ok=False)

    def mark(i: int) -> None:
        state.files[path] = (before + i + 1, None if ends is None else int(ends[i]))

    table = lines.table(mapper.config.max_row_bytes, first_line=before == 0, reader=reader)
    if table is None and lines.n > ROW_PATH_LINES:
        half = lines.n // 2
        yield from _jsonl_block(path, mapper, state, lines.first(half), before, offset, reader)
        rest = None if offset is None else offset + int(lines.lengths[:half].sum())
        yield from _jsonl_block(path, mapper, state, lines.after(half), before + half, rest, reader)
        return
    if table is None:
        for i in range(lines.n):
            mark(i)
            found = item(i)
            if found is not None:
                yield found
        return
    yield RowBlock(table, position, item, mark, line_sizes=lines.lengths)
