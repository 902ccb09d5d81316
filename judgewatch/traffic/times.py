"""Timestamps on whole columns: the instant `RowMapper.timestamp` reads, as epoch microseconds, without a datetime.

Covered: ISO 8601 text of the forms `datetime.isoformat` and JavaScript write (`YYYY-MM-DD[T ]hh:mm:ss`,
optionally `.fff` or `.ffffff`, then `Z`, `+hh:mm`, `-hh:mm`, or nothing when the source's zone is UTC), and
Arrow timestamp columns in s, ms or us, between the years 1900 and 2199. Each row's fields are range-checked as
`datetime.fromisoformat` checks them; any row not covered is left to `RowMapper.timestamp`, so an unusual or
bad value is read, or rejected, exactly as the row path reads it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_ISO = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3}|\.[0-9]{6})?(Z|[+-][0-9]{2}:[0-9]{2})?$"
_WIDTH = 32  # the longest covered form: 2024-06-01T08:00:00.000000+08:00
_FILLER = "1970-01-01T00:00:00Z"
_FIRST, _LAST = -2208988800 * 10**6, 7258118400 * 10**6  # 1900-01-01, 2200-01-01 (UTC)
_UNITS = {"s": 10**6, "ms": 10**3, "us": 1}
_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"}
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def micros_of(at: datetime) -> int:
    """An aware datetime as exact epoch microseconds (`at.timestamp()` is this over 10**6, as a float)."""
    return (at - EPOCH) // _ONE_US


def epoch_micros(values: pa.Array, tz: tzinfo) -> tuple[np.ndarray, np.ndarray]:
    """(microseconds since the epoch, covered) per row; a row not covered reads as 0 and is the caller's."""
    n = len(values)
    naive_ok = getattr(tz, "key", None) in _UTC_NAMES
    if pa.types.is_timestamp(values.type):
        return _typed(values, naive_ok)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    matches = pc.fill_null(pc.match_substring_regex(values, _ISO), False)
    covered = np.asarray(matches.to_numpy(zero_copy_only=False), dtype=bool)
    if not covered.any():
        return np.zeros(n, dtype=np.int64), covered
    text = pc.if_else(matches, values, _FILLER)
    lengths = pc.binary_length(text).to_numpy(zero_copy_only=False).astype(np.int64)
    padded = pc.utf8_rpad(text, _WIDTH, " ")  # ASCII: one byte a character, so a fixed-width matrix
    chars = np.frombuffer(padded.buffers()[2], dtype=np.uint8, count=n * _WIDTH).reshape(n, _WIDTH)
    digits = chars.astype(np.int64) - 48

    def number(start: int, end: int) -> np.ndarray:
        out = np.zeros(n, dtype=np.int64)
        for k in range(start, end):
            out = out * 10 + digits[:, k]
        return out

    year, month, day = number(0, 4), number(5, 7), number(8, 10)
    hour, minute, second = number(11, 13), number(14, 16), number(17, 19)
    fraction = np.where(np.isin(lengths, (23, 24, 29)), number(20, 23) * 1000, 0)
    fraction = np.where(np.isin(lengths, (26, 27, 32)), number(20, 26), fraction)
    offset = np.zeros(n, dtype=np.int64)
    for length, sign_at in ((25, 19), (29, 23), (32, 26)):  # the forms ending in +hh:mm / -hh:mm
        rows = lengths == length
        if rows.any():
            hh, mm = number(sign_at + 1, sign_at + 3), number(sign_at + 4, sign_at + 6)
            covered &= ~rows | ((hh <= 23) & (mm <= 59))
            sign = np.where(chars[:, sign_at] == ord("-"), -1, 1)
            offset = np.where(rows, sign * (hh * 3600 + mm * 60), offset)
    if not naive_ok:
        covered &= ~np.isin(lengths, (19, 23, 26))  # a local time in a zone with rules: the row path reads it
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = _MONTH_DAYS[np.clip(month, 0, 12)] + ((month == 2) & leap)
    covered &= (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days)
    covered &= (hour <= 23) & (minute <= 59) & (second <= 59)
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    micros = seconds * 10**6 + fraction
    covered &= (micros >= _FIRST) & (micros < _LAST)
    return np.where(covered, micros, 0), covered


def _typed(values: pa.Array, naive_ok: bool) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow timestamp column: instants as stored (UTC) when it has a zone, wall times read as UTC if not."""
    n, unit = len(values), values.type.unit
    if unit not in _UNITS or (values.type.tz is None and not naive_ok):
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    raw = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    covered = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    bound = (_FIRST // _UNITS[unit], _LAST // _UNITS[unit])
    covered &= (raw >= bound[0]) & (raw < bound[1])
    return np.where(covered, raw * _UNITS[unit], 0), covered


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm, years >= 1)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468
