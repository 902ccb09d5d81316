"""What a judge grades: one question/answer pair with the reference material that came with it."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

Language = Literal["en", "zh"]


class JudgedContent(BaseModel):
    """What a judge reads of an item; every record that carries judged content (a stored interaction, a traffic
    row, the review screen) has these fields under these names."""

    question: str
    answer: str
    reference_answer: str | None = None
    reference_facts: list[str] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    language: str | None = None

    @property
    def has_references(self) -> bool:
        return bool(self.reference_answer or self.reference_facts or self.context)


CONTENT_FIELDS = tuple(JudgedContent.model_fields)


def judged_content(record: BaseModel) -> dict[str, Any]:
    """The question, answer, references and language of `record`, as a new dict (lists copied)."""
    return record.model_dump(include=set(CONTENT_FIELDS))


_CJK = re.compile("[\u4e00-\u9fff\u3400-\u4dbf]")


def detect_language(*texts: str | None) -> Language:
    """'zh' when CJK ideographs make up at least a fifth of the letters (CJK ideographs and other alphabetic
    characters), else 'en'. Texts all ASCII hold no ideograph: 'en' without counting."""
    if all(not text or text.isascii() for text in texts):
        return "en"
    cjk = letters = 0
    for text in texts:
        if not text:
            continue
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
        return cls(id=item_id, **content)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("context", mode="before")
    @classmethod
    def _context_as_list(cls, value: object) -> object:
        if value is None:
            return []
        return [value] if isinstance(value, str) else value

    @property
    def lang(self) -> Language:
        return self.language or detect_language(self.question, self.answer)
