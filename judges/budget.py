"""One judge budget across every flow run: a Prefect global concurrency limit `judge:<host>:<port>` per endpoint.

Every call holds a slot of it while the request runs. Without a Prefect API or without that limit (created by
`judgewatch judges limit URL N` or `make stack-up`), calls go straight through: the budget is an operator's choice.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

LIMIT_PREFIX = "judge:"
LEASE_S = 60.0  # the server's minimum; renewed while a call runs, so a killed worker's slots return within ~75 s
EXISTS_TTL_S = 30.0  # how long "this limit exists / does not" is believed before asking the server again

_known: dict[str, tuple[bool, float]] = {}
_warned: set[str] = set()


def limit_name(base_url: str) -> str:
    """`judge:<host>:<port>` for an endpoint URL (default ports filled in), the same on every worker."""
    parts = urlsplit(base_url if "://" in base_url else f"http://{base_url}")
    if not parts.hostname:
        raise ValueError(f"not an endpoint URL: {base_url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{LIMIT_PREFIX}{parts.hostname.lower()}:{port}"


def prefect_api_url() -> str | None:
    """The configured Prefect API (env or profile); None when Prefect runs without a server. Importing Prefect costs
    seconds of a command's start: when it is not loaded yet and nothing Prefect reads its settings from exists, there is
    no API to ask, and Prefect is not imported to learn that."""
    if "prefect" not in sys.modules and not _prefect_may_be_configured():
        return None
    from prefect.settings import get_current_settings

    return get_current_settings().api.url or None


@functools.cache
def _prefect_may_be_configured() -> bool:
    """Whether any source of Prefect's settings exists: its environment, a profiles file, or prefect.toml, `.env`
    or pyproject's [tool.prefect] in the working directory (Prefect 3's sources)."""
    if any(name in os.environ for name in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH")):
        return True
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    if (home / "profiles.toml").exists() or Path("prefect.toml").exists():
        return True
    for name, marker in ((".env", "PREFECT_"), ("pyproject.toml", "[tool.prefect")):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if marker in Path(name).read_text(encoding="utf-8"):
                return True
    return False


async def _limit_exists(name: str) -> bool:
    cached = _known.get(name)
    if cached is not None and time.monotonic() - cached[1] < EXISTS_TTL_S:
        return cached[0]
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    try:
        async with get_client() as client:
            await client.read_global_concurrency_limit_by_name(name)
        exists = True
    except ObjectNotFound:
        exists = False
        if name not in _warned:
            _warned.add(name)
            logger.warning(
                "no Prefect global concurrency limit %r: calls to this endpoint are bounded per flow run only "
                "(create it with `judgewatch judges limit URL N`)",
                name,
            )
    else:
        _warned.discard(name)
    _known[name] = (exists, time.monotonic())
    return exists


@contextlib.asynccontextmanager
async def judge_slot(base_url: str) -> AsyncIterator[None]:
    """Hold one slot of the endpoint's global limit for the duration of the block (or nothing, see module doc)."""
    if prefect_api_url() is None or not await _limit_exists(name := limit_name(base_url)):
        yield
        return
    from prefect.concurrency.asyncio import concurrency

    async with concurrency(name, occupy=1, lease_duration=LEASE_S, strict=False):
        yield


async def set_limit(base_url: str, slots: int) -> str:
    """Create or resize the endpoint's global limit to `slots` (e.g. vLLM's max_num_seqs); its name."""
    if slots < 1:
        raise ValueError(f"a judge limit needs at least 1 slot, got {slots}")
    if prefect_api_url() is None:
        raise RuntimeError("no Prefect API configured: set PREFECT_API_URL to the Prefect server's /api URL")
    from prefect.client.orchestration import get_client

    name = limit_name(base_url)
    async with get_client() as client:
        await client.upsert_global_concurrency_limit_by_name(name, slots)
    _known.pop(name, None)
    return name
