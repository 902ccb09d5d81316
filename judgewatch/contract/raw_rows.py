"""Guards every row reader applies before a row becomes an item: file sniffing, JSON depth, NUL, field size.

Each guard makes a row storable (NUL removed, the change reported) or says why it is quarantined (too deep, a field
over the limit); a file that is not JSONL at all (UTF-16, CR-only, binary, empty) gets one message for the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# No item needs more than a few levels (a list of {"text": ...} records); 64 is generous and far from
# Python's recursion limit, so a hostile row is quarantined instead of raising RecursionError.
MAX_JSON_DEPTH = 64
_SNIFF_BYTES = 64 * 1024
NUL = "\x00"
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark: every reader accepts it at the start of a file


class InputFileError(ValueError):
    """A whole file that cannot be read as JSONL (the message names the file and what to do)."""


def sniff_jsonl_file(path: Path, *, allow_empty: bool = False) -> None:
    """Raise InputFileError when `path` is UTF-16, uses CR-only line endings, or (unless allowed) is empty. Reads only
    the first 64 KiB: a large file is never read twice."""
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        more = bool(handle.read(1))
    if not head.strip() and not more:
        if allow_empty:
            return
        raise InputFileError(f"{path}: the file is empty: no rows to read")
    if kind := _binary_kind(head):
        raise InputFileError(f"{path}: the file is {kind}, not JSONL text (one JSON object per line, UTF-8)")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(head) >= 4 and _utf16_pattern(head)):
        raise InputFileError(
            f"{path}: the file is UTF-16 encoded; JSONL must be UTF-8 (convert it: iconv -f UTF-16 -t UTF-8)"
        )
    if b"\r" in head and b"\n" not in head and (more or head.rstrip(b"\r").count(b"\r") >= 1):
        raise InputFileError(
            f"{path}: the file uses CR-only line endings (old Mac style); JSONL needs LF or CRLF "
            "(convert it: tr '\\r' '\\n')"
        )


# File signatures ("magic numbers") of the binary formats most often passed by mistake.
_SIGNATURES = (
    (b"\x7fELF", "an ELF binary (a program or library)"),
    (b"MZ", "a Windows executable"),
    (b"PAR1", "a Parquet file"),
    (b"PK\x03\x04", "a ZIP archive (or a file packed as one: xlsx, docx, jar)"),
    (b"\x1f\x8b", "gzip-compressed"),
    (b"BZh", "bzip2-compressed"),
    (b"\xfd7zXZ\x00", "xz-compressed"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"SQLite format 3\x00", "an SQLite database"),
)


def _binary_kind(head: bytes) -> str | None:
    """What a binary file is (by its signature, or "a binary file" when it holds NUL bytes but is not UTF-16
    text); None for text."""
    for magic, kind in _SIGNATURES:
        if head.startswith(magic) and not (magic == b"MZ" and b"\x00" not in head[:512]):
            return kind
    if b"\x00" in head[:512] and not head.startswith((b"\xff\xfe", b"\xfe\xff")) and not _utf16_pattern(head):
        return "a binary file"
    return None


def _utf16_pattern(head: bytes) -> bool:
    """UTF-16 without a byte-order mark: ASCII text with every other byte NUL, the bytes between not NUL."""
    sample = head[: 512 - 512 % 2]
    half = len(sample) // 2
    if half == 0:
        return False
    pairs = ((sample[0::2], sample[1::2]), (sample[1::2], sample[0::2]))
    return any(zeros.count(0) >= 0.4 * half and others.count(0) <= 0.05 * half for zeros, others in pairs)


def loads_bounded(text: str | bytes) -> Any:
    """`json.loads`, but a document nested deeper than MAX_JSON_DEPTH raises ValueError, never RecursionError; the
    depth is measured only when the text holds more openers than the limit, so ordinary rows pay almost nothing."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    openers = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    if openers > MAX_JSON_DEPTH and isinstance(value, dict | list) and _depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    escape = _SURROGATE_ESCAPE.search(text) if isinstance(text, str) else _SURROGATE_ESCAPE_BYTES.search(text)
    if escape and _holds_lone_surrogate(value):
        raise ValueError("a lone surrogate escape (\\ud800-\\udfff without its pair): not Unicode text")
    return value


# Only an escape can put a surrogate into decoded JSON (a strict UTF-8 decode refuses encoded ones).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def _holds_lone_surrogate(value: Any) -> bool:
    """Whether a decoded value holds a surrogate that no pair completed (text no store or encoder takes)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class RowError(ValueError):
    """Why one JSONL line is not a JSON object; the caller adds the file and line."""


def json_object(line: str | bytes) -> dict[str, Any]:
    """One JSONL line as an object, or RowError with the reason every reader words the same way."""
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as exc:
        raise RowError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = loads_bounded(text)
    except json.JSONDecodeError as exc:
        raise RowError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise RowError(f"not usable JSON: {exc}") from None
    if not isinstance(value, dict):
        raise RowError(f"expected a JSON object, got {json_type_name(value)}")
    return value


def json_type_name(value: Any) -> str:
    """A decoded JSON value's type as an error message names it ("null" for None)."""
    return "null" if value is None else type(value).__name__


def _depth(value: dict[str, Any] | list[Any]) -> int:
    """Nesting depth of dicts and lists (1 for a flat one), by an explicit stack."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            break
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


@dataclass
class RowRepair:
    """What was changed in one row to make it storable (e.g. NUL characters removed), by field."""

    removed_nul: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.removed_nul)

    def describe(self) -> str:
        return "; ".join(f"field '{name}': removed {n} NUL character(s)" for name, n in self.removed_nul.items())


def strip_nul(row: dict[str, Any], fields: Iterable[str]) -> tuple[dict[str, Any], RowRepair]:
    """The row with NUL removed from the text (or texts) of `fields`, and what was removed. PostgreSQL cannot store NUL
    in text; it carries no meaning in a question or answer."""
    repair = RowRepair()
    out = dict(row)
    for name in fields:
        value = row.get(name)
        if isinstance(value, str) and NUL in value:
            repair.removed_nul[name] = value.count(NUL)
            out[name] = value.replace(NUL, "")
        elif isinstance(value, list) and any(isinstance(v, str) and NUL in v for v in value):
            repair.removed_nul[name] = sum(v.count(NUL) for v in value if isinstance(v, str))
            out[name] = [v.replace(NUL, "") if isinstance(v, str) else v for v in value]
    return out, repair


def oversize_field(row: dict[str, Any], fields: Iterable[str], limit: int) -> str | None:
    """ "field 'answer': 52428800 bytes, over the limit of 262144" for the first field over `limit`, or None."""
    for name in fields:
        size = text_bytes(row.get(name))
        if size > limit:
            return f"field '{name}': {size} bytes, over the limit of {limit} bytes per field (max_field_bytes)"
    return None


def text_bytes(value: Any) -> int:
    """UTF-8 size of a text or of a list of texts (other values count 0: their type is checked elsewhere)."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, list):
        return sum(text_bytes(v) for v in value if isinstance(v, str))
    return 0


def storable_excerpt(raw: str) -> str:
    """A raw excerpt safe to store on any database: NUL shown as U+2400 (a visible symbol)."""
    return raw.replace(NUL, "\u2400")
