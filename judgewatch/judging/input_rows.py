"""Reading `judgewatch judge --input`: JSONL rows become JudgeItems, or quarantine records naming line and field.

A bad row never stops the file: it is quarantined with its 1-based line number and a reason that names the
field (`line 7: field 'reference_facts': expected a list of strings`), and the next row is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from judgewatch.contract.items import JudgeItem
from judgewatch.storage.quarantine import QuarantineRecord


def input_source(path: Path) -> str:
    """The source name of a file's items and quarantined rows: stable across runs of the same file."""
    return f"file:{path.resolve()}"


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _texts(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _text_or_texts(value: Any) -> bool:
    return isinstance(value, str) or _texts(value)


def _id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and value.strip() != "")


def _language(value: Any) -> bool:
    return value is None or value in ("en", "zh")


# field -> (required, check, what the field must be)
_FIELDS: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "id": (True, _id, "a non-empty string or an integer"),
    "question": (True, _text, "a string"),
    "answer": (True, _text, "a string"),
    "reference_answer": (False, _optional_text, "a string or null"),
    "reference_facts": (False, _texts, "a list of strings"),
    "context": (False, _text_or_texts, "a string or a list of strings"),
    "language": (False, _language, "'en', 'zh' or null"),
}


def row_problem(row: Any) -> str | None:
    """Why this decoded JSON value cannot be an item (naming the field), or None."""
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    for name, (required, check, expected) in _FIELDS.items():
        if name not in row:
            if required:
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


def read_judge_input(path: Path | str) -> Iterator[JudgeItem | QuarantineRecord]:
    """Items and quarantine records, in file order. Raises OSError now if the file cannot be opened."""
    path = Path(path)
    handle = path.open("rb")
    return _rows(path, handle)


def _rows(path: Path, handle: IO[bytes]) -> Iterator[JudgeItem | QuarantineRecord]:
    source = input_source(path)
    first_line: dict[str, int] = {}

    def quarantine(line: int, reason: str, raw: str) -> QuarantineRecord:
        return QuarantineRecord(source=source, position=f"{path.name}:{line}", line=line, reason=reason, raw=raw)

    with handle:
        for line, data in enumerate(handle, start=1):
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
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                yield quarantine(line, f"not valid JSON: {exc.msg} (column {exc.colno})", text)
                continue
            problem = row_problem(row)
            if problem is None:
                try:
                    item = JudgeItem.model_validate(row)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    loc = ".".join(str(p) for p in err["loc"])
                    problem = f"field '{loc}': {err['msg']}"
            if problem is not None:
                yield quarantine(line, problem, text)
                continue
            if item.id in first_line:
                yield quarantine(
                    line, f"field 'id': duplicate id '{item.id}' (first on line {first_line[item.id]})", text
                )
                continue
            first_line[item.id] = line
            yield item
