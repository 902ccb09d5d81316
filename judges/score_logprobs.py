"""Probability-weighted scores: each criterion's expected value over the scale's tokens at its score position (the
G-Eval weighting; docs/judges.md, "Probability-weighted verdicts"). Only one-digit scales are read.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from judgewatch.contract.rubric import Rubric

# vLLM clamps the log-probability of a token the grammar masked to this (entrypoints/openai/chat_completion/serving.py).
MASKED_LOGPROB = -9999.0


@dataclass(frozen=True, slots=True)
class LevelProbs:
    """The distribution over a scale's levels at one score position: its mean and the mass it covered."""

    expected: float
    mass: float  # total probability of the alternatives that spell a level (1.0 when the grammar masked the rest)
    probs: dict[int, float]  # level -> probability, renormalized over the levels found


def readable_scale(rubric: Rubric) -> bool:
    """True when every level of the rubric's scale is one digit, so one token position holds the whole score."""
    return rubric.scale.min >= 0 and rubric.scale.max <= 9


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def token_logprobs(choice: Any) -> list[Any] | None:
    """The per-token entries of a completion choice's `logprobs.content` (None when the reply carried none)."""
    logprobs = _field(choice, "logprobs")
    content = _field(logprobs, "content") if logprobs is not None else None
    return list(content) if content else None


def _level_probs(entry: Any, prefix: str, levels: range) -> LevelProbs | None:
    """The levels spelled by `entry`'s alternatives after `prefix` (the token's text before the digit)."""
    alternatives = list(_field(entry, "top_logprobs") or [])
    chosen = (_field(entry, "token"), _field(entry, "logprob"))
    seen: set[str] = set()
    probs: dict[int, float] = {}
    for token, logprob in [chosen, *((_field(a, "token"), _field(a, "logprob")) for a in alternatives)]:
        if not isinstance(token, str) or token in seen or logprob is None:
            continue
        seen.add(token)
        if not math.isfinite(logprob) or logprob <= MASKED_LOGPROB or not token.startswith(prefix):
            continue
        match = re.match(r"\d+", token[len(prefix) :])
        if match is None or int(match.group()) not in levels or len(match.group()) != 1:
            continue
        level = int(match.group())
        probs[level] = probs.get(level, 0.0) + math.exp(logprob)
    mass = sum(probs.values())
    if mass <= 0.0:
        return None
    normalized = {level: p / mass for level, p in sorted(probs.items())}
    return LevelProbs(sum(level * p for level, p in normalized.items()), min(mass, 1.0), normalized)


def score_positions(entries: Sequence[Any], criteria: Sequence[str]) -> dict[str, tuple[int, int]]:
    """{criterion: (token index, offset of the score's digit inside that token)} for every score found. The reply's text
    is the tokens laid end to end; the scores come before the reason, so a reason whose tokens do not decode cleanly (a
    split multi-byte character) cannot shift them."""
    texts = [token if isinstance(token := _field(entry, "token"), str) else "" for entry in entries]
    starts = list(accumulate(map(len, texts), initial=0))  # each token's first character in `joined`
    joined = "".join(texts)
    positions: dict[str, tuple[int, int]] = {}
    for name in criteria:
        match = re.search(rf'"{re.escape(name)}"\s*:\s*(\d)', joined)
        if match is None:
            continue
        char = match.start(1)
        index = bisect_right(starts, char) - 1  # the token whose text covers the digit
        positions[name] = (index, char - starts[index])
    return positions


def expected_scores(rubric: Rubric, scores: dict[str, int], entries: Sequence[Any]) -> dict[str, LevelProbs] | None:
    """Each scored criterion's distribution over the scale, or None unless every one of them could be read (its token
    found, holding the reply's integer, with alternatives that spell levels): a verdict has floats for all or none."""
    if not readable_scale(rubric) or not scores:
        return None
    levels = range(rubric.scale.min, rubric.scale.max + 1)
    positions = score_positions(entries, list(scores))
    found: dict[str, LevelProbs] = {}
    for name, value in scores.items():
        if name not in positions:
            return None
        index, offset = positions[name]
        token = _field(entries[index], "token")
        if not isinstance(token, str) or token[offset : offset + 1] != str(value):
            return None
        level_probs = _level_probs(entries[index], token[:offset], levels)
        if level_probs is None:
            return None
        found[name] = level_probs
    return found
