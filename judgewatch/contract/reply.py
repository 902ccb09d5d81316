"""The JSON schema a judge must answer in, generated from the rubric, and the parser of its reply.

Scores come before the reason so that a reply cut by max_tokens still carries every score; the reason
is bounded so the whole object fits in the judge's token budget.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from judgewatch.contract.rubric import Rubric


def verdict_schema(rubric: Rubric, to_score: list[str]) -> dict[str, Any]:
    """JSON schema with one bounded integer per criterion to score, then a short reason."""
    properties: dict[str, Any] = {
        name: {"type": "integer", "minimum": rubric.scale.min, "maximum": rubric.scale.max} for name in to_score
    }
    properties["reason"] = {"type": "string", "maxLength": rubric.reason_max_chars}
    return {
        "type": "object",
        "properties": properties,
        "required": [*to_score, "reason"],
        "additionalProperties": False,
    }


def response_format(rubric: Rubric, to_score: list[str]) -> dict[str, Any]:
    """The OpenAI `response_format` value (vLLM enforces it); never vLLM's removed guided-decoding request field."""
    return {
        "type": "json_schema",
        "json_schema": {"name": f"{rubric.name}_verdict", "schema": verdict_schema(rubric, to_score), "strict": True},
    }


def reply_model(rubric: Rubric, to_score: list[str]) -> type[BaseModel]:
    """A pydantic model that validates a reply against the same constraints as the schema."""
    return _reply_model(rubric.name, rubric.scale.min, rubric.scale.max, rubric.reason_max_chars, tuple(to_score))


@lru_cache(maxsize=256)
def _reply_model(name: str, low: int, high: int, reason_max_chars: int, to_score: tuple[str, ...]) -> type[BaseModel]:
    # Building a pydantic model costs ~0.4 ms: once per (rubric shape, criteria), not once per reply.
    fields: dict[str, Any] = {c: (int, Field(ge=low, le=high, strict=True)) for c in to_score}
    fields["reason"] = (str, Field(default="", max_length=reason_max_chars * 2))
    model: type[BaseModel] = create_model(
        f"{name.title().replace('_', '')}Reply", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


class ReplyError(ValueError):
    """The reply is not a usable verdict; `truncated` tells a cut-off reply from a malformed one."""

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


def parse_reply(
    rubric: Rubric, to_score: list[str], text: str, *, finish_reason: str | None = None
) -> tuple[dict[str, int], str]:
    """(scores, reason) from a judge's reply, or ReplyError.

    A reply cut off by max_tokens (finish_reason "length") is accepted only when every score was written
    before the cut; its reason is then kept as far as it got.
    """
    model = reply_model(rubric, to_score)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if finish_reason == "length":
            return _salvage_truncated(rubric, to_score, text)
        raise ReplyError(f"reply is not JSON: {exc.msg} at char {exc.pos}") from exc
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(object)"
        raise ReplyError(f"reply does not match the verdict schema: {loc}: {first['msg']}") from exc
    values = parsed.model_dump()
    reason = str(values.pop("reason", ""))[: rubric.reason_max_chars]
    return {k: int(v) for k, v in values.items()}, reason


def _salvage_truncated(rubric: Rubric, to_score: list[str], text: str) -> tuple[dict[str, int], str]:
    scores: dict[str, int] = {}
    for name in to_score:
        match = re.search(rf'"{re.escape(name)}"\s*:\s*(-?\d+)\s*[,}}]', text)
        if match is None:
            raise ReplyError(f"reply cut off by max_tokens before the score of '{name}'", truncated=True)
        value = int(match.group(1))
        if not rubric.scale.min <= value <= rubric.scale.max:
            raise ReplyError(f"reply cut off; score of '{name}' out of range: {value}", truncated=True)
        scores[name] = value
    reason_match = re.search(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)', text)
    reason = reason_match.group(1) if reason_match else ""
    return scores, (reason[: rubric.reason_max_chars - 12] + " [truncated]").strip()
