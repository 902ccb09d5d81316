"""The de-duplication window: a block at once (`seen_many`) answers and ends exactly as row by row (`seen`)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from judgewatch.traffic.dedup import DedupWindow


def _state(window: DedupWindow) -> tuple[list[tuple[bytes, float]], float]:
    return list(window._seen.items()), window._latest


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
    assert list(window._seen) == [b"d", b"a", b"e", b"f"]  # b expired (older than 12 - 10), c over the row bound
