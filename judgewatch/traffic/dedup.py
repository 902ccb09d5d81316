"""The de-duplication window: a bounded LRU of content hashes, fed a row at a time or a whole block at once.

`DedupWindow.seen` is the rule for one row. `DedupWindow.seen_many` gives the same answers and leaves the
same window for a block of rows. When the block's times are in order (the usual log), it works the block out
at once (`_append_block`): only a row whose content is in the window or earlier in the block can be a
duplicate, and whether `seen` would still hold that content follows from when it was last seen and how many
distinct contents came since; the block's contents then go into the window in one C-level `update` and it is
trimmed once. Otherwise runs of new contents are inserted at once and every row whose content may repeat goes
through `seen` itself.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from itertools import compress, islice, repeat, starmap

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
        ats = np.asarray(ats, dtype=np.float64)
        if n and self._appends(ats):
            found = self._append_block(keys, ats)
            if found is not None:
                return found
        times: list[float] = ats.tolist()
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

    def _appends(self, ats: np.ndarray) -> bool:
        """Does the block only append to the window's order? Its times do not go backwards and start at or
        after the latest time seen, and (with a time bound) the window's own times are in order."""
        if ats[0] < self._latest or bool(np.any(ats[1:] < ats[:-1])):
            return False
        return self.seconds is None or self._in_order(ats)

    def _append_block(self, keys: Sequence[bytes], ats: np.ndarray) -> np.ndarray | None:
        """`seen` for a whole block that only appends (`_appends`), at once; None (nothing changed) when its
        repeats are too many to check at once.

        Then every entry's time is its last sighting's, the window's order is the order of last sightings,
        and after row q it holds the last `max_rows` distinct keys seen up to q among those not older than
        `ats[q] - seconds` (both bounds cut the same order from the front). So a row whose key was last
        seen at position p (in the window's order followed by the block) finds it when that sighting is
        not older than the previous row's horizon and fewer than `max_rows` distinct keys were seen since:
        the positions after p, less those whose key is seen again before the row."""
        window, n, m, seconds = self._seen, len(keys), len(self._seen), self.seconds
        first = dict(zip(reversed(keys), range(n - 1, -1, -1), strict=True))  # each key's first row
        hits = list(window.keys() & first.keys())  # keys of the window seen again
        rows = [first[k] for k in hits]
        before = [window[k] for k in hits]  # the window's time of each
        at_row: list[int] = []  # each repeat's previous row in the block
        if len(first) < n:
            firsts = np.fromiter(map(first.__getitem__, keys), dtype=np.int64, count=n)
            last: dict[bytes, int] = {}
            for r in np.flatnonzero(firsts != np.arange(n)).tolist():
                key = keys[r]
                at_row.append(last.get(key, first[key]))
                last[key] = r
                rows.append(r)
        singles = np.array(rows, dtype=np.int64)
        prev_time = np.concatenate([np.array(before, dtype=np.float64), ats[at_row]])
        present = np.ones(len(singles), dtype=bool)
        if seconds is not None:  # not older than the previous row's horizon (row 0: the window is trimmed)
            horizon = ats[np.maximum(singles - 1, 0)] - seconds
            present &= (singles == 0) | (prev_time >= horizon)
        # Each sighting's position: the window's entries 0..m-1, then the block's rows. A window entry's own
        # position is looked up only when the row bound may bind (else 0 stands in: every repeat's is >= m).
        in_window = np.zeros(len(hits), dtype=np.int64)
        if hits and m + int(singles[: len(hits)].max()) - 1 >= self.max_rows:
            position = dict(zip(window, range(m), strict=False))  # m entries
            in_window = np.array([position[k] for k in hits], dtype=np.int64)
        prev = np.concatenate([in_window, m + np.array(at_row, dtype=np.int64)])
        since = m + singles - 1 - prev  # positions after the last sighting, up to the previous row
        far = np.flatnonzero(since >= self.max_rows)
        if len(far):
            if len(far) * len(singles) > 1 << 22:
                return None
            seen_again = (singles[None, :] < singles[far, None]) & (prev[None, :] > prev[far, None])
            present[far] &= since[far] - seen_again.sum(axis=1) <= self.max_rows - 1
        answers = present if seconds is None else present & (np.abs(ats[singles] - prev_time) <= seconds)
        duplicate = np.zeros(n, dtype=bool)
        duplicate[singles] = answers
        # The window's order after the block: its entries not seen again, then each key at its last row.
        for key in hits:
            del window[key]
        new_keys, new_times = keys, ats
        if at_row:  # a row whose key is seen again later in the block is not its key's last sighting
            last_sighting = np.ones(n, dtype=bool)
            last_sighting[at_row] = False
            new_keys, new_times = list(compress(keys, last_sighting.tolist())), ats[last_sighting]
        drop = len(window) + len(new_keys) - self.max_rows
        self._latest = max(self._latest, float(ats[-1]))
        if seconds is not None:  # the entries older than the horizon, a prefix of the (ordered) times
            held = np.fromiter(window.values(), dtype=np.float64, count=len(window))
            cut = self._latest - seconds
            expired = int(np.searchsorted(held, cut, "left"))
            if expired == len(held):
                expired += int(np.searchsorted(new_times, cut, "left"))
            drop = max(drop, expired)
        window.update(zip(new_keys, new_times.tolist(), strict=True))
        self._front = None
        _pop_oldest(window, drop)
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
