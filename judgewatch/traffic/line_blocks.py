"""A block of JSONL lines kept as one buffer and the offsets where its lines end, not one bytes object a line.

`LineBlock.columns()` reads the block's mapped fields with the C line scanner (`line_scan`) when it is built:
every line it cannot vouch for is flagged for the row path, line by line. Without it, `LineBlock.table()` parses
the block with pyarrow when the block path would read every line exactly as the row path does (no blank,
overlong, BOM-prefixed or deeply nested line; one row per line). Otherwise they give None and the caller reads
the lines one by one (`LineBlock.body(i)`).
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from judgewatch.contract.raw_rows import MAX_JSON_DEPTH
from judgewatch.traffic.files import BOM
from judgewatch.traffic.line_scan import PathColumns, ScanPlan, scan_block

logger = logging.getLogger(__name__)

_NOT_OPENERS = bytes(b for b in range(256) if b not in b"{[\n")


class LineBlock:
    """Lines `data[0:ends[0]]`, `data[ends[0]:ends[1]]`...: each ends in a newline; `overlong`, when set, is a
    last line longer than any row may be, cut at `limit + 2` bytes, that took `overlong_length` bytes."""

    def __init__(self, data: bytes, overlong: bytes | None = None, overlong_length: int = 0) -> None:
        self.data = data
        self.ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
        self.overlong = overlong
        self.lengths = np.diff(self.ends, prepend=0)  # bytes each line takes in the file, newline included
        if overlong is not None:
            self.lengths = np.append(self.lengths, overlong_length)
        self.n = len(self.lengths)

    @property
    def total(self) -> int:
        return int(self.lengths.sum())

    def after(self, k: int) -> LineBlock:
        """The block without its first `k` lines."""
        start = int(self.ends[k - 1]) if k else 0
        last = int(self.lengths[-1]) if self.overlong is not None else 0
        return LineBlock(self.data[start:], self.overlong, last)

    def body(self, i: int) -> bytes:
        """Line i without its line ending, as the row path reads it."""
        if i == len(self.ends):
            return (self.overlong or b"").rstrip(b"\r\n")
        start = int(self.ends[i - 1]) if i else 0
        return self.data[start : int(self.ends[i]) - 1].rstrip(b"\r\n")

    def columns(self, limit: int, *, first_line: bool, plan: ScanPlan | None) -> PathColumns | pa.Table | None:
        """The lines' mapped fields by the scanner when there is a plan, else `table()`; None: read row by row."""
        if plan is None or not self.n or self.overlong is not None:
            return self.table(limit, first_line=first_line)
        return scan_block(self.data, self.ends, plan, too_long=self.lengths > limit + 1)

    def table(self, limit: int, *, first_line: bool) -> pa.Table | None:
        """The lines as an Arrow table, one row per line; None when any line needs the row path's own reading."""
        if not self.n or self.overlong is not None or (first_line and self.data.startswith(BOM)):
            return None
        if int(self.lengths.min()) < 4 or int(self.lengths.max()) > limit + 1:
            return None  # a blank or overlong line
        openers = np.frombuffer(self.data.translate(None, _NOT_OPENERS), dtype=np.uint8)  # "{", "[" and newlines
        if int(np.diff(np.flatnonzero(openers == 10), prepend=-1).max()) - 1 > MAX_JSON_DEPTH:
            return None  # deep enough that the depth guard must look at it (and pyarrow may not survive it)
        options = pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, 2 * len(self.data)))
        try:
            table = pa_json.read_json(pa.BufferReader(self.data), read_options=options)
        except (pa.ArrowException, OverflowError) as exc:
            logger.debug("block read row by row: %s", exc)
            return None
        return table if table.num_rows == self.n else None
