"""Decide before you parse, for JSONL: the mapping's fields of a block of lines as columns, read by a C scanner.

`scan_block` hands a block's lines to the optional C extension `_line_scan` (built beside `_unit_hash`), which
parses each line as `json.loads` would and keeps only the values at the mapping's paths: no Python object and no
Arrow column per field the rule never reads. What comes back is `PathColumns`: one Arrow column per path (its
segments as the key), shaped as pyarrow's own reader would give that path's values, and a `suspect` flag per line
the scanner cannot vouch for (invalid, too deep, a kind the columns do not hold...), which
`columns.decision_columns` maps with the row path's own code. Without the extension, or for a mapping whose paths
it does not cover, `scan_plan` gives None and the block is parsed by pyarrow as before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from judgewatch.contract.raw_rows import MAX_JSON_DEPTH
from judgewatch.traffic.mapping import RowMapper

try:
    from judgewatch.traffic._line_scan import scan as _scan
except ImportError:  # built without a C compiler: pyarrow's JSON reader parses the blocks
    _scan = None

logger = logging.getLogger(__name__)

NATIVE = _scan is not None
MISSING, TEXT, INT, FLOAT = 0, 1, 2, 3  # a value's kind, as the scanner reports it
SCALAR, TEXTS, RECORDS = 0, 1, 2  # what a path holds
LISTED = {"messages": (RECORDS, ("role", "content")), "reference_facts": (TEXTS, ()), "context": (TEXTS, ())}
_MAX_INDEX = 2**62  # a longer list index matches no list, as `resolve`'s IndexError does


@dataclass
class PathColumns:
    """A block's values per mapping path (`columns[segments]`), and the lines to map in full (`suspect`)."""

    num_rows: int
    columns: dict[tuple[str, ...], pa.Array]
    suspect: np.ndarray  # bool per line


@dataclass(frozen=True)
class ScanPlan:
    """The paths to read, as the scanner takes them: (segments, what the path holds, record fields)."""

    paths: tuple[tuple[str, ...], ...]
    specs: tuple[tuple[tuple[tuple[bytes, int], ...], int, tuple[bytes, ...]], ...]


def _index(segment: str) -> int | None:
    """The list index `resolve` would use for this segment (-1: none); None when only Python's `int()` reads it."""
    if segment.isascii() and segment.isdigit():
        value = int(segment)
        return value if value < _MAX_INDEX else -1
    try:
        int(segment)
    except ValueError:
        return -1
    return None  # "-1", " 2", "1_0", non-ASCII digits: int() takes them, the scanner does not


def scan_plan(mapper: RowMapper) -> ScanPlan | None:
    """What the scanner reads for this mapping, or None (no extension, or paths it does not cover)."""
    if _scan is None:
        return None
    kinds: dict[tuple[str, ...], tuple[int, tuple[str, ...]]] = {}
    for field, fallbacks in mapper.paths.items():
        kind = LISTED.get(field, (SCALAR, ()))
        for segments in fallbacks:
            if kinds.setdefault(segments, kind) != kind:
                return None  # one path read as two kinds of value
    paths = tuple(kinds)
    for a in paths:
        if any(len(b) > len(a) and b[: len(a)] == a for b in paths):
            return None  # a path that goes on past another's end
    specs = []
    for segments in paths:
        encoded = []
        for seg in segments:
            index = _index(seg)
            if index is None:
                return None
            encoded.append((seg.encode(), index))
        mode, fields = kinds[segments]
        specs.append((tuple(encoded), mode, tuple(f.encode() for f in fields)))
    return ScanPlan(paths, tuple(specs))


def scan_block(data: bytes, ends: np.ndarray, plan: ScanPlan, too_long: np.ndarray) -> PathColumns:
    """The lines `data[0:ends[0]]`, `data[ends[0]:ends[1]]`... read through `plan`; `too_long` lines are suspect."""
    assert _scan is not None
    n = len(ends)
    flags, outputs = _scan(data, np.ascontiguousarray(ends, dtype=np.int64), list(plan.specs), MAX_JSON_DEPTH)
    suspect = np.frombuffer(flags, dtype=np.uint8).astype(bool) | too_long
    columns: dict[tuple[str, ...], pa.Array] = {}
    for segments, (_, mode, fields), out in zip(plan.paths, plan.specs, outputs, strict=True):
        if mode == SCALAR:
            columns[segments], odd = _scalar(n, out)
            suspect |= odd
        else:
            columns[segments] = _listed(n, out, mode, fields)
    return PathColumns(n, columns, suspect)


def _texts(cells: tuple[bytes, bytes, bytes, bytes, bytes], present: np.ndarray) -> pa.Array:
    kinds, lengths, _, _, data = cells
    m = len(kinds)
    offsets = np.zeros(m + 1, dtype=np.int32)
    np.cumsum(np.frombuffer(lengths, dtype=np.int32), out=offsets[1:])
    validity = None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), m, [validity, pa.py_buffer(offsets), pa.py_buffer(data)])


def _scalar(n: int, cells: tuple[bytes, bytes, bytes, bytes, bytes]) -> tuple[pa.Array, np.ndarray]:
    """One column of the kind most lines hold (pyarrow's reader would refuse a mix); the others are suspect."""
    kinds = np.frombuffer(cells[0], dtype=np.uint8)
    counts = np.bincount(kinds, minlength=4)
    if not counts[1:].any():
        return pa.nulls(n), np.zeros(n, dtype=bool)
    kind = 1 + int(np.argmax(counts[1:]))
    present = kinds == kind
    odd = (kinds != MISSING) & ~present
    if kind == TEXT:
        return _texts(cells, present), odd
    values = np.frombuffer(cells[2] if kind == INT else cells[3], dtype=np.int64 if kind == INT else np.float64)
    return pa.array(values, mask=~present), odd


def _listed(
    n: int, out: tuple[bytes, bytes, tuple[tuple[bytes, ...], ...]], mode: int, fields: tuple[bytes, ...]
) -> pa.Array:
    """list<string> (texts) or list<struct<fields: string>> (records); a null list where the value was null."""
    lengths, valid, cells = out
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.frombuffer(lengths, dtype=np.int32), out=offsets[1:])
    if mode == TEXTS:
        values: pa.Array = _texts(cells[0], np.ones(len(cells[0][0]), dtype=bool))  # type: ignore[arg-type]
    else:
        children = [_texts(c, np.frombuffer(c[0], dtype=np.uint8) == TEXT) for c in cells]  # type: ignore[arg-type]
        values = pa.StructArray.from_arrays(children, names=[f.decode() for f in fields])
    listed = np.frombuffer(valid, dtype=np.uint8).astype(bool)
    mask = None if listed.all() else pa.array(~listed)
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=mask)
