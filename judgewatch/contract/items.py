"""What a judge grades: one question/answer pair with the reference material that came with it, and, when the
interaction was a conversation, its turns (`contract.messages`)."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judgewatch.contract.messages import ChatMessage, content_text, error_field, is_conversation, stored_turns

Language = Literal["en", "zh"]


class JudgedContent(BaseModel):
    """What a judge reads of an item; every record that carries judged content (a stored interaction, a traffic
    row, the review screen) has these fields under these names."""

    question: str  # given, or the last user turn of `messages`
    answer: str  # given, or the final assistant turn of `messages` (then taken off them)
    messages: list[ChatMessage] | None = None  # the turns before the answer, the last user turn among them
    reference_answer: str | None = None
    reference_facts: list[str] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    language: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_messages(cls, data: Any) -> Any:
        """`question` and `answer` read off the turns when not given; no turns is `messages` None."""
        if not isinstance(data, dict) or "messages" not in data:
            return data
        turns = data["messages"]
        if not turns:
            return {**data, "messages": None} if turns is not None else data
        if not isinstance(turns, list):
            return data  # refused by validation, naming the field
        if data.get("answer") is None and _is_final_answer(turns[-1]):
            data = {**data, "answer": _text_of(turns[-1]), "messages": turns[:-1] or None}
            turns = turns[:-1]
        if data.get("question") is None:
            users = [m for m in turns if _role(m) == "user"]
            text = _text_of(users[-1]) if users else None
            if isinstance(text, str):
                data = {**data, "question": text}
        return data

    @property
    def has_references(self) -> bool:
        return bool(self.reference_answer or self.reference_facts or self.context)

    @property
    def is_conversation(self) -> bool:
        """Turns beyond one question (and its system prompt): the judge and the reviewer see them all."""
        return is_conversation(self.messages)


def _role(message: Any) -> Any:
    return (
        message.role if isinstance(message, ChatMessage) else message.get("role") if isinstance(message, dict) else None
    )


def _text_of(message: Any) -> Any:
    return message.content if isinstance(message, ChatMessage) else content_text(message.get("content"))


def _is_final_answer(message: Any) -> bool:
    """An assistant turn that says something and calls no tool: the answer, when none is given apart."""
    if isinstance(message, ChatMessage):
        return message.role == "assistant" and not message.tool_calls and bool(message.content)
    return (
        isinstance(message, dict)
        and message.get("role") == "assistant"
        and not message.get("tool_calls")
        and not message.get("function_call")
        and isinstance(text := content_text(message.get("content")), str)
        and bool(text)
    )


_MISSING: dict[tuple[int | str, ...], str] = {
    ("question",): "missing, and no user turn in messages to read it from",
    ("answer",): "missing, and messages do not end with an assistant answer to read it from",
}


def item_problem(exc: ValidationError) -> str:
    """A rejected item's first problem as one line naming the field: `field 'messages[2].role': Input should
    be ...`. A turn's own problem comes first: a question or answer missing is often its consequence."""
    errors = exc.errors()
    first = next((e for e in errors if e["loc"][:1] == ("messages",)), errors[0])
    message = _MISSING.get(first["loc"], first["msg"]) if first["type"] == "missing" else first["msg"]
    message = message.removeprefix("Value error, ")
    return f"field '{error_field(first['loc'])}': {message}" if first["loc"] else message


CONTENT_FIELDS = tuple(JudgedContent.model_fields)


def judged_content(record: BaseModel) -> dict[str, Any]:
    """The question, answer, turns, references and language of `record`, as a new dict (lists copied; turns as
    plain dicts, None when there are none)."""
    content = record.model_dump(include=set(CONTENT_FIELDS))
    content["messages"] = content.get("messages") or None
    return content


_CJK = re.compile("[\u4e00-\u9fff\u3400-\u4dbf]")


def detect_language(*texts: str | None) -> Language:
    """'zh' when CJK ideographs make up at least a fifth of the letters (CJK ideographs and other alphabetic
    characters), else 'en'. Texts all ASCII hold no ideograph: 'en' without counting."""
    if all(not text or text.isascii() for text in texts):
        return "en"
    cjk = letters = 0
    for text in filter(None, texts):
        ideographs = "".join(_CJK.findall(text))
        cjk += len(ideographs)
        letters += sum(map(str.isalpha, text)) - sum(map(str.isalpha, ideographs)) + len(ideographs)
    return "zh" if letters and cjk / letters >= 0.2 else "en"


class JudgeItem(JudgedContent):
    """One row of `judgewatch judge --input`: the input contract of every judge."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    language: Language | None = None

    @classmethod
    def of(cls, item_id: str, record: BaseModel) -> JudgeItem:
        """The item of any record that carries judged content; a language outside `Language` reads as unknown."""
        content = judged_content(record)
        if content["language"] not in get_args(Language):
            content["language"] = None
        content["messages"] = stored_turns(content["messages"], f"item {item_id}")
        return cls(id=item_id, **content)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("context", mode="before")
    @classmethod
    def _context_as_list(cls, value: object) -> object:
        return [] if value is None else [value] if isinstance(value, str) else value

    @property
    def lang(self) -> Language:
        return self.language or detect_language(self.question, self.answer)
