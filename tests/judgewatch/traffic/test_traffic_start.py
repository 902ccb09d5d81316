"""Where a sampling run starts reading: the stored watermark, or `--since` as a watermark, a time or an age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from judgewatch.traffic import Watermark, parse_source_config
from judgewatch.traffic.start import parse_start, starting_point

CONFIG = parse_source_config({"name": "x", "kind": "sql", "url_env": "JW_TEST_LOG_DB", "table": "t"})
MARK = Watermark(last_order="2026-03-01T00:00:00+00:00", last_id="42")


def test_since_accepts_a_watermark_an_iso_time_or_an_age() -> None:
    now = datetime(2026, 3, 10, 12, tzinfo=UTC)
    assert parse_start(MARK.model_dump_json()) == MARK
    assert parse_start("2026-03-01T08:00") == datetime(2026, 3, 1, 8, tzinfo=UTC)  # no offset: UTC
    assert parse_start("2026-03-01T08:00+08:00") == datetime(2026, 3, 1, 8, tzinfo=timezone(timedelta(hours=8)))
    assert parse_start(" 24h ", now=now) == now - timedelta(hours=24)
    assert parse_start("2w", now=now) == now - timedelta(weeks=2)  # the grammar `report tiers --since` reads
    with pytest.raises(ValueError, match=r"--since 'soon': expected an age .* or an ISO 8601 date or time"):
        parse_start("soon")
    with pytest.raises(ValueError, match="--since ''"):
        parse_start(" ")


def test_without_since_a_run_starts_after_the_stored_watermark_or_at_the_start() -> None:
    assert starting_point(CONFIG, None, None) == (CONFIG, None, "the start")
    assert starting_point(CONFIG, None, MARK.model_dump_json()) == (CONFIG, MARK, "the stored watermark")


def test_since_a_time_rereads_from_the_start_filtered_and_never_below_the_configs_own_floor() -> None:
    stored = MARK.model_dump_json()
    config, start, said = starting_point(CONFIG, "2026-03-02T00:00Z", stored)
    assert start is None and config.filters.since == datetime(2026, 3, 2, tzinfo=UTC)
    assert said == "--since 2026-03-02T00:00:00+00:00"
    floored = CONFIG.model_copy(
        update={"filters": CONFIG.filters.model_copy(update={"since": datetime(2026, 3, 5, tzinfo=UTC)})}
    )
    config, _, _ = starting_point(floored, "2026-03-02T00:00Z", None)
    assert config.filters.since == datetime(2026, 3, 5, tzinfo=UTC)
    assert starting_point(CONFIG, MARK.model_dump_json(), None) == (CONFIG, MARK, "--since <watermark>")
