"""Where a sampling run starts reading a source: after its stored watermark, or where `--since` says.

`--since` takes a watermark as JSON (resume exactly there), or what `judgewatch.since` reads (an ISO 8601 time or
an age: "24h", "7d", "2w"); a time re-reads the source from its start, filtered to rows at or after that time,
and never moves the stored watermark. Pure functions: the flow reads and saves the watermark.
"""

from __future__ import annotations

import logging
from datetime import datetime

from judgewatch.since import parse_since
from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.watermark import Watermark

logger = logging.getLogger(__name__)


def parse_start(since: str, now: datetime | None = None) -> Watermark | datetime:
    """`judgewatch sample --since`: a watermark as JSON, else the shared `--since` grammar (`parse_since`)."""
    if since.strip().startswith("{"):
        return Watermark.model_validate_json(since)
    moment = parse_since(since, now=now)
    if moment is None:
        raise ValueError("--since '': expected an age (30m, 24h, 7d, 2w), an ISO 8601 time or a watermark JSON")
    return moment


def starting_point(
    config: SourceConfig, since: str | None, stored: str | None
) -> tuple[SourceConfig, Watermark | None, str]:
    """(config to read with, watermark to read after, description). A time re-reads from the start, filtered."""
    if since is None:
        if stored is None:
            return config, None, "the start"
        return config, Watermark.model_validate_json(stored), "the stored watermark"
    parsed = parse_start(since)
    if isinstance(parsed, Watermark):
        return config, parsed, "--since <watermark>"
    floor = max(parsed, config.filters.since) if config.filters.since else parsed
    filters = config.filters.model_copy(update={"since": floor})
    return config.model_copy(update={"filters": filters}), None, f"--since {floor.isoformat()}"
