"""A conversation's turns as the review pages show them: the turns before the question folded away, the tool use
between the question and the answer shown with it; each turn a heading and its text, tool calls written out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import gradio as gr
from pydantic import ValidationError

from judgewatch.contract.messages import ChatMessage, conversation_parts, is_conversation

HEADINGS = {"system": "System prompt", "user": "User", "assistant": "Assistant", "tool": "Tool result"}


class Turn(NamedTuple):
    heading: str
    text: str  # the turn's content, then one line per tool call


class Shown(NamedTuple):
    earlier: list[Turn]  # before the question: collapsed
    steps: list[Turn]  # between the question and the answer: open, with the question


def split(messages: Sequence[ChatMessage | dict[str, Any]] | None) -> Shown:
    """The turns to fold away and those to show with the question; both empty for a single question."""
    try:
        turns = [m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m) for m in messages or ()]
    except ValidationError:  # stored before turns were checked: shown as they are, all folded away
        raw = [m if isinstance(m, dict) else m.model_dump() for m in messages or ()]
        return Shown([Turn(str(m.get("role", "?")), str(m.get("content", ""))) for m in raw], [])
    if not is_conversation(turns):
        return Shown([], [])
    names = {c.id: c.name for m in turns for c in m.tool_calls if c.id}
    parts = conversation_parts(turns)
    return Shown([_turn(t, names) for t in parts.earlier], [_turn(t, names) for t in parts.steps])


def _turn(message: ChatMessage, names: dict[str, str]) -> Turn:
    heading = HEADINGS[message.role]
    if message.role == "tool" and (tool := message.name or names.get(message.tool_call_id or "")):
        heading = f"{heading} ({tool})"
    lines = [message.content] if message.content else []
    lines += [f"calls {call.name} with {call.arguments or '{}'}" for call in message.tool_calls]
    return Turn(heading, "\n".join(lines))


def as_text(turns: Sequence[Turn]) -> str:
    """Turns as plain text, for a text box."""
    return "\n\n".join(f"[{t.heading}]\n{t.text}" for t in turns)


def earlier_update(earlier: list[Turn]) -> Any:
    """The folded box of earlier turns: closed on every new item, hidden for a single question."""
    label = f"Earlier in the conversation ({len(earlier)} turn{'s' if len(earlier) != 1 else ''}: click to expand)"
    return gr.update(visible=bool(earlier), open=False, label=label)
