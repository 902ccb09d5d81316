"""Credentials in URLs are held back where a URL enters the process (`hide`), and given back only to open a
connection (`reveal`), docs/security.md. The URL with its credential goes to the environment variable
`JUDGEWATCH_URL_CREDENTIALS`, which this process and the flow runs it starts in-process read.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from judgewatch.redact import MASK, mask_url

ENV = "JUDGEWATCH_URL_CREDENTIALS"
# A URL inside free text: a comma-separated --judge list, a NAME=URL#MODEL tier option.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s,#]+")


class HiddenCredentialError(ValueError):
    """A masked URL whose credential this process was never given."""


def _kept() -> list[str]:
    try:
        kept = json.loads(os.environ.get(ENV) or "[]")
    except ValueError as exc:
        raise HiddenCredentialError(f"{ENV} must be a JSON list of URLs with their credentials") from exc
    if not isinstance(kept, list) or not all(isinstance(u, str) for u in kept):
        raise HiddenCredentialError(f"{ENV} must be a JSON list of URLs with their credentials")
    return kept


def hide(url: str) -> str:
    """The URL with its credential masked; the credential is kept for `reveal` (in this process's environment)."""
    masked = mask_url(url)
    if masked != url:
        kept = [u for u in _kept() if u != url]
        os.environ[ENV] = json.dumps([*kept, url])  # the latest last: it wins over an older one of the same mask
    return masked


def hide_in(text: str) -> str:
    """`text` with every URL in it hidden as `hide` does (a list of URLs, `NAME=URL#MODEL`)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: hide(m.group(0)), text)


def hide_params(params: dict[str, Any]) -> dict[str, Any]:
    """Flow parameters with every URL in a string (or a list of strings) hidden: what Prefect may store."""

    def one(value: Any) -> Any:
        if isinstance(value, str):
            return hide_in(value)
        if isinstance(value, list | tuple):
            return type(value)(one(v) for v in value)
        return value

    return {name: one(value) for name, value in params.items()}


def reveal(url: str) -> str:
    """The URL to connect to: `url` itself when nothing in it is masked, else the kept URL it masks
    (HiddenCredentialError when the credential was never given to this process)."""
    if MASK not in url:
        return url
    wanted = url.rstrip("/")
    for kept in reversed(_kept()):
        if mask_url(kept).rstrip("/") == wanted:
            return kept.rstrip("/") + ("/" if url.endswith("/") else "")
    raise HiddenCredentialError(
        f"{url}: the URL's credential is masked and this process was not given it (set {ENV} to a JSON list of "
        "the URLs with their credentials)"
    )
