"""The de-duplication window: a bounded LRU of content hashes, fed a row at a time (`seen`, the rule) or a whole
block at once (`seen_many`: the same answers, the same window left). Its numbered slots, and why: docs/sampling.md."""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from heapq import heapify, heappop, heappush

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
        self._slot: dict[bytes, int] = {}  # each entry's key -> its slot (entries are oldest first by slot)
        self._keys: list[bytes] = []  # slot `self._base + i` -> its key
        self._times: list[float] = []  # slot `self._base + i` -> its time
        self._base = 0  # slot number of `_keys[0]`
        self._head = 0  # every slot before it is gone
        self._left: list[int] = []  # heap of slots left behind by a key seen again (not entries)
        self._latest = float("-inf")
        self._ordered = True  # known: the slots' times rise from `_head` on (see `_in_order`)

    def __len__(self) -> int:
        return len(self._slot)

    def entries(self) -> list[tuple[bytes, float]]:
        """(key, time) of every entry, oldest first: the order in which the window drops them."""
        return [(self._keys[s - self._base], self._times[s - self._base]) for s in sorted(self._slot.values())]

    def seen(self, key: bytes, at: float) -> bool:
        """True when `key` was seen within the window; records it either way."""
        if at > self._latest:
            self._latest = at
        elif at < self._latest:
            self._ordered = False  # this entry may now be older than the one before it
        slots, keys, times = self._slot, self._keys, self._times
        slot = slots.get(key)
        if slot is None:
            duplicate = False
        else:
            before = times[slot - self._base]
            duplicate = self.seconds is None or abs(at - before) <= self.seconds
            if before > at:
                at = before
            heappush(self._left, slot)  # moved to the end: its old slot is left behind
        slots[key] = self._base + len(keys)
        keys.append(key)
        times.append(at)
        base, head = self._base, self._head
        if self.seconds is not None:  # drop the oldest entries while they are expired (the old `popitem`s)
            horizon = self._latest - self.seconds
            while slots:
                oldest = keys[head - base]
                if slots.get(oldest) != head:  # a slot left behind: not an entry
                    head += 1
                elif times[head - base] < horizon:
                    del slots[oldest]
                    head += 1
                else:
                    break
        while len(slots) > self.max_rows:  # then while they are too many
            oldest = keys[head - base]
            if slots.get(oldest) == head:
                del slots[oldest]
            head += 1
        self._head = head
        gone = head - base
        if (gone > 4096 and gone * 2 > len(keys)) or len(keys) - gone > 2 * len(slots) + 4096:
            self._compact()  # only when it will do something: it is called for every row
        return duplicate

    def seen_many(self, keys: Sequence[bytes], ats: np.ndarray) -> np.ndarray:
        """`seen(keys[i], ats[i])` for every i in order, as a bool array; the window ends as `seen` leaves it."""
        n = len(keys)
        times: list[float] = np.asarray(ats, dtype=np.float64).tolist()
        if not n or not self._in_order(ats):
            return np.fromiter(map(self.seen, keys, times), dtype=bool, count=n)
        duplicate = np.zeros(n, dtype=bool)
        first = dict(zip(reversed(keys), range(n - 1, -1, -1), strict=True))  # each key's first row in the block
        singles: set[int] = {first[k] for k in self._slot.keys() & first.keys()}
        if len(first) < n:  # a content repeated within the block: every repeat after the first
            firsts = np.fromiter(map(first.__getitem__, keys), dtype=np.int64, count=n)
            singles.update(np.flatnonzero(firsts != np.arange(n)).tolist())
        start = 0
        for i in sorted(singles):
            self._insert_new(keys[start:i], times[start:i])
            duplicate[i] = self.seen(keys[i], times[i])
            start = i + 1
        self._insert_new(keys[start:], times[start:])
        self._compact()
        return duplicate

    def _in_order(self, ats: np.ndarray) -> bool:
        """Can runs of new keys be inserted at once? Always without a time bound; with one, when the block's
        times do not go backwards, start at or after the latest time seen, and the slots' own times are in
        order (then every `seen` call expires exactly the slots older than its horizon, from the front)."""
        if self.seconds is None:
            return True
        if ats[0] < self._latest or bool(np.any(ats[1:] < ats[:-1])):
            return False
        if not self._ordered:  # a time went backwards once: look whether the slots are in order again
            held = np.asarray(self._times[self._head - self._base :], dtype=np.float64)
            self._ordered = not bool(np.any(held[1:] < held[:-1]))
        return self._ordered

    def _insert_new(self, keys: Sequence[bytes], times: list[float]) -> None:
        """`seen` for keys absent from the window and from each other, times in order (see `_in_order`)."""
        if not keys:
            return
        end = self._base + len(self._keys)
        self._keys.extend(keys)
        self._times.extend(times)
        self._slot.update(zip(keys, range(end, end + len(keys)), strict=True))
        self._latest = max(self._latest, max(times))
        if self.seconds is not None:  # the slots' times are in order: the expired ones come first
            horizon = self._latest - self.seconds
            self._drop(bisect_left(self._times, horizon, self._head - self._base) + self._base)
        if len(self._slot) > self.max_rows:
            self._drop_entries(len(self._slot) - self.max_rows)

    def _front(self) -> int:
        """The oldest entry's slot (the window is not empty); slots left behind before it are passed."""
        keys, base, slot = self._keys, self._base, self._slot
        while slot.get(keys[self._head - base]) != self._head:
            self._head += 1
        return self._head

    def _drop(self, end: int) -> None:
        """Drop every slot before `end`: the entries among them leave the window."""
        start, base, left = self._head, self._base, self._left
        if end <= start:
            return
        while left and left[0] < start:
            heappop(left)
        self._head = end
        keys, forget = self._keys, self._slot.__delitem__
        while left and left[0] < end:  # the entries up to each slot left behind: one `del` each, no Python loop
            behind = heappop(left)
            deque(map(forget, keys[start - base : behind - base]), maxlen=0)
            start = behind + 1
        deque(map(forget, keys[start - base : end - base]), maxlen=0)

    def _drop_entries(self, k: int) -> None:
        """Drop the `k` oldest entries."""
        left = self._left
        while left and left[0] < self._head:
            heappop(left)
        if not left or left[0] >= self._head + k:  # the next k slots are all entries
            self._drop(self._head + k)
            return
        for _ in range(k):
            self._drop(self._front() + 1)

    def _compact(self) -> None:
        """Forget the slots before the head once they are most of the lists; renumber the entries once the
        slots left behind are most of them (a few keys seen again and again, never dropped)."""
        gone, held = self._head - self._base, len(self._keys)
        if held - gone > 2 * len(self._slot) + 4096:
            base, order = self._base, sorted(self._slot.values())
            self._keys = [self._keys[s - base] for s in order]
            self._times = [self._times[s - base] for s in order]
            self._base = self._head = base + held  # new numbers, above every old one
            self._slot = dict(zip(self._keys, range(self._head, self._head + len(order)), strict=True))
            self._left = []
        elif gone > 4096 and gone * 2 > held:
            del self._keys[:gone]
            del self._times[:gone]
            self._base = self._head
            self._left = [s for s in self._left if s >= self._head]
            heapify(self._left)
