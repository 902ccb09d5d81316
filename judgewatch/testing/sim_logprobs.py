"""The simulator's token log-probabilities, as vLLM returns them for `logprobs=True, top_logprobs=K`.

The reply is cut into plausible tokens, each with its log-probability and alternatives; at a score's digit the
alternatives are the scale's other levels (the written one the most likely), then tokens at -9999, as vLLM reports
what its structured-output grammar masked. Derived from the prompt's hash, so a test can predict it;
`[[sim:no_logprobs]]` (or `--mode no_logprobs`) answers without them, as a server ignoring the field does.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

_TOKEN = re.compile(r'(?<=:)\s?\d|"[^"\\]*"|\s+|\w+|[^\w\s]')
_SCORE = re.compile(r'"([a-z][a-z0-9_]*)":(\s?\d)')
MASKED = -9999.0


def _entry(token: str, logprob: float, alternatives: list[tuple[str, float]]) -> dict[str, Any]:
    def one(text: str, value: float) -> dict[str, Any]:
        return {"token": text, "logprob": value, "bytes": list(text.encode())}

    return {**one(token, logprob), "top_logprobs": [one(t, v) for t, v in alternatives]}


def level_distribution(level: int, low: int, high: int, seed: bytes) -> dict[int, float]:
    """A distribution over `low..high` whose mode is `level`: most mass on it, the rest on its neighbours."""
    top = 0.5 + 0.45 * seed[0] / 255  # 0.50 .. 0.95
    lean = seed[1] / 255  # share of the rest that goes above `level`
    rest = 1.0 - top
    probs = dict.fromkeys(range(low, high + 1), 0.0001)
    probs[level] = top
    if level < high:  # at the scale's bottom, all the rest goes above
        probs[level + 1] += rest * (lean if level > low else 1.0)
    if level > low:
        probs[level - 1] += rest * (1 - lean if level < high else 1.0)
    total = sum(probs.values())
    return {v: p / total for v, p in probs.items()}


def score_distributions(content: str, key: str, *, low: int = 1, high: int = 5) -> dict[str, dict[int, float]]:
    """{criterion: distribution over the levels} at each score the reply writes (what `reply_logprobs` reports)."""
    found: dict[str, dict[int, float]] = {}
    for match in _SCORE.finditer(content):
        level = int(match.group(2))
        if low <= level <= high:
            seed = hashlib.sha256(f"{key}:{match.group(1)}".encode()).digest()
            found[match.group(1)] = level_distribution(level, low, high, seed)
    return found


def reply_logprobs(content: str, top_logprobs: int, key: str, *, low: int = 1, high: int = 5) -> dict[str, Any]:
    """The `logprobs` object of a choice whose text is `content`; `key` (the prompt hash) seeds the scores.

    `low`..`high` is the scale: the simulator takes it from the first integer property of the request's schema.
    """
    distributions = score_distributions(content, key, low=low, high=high)
    at_score = {m.start(2): m.group(1) for m in _SCORE.finditer(content) if m.group(1) in distributions}
    k = max(1, top_logprobs)
    entries: list[dict[str, Any]] = []
    for match in _TOKEN.finditer(content):
        token = match.group()
        criterion = at_score.get(match.start())
        if criterion is None:
            entries.append(_entry(token, -0.02, [(token, -0.02), (" the", -4.5)][:k]))
            continue
        probs, space = distributions[criterion], token[:-1]
        ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))
        alternatives = [(f"{space}{v}", math.log(p)) for v, p in ranked]
        alternatives += [(f"{space}{d}", MASKED) for d in range(10) if not low <= d <= high]
        entries.append(_entry(token, math.log(probs[int(token[-1])]), alternatives[:k]))
    return {"content": entries}


def scale_of(body: dict[str, Any]) -> tuple[int, int]:
    """(minimum, maximum) of the first integer property in the request's json_schema (1-5 without one)."""
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, dict) else None
    for prop in (schema or {}).get("properties", {}).values():
        if isinstance(prop, dict) and prop.get("type") == "integer":
            return int(prop.get("minimum", 1)), int(prop.get("maximum", 5))
    return 1, 5


def choice_logprobs(body: dict[str, Any], content: str, key: str, fault: str) -> dict[str, Any] | None:
    """What the simulator puts in a choice's `logprobs`: None unless the request asked and the fault allows."""
    if not body.get("logprobs") or fault == "no_logprobs" or not content:
        return None
    low, high = scale_of(body)
    return reply_logprobs(content, int(body.get("top_logprobs") or 1), key, low=low, high=high)
