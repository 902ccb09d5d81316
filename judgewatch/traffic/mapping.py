"""Turn one raw source row (a dict) into a `TrafficRow`, or a `RejectedTrafficRow` naming what is wrong."""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError

from judgewatch.contract.items import Language
from judgewatch.contract.messages import ChatMessage, content_text, error_field
from judgewatch.contract.pii import Scrubber
from judgewatch.contract.raw_rows import NUL, loads_bounded, storable_excerpt, text_bytes
from judgewatch.contract.verdicts import TokenUsage
from judgewatch.hashing import interaction_id
from judgewatch.settings import get_settings
from judgewatch.traffic.config import FieldPath, SourceConfig
from judgewatch.traffic.records import (
    EXCERPT_CHARS,
    QuarantineReason,
    RejectedTrafficRow,
    TrafficRow,
    source_label,
)

logger = logging.getLogger(__name__)

Path = tuple[tuple[str, ...], ...]  # fallbacks, each a tuple of segments


class BadRow(Exception):
    """Raised inside the mapper only; the caller turns it into a `RejectedTrafficRow`."""

    def __init__(self, reason: QuarantineReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def compile_path(path: FieldPath | None) -> Path:
    if path is None:
        return ()
    options = [path] if isinstance(path, str) else path
    return tuple(tuple(option.split(".")) for option in options)


def resolve(row: Any, path: Path) -> Any:
    """The first fallback whose dotted path leads to a non-null value, else None."""
    for segments in path:
        value = row
        for seg in segments:
            if isinstance(value, dict):
                value = value.get(seg)
            elif isinstance(value, (list, tuple)):  # a tuple of types: a union is 3x slower here on Python 3.11
                try:
                    value = value[int(seg)]
                except (ValueError, IndexError):
                    value = None
            else:
                value = None
            if value is None:
                break
        else:
            return value
    return None


def excerpt_of(raw: object, scrubber: Scrubber | None) -> str:
    """A bounded, scrubbed excerpt of a bad row for the operator who will look at it."""
    if isinstance(raw, bytes):
        text = raw[: EXCERPT_CHARS * 4].decode("utf-8", errors="replace")
    elif isinstance(raw, str):
        text = raw[: EXCERPT_CHARS * 2]
    else:
        try:
            text = json.dumps(raw, ensure_ascii=False, default=str)[: EXCERPT_CHARS * 2]
        except (TypeError, ValueError, RecursionError):
            text = repr(raw)[: EXCERPT_CHARS * 2]
    if scrubber is not None:
        text = scrubber.scrub_into(text, Counter())
    return storable_excerpt(text[:EXCERPT_CHARS])


def _text(value: Any, field: str) -> str | None:
    """A text field: str, or OpenAI content parts flattened; anything else is a wrong type."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(text := content_text(value), str):
        return text
    raise BadRow(QuarantineReason.wrong_type, f"{field}: expected text, got {type(value).__name__}")


def _texts(value: Any, field: str) -> list[str]:
    """A list of passages: str, list of str, or list of {"text"|"content"|"page_content": ...} records."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if not isinstance(value, list | tuple):
        raise BadRow(QuarantineReason.wrong_type, f"{field}: expected a list of texts, got {type(value).__name__}")
    out = []
    for item in value:
        if isinstance(item, dict):
            item = item.get("text", item.get("content", item.get("page_content")))
        if not isinstance(item, str):
            raise BadRow(QuarantineReason.wrong_type, f"{field}: list items must be text")
        if item:
            out.append(item)
    return out


def _count(value: Any, field: str) -> int:
    if value is None:
        return 0
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))  # NaN and Infinity: json.loads reads them
        or value < 0
        or value != int(value)
    ):
        raise BadRow(QuarantineReason.wrong_type, f"{field}: expected a non-negative integer, got {value!r}")
    return int(value)


