"""Deterministic check criteria: a rubric criterion scored by a rule, not by a judge (docs/checks.md).

A check that cannot apply (no reference answer, no refusal phrases for the language) is not applicable, never a
silent pass. Specs are validated when the rubric loads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judgewatch.contract.items import JudgeItem

Outcome = Literal["pass", "fail", "not_applicable"]

# Built-in refusal phrases, matched case-insensitively as substrings of the answer with whitespace collapsed and
# typographic apostrophes read as "'". A rubric's `phrases:` extends these per language.
REFUSAL_PHRASES: dict[str, tuple[str, ...]] = {
    "en": (
        "i can't help with", "i cannot help with", "i can't assist", "i cannot assist", "i can't provide",
        "i cannot provide", "i won't be able to", "i am unable to", "i'm unable to", "i must decline",
        "i'm not able to help", "i am not able to help", "as an ai language model", "i'm sorry, but i can't",
        "i'm sorry, but i cannot",
    ),
    "zh": (
        "我无法回答", "我不能回答", "我无法提供", "我不能提供", "我无法帮助", "我不能帮助", "无法协助", "抱歉，我无法",
        "抱歉，我不能", "作为一个人工智能", "作为ai语言模型",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class CheckResult:
    outcome: Outcome
    reason: str


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _normalize(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").split()).casefold()


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RegexCheck(_Spec):
    """Pass when `pattern` is found in the answer (`absent: true`: when it is not)."""

    kind: Literal["regex"]
    pattern: str = Field(min_length=1)
    absent: bool = False
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return pattern

    def evaluate(self, item: JudgeItem) -> CheckResult:
        match = re.search(self.pattern, item.answer, re.IGNORECASE if self.ignore_case else 0)
        if self.absent:
            if match:
                return CheckResult("fail", f"/{self.pattern}/ must not match; found {match.group(0)!r}")
            return CheckResult("pass", f"/{self.pattern}/ absent, as required")
        if match:
            return CheckResult("pass", f"/{self.pattern}/ matched {match.group(0)!r}")
        return CheckResult("fail", f"/{self.pattern}/ not found in the answer")


class JsonCheck(_Spec):
    """Pass when the answer is valid JSON and, given `schema`, valid against that JSON Schema."""

    kind: Literal["json"]
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is None:
            return None
        from jsonschema import SchemaError, validators

        try:
            validators.validator_for(schema).check_schema(schema)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.path) or "(top level)"
            raise ValueError(f"not a valid JSON Schema (at {where}): {_one_line(exc.message)}") from exc
        return schema

    def evaluate(self, item: JudgeItem) -> CheckResult:
        try:
            value = json.loads(item.answer)
        except json.JSONDecodeError as exc:
            return CheckResult("fail", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        if self.json_schema is None:
            return CheckResult("pass", "valid JSON")
        from jsonschema import validators
        from jsonschema.exceptions import best_match

        validator = validators.validator_for(self.json_schema)(self.json_schema)
        error = best_match(validator.iter_errors(value))
        if error is None:
            return CheckResult("pass", "valid JSON, valid against the schema")
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        return CheckResult("fail", f"schema violated at {where}: {_one_line(error.message)}")


class ReferenceMatchCheck(_Spec):
    """Pass when the answer equals (`exact`) or contains (`contains`) the item's reference answer."""

    kind: Literal["reference_match"]
    mode: Literal["exact", "contains"] = "exact"
    normalize: bool = True  # collapse whitespace and ignore case before comparing

    def evaluate(self, item: JudgeItem) -> CheckResult:
        if not item.reference_answer:
            return CheckResult("not_applicable", "the item has no reference answer to match")
        answer, reference = item.answer, item.reference_answer
        if self.normalize:
            answer, reference = _normalize(answer), _normalize(reference)
        ok = answer == reference if self.mode == "exact" else reference in answer
        shown = _one_line(item.reference_answer, 60)
        verb = "equals" if self.mode == "exact" else "contains"
        return CheckResult(
            "pass" if ok else "fail", f"answer {verb if ok else 'does not ' + verb.rstrip('s')} {shown!r}"
        )


class LengthCheck(_Spec):
    """Pass when the answer's length lies within the bounds (characters and/or whitespace-separated words)."""

    kind: Literal["length"]
    min_chars: int | None = Field(default=None, ge=0)
    max_chars: int | None = Field(default=None, ge=0)
    min_words: int | None = Field(default=None, ge=0)
    max_words: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> LengthCheck:
        if all(v is None for v in (self.min_chars, self.max_chars, self.min_words, self.max_words)):
            raise ValueError("give at least one of min_chars, max_chars, min_words, max_words")
        for unit, low, high in (("chars", self.min_chars, self.max_chars), ("words", self.min_words, self.max_words)):
            if low is not None and high is not None and low > high:
                raise ValueError(f"min_{unit} ({low}) is greater than max_{unit} ({high})")
        return self

    def evaluate(self, item: JudgeItem) -> CheckResult:
        sizes = {"chars": len(item.answer.strip()), "words": len(item.answer.split())}
        for unit, low, high in (("chars", self.min_chars, self.max_chars), ("words", self.min_words, self.max_words)):
            if low is not None and sizes[unit] < low:
                return CheckResult("fail", f"{sizes[unit]} {unit}, fewer than min_{unit} {low}")
            if high is not None and sizes[unit] > high:
                return CheckResult("fail", f"{sizes[unit]} {unit}, more than max_{unit} {high}")
        return CheckResult("pass", f"{sizes['chars']} chars, {sizes['words']} words: within bounds")


class RefusalCheck(_Spec):
    """Refusal detection from phrase lists per language; `expect: false` (default): a refusal fails."""

    kind: Literal["refusal"]
    expect: bool = False
    phrases: dict[str, list[str]] = Field(default_factory=dict)  # extends REFUSAL_PHRASES per language

    def evaluate(self, item: JudgeItem) -> CheckResult:
        lang = item.lang
        phrases = [*REFUSAL_PHRASES.get(lang, ()), *(_normalize(p) for p in self.phrases.get(lang, []))]
        if not phrases:
            return CheckResult("not_applicable", f"no refusal phrases for language '{lang}'")
        answer = _normalize(item.answer)
        found = next((p for p in phrases if p in answer), None)
        if found is not None:
            why = f"refusal phrase {found!r} found ({'expected' if self.expect else 'a refusal'})"
        else:
            why = f"no {lang} refusal phrase found ({'a refusal was expected' if self.expect else 'answered'})"
        return CheckResult("pass" if (found is not None) == self.expect else "fail", why)


CheckSpec = Annotated[
    RegexCheck | JsonCheck | ReferenceMatchCheck | LengthCheck | RefusalCheck,
    Field(discriminator="kind"),
]
