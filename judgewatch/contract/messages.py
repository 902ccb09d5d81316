"""A conversation's turns: one `ChatMessage` per turn, read from the OpenAI chat format users already log (what is
read and how: docs/conversations.md)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

logger = logging.getLogger(__name__)

Role = Literal["system", "user", "assistant", "tool"]
ROLE_ALIASES = {"developer": "system", "function": "tool"}


def _json_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


class ToolCall(BaseModel):
    """One tool call of an assistant turn: OpenAI's `{id, type, function: {name, arguments}}` or flat."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str | None = None
    name: str = Field(min_length=1)
    arguments: str = ""  # JSON text, as OpenAI sends it; an object given is kept as its JSON text

    @model_validator(mode="before")
    @classmethod
    def _flatten(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        function = data.get("function")
        if isinstance(function, dict):
            data = {**function, "id": data.get("id")}
        if "arguments" in data and not isinstance(data["arguments"], str):
            data = {**data, "arguments": _json_text(data["arguments"])}
        return data


class ChatMessage(BaseModel):
    """One turn of a conversation. Stored and dumped without its empty fields."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None  # a tool turn: the call it answers (traces do not always say)
    name: str | None = None  # a tool turn: the tool's name (older formats give only this)

    @model_validator(mode="before")
    @classmethod
    def _openai_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        role = data.get("role")
        if isinstance(role, str):
            data["role"] = ROLE_ALIASES.get(role, role)
        data["content"] = content_text(data.get("content"))
        legacy = data.pop("function_call", None)  # OpenAI's older single call: read when no tool_calls are given
        if data.get("tool_calls") is None or (isinstance(legacy, dict) and not data["tool_calls"]):
            data["tool_calls"] = [legacy] if isinstance(legacy, dict) else []
        return data

    @model_validator(mode="after")
    def _roles_fit(self) -> ChatMessage:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only an assistant turn calls tools (this one is {self.role})")
        return self

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in ("role", "content") or v not in (None, [])}


def content_text(value: Any) -> Any:
    """Message content as text: a string as it is, OpenAI content parts as their text parts joined (images and
    other parts left out), null as empty; anything else is returned for validation to refuse."""
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        return "".join(str(p.get("text", "")) for p in value if p.get("type", "text") == "text")
    return value


class ConversationParts(NamedTuple):
    """An item's turns as a judge reads them: what came before the question, the question (the last user turn,
    None without one) and the steps between it and the answer (tool calls and their results)."""

    earlier: list[ChatMessage]
    question: ChatMessage | None
    steps: list[ChatMessage]


def conversation_parts(messages: Sequence[ChatMessage] | None) -> ConversationParts:
    turns = list(messages or ())
    last = next((k for k in range(len(turns) - 1, -1, -1) if turns[k].role == "user"), None)
    if last is None:
        return ConversationParts(turns, None, [])
    return ConversationParts(turns[:last], turns[last], turns[last + 1 :])


def is_conversation(messages: Sequence[ChatMessage] | None) -> bool:
    """More than one question: any turn besides system prompts and a single user turn (an assistant turn, a tool
    call or result, a second user turn). A single question with its system prompt is judged as a question."""
    users = 0
    for message in messages or ():
        if message.role in ("assistant", "tool"):
            return True
        users += message.role == "user"
    return users > 1


def stored_turns(messages: Sequence[ChatMessage | dict[str, Any]] | None, where: str) -> list[ChatMessage] | None:
    """Turns read back from a store: None when there are none, or when they were stored before turns were
    checked and are not turns judgewatch reads (an unknown role): the item is then shown and judged on its
    question alone, and a warning names it (`where`)."""
    if not messages:
        return None
    try:
        return [m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m) for m in messages]
    except ValidationError as exc:
        logger.warning("%s: stored turns not read (%s); its question alone is used", where, exc.errors()[0]["msg"])
        return None


def error_field(loc: Sequence[int | str]) -> str:
    """A validation error's location as a field path: ("messages", 2, "role") -> "messages[2].role"."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
