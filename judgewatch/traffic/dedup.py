"""The de-duplication window: a bounded LRU of content hashes, fed a row at a time (`DedupWindow.seen`) by both
sampling paths.

The LRU order is kept as numbered slots (a key list, a time list) and a plain dict from each key to its slot:
a key seen again takes a new slot at the end and leaves its old one behind, and the oldest entry is the first
slot whose key still points to it: about half of what an `OrderedDict` insert and pop cost. (A block-at-once
insertion, `seen_many`, was removed in issue 42: on the sampling bench's log, a retry every 100 rows, it cost
980 ns a row against `seen`'s 630.)
"""

from __future__ import annotations

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
        self._latest = float("-inf")

    def __len__(self) -> int:
        return len(self._slot)

    def entries(self) -> list[tuple[bytes, float]]:
        """(key, time) of every entry, oldest first: the order in which the window drops them."""
        return [(self._keys[s - self._base], self._times[s - self._base]) for s in sorted(self._slot.values())]

    def seen(self, key: bytes, at: float) -> bool:
        """True when `key` was seen within the window; records it either way."""
        if at > self._latest:
            self._latest = at
        slots, keys, times = self._slot, self._keys, self._times
        slot = slots.get(key)
        if slot is None:
            duplicate = False
        else:
            before = times[slot - self._base]
            duplicate = self.seconds is None or abs(at - before) <= self.seconds
            if before > at:
                at = before  # moved to the end: its old slot is left behind
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
        if gone > 4096 or len(keys) - gone > 2 * len(slots) + 4096:
            self._compact()
        return duplicate

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
        elif gone > 4096 and gone * 2 > held:
            del self._keys[:gone]
            del self._times[:gone]
            self._base = self._head
