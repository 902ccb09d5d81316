"""The de-duplication window: a bounded LRU of content hashes, fed a row at a time or a whole block at once.

`DedupWindow.seen` is the rule for one row. `DedupWindow.seen_many` gives the same answers and leaves the
same window for a block of rows: a row whose content is neither in the window nor earlier in the block cannot
be a duplicate, so runs of such rows are inserted in one C-level `update` and the window trimmed once, which is
what row-by-row insertion does whenever the window's times do not go backwards (checked first); any other
block, and every row whose content may repeat, goes through `seen` itself.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from itertools import islice, repeat, starmap

import numpy as np
import xxhash

from judgewatch.traffic.records import TrafficRow

content_hash = xxhash.xxh3_128_digest  # a call's key from its `content_bytes`: 128 bits, ~30 ns a row


def content_bytes(row: TrafficRow) -> bytes:
    """What makes two calls identical: model, request messages (or question) and response, as one string."""
    if row.messages:
        middle = b"".join(b"\x1e" + m.role.encode() + b"\x1f" + m.content.encode() for m in row.messages)
    else:
        middle = b"\x1e" + row.question.encode()
    return (row.model or "").encode() + middle + b"\x1d" + row.answer.encode()


def content_key(row: TrafficRow) -> bytes:
    """The row's key in the de-duplication window."""
    return content_hash(content_bytes(row))


class DedupWindow:
    """Bounded LRU of content hashes: at most `max_rows` entries, and only matches within `seconds`."""

    def __init__(self, max_rows: int, seconds: float | None) -> None:
        self.max_rows = max_rows
        self.seconds = seconds
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self._latest = float("-inf")
        self._front: tuple[bytes, float] | None = None  # the oldest entry, cached: read once per change, not per row
        self._ordered = True  # known: the entries' times rise from oldest to newest (see `_in_order`)

    def __len__(self) -> int:
        return len(self._seen)

    def seen(self, key: bytes, at: float) -> bool:
        """True when `key` was seen within the window; records it either way."""
        window = self._seen
        if at > self._latest:
            self._latest = at
        elif at < self._latest:
            self._ordered = False  # this entry may now be older than the one before it
        before = window.get(key)
        if before is None:
            duplicate = False
            if not window:
                self._front = None
            window[key] = at
        else:
            duplicate = self.seconds is None or abs(at - before) <= self.seconds
            window[key] = at if at > before else before
            window.move_to_end(key)
            if self._front is not None and self._front[0] == key:
                self._front = None
        if self.seconds is not None:
            horizon = self._latest - self.seconds
            while window:
                if self._front is None:
                    self._front = next(iter(window.items()))
                if self._front[1] >= horizon:
                    break
                window.popitem(last=False)
                self._front = None
        while len(window) > self.max_rows:
            window.popitem(last=False)
            self._front = None
        return duplicate

    def seen_many(self, keys: Sequence[bytes], ats: np.ndarray) -> np.ndarray:
        """`seen(keys[i], ats[i])` for every i in order, as a bool array; the window ends as `seen` leaves it."""
        n = len(keys)
        times: list[float] = np.asarray(ats, dtype=np.float64).tolist()
        if not n or not self._in_order(ats):
            return np.fromiter(map(self.seen, keys, times), dtype=bool, count=n)
        duplicate = np.zeros(n, dtype=bool)
        first = dict(zip(reversed(keys), range(n - 1, -1, -1), strict=True))  # each key's first row in the block
        singles: set[int] = {first[k] for k in self._seen.keys() & first.keys()}
        if len(first) < n:  # a content repeated within the block: every repeat after the first
            firsts = np.fromiter(map(first.__getitem__, keys), dtype=np.int64, count=n)
            singles.update(np.flatnonzero(firsts != np.arange(n)).tolist())
        start = 0
        for i in sorted(singles):
            self._insert_new(keys[start:i], times[start:i])
            duplicate[i] = self.seen(keys[i], times[i])
            start = i + 1
        self._insert_new(keys[start:], times[start:])
        return duplicate

    def _in_order(self, ats: np.ndarray) -> bool:
        """Can runs of new keys be inserted at once? Always without a time bound; with one, when the block's
        times do not go backwards, start at or after the latest time seen, and the window's own times are in
        order (then every `seen` call expires exactly the entries older than its horizon, from the front)."""
        if self.seconds is None:
            return True
        if ats[0] < self._latest or bool(np.any(ats[1:] < ats[:-1])):
            return False
        if not self._ordered:  # a time went backwards once: look whether the entries are in order again
            held = np.fromiter(self._seen.values(), dtype=np.float64, count=len(self._seen))
            self._ordered = not bool(np.any(held[1:] < held[:-1]))
        return self._ordered

    def _insert_new(self, keys: Sequence[bytes], times: list[float]) -> None:
        """`seen` for keys absent from the window and from each other, times in order (see `_in_order`)."""
        if not keys:
            return
        window = self._seen
        window.update(zip(keys, times, strict=True))
        self._front = None
        self._latest = max(self._latest, max(times))
        if self.seconds is not None:  # the times are in order: the expired entries are the oldest ones
            older = (self._latest - self.seconds).__gt__
            values, expired, chunk = iter(window.values()), 0, len(keys) + 1
            while (found := sum(map(older, islice(values, chunk)))) == chunk:
                expired += found
            _pop_oldest(window, expired + found)
        _pop_oldest(window, len(window) - self.max_rows)


def _pop_oldest(window: OrderedDict[bytes, float], k: int) -> None:
    if k > 0:
        deque(starmap(window.popitem, repeat((False,), k)), maxlen=0)  # k pops, no Python loop
