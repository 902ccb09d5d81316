"""The one `--since` grammar (`judgewatch sample`, `judgewatch report tiers`): an age before now ("30m", "24h",
"1.5d", "2w") or an ISO 8601 time ("2026-11-01", "2024-06-03T12:00Z"), UTC unless it carries an offset. Standard
library only.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}


def parse_since(text: str | None, *, now: datetime | None = None) -> datetime | None:
    """The UTC moment `text` names; None for nothing. Raises ValueError with a message fit for a user."""
    value = (text or "").strip()
    if not value:
        return None
    if match := _AGE.match(value):
        return (now or datetime.now(UTC)) - timedelta(seconds=float(match[1]) * _UNIT_SECONDS[match[2]])
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"--since {text!r}: expected an age (30m, 24h, 7d, 2w) or an ISO 8601 date or time "
            "(2026-11-01, 2024-06-03T12:00Z)"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
