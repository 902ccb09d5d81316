"""Where a sampling run starts reading a source: after its stored watermark, or where `--since` says.

`--since` takes a watermark as JSON (resume exactly there), an ISO 8601 time or an age ("24h", "7d"); a time
re-reads the source from its start, filtered to rows at or after that time, and never moves the stored
watermark. Pure functions: the flow reads and saves the watermark.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta

from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.watermark import Watermark

logger = logging.getLogger(__name__)

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(since: str, now: datetime | None = None) -> Watermark | datetime:
    """`--since`: a watermark as JSON, an ISO 8601 time (UTC unless it has an offset) or an age ("24h", "7d")."""
    value = since.strip()
    if value.startswith("{"):
        return Watermark.model_validate_json(value)
    if match := _RELATIVE.match(value):
        return (now or datetime.now(UTC)) - timedelta(seconds=float(match[1]) * _UNIT_SECONDS[match[2]])
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"--since: expected an ISO 8601 time (2024-06-03T12:00Z), an age (24h, 30m, 7d) or a watermark JSON, "
            f"got {since!r}"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def starting_point(
    config: SourceConfig, since: str | None, stored: str | None
) -> tuple[SourceConfig, Watermark | None, str]:
    """(config to read with, watermark to read after, description). A time re-reads from the start, filtered."""
    if since is None:
        if stored is None:
            return config, None, "the start"
        return config, Watermark.model_validate_json(stored), "the stored watermark"
    parsed = parse_since(since)
    if isinstance(parsed, Watermark):
        return config, parsed, "--since <watermark>"
    floor = max(parsed, config.filters.since) if config.filters.since else parsed
    filters = config.filters.model_copy(update={"since": floor})
    return config.model_copy(update={"filters": filters}), None, f"--since {floor.isoformat()}"
