"""Timestamps on whole columns: the instant `RowMapper.timestamp` reads, as epoch microseconds, without a datetime.

Covered: the ISO 8601 forms `datetime.isoformat` and JavaScript write (`_iso_form`), and Arrow timestamp columns in
s, ms or us, years 1900 to 2199; any other row is left to `RowMapper.timestamp`, read as the row path reads it."""

from __future__ import annotations

from datetime import tzinfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_WIDTH = 32  # the longest covered form: 2024-06-01T08:00:00.000000+08:00
_FIRST, _LAST = -2208988800 * 10**6, 7258118400 * 10**6  # 1900-01-01, 2200-01-01 (UTC)
_UNITS = {"s": 10**6, "ms": 10**3, "us": 1}
_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"}
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def epoch_micros(values: pa.Array, tz: tzinfo) -> tuple[np.ndarray, np.ndarray]:
    """(microseconds since the epoch, covered) per row; a row not covered reads as 0 and is the caller's."""
    n = len(values)
    naive_ok = getattr(tz, "key", None) in _UTC_NAMES
    if pa.types.is_timestamp(values.type):
        return _typed(values, naive_ok)
    if pa.types.is_large_string(values.type):
        values = values.cast(pa.string())
    if not pa.types.is_string(values.type):
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    chars, lengths = _char_matrix(values)  # one row per character position: each is contiguous
    covered = _iso_form(chars, lengths, naive_ok)

    def number(start: int, end: int) -> np.ndarray:
        out = chars[start].astype(np.int64) - 48
        for k in range(start + 1, end):
            out = out * 10 + (chars[k] - 48)
        return out

    year, month, day = number(0, 4), number(5, 7), number(8, 10)
    hour, minute, second = number(11, 13), number(14, 16), number(17, 19)
    fraction = np.zeros(n, dtype=np.int64)
    for forms, digits, scale in (((23, 24, 29), 3, 1000), ((26, 27, 32), 6, 1)):
        rows = np.isin(lengths, forms)
        if rows.any():
            fraction = np.where(rows, number(20, 20 + digits) * scale, fraction)
    offset = np.zeros(n, dtype=np.int64)
    for length, sign_at in ((25, 19), (29, 23), (32, 26)):  # the forms ending in +hh:mm / -hh:mm
        rows = lengths == length
        if rows.any():
            hh, mm = number(sign_at + 1, sign_at + 3), number(sign_at + 4, sign_at + 6)
            covered &= ~rows | ((hh <= 23) & (mm <= 59))
            sign = np.where(chars[sign_at] == ord("-"), -1, 1)
            offset = np.where(rows, sign * (hh * 3600 + mm * 60), offset)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    month_days = _MONTH_DAYS[np.clip(month, 0, 12)] + ((month == 2) & leap)
    covered &= (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days)
    covered &= (hour <= 23) & (minute <= 59) & (second <= 59)
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset
    micros = seconds * 10**6 + fraction
    covered &= (micros >= _FIRST) & (micros < _LAST)
    return np.where(covered, micros, 0), covered


def _char_matrix(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(per character position k, byte k of every row, or a space past its end; per row its byte length, -1
    when null)."""
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=n + 1, offset=4 * values.offset)
    lengths = np.diff(offsets).astype(np.int64)
    if values.null_count:
        lengths[~np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)] = -1
    padded = pc.ascii_rpad(values, _WIDTH, " ")  # byte-wise: every row of at most _WIDTH bytes becomes _WIDTH
    ends = np.frombuffer(padded.buffers()[1], dtype=np.int32, count=n + 1, offset=4 * padded.offset)
    if not padded.null_count and int(ends[-1]) - int(ends[0]) == n * _WIDTH:  # so every row fits: a reshape
        data = np.frombuffer(padded.buffers()[2], dtype=np.uint8, count=n * _WIDTH, offset=int(ends[0]))
        return np.ascontiguousarray(data.reshape(n, _WIDTH).T), lengths
    data = values.buffers()[2]
    flat = np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else np.zeros(1, dtype=np.uint8)
    at = offsets[:-1].astype(np.int64) + np.arange(_WIDTH)[:, None]
    chars = np.where(np.arange(_WIDTH)[:, None] < lengths, flat[np.minimum(at, len(flat) - 1)], 32)
    return chars.astype(np.uint8), lengths


def _iso_form(chars: np.ndarray, lengths: np.ndarray, naive_ok: bool) -> np.ndarray:
    """Rows whose bytes are exactly one of the covered forms (the check a regular expression would make):
    `YYYY-MM-DD[T ]hh:mm:ss`, then `.fff` or `.ffffff` or nothing, then `Z`, `+hh:mm`, `-hh:mm` or nothing
    (nothing only when `naive_ok`)."""

    def digits(*positions: int) -> np.ndarray:
        return np.all((chars[list(positions)] - 48) < 10, axis=0)  # uint8: a byte below "0" wraps to >= 10

    def byte(position: int, allowed: bytes) -> np.ndarray:
        row = chars[position]
        return row == allowed[0] if len(allowed) == 1 else (row == allowed[0]) | (row == allowed[1])

    ok = digits(0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18) & byte(4, b"-") & byte(7, b"-")
    ok &= byte(10, b"T ") & byte(13, b":") & byte(16, b":")
    millis, micros = byte(19, b".") & digits(20, 21, 22), byte(19, b".") & digits(20, 21, 22, 23, 24, 25)

    def zone(at: int) -> np.ndarray:  # +hh:mm or -hh:mm at `at`
        return byte(at, b"+-") & digits(at + 1, at + 2, at + 4, at + 5) & byte(at + 3, b":")

    forms = [(20, byte(19, b"Z")), (24, millis & byte(23, b"Z")), (27, micros & byte(26, b"Z")),
             (25, zone(19)), (29, millis & zone(23)), (32, micros & zone(26))]  # fmt: skip
    if naive_ok:
        forms += [(19, np.ones(len(lengths), dtype=bool)), (23, millis), (26, micros)]
    shape = np.zeros(len(lengths), dtype=bool)
    for length, form in forms:
        shape |= (lengths == length) & form
    return ok & shape


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
