"""Stream request-log files: JSONL (plain or gzip) line by line, Parquet batch by batch; never a whole file."""

from __future__ import annotations

import glob
import gzip
import io
import json
import logging
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from judgewatch.contract.raw_rows import InputFileError, loads_bounded, sniff_jsonl_file
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.object_store import RemotePath, glob_urls, is_object, is_url, object_size, open_binary
from judgewatch.traffic.records import QuarantineReason, RejectedTrafficRow, TrafficRow
from judgewatch.traffic.watermark import WatermarkState

if TYPE_CHECKING:
    import pyarrow as pa
    from pyarrow.parquet import ParquetFile

logger = logging.getLogger(__name__)

Item = TrafficRow | RejectedTrafficRow
T = TypeVar("T")
FileReader = Callable[[str, RowMapper, WatermarkState], Iterator[T]]
_GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
PARQUET_BATCH_ROWS = 4096  # rows mapped at a time by the row path
_Binary = gzip.GzipFile | io.BufferedReader


class SourcePathError(OSError):
    """A source path that reads nothing (missing file, folder, glob matching no file, folder not listable); raised
    before anything is read, so the run fails, saves no watermark and exits non-zero with one line per path."""


def _glob_root(pattern: str) -> Path:
    """The folder a glob starts from: its leading path components without a wildcard."""
    parts = Path(pattern).parts
    first_magic = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    return Path(*parts[:first_magic]) if first_magic else Path(".")


def _path_problem(pattern: str) -> str | None:
    """Why `pattern` reads nothing, or None when it names or matches at least one file."""
    if is_url(pattern):  # object storage: the same rule, told in its own words
        if glob.has_magic(pattern):
            return None if glob_urls(pattern) else f"{pattern}: no object matches"
        return None if is_object(pattern) else f"{pattern}: no such object"
    if glob.has_magic(pattern):
        root = _glob_root(pattern)
        try:
            with os.scandir(root):
                pass
        except PermissionError:
            return f"{pattern}: permission denied listing the folder {root}"
        except FileNotFoundError:
            return f"{pattern}: no such folder {root}"
        except NotADirectoryError:
            return f"{pattern}: {root} is not a folder"
        if not any(Path(m).is_file() for m in glob.iglob(pattern, recursive=True)):
            return f"{pattern}: no file matches"
        return None
    path = Path(pattern)
    if path.is_dir():
        return f"{pattern}: is a folder, not a file (give a glob such as {path / '*.jsonl'})"
    return None if path.exists() else f"{pattern}: no such file"


def expand_paths(patterns: list[str]) -> list[str]:
    """The files the patterns name or match, in order, no repeats; SourcePathError naming each that reads nothing."""
    problems = [problem for pattern in patterns if (problem := _path_problem(pattern)) is not None]
    if problems:
        raise SourcePathError("the source reads nothing from " + "; ".join(problems))
    seen: dict[str, None] = {}
    for pattern in patterns:
        if is_url(pattern):  # object storage (judgewatch.traffic.object_store)
            seen.update((m, None) for m in (glob_urls(pattern) if glob.has_magic(pattern) else [pattern]))
        elif glob.has_magic(pattern):
            seen.update((m, None) for m in sorted(glob.glob(pattern, recursive=True)) if Path(m).is_file())
        else:
            seen[pattern] = None
    return list(seen)


def each_file(
    mapper: RowMapper, state: WatermarkState, parquet: FileReader[T], jsonl: FileReader[T]
) -> Iterator[T | RejectedTrafficRow]:
    """The source's files in order, each read by the reader of its kind (after `expand_paths` checked them all)."""
    files = expand_paths(mapper.config.paths)
    reader = parquet if mapper.config.kind == "parquet" else jsonl
    for path in files:
        yield from reader(path, mapper, state)


def is_gzip(path: str) -> bool:
    with open_binary(path) as f:
        return f.read(2) == _GZIP_MAGIC


@dataclass
class OpenLog:
    """A JSONL log opened where its watermark says: the next line read is `line_no + 1`, at byte `offset`."""

    f: _Binary
    gz: bool
    line_no: int
    offset: int
    skip: int  # lines to skip first (gzip, which cannot seek)


