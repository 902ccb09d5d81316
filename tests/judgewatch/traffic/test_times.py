"""Timestamps on whole columns read the instant `RowMapper.timestamp` reads, and leave it every other value."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from judgewatch.traffic.columnar.times import epoch_micros
from judgewatch.traffic.config import micros_of


def _random_stamp(rng: random.Random) -> str:
    year = rng.choice([rng.randint(1890, 2210), 2024, 2000, 1900, 2199, 2200])
    text = f"{year:04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d}{rng.choice('TT x')}"
    text += f"{rng.randint(0, 25):02d}:{rng.randint(0, 60):02d}:{rng.randint(0, 61):02d}"
    text += rng.choice(["", f".{rng.randint(0, 999):03d}", f".{rng.randint(0, 999_999):06d}", ".12", ".1234567"])
    sign = rng.choice("+-")
    return text + rng.choice(["", "Z", f"{sign}{rng.randint(0, 25):02d}:{rng.randint(0, 60):02d}", "+0800", "z"])


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai"])
def test_every_covered_text_reads_as_fromisoformat_reads_it(zone: str) -> None:
    rng, tz = random.Random(zone), ZoneInfo(zone)
    values = [_random_stamp(rng) for _ in range(50_000)] + [None, "", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z"]
    micros, covered = epoch_micros(pa.array(values, pa.string()), tz)
    assert 1_000 < covered.sum() < len(values)
    for value, us, ok in zip(values, micros.tolist(), covered.tolist(), strict=True):
        if ok:
            at = datetime.fromisoformat(value)  # type: ignore[arg-type]
            at = at if at.tzinfo is not None else at.replace(tzinfo=tz)
            assert micros_of(at) == us and at.timestamp() == us / 1e6, value


def test_the_forms_gateways_write_are_covered_and_a_local_time_in_a_zone_with_rules_is_not() -> None:
    values = ["2024-06-01T08:00:00+00:00", "2024-06-01T08:00:00.137000+08:00", "2024-06-01T08:00:00.137Z",
              "2024-06-01 08:00:00", "2024-06-01T08:00:00"]  # fmt: skip
    _, in_utc = epoch_micros(pa.array(values), ZoneInfo("UTC"))
    _, in_shanghai = epoch_micros(pa.array(values), ZoneInfo("Asia/Shanghai"))
    assert in_utc.tolist() == [True] * 5
    assert in_shanghai.tolist() == [True, True, True, False, False]


def test_timestamp_columns_are_read_as_stored_instants() -> None:
    at = datetime(2024, 6, 1, 8, 0, 0, 137_000, tzinfo=UTC)
    column = pa.array([at, None], pa.timestamp("ms", tz="Asia/Shanghai"))
    micros, covered = epoch_micros(column, ZoneInfo("UTC"))
    assert covered.tolist() == [True, False] and micros[0] == micros_of(at)
    _, naive = epoch_micros(pa.array([at.replace(tzinfo=None)], pa.timestamp("us")), ZoneInfo("Asia/Shanghai"))
    assert naive.tolist() == [False]  # a wall time in a zone with rules: the row path reads it
