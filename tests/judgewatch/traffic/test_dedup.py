"""The de-duplication window answers and keeps what the rule on an `OrderedDict` keeps, and stays small."""

from __future__ import annotations

import random
from collections import OrderedDict

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


def test_keys_are_trimmed_by_time_and_rows() -> None:
    window = DedupWindow(max_rows=4, seconds=10.0)
    assert not any(window.seen(k, t) for k, t in zip([b"a", b"b", b"c"], [0.0, 1.0, 2.0], strict=True))
    assert [window.seen(k, t) for k, t in zip([b"d", b"a", b"e", b"f"], [3.0, 4.0, 11.5, 12.0], strict=True)] == [
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
    """Against the rule on an `OrderedDict` (keys seen again far back, times going backwards, the row bound and
    the time bound each binding), compared after every stretch of rows."""
    rng = random.Random(f"{seconds}-{backwards}-{pool}-{max_rows}")
    keys, times = _stream(rng, 12_000, keys=pool, backwards=backwards)
    reference, one = _OrderedDictWindow(max_rows, seconds), DedupWindow(max_rows, seconds)
    start = 0
    while start < len(keys):
        end = start + rng.choice([1, 7, 300, 3000])
        expected = [reference.seen(k, t) for k, t in zip(keys[start:end], times[start:end], strict=True)]
        assert [one.seen(k, t) for k, t in zip(keys[start:end], times[start:end], strict=True)] == expected
        assert _state(one) == _state(reference) and len(one) == len(reference._seen)
        start = end


@pytest.mark.parametrize("seconds", [None, 1e9])
def test_a_few_keys_seen_again_and_again_keep_the_window_small(seconds: float | None) -> None:
    """Nothing is ever dropped (a large window, a far time bound): the slots left behind are renumbered away."""
    window = DedupWindow(max_rows=50_000, seconds=seconds)
    keys = [bytes([i]) for i in range(10)]
    for i in range(100_000):
        window.seen(keys[i % 10], float(i))
    assert len(window) == 10 and len(window._keys) < 10_000
    assert [k for k, _ in window.entries()] == keys
