"""One entry point for every source kind: `read_source(config, since)` streams rows and tracks the watermark."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.records import RejectedTrafficRow, TrafficRow
from judgewatch.traffic.watermark import Watermark, WatermarkState

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from judgewatch.traffic.columnar.blocks import Block

logger = logging.getLogger(__name__)


class SourceRead:
    """An iterable over one pass of a source: its rows after `since` (SQL: up to `until`, and the caller's `engine`).

    `watermark` always covers every row handed out so far (quarantined ones included): store it after the
    rows it covers are stored, and pass it back as `since` to read only what came after. Iterate once."""

    def __init__(
        self,
        config: SourceConfig,
        since: Watermark | None = None,
        *,
        engine: Engine | None = None,
        until: Watermark | None = None,
    ) -> None:
        if until is not None and config.kind != "sql":
            raise ValueError("`until` bounds a SQL source's read; a file source is split by its files")
        self.config = config
        self.since = since
        self.until = until
        self.engine = engine
        self.rows = 0
        self.quarantined = 0
        self._state = WatermarkState(since)
        self.mapper = RowMapper(config)
        self._started = False

    @property
    def watermark(self) -> Watermark:
        return self._state.snapshot()

    def _start(self) -> RowMapper:
        if self._started:
            raise RuntimeError("a SourceRead is iterated once; call read_source again with its watermark")
        self._started = True
        return self.mapper

    def blocks(self) -> Iterator[Block]:
        """The source in columnar blocks (`judgewatch.traffic.columnar.blocks`), for `Sampler.run` to decide on."""
        from judgewatch.traffic.columnar.blocks import jsonl_blocks, parquet_blocks, sql_blocks
        from judgewatch.traffic.files import each_file

        mapper = self._start()
        if self.config.kind == "sql":
            return sql_blocks(mapper, self._state, self.engine, self.until)
        if self.config.kind == "otlp":  # spans are mapped one by one: a line holds a whole export request
            from judgewatch.traffic.otel_source import read_otlp_files

            return read_otlp_files(mapper, self._state)
        return each_file(mapper, self._state, parquet_blocks, jsonl_blocks)

    def __iter__(self) -> Iterator[TrafficRow | RejectedTrafficRow]:
        """Row by row: every row mapped to a `TrafficRow` (or quarantined) before anything is decided."""
        mapper = self._start()
        if self.config.kind == "sql":
            from judgewatch.traffic.sql import read_sql

            items = read_sql(mapper, self._state, self.engine, self.until)
        elif self.config.kind == "otlp":
            from judgewatch.traffic.otel_source import read_otlp_files

            items = read_otlp_files(mapper, self._state)
        else:
            from judgewatch.traffic.files import each_file, read_jsonl_file, read_parquet_file

            items = each_file(mapper, self._state, read_parquet_file, read_jsonl_file)
        for item in items:
            if isinstance(item, RejectedTrafficRow):
                self.quarantined += 1
                logger.debug("quarantined %s: %s %s", item.position, item.reason, item.detail)
            else:
                self.rows += 1
            yield item
        logger.info("source %s: %d rows, %d quarantined", self.config.name, self.rows, self.quarantined)


read_source = SourceRead  # `read_source(config, since)`: the entry point's name for every source kind
