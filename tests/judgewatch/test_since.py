"""One `--since` grammar for `judgewatch sample` and `judgewatch report tiers`: an age or an ISO 8601 time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from judgewatch.since import parse_since
from judgewatch.traffic.start import parse_start

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "ago"),
    [
        ("30m", timedelta(minutes=30)),
        ("12h", timedelta(hours=12)),
        (" 24h ", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("1.5d", timedelta(hours=36)),
        ("2w", timedelta(weeks=2)),
        ("45s", timedelta(seconds=45)),
    ],
)
def test_an_age_counts_back_from_now_in_both_commands(text: str, ago: timedelta) -> None:
    assert parse_since(text, now=NOW) == NOW - ago
    assert parse_start(text, now=NOW) == NOW - ago  # `sample --since 2w` reads what `report tiers` reads


def test_a_time_is_utc_unless_it_has_an_offset_and_nothing_is_none() -> None:
    assert parse_since("2026-03-01") == datetime(2026, 3, 1, tzinfo=UTC)
    assert parse_since("2026-03-01T08:00Z") == datetime(2026, 3, 1, 8, tzinfo=UTC)
    moment = parse_since("2026-03-01T08:00+08:00")
    assert moment == datetime(2026, 3, 1, 8, tzinfo=timezone(timedelta(hours=8))) and moment.tzinfo == UTC
    assert parse_since(None) is None and parse_since(" ") is None


@pytest.mark.parametrize("text", ["soon", "last tuesday", "7 days", "-3d", "2y"])
def test_anything_else_is_refused_naming_the_value(text: str) -> None:
    with pytest.raises(ValueError, match=f"--since '{text}': expected an age"):
        parse_since(text)
