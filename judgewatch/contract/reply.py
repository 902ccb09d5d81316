"""The JSON schemas a judge must answer in, generated from the rubric, and the one parser of its replies.

The decisive part comes first (each score, or the winner), so a reply cut by max_tokens still carries it, and the
reason is bounded. Both kinds go through `parse_json_reply`: JSON, the pydantic model, then (only for a reply cut
by max_tokens) a salvage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from judgewatch.contract.rubric import Rubric

Winner = Literal["A", "B", "tie"]
ModelT = TypeVar("ModelT", bound=BaseModel)
ReplyT = TypeVar("ReplyT")


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


def pair_schema(rubric: Rubric) -> dict[str, Any]:
    """JSON schema of a pairwise reply: the winner by position, then a short reason."""
    return {
        "type": "object",
        "properties": {
            "winner": {"type": "string", "enum": list(get_args(Winner))},
            "reason": {"type": "string", "maxLength": rubric.reason_max_chars},
        },
        "required": ["winner", "reason"],
        "additionalProperties": False,
    }


def _json_schema_format(rubric: Rubric, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": f"{rubric.name}_verdict", "schema": schema, "strict": True}}


def response_format(rubric: Rubric, to_score: list[str]) -> dict[str, Any]:
    """The OpenAI `response_format` value (vLLM enforces it); never vLLM's removed guided-decoding request field."""
    return _json_schema_format(rubric, verdict_schema(rubric, to_score))


def pair_response_format(rubric: Rubric) -> dict[str, Any]:
    """The `response_format` of a pairwise request ("A or B?")."""
    return _json_schema_format(rubric, pair_schema(rubric))


def reply_model(rubric: Rubric, to_score: list[str]) -> type[BaseModel]:
    """A pydantic model that validates a reply against the same constraints as the schema."""
    return _reply_model(rubric.name, rubric.scale.min, rubric.scale.max, rubric.reason_max_chars, tuple(to_score))


@lru_cache(maxsize=256)
def _reply_model(name: str, low: int, high: int, reason_max_chars: int, to_score: tuple[str, ...]) -> type[BaseModel]:
    # Building a pydantic model costs ~0.4 ms: once per (rubric shape, criteria), not once per reply.
    fields: dict[str, Any] = {c: (int, Field(ge=low, le=high, strict=True)) for c in to_score}
    fields["reason"] = (str, Field(default="", max_length=reason_max_chars * 2))
    return create_model(f"{name.title().replace('_', '')}Reply", __config__=ConfigDict(extra="forbid"), **fields)


class ReplyError(ValueError):
    """The reply is not a usable verdict; `truncated` tells a cut-off reply from a malformed one."""

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


class PairReply(BaseModel):
    """A pairwise judge's reply, validated."""

    model_config = ConfigDict(extra="forbid")

    winner: Winner
    reason: str = Field(default="", max_length=2000)


def parse_json_reply(
    text: str,
    model: type[ModelT],
    *,
    schema_name: str,
    finish_reason: str | None,
    salvage: Callable[[str], ReplyT],
    read: Callable[[ModelT], ReplyT],
) -> ReplyT:
    """`read(model(json))` for a reply, or ReplyError naming the first problem; a reply that max_tokens cut before it
    was JSON (finish_reason "length") goes to `salvage` (what was written before the cut, or a truncated ReplyError)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if finish_reason == "length":
            return salvage(text)
        raise ReplyError(f"reply is not JSON: {exc.msg} at char {exc.pos}") from exc
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(object)"
        raise ReplyError(f"reply does not match the {schema_name} schema: {loc}: {first['msg']}") from exc
    return read(parsed)


def parse_reply(
    rubric: Rubric, to_score: list[str], text: str, *, finish_reason: str | None = None
) -> tuple[dict[str, int], str]:
    """(scores, reason) from a pointwise judge's reply, or ReplyError. A reply cut off by max_tokens (finish_reason
    "length") is accepted only when every score was written before the cut; its reason is then kept as far as it got."""

    def read(parsed: BaseModel) -> tuple[dict[str, int], str]:
        values = parsed.model_dump()
        reason = str(values.pop("reason", ""))[: rubric.reason_max_chars]
        return {k: int(v) for k, v in values.items()}, reason

    return parse_json_reply(
        text,
        reply_model(rubric, to_score),
        schema_name="verdict",
        finish_reason=finish_reason,
        salvage=lambda cut: _salvage_scores(rubric, to_score, cut),
        read=read,
    )


def parse_pair_reply(text: str, *, finish_reason: str | None = None) -> tuple[Winner, str]:
    """(winner, reason) from a pairwise judge's reply, or ReplyError; a cut-off reply keeps a winner it wrote."""

    def read(parsed: PairReply) -> tuple[Winner, str]:
        return parsed.winner, parsed.reason

    return parse_json_reply(
        text, PairReply, schema_name="pairwise", finish_reason=finish_reason, salvage=_salvage_winner, read=read
    )


def _salvage_winner(text: str) -> tuple[Winner, str]:
    match = re.search(r'"winner"\s*:\s*"(A|B|tie)"', text)
    if match is None:
        raise ReplyError("reply cut off by max_tokens before the winner", truncated=True)
    winner: Winner = "A" if match.group(1) == "A" else "B" if match.group(1) == "B" else "tie"
    return winner, "[truncated]"


def _salvage_scores(rubric: Rubric, to_score: list[str], text: str) -> tuple[dict[str, int], str]:
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
