"""The de-duplication window: a block at once (`seen_many`) answers and ends exactly as row by row (`seen`)."""

from __future__ import annotations

import random
from collections import OrderedDict

import numpy as np
import pytest

from judgewatch.traffic.dedup import DedupWindow


def _state(window: DedupWindow | _OrderedDictWindow) -> tuple[list[tuple[bytes, float]], float]:
    return window.entries(), window._latest


class _OrderedDictWindow:
    """The window's rule as first written, on an `OrderedDict`: the reference the slot lists must match."""

    def __init__(self, max_rows: int, seconds: float | None) -> None:
        self.max_rows, self.seconds = max_rows, seconds
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self._latest = float("-inf")

    def entries(self) -> list[tuple[bytes, float]]:
        return list(self._seen.items())

    def seen(self, key: bytes, at: float) -> bool:
        window = self._seen
        self._latest = max(self._latest, at)
        before = window.get(key)
        if before is None:
            duplicate = False
            window[key] = at
        else:
            duplicate = self.seconds is None or abs(at - before) <= self.seconds
            window[key] = at if at > before else before
            window.move_to_end(key)
        if self.seconds is not None:
            while window and next(iter(window.values())) < self._latest - self.seconds:
                window.popitem(last=False)
        while len(window) > self.max_rows:
            window.popitem(last=False)
        return duplicate


def _stream(rng: random.Random, n: int, *, keys: int, backwards: float) -> tuple[list[bytes], list[float]]:
    """Keys drawn from a small pool (so repeats are common), times mostly rising, sometimes going back."""
    at, times, out = 0.0, [], []
    for _ in range(n):
        at += rng.choice([0.0, 0.1, 0.5, 2.0])
        times.append(at - (rng.uniform(0, 5) if rng.random() < backwards else 0.0))
        out.append(rng.randrange(keys).to_bytes(4, "big"))
    return out, times


@pytest.mark.parametrize("seconds", [None, 3.0, 40.0])
@pytest.mark.parametrize("backwards", [0.0, 0.02])
def test_a_block_at_once_answers_and_leaves_the_window_as_row_by_row(seconds: float | None, backwards: float) -> None:
    rng = random.Random(f"{seconds}-{backwards}")
    for max_rows in (1, 7, 50):
        keys, times = _stream(rng, 3000, keys=120, backwards=backwards)
        one, many = DedupWindow(max_rows, seconds), DedupWindow(max_rows, seconds)
        expected = [one.seen(k, t) for k, t in zip(keys, times, strict=True)]
        got: list[bool] = []
        start = 0
        while start < len(keys):  # blocks of uneven sizes, as sources give them
            end = start + rng.choice([1, 5, 64, 400])
            got += many.seen_many(keys[start:end], np.array(times[start:end])).tolist()
            start = end
        assert got == expected
        assert _state(many) == _state(one)
        assert sum(expected) > 0


def test_fresh_keys_in_order_are_inserted_at_once_and_trimmed_by_time_and_rows() -> None:
    window = DedupWindow(max_rows=4, seconds=10.0)
    assert not window.seen_many([b"a", b"b", b"c"], np.array([0.0, 1.0, 2.0])).any()
    assert window.seen_many([b"d", b"a", b"e", b"f"], np.array([3.0, 4.0, 11.5, 12.0])).tolist() == [
        False,
        True,  # a: seen at 0, within 10 s
        False,
        False,
    ]
    assert [k for k, _ in window.entries()] == [
        b"d",
        b"a",
        b"e",
        b"f",
    ]  # b expired (older than 12 - 10), c over the row bound


@pytest.mark.parametrize("seconds", [None, 3.0, 400.0])
@pytest.mark.parametrize("backwards", [0.0, 0.01, 0.3])
@pytest.mark.parametrize(("pool", "max_rows"), [(3, 1), (40, 7), (2000, 50), (300, 256), (20_000, 5000)])
def test_the_window_answers_and_keeps_what_the_ordered_dict_rule_keeps(
    seconds: float | None, backwards: float, pool: int, max_rows: int
) -> None:
    """Row by row and a block at once, against the rule on an `OrderedDict` (keys seen again far back, times
    going backwards, the row bound and the time bound each binding), compared after every block."""
    rng = random.Random(f"{seconds}-{backwards}-{pool}-{max_rows}")
    keys, times = _stream(rng, 12_000, keys=pool, backwards=backwards)
    reference, one, many = (
        _OrderedDictWindow(max_rows, seconds),
        DedupWindow(max_rows, seconds),
        DedupWindow(max_rows, seconds),
    )
    start = 0
    while start < len(keys):
        end = start + rng.choice([1, 7, 300, 3000])
        expected = [reference.seen(k, t) for k, t in zip(keys[start:end], times[start:end], strict=True)]
        assert [one.seen(k, t) for k, t in zip(keys[start:end], times[start:end], strict=True)] == expected
        assert many.seen_many(keys[start:end], np.array(times[start:end])).tolist() == expected
        assert _state(one) == _state(reference)
        assert _state(many) == _state(reference)
        assert len(many) == len(reference._seen)
        start = end


@pytest.mark.parametrize("seconds", [None, 1e9])
def test_a_few_keys_seen_again_and_again_keep_the_window_small(seconds: float | None) -> None:
    """Nothing is ever dropped (a large window, a far time bound): the slots left behind are renumbered away."""
    window = DedupWindow(max_rows=50_000, seconds=seconds)
    keys = [bytes([i]) for i in range(10)]
    for i in range(100_000):
        window.seen(keys[i % 10], float(i))
    window.seen_many(keys * 1000, np.arange(100_000, 110_000, dtype=np.float64))
    assert len(window) == 10
    assert len(window._keys) < 10_000 and len(window._left) < 10_000
    assert [k for k, _ in window.entries()] == keys