def open_jsonl(path: str, mapper: RowMapper, state: WatermarkState) -> OpenLog | RejectedTrafficRow:
    """Open a log after its watermark, or the quarantine record of a file that cannot be read as JSONL."""
    mark_rows, mark_offset = state.files.get(path, (0, None))
    try:
        gz = is_gzip(path)
        size = object_size(path) if is_url(path) else Path(path).stat().st_size
        if not is_url(path):
            f: _Binary = gzip.GzipFile(path, "rb") if gz else open(path, "rb")  # noqa: SIM115
        else:  # an object's buffered, seekable file (closed with the gzip reader's garbage)
            f = gzip.GzipFile(fileobj=open_binary(path), mode="rb") if gz else open_binary(path)  # type: ignore[assignment]
    except OSError as exc:
        return mapper.quarantine(path, QuarantineReason.unreadable, str(exc), "")
    if not gz and size > 0 and mark_offset is None:
        try:  # a UTF-16 or CR-only file: one message for the file, not one per line
            sniff_jsonl_file(RemotePath(path) if is_url(path) else Path(path), allow_empty=True)  # type: ignore[arg-type]
        except InputFileError as exc:
            f.close()
            return mapper.quarantine(path, QuarantineReason.undecodable, str(exc), "")
    if mark_offset is not None and not gz:
        if mark_offset <= size:
            f.seek(mark_offset)
            return OpenLog(f, gz, mark_rows, mark_offset, 0)
        logger.warning("%s is shorter than its watermark (rotated?): reading it from the start", path)
        return OpenLog(f, gz, 0, 0, 0)
    return OpenLog(f, gz, 0, 0, mark_rows)


class Line(NamedTuple):
    """A log line after the watermark: number, bytes (an overlong line cut at the read limit, its rest skipped), file
    offset after it (None: gzip cannot seek), and whether it ended in a newline (a cut line counts as ended)."""

    number: int
    chunk: bytes
    end: int | None
    finished: bool


def log_lines(path: str, mapper: RowMapper, state: WatermarkState, limit: int) -> Iterator[Line | RejectedTrafficRow]:
    """A JSONL log's lines after its watermark, `limit` bytes of each at most; the file's quarantine record when
    it cannot be opened, and one when reading stops on an error (the lines before it are kept)."""
    log = open_jsonl(path, mapper, state)
    if isinstance(log, RejectedTrafficRow):
        yield log
        return
    with log.f as f:
        number, offset = log.line_no, log.offset
        try:
            while chunk := f.readline(limit):
                number += 1
                cut = len(chunk) == limit and not chunk.endswith(b"\n")
                offset += drain(f, chunk) if cut else len(chunk)
                if number > log.skip:  # gzip: lines read by an earlier run are skipped
                    yield Line(number, chunk, None if log.gz else offset, cut or chunk.endswith(b"\n"))
        except (EOFError, OSError, zlib.error) as exc:
            detail = f"stopped reading: {exc}"
            yield mapper.quarantine(f"{path}:{number}", QuarantineReason.unreadable, detail, "", number)


def read_jsonl_file(path: str, mapper: RowMapper, state: WatermarkState) -> Iterator[Item]:
    """One JSON object per line. A bad line becomes a RejectedTrafficRow with its line number; reading goes on."""
    for line in log_lines(path, mapper, state, mapper.config.max_row_bytes + 2):
        if isinstance(line, RejectedTrafficRow):
            yield line
            continue
        partial_ok = not line.finished and line.end is not None
        item = line_item(
            line.chunk.rstrip(b"\r\n"), f"{path}:{line.number}", line.number, mapper, partial_ok=partial_ok
        )
        if item is None and not line.finished:
            break  # an unfinished last line (the writer is mid-line): read it next time
        state.files[path] = (line.number, line.end)
        if item is not None:
            yield item


def drain(f: _Binary, chunk: bytes) -> int:
    """Skip the rest of an overlong line in bounded pieces; returns the line's full length."""
    total = len(chunk)
    while chunk and not chunk.endswith(b"\n"):
        chunk = f.readline(1 << 20)
        total += len(chunk)
    return total


def line_item(body: bytes, position: str, line: int, mapper: RowMapper, *, partial_ok: bool) -> Item | None:
    """One line (without its newline) as an item: oversize, BOM, then `_parse_line`."""
    limit = mapper.config.max_row_bytes
    if len(body) > limit:
        detail = f"line longer than max_row_bytes {limit}"
        return mapper.quarantine(position, QuarantineReason.oversize, detail, body[: limit + 2], line)
    if line == 1 and body.startswith(BOM):
        body = body[len(BOM) :]
    return _parse_line(body, position, line, mapper, partial_ok=partial_ok)