def _label(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise BadRow(QuarantineReason.wrong_type, f"{field}: expected a label, got {type(value).__name__}")


_NOT_CJK = re.compile("[^\u4e00-\u9fff\u3400-\u4dbf]+")
_NOT_LETTER = re.compile(r"[\W\d_]+")
_DETECT_CHARS = 96  # language is clear from the start of the texts; counting all of them costs throughput


def _language(value: Any, question: str, answer: str) -> Language:
    """The row's language field when it names zh/en, else `detect_language`'s rule on the texts' starts."""
    if isinstance(value, str):
        code = value.lower()[:2]
        if code == "zh":
            return "zh"
        if code == "en":
            return "en"
    if question.isascii() and answer.isascii():
        return "en"
    text = question[:_DETECT_CHARS] + " " + answer[:_DETECT_CHARS]
    letters = len(_NOT_LETTER.sub("", text))
    return "zh" if letters and len(_NOT_CJK.sub("", text)) / letters >= 0.2 else "en"


class RowMapper:
    """Applies one source's field mapping; compiled once, used for every row."""

    def __init__(self, config: SourceConfig) -> None:
        self.config = config
        self.source = source_label(config.name)
        m = config.mapping
        self.paths: dict[str, Path] = {name: compile_path(getattr(m, name)) for name in type(m).model_fields}
        self.tz = ZoneInfo(config.timezone)
        self._tier_of_model = lru_cache(maxsize=10_000)(config.tier_for)  # model names are few; bounded anyway
        self.scrubber = Scrubber(config.pii.kinds) if config.pii.enabled else None
        # Top-level keys whose value the mapping walks into: text columns there may hold JSON to parse.
        self.nested_keys = sorted({seg[0] for p in self.paths.values() for seg in p if len(seg) > 1})
        self.max_field_bytes = config.max_field_bytes or get_settings().max_field_bytes

    @property
    def top_level_keys(self) -> set[str]:
        """Every top-level column the mapping reads (for Parquet column projection)."""
        return {seg[0] for p in self.paths.values() for seg in p}

    def quarantine(
        self, position: str, reason: QuarantineReason, detail: str, raw: object, line: int | None = None
    ) -> RejectedTrafficRow:
        return RejectedTrafficRow(
            source=self.source,
            position=position,
            line=line,
            reason=reason,
            detail=detail[:500],
            excerpt=excerpt_of(raw, self.scrubber),
        )

    def map(
        self,
        raw: Any,
        *,
        position: str,
        fallback_id: str,
        size: int | None = None,
        line: int | None = None,
        attributes: dict[str, str | float] | None = None,
    ) -> TrafficRow | RejectedTrafficRow:
        """Map a decoded row; `size`: its byte length when known (else estimated), `attributes`: kept as they are."""
        if not isinstance(raw, dict):
            return self.quarantine(position, QuarantineReason.not_an_object, f"got {type(raw).__name__}", raw, line)
        try:
            return self._map(raw, fallback_id=fallback_id, size=size, attributes=attributes)
        except BadRow as bad:
            return self.quarantine(position, bad.reason, bad.detail, raw, line)
        except ValidationError as exc:  # a value the record rejects: still a bad row, never an exception
            first = exc.errors()[0]
            detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
            return self.quarantine(position, QuarantineReason.wrong_type, detail, raw, line)

    def _map(
        self,
        raw: dict[str, Any],
        *,
        fallback_id: str,
        size: int | None,
        attributes: dict[str, str | float] | None = None,
    ) -> TrafficRow:
        for key in self.nested_keys:
            value = raw.get(key)
            if isinstance(value, str) and value[:1] in ("{", "["):
                try:
                    raw = {**raw, key: loads_bounded(value)}
                except json.JSONDecodeError as exc:
                    raise BadRow(QuarantineReason.invalid_json, f"column {key}: {exc.msg}") from None
                except (ValueError, RecursionError) as exc:
                    raise BadRow(QuarantineReason.invalid_json, f"column {key}: {exc}") from None
        p = self.paths
        answer = _text(resolve(raw, p["answer"]), "answer")
        if answer is None:
            raise BadRow(QuarantineReason.missing_response, "no answer at " + _show(p["answer"]))
        messages = self._messages(resolve(raw, p["messages"]))
        question = _text(resolve(raw, p["question"]), "question") if p["question"] else None
        if question is None:
            question = next((msg.content for msg in reversed(messages) if msg.role == "user"), None)
        if question is None:
            raise BadRow(QuarantineReason.missing_field, "no question (no user message)")
        reference_answer = _text(resolve(raw, p["reference_answer"]), "reference_answer")
        facts = _texts(resolve(raw, p["reference_facts"]), "reference_facts")
        context = _texts(resolve(raw, p["context"]), "context")
        if size is None:
            size = _text_size(question, answer, reference_answer, messages, facts, context)
        if size > self.config.max_row_bytes:
            raise BadRow(QuarantineReason.oversize, f"{size} bytes > max_row_bytes {self.config.max_row_bytes}")
        if size > self.max_field_bytes:  # only a row larger than the limit can hold a field larger than it
            self._check_field_sizes(question, answer, reference_answer, facts, context)
        removed: Counter[str] = _NO_REPAIRS
        if _any_nul(question, answer, reference_answer, facts, context, messages):
            removed = Counter()
            question, answer = _no_nul(question, "question", removed), _no_nul(answer, "answer", removed)
            if reference_answer is not None:
                reference_answer = _no_nul(reference_answer, "reference_answer", removed)
            facts = [_no_nul(f, "reference_facts", removed) for f in facts]
            context = [_no_nul(c, "context", removed) for c in context]
            messages = [m.model_copy(update={"content": _no_nul(m.content, "messages", removed)}) for m in messages]

        raw_id = resolve(raw, p["id"])
        if isinstance(raw_id, bool) or (raw_id is not None and not isinstance(raw_id, str | int)):
            raise BadRow(QuarantineReason.wrong_type, f"id: expected text or integer, got {raw_id!r}")
        source_id = str(raw_id) if raw_id is not None and raw_id != "" else fallback_id
        if removed:  # PostgreSQL cannot store NUL: removed, and the change recorded in the log
            fields = ", ".join(f"{name} ({n})" for name, n in sorted(removed.items()))
            logger.warning("%s row %s: removed NUL characters from %s", self.source, source_id, fields)
        model = _label(resolve(raw, p["model"]), "model")
        tier = self.tier(_label(resolve(raw, p["tier"]), "tier"), model)
        return TrafficRow(
            source=self.source,
            source_id=source_id,
            interaction_id=interaction_id(self.source, source_id),
            question=question,
            messages=messages,
            answer=answer,
            model=model,
            tier=tier,
            release=_label(resolve(raw, p["release"]), "release"),
            route=_label(resolve(raw, p["route"]), "route"),
            department=_label(resolve(raw, p["department"]), "department"),
            timestamp=self.timestamp(resolve(raw, p["timestamp"])),
            tokens=TokenUsage(
                prompt=_count(resolve(raw, p["prompt_tokens"]), "prompt_tokens"),
                completion=_count(resolve(raw, p["completion_tokens"]), "completion_tokens"),
                cached=_count(resolve(raw, p["cached_tokens"]), "cached_tokens"),
            ),
            reference_answer=reference_answer,
            reference_facts=facts,
            context=context,
            language=_language(resolve(raw, p["language"]), question, answer),
            attributes=attributes or {},
        )

    def _check_field_sizes(
        self, question: str, answer: str, reference_answer: str | None, facts: list[str], context: list[str]
    ) -> None:
        texts = {"question": question, "answer": answer, "reference_answer": reference_answer}
        for name, value in (*texts.items(), ("reference_facts", facts), ("context", context)):
            if (field_size := text_bytes(value)) > self.max_field_bytes:
                raise BadRow(
                    QuarantineReason.oversize, f"{name}: {field_size} bytes > max_field_bytes {self.max_field_bytes}"
                )

    def tier(self, tier: str | None, model: str | None) -> str:
        """A row's tier: its own field, else its model's (`tiers`, `default_tier`)."""
        return tier or self._tier_of_model(model)

    def _messages(self, value: Any) -> list[ChatMessage]:
        """The request's turns (roles, content, tool calls and results), or BadRow naming the turn's field."""
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise BadRow(QuarantineReason.wrong_type, f"messages: expected a list, got {type(value).__name__}")
        out = []
        for k, item in enumerate(value):
            if not isinstance(item, dict) or not isinstance(item.get("role"), str):
                raise BadRow(QuarantineReason.wrong_type, "messages: each message needs a role")
            try:
                out.append(ChatMessage.model_validate(item))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = error_field(("messages", k, *first["loc"]))
                raise BadRow(
                    QuarantineReason.wrong_type, f"{where}: {first['msg'].removeprefix('Value error, ')}"
                ) from None
        return out

    def timestamp(self, value: Any) -> datetime:
        if value is None:
            raise BadRow(QuarantineReason.missing_field, "no timestamp")
        try:
            if isinstance(value, datetime):
                ts = value
            elif isinstance(value, int | float) and not isinstance(value, bool):
                # epoch seconds, or milliseconds when too large to be seconds
                ts = datetime.fromtimestamp(value / 1000 if value > 1e11 else value, tz=UTC)
            elif isinstance(value, str):
                ts = datetime.fromisoformat(value)
            else:
                raise TypeError(type(value).__name__)
        except (TypeError, ValueError, OverflowError, OSError) as exc:
            raise BadRow(QuarantineReason.wrong_type, f"timestamp: cannot read {value!r}: {exc}") from None
        return ts if ts.tzinfo is not None else ts.replace(tzinfo=self.tz)


_NO_REPAIRS: Counter[str] = Counter()  # shared, never written: rows without NUL change nothing


def _any_nul(
    question: str,
    answer: str,
    reference: str | None,
    facts: list[str],
    context: list[str],
    messages: list[ChatMessage],
) -> bool:
    if NUL in question or NUL in answer or (reference is not None and NUL in reference):
        return True
    return (
        (bool(facts) and any(NUL in t for t in facts))
        or (bool(context) and any(NUL in t for t in context))
        or (bool(messages) and any(NUL in m.content for m in messages))
    )


def _no_nul(text: str, field: str, removed: Counter[str]) -> str:
    if NUL not in text:
        return text
    removed[field] += text.count(NUL)
    return text.replace(NUL, "")


def _show(path: Path) -> str:
    return " | ".join(".".join(seg) for seg in path)


def _text_size(
    question: str,
    answer: str,
    reference: str | None,
    messages: list[ChatMessage],
    facts: list[str],
    context: list[str],
) -> int:
    """UTF-8 size of a row's texts, for sources (Parquet, SQL) that have no line length to measure."""
    texts = [question, answer, reference or "", *(m.content for m in messages), *facts, *context]
    return sum(len(t.encode()) if not t.isascii() else len(t) for t in texts)
