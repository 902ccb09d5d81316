"""Split a source into partitions that separate workers read at once, and merge what they read; how the split, the
warmed de-duplication window and the merged watermark keep a single pass's picks: docs/sampling.md ("Partitions")."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.files import expand_paths, is_gzip
from judgewatch.traffic.object_store import open_binary
from judgewatch.traffic.records import RejectedTrafficRow
from judgewatch.traffic.sampling import Sampler
from judgewatch.traffic.sources import SourceRead, read_source
from judgewatch.traffic.sql_ranges import key_ranges
from judgewatch.traffic.watermark import FileMark, Watermark

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

logger = logging.getLogger(__name__)


class SourcePartition(BaseModel):
    """Files `paths` of a source, or (`paths` None) a table's rows up to `until`, read after `since`; `warmup` marks
    where the rows before them start (SQL: the rows after it up to `since`). Holds no config: it travels as a flow
    run's parameter and is stored with its watermark, and a source's config may hold a database password."""

    model_config = ConfigDict(frozen=True)

    index: int
    paths: list[str] | None = None
    since: Watermark | None = None
    until: Watermark | None = None  # SQL: the partition's last row; None: to the table's end
    warmup: Watermark | None = None  # the files (and where in them), or rows, whose rows warm the dedup window

    def source(self, config: SourceConfig) -> SourceConfig:
        """The source restricted to this partition's files."""
        return config if self.paths is None else config.model_copy(update={"paths": self.paths})

    def resumed(self, mark: Watermark) -> SourcePartition:
        """The rest of the partition after its own saved watermark, read cold as any resumed read is."""
        return self if mark == self.since else self.model_copy(update={"since": mark, "warmup": None})


def split_source(
    config: SourceConfig, since: Watermark | None, parts: int, *, engine: Engine | None = None
) -> list[SourcePartition]:
    """At most `parts` partitions of contiguous files or key ranges (one for a single file); `engine`: SQL's."""
    if parts <= 1:
        return [SourcePartition(index=0, since=since)]
    window = config.sampling.dedup.window_rows if config.sampling.dedup.enabled else 0
    if config.kind == "sql":
        ranges = key_ranges(config, since, parts, window, engine)
        return [SourcePartition(index=k, since=r.since, until=r.until, warmup=r.warmup) for k, r in enumerate(ranges)]
    files = expand_paths(config.paths)
    if len(files) <= 1:
        return [SourcePartition(index=0, since=since)]
    parts = min(parts, len(files))
    bounds = [round(k * len(files) / parts) for k in range(parts + 1)]
    groups = [files[bounds[k] : bounds[k + 1]] for k in range(parts)]
    return [
        SourcePartition(
            index=k,
            paths=group,
            since=_restrict(since, group),
            warmup=_warmup(files[: bounds[k]], window, since) if k and window else None,
        )
        for k, group in enumerate(groups)
    ]


def _restrict(since: Watermark | None, paths: list[str]) -> Watermark | None:
    return None if since is None else Watermark(files={p: m for p, m in since.files.items() if p in paths})


def merge_watermarks(marks: list[Watermark]) -> Watermark:
    """One watermark over partitions in order: a later mark of the same file wins, and so does a later SQL row."""
    files: dict[str, FileMark] = {}
    last_order, last_id = None, None
    for mark in marks:
        files.update(mark.files)
        if mark.last_id is not None:
            last_order, last_id = mark.last_order, mark.last_id
    return Watermark(files=files, last_order=last_order, last_id=last_id)


def partition_sampler(
    config: SourceConfig,
    partition: SourcePartition,
    on_quarantine: Callable[[RejectedTrafficRow], None] | None = None,
) -> tuple[Sampler, SourceRead]:
    """The partition's read of `config` and a `Sampler` whose dedup window holds the rows before the partition;
    iterate `sampler.run(read)`, whose `read.watermark` and `sampler.stats` are the partition's own."""
    config = partition.source(config)
    sampler = Sampler(config, on_quarantine=on_quarantine)
    warm = partition.warmup
    if warm is not None and sampler.dedup is not None:
        if config.kind == "sql":
            before, rows = config, read_source(config, warm, until=partition.since)
        else:
            before = config.model_copy(update={"paths": list(warm.files)})
            rows = read_source(before, warm)
        warming = Sampler(before, on_quarantine=lambda _row: None)  # its rows belong to earlier partitions
        for _ in warming.run(rows):
            pass
        sampler.dedup = warming.dedup
    return sampler, read_source(config, partition.since, until=partition.until)


def _warmup(before: list[str], window_rows: int, since: Watermark | None) -> Watermark | None:
    """Where the last `window_rows` rows before a partition start: whole files, then the tail of one. Never
    before `since`: a single pass from that watermark has not seen the rows it covers."""
    files: dict[str, FileMark] = {}
    needed = window_rows
    done = since.files if since else {}
    for path in reversed(before):
        start = done.get(path, FileMark())
        rows = _row_count(path)
        if rows is None:  # gzip: no cheap count; the whole file (after the watermark) warms the window
            files[path] = start
            continue
        if rows - start.rows > needed:
            files[path] = _mark_at(path, rows - needed)
            break
        files[path] = start
        needed -= rows - start.rows
        if needed <= 0:
            break
    return Watermark(files=dict(reversed(list(files.items()))))


def _row_count(path: str) -> int | None:
    if path.endswith(".parquet") or _is_parquet(path):
        import pyarrow.parquet as pq

        with open_binary(path) as f:
            return int(pq.ParquetFile(f).metadata.num_rows)
    if is_gzip(path):
        return None
    with open_binary(path) as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))


def _is_parquet(path: str) -> bool:
    with open_binary(path) as f:
        return f.read(4) == b"PAR1"


def _mark_at(path: str, rows: int) -> FileMark:
    """A mark after the first `rows` rows (a byte offset for JSONL, found by reading line ends)."""
    if _is_parquet(path):
        return FileMark(rows=rows)
    offset, seen = 0, 0
    with open_binary(path) as f:
        while seen < rows:
            chunk = f.read(1 << 24)
            if not chunk:
                break
            ends = chunk.count(b"\n")
            if seen + ends < rows:
                seen, offset = seen + ends, offset + len(chunk)
                continue
            cut = -1
            for _ in range(rows - seen):
                cut = chunk.index(b"\n", cut + 1)
            return FileMark(rows=rows, offset=offset + cut + 1)
    return FileMark(rows=seen, offset=offset)
