"""Reading `judgewatch judge --input`: JSONL rows become JudgeItems, or quarantine records naming line and field.

A bad row never stops the file (what is quarantined or repaired: docs/judging.md); a file unusable as a whole gets
one InputFileError.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from judgewatch.contract.items import JudgeItem, item_problem
from judgewatch.contract.raw_rows import (
    RowError,
    json_object,
    oversize_field,
    sniff_jsonl_file,
    storable_excerpt,
    strip_nul,
)
from judgewatch.settings import get_settings
from judgewatch.storage.quarantine import RAW_EXCERPT_BYTES, QuarantineRecord

logger = logging.getLogger(__name__)


def input_source(path: Path) -> str:
    """The source name of a file's items and quarantined rows: stable across runs of the same file."""
    return f"file:{path.resolve()}"


def _texts(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and value.strip() != "")


def _turns(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, dict) for v in value))


# field -> (required, check, what the field must be)
_FIELDS: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "id": (True, _id, "a non-empty string or an integer"),
    "question": (True, lambda v: isinstance(v, str), "a string"),
    "answer": (True, lambda v: isinstance(v, str), "a string"),
    "reference_answer": (False, lambda v: v is None or isinstance(v, str), "a string or null"),
    "reference_facts": (False, _texts, "a list of strings"),
    "context": (False, lambda v: isinstance(v, str) or _texts(v), "a string or a list of strings"),
    "language": (False, lambda v: v is None or v in ("en", "zh"), "'en', 'zh' or null"),
    "messages": (False, _turns, "a list of chat messages (objects with a role)"),
}
# Given `messages`, the question is their last user turn and the answer may be their final assistant turn.
_FROM_MESSAGES = ("question", "answer")


def row_problem(row: dict[str, Any]) -> str | None:
    """Why this JSON object cannot be an item (naming the field), or None."""
    for name, (required, check, expected) in _FIELDS.items():
        if name not in row:
            if required and not (name in _FROM_MESSAGES and row.get("messages")):
                return f"field '{name}': required field is missing"
            continue
        if not check(row[name]):
            return f"field '{name}': expected {expected}, got {_describe(row[name])}"
    return None


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        kinds = sorted({type(v).__name__ for v in value if not isinstance(v, str)})
        return f"a list containing {', '.join(kinds)}" if kinds else "a list"
    return type(value).__name__


class JudgeInput:
    """The rows of one input file, in order: items and quarantine records. `repairs` lists, once read, each row
    changed to be storable, naming its line and field (`line 4: field 'answer': removed 1 NUL character(s)`)."""

    def __init__(self, path: Path, handle: IO[bytes], max_field_bytes: int) -> None:
        self.repairs: list[str] = []
        self._rows = _rows(path, handle, max_field_bytes, self.repairs)

    def __iter__(self) -> Iterator[JudgeItem | QuarantineRecord]:
        return self._rows


def read_judge_input(path: Path | str, *, max_field_bytes: int | None = None) -> JudgeInput:
    """Items and quarantine records, in file order. Raises OSError or InputFileError (a whole file unusable: empty,
    UTF-16, CR-only line endings) now: one message instead of one per line."""
    path = Path(path)
    sniff_jsonl_file(path)
    limit = max_field_bytes if max_field_bytes is not None else get_settings().max_field_bytes
    return JudgeInput(path, path.open("rb"), limit)


def _rows(
    path: Path, handle: IO[bytes], max_field_bytes: int, repairs: list[str]
) -> Iterator[JudgeItem | QuarantineRecord]:
    source = input_source(path)
    first_line: dict[str, int] = {}
    # A line holds a handful of fields: past this it cannot be valid, so it is skipped unread.
    max_line_bytes = len(_FIELDS) * max_field_bytes + 64 * 1024

    def quarantine(line: int, reason: str, raw: str) -> QuarantineRecord:
        return QuarantineRecord(
            source=source, position=f"{path.name}:{line}", line=line, reason=reason, raw=storable_excerpt(raw)
        )

    with handle:
        for line, data in enumerate(iter(lambda: handle.readline(max_line_bytes + 1), b""), start=1):
            if len(data) > max_line_bytes and not data.endswith(b"\n"):
                size = _drain(handle, data)
                excerpt = data[:RAW_EXCERPT_BYTES].decode("utf-8", "replace")
                yield quarantine(line, f"line is {size} bytes, over the limit of {max_line_bytes} bytes", excerpt)
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield quarantine(
                    line, f"not valid UTF-8 ({exc.reason} at byte {exc.start})", data.decode("utf-8", "replace")
                )
                continue
            if line == 1:
                text = text.removeprefix("\ufeff")
            text = text.rstrip("\r\n")
            if not text.strip():
                continue
            try:
                row = json_object(text)
            except RowError as exc:
                yield quarantine(line, str(exc), text)
                continue
            problem = row_problem(row) or oversize_field(row, _FIELDS, max_field_bytes)
            if problem is None:
                row, repair = strip_nul(row, _FIELDS)
                try:
                    item = JudgeItem.model_validate(row)
                except ValidationError as exc:
                    problem = item_problem(exc)
            if problem is not None:
                yield quarantine(line, problem, text)
                continue
            if item.id in first_line:
                yield quarantine(
                    line, f"field 'id': duplicate id '{item.id}' (first on line {first_line[item.id]})", text
                )
                continue
            first_line[item.id] = line
            if repair:
                repairs.append(f"line {line}: {repair.describe()}")
                logger.warning("%s line %d: %s", path, line, repair.describe())
            yield item


def _drain(handle: IO[bytes], chunk: bytes) -> int:
    """Skip the rest of an overlong line in bounded pieces; returns the line's full length in bytes."""
    total = len(chunk)
    while chunk and not chunk.endswith(b"\n"):
        chunk = handle.readline(1 << 20)
        total += len(chunk)
    return total