def _parse_line(body: bytes, position: str, line: int, mapper: RowMapper, *, partial_ok: bool) -> Item | None:
    """None for a blank line, and for an unfinished last line when `partial_ok`."""
    if not body.strip():
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if partial_ok:  # a multi-byte character cut by a writer still writing
            return None
        return mapper.quarantine(position, QuarantineReason.undecodable, f"not UTF-8: {exc.reason}", body, line)
    try:
        raw = loads_bounded(text)
    except json.JSONDecodeError as exc:
        if partial_ok:
            return None
        detail = f"{exc.msg} (column {exc.colno})"
        return mapper.quarantine(position, QuarantineReason.invalid_json, detail, text, line)
    except (ValueError, RecursionError) as exc:  # nested too deeply, or a number too long to convert
        return mapper.quarantine(position, QuarantineReason.invalid_json, str(exc), text, line)
    return mapper.map(raw, position=position, fallback_id=position, size=len(body), line=line)


def open_parquet(
    path: str, mapper: RowMapper, state: WatermarkState
) -> tuple[ParquetFile, list[int], list[str], int, int] | RejectedTrafficRow:
    """(file, row groups after the watermark, mapped columns, rows before the first group, rows to skip)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    mark_rows = state.files.get(path, (0, None))[0]
    try:
        pf = pq.ParquetFile(open_binary(path) if is_url(path) else path)
    except (OSError, pa.ArrowException) as exc:
        return mapper.quarantine(path, QuarantineReason.unreadable, str(exc), "")
    meta = pf.metadata
    skip = mark_rows if mark_rows <= meta.num_rows else 0
    first_group, row = 0, 0
    while first_group < meta.num_row_groups and row + meta.row_group(first_group).num_rows <= skip:
        row += meta.row_group(first_group).num_rows
        first_group += 1
    columns = [name for name in pf.schema_arrow.names if name in mapper.top_level_keys]
    return pf, list(range(first_group, meta.num_row_groups)), columns, row, skip


def parquet_batches(
    path: str, mapper: RowMapper, state: WatermarkState, batch_rows: int
) -> Iterator[tuple[int, pa.RecordBatch] | RejectedTrafficRow]:
    """(row number of its first row, batch) for the rows after the watermark; a read error ends the file."""
    import pyarrow as pa

    opened = open_parquet(path, mapper, state)
    if isinstance(opened, RejectedTrafficRow):
        yield opened
        return
    pf, groups, columns, row, skip = opened
    if not groups:
        return
    try:
        for batch in pf.iter_batches(batch_size=batch_rows, row_groups=groups, columns=columns):
            first = row + 1
            row += batch.num_rows
            if first <= skip:
                batch = batch.slice(skip - first + 1)
                first = skip + 1
            if batch.num_rows:
                yield first, batch
    except (OSError, pa.ArrowException) as exc:
        yield mapper.quarantine(f"{path}#row={row + 1}", QuarantineReason.unreadable, str(exc), "")


def read_parquet_file(path: str, mapper: RowMapper, state: WatermarkState) -> Iterator[Item]:
    """Row groups after the watermark, in batches of PARQUET_BATCH_ROWS, projected to the mapped columns."""
    for found in parquet_batches(path, mapper, state, PARQUET_BATCH_ROWS):
        if isinstance(found, RejectedTrafficRow):
            yield found
            continue
        first, batch = found
        for row, raw in enumerate(batch.to_pylist(), start=first):
            item = map_binary_safe(raw, f"{path}#row={row}", row, mapper)
            state.files[path] = (row, None)
            yield item


def map_binary_safe(raw: dict[str, object], position: str, row: int, mapper: RowMapper) -> Item:
    """Binary columns are decoded as UTF-8 first; bytes that are not UTF-8 quarantine the row."""
    for key, value in raw.items():
        if isinstance(value, bytes):
            try:
                raw[key] = value.decode("utf-8")
            except UnicodeDecodeError as exc:
                detail = f"column {key}: not UTF-8: {exc.reason}"
                return mapper.quarantine(position, QuarantineReason.undecodable, detail, value, row)
    return mapper.map(raw, position=position, fallback_id=position, line=row)
