"""Which failures of an OpenAI-compatible call are worth retrying, and what unscored reason each one becomes.

Transient: 429 (but quota exhaustion), 408, 409, 5xx, timeouts, connection errors; anything else is tried once. A
400/413 over the context window is `too_long`, not `refused`: the judge did not decline.
"""

from __future__ import annotations

from dataclasses import dataclass

import openai

from judgewatch.contract.verdicts import UnscoredReason, Verdict

# Failures of the endpoint rather than of the judge's answer: the fallback chain moves on for these.
ENDPOINT_REASONS = frozenset({UnscoredReason.endpoint_down, UnscoredReason.timeout, UnscoredReason.rate_limited})
# Final unscored verdicts: no judge could score the item (no criterion applies to it). Every other reason, a
# refusal, a parse or template error included, is sent to the judge again when the run is resumed.
FINAL_REASONS = frozenset({UnscoredReason.no_reference})
RETRIED_REASONS = frozenset(UnscoredReason) - FINAL_REASONS

_QUOTA_MARKERS = ("insufficient_quota", "quota")
# vLLM: "This model's maximum context length is 2048 tokens. However, ..." or "... the model's context length is
# only 2048 tokens, resulting in a maximum input length of ..."; OpenAI: code context_length_exceeded;
# llama.cpp: "exceed_context_size_error".
_CONTEXT_MARKERS = (
    "maximum context length",
    "context length is only",
    "maximum model length",
    "context_length_exceeded",
    "exceed_context_size",
)
_DETAIL_CHARS = 300


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified: the unscored reason it maps to and whether a retry may help."""

    reason: UnscoredReason
    transient: bool
    detail: str
    status: int | None = None
    retry_after_s: float | None = None


class CallError(Exception):
    """A call that failed for good (permanent error, or retries exhausted), with what it cost."""

    def __init__(self, failure: Failure, *, attempts: int, latency_ms: float) -> None:
        super().__init__(failure.detail)
        self.failure = failure
        self.attempts = attempts
        self.latency_ms = latency_ms


def is_endpoint_failure(verdict: Verdict) -> bool:
    """True when the verdict is unscored because the endpoint failed (down, timeout, rate limited)."""
    return verdict.unscored_reason in ENDPOINT_REASONS


def excerpt(text: object, limit: int = _DETAIL_CHARS) -> str:
    """`text` cut to `limit` characters (with "..."), for the bounded `detail` of an unscored verdict."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        return max(0.0, float(exc.response.headers["retry-after"]))
    except (KeyError, ValueError):
        return None  # absent, or an HTTP date (rare for these servers): fall back to our own backoff


def _mentions(exc: openai.APIStatusError, markers: tuple[str, ...]) -> bool:
    haystack = " ".join(str(x) for x in (exc.code, exc.type, exc.message, exc.body) if x).lower()
    return any(marker in haystack for marker in markers)


def classify_exception(exc: BaseException) -> Failure:
    """Map an exception raised by one attempt to a Failure."""
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return Failure(UnscoredReason.timeout, True, "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        return Failure(UnscoredReason.endpoint_down, True, excerpt(f"connection failed: {why}"))
    if isinstance(exc, openai.APIStatusError):
        return classify_status(exc)
    if isinstance(exc, openai.ContentFilterFinishReasonError):
        return Failure(UnscoredReason.refused, False, "content filter")
    return Failure(UnscoredReason.judge_error, False, excerpt(f"{type(exc).__name__}: {exc}"))


def classify_status(exc: openai.APIStatusError) -> Failure:
    """HTTP status errors: 429/408/409/5xx are transient unless the 429 is quota exhaustion; a context-length
    400 is `too_long`, any other 4xx `refused`."""
    status = exc.status_code
    detail = excerpt(f"HTTP {status}: {exc.message}")
    if status == 429:
        quota = _mentions(exc, _QUOTA_MARKERS)  # exhausted: retrying cannot help, and Retry-After is not read
        return Failure(UnscoredReason.rate_limited, not quota, detail, status, None if quota else _retry_after(exc))
    if status == 408:
        return Failure(UnscoredReason.timeout, True, detail, status)
    if status >= 500 or status == 409:
        return Failure(UnscoredReason.endpoint_down, True, detail, status, _retry_after(exc))
    if status in (400, 413) and _mentions(exc, _CONTEXT_MARKERS):
        return Failure(UnscoredReason.too_long, False, detail, status)
    if 400 <= status < 500:
        return Failure(UnscoredReason.refused, False, detail, status)
    return Failure(UnscoredReason.judge_error, False, detail, status)
