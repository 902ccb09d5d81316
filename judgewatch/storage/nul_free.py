"""Text and JSON without NUL, whatever their source, at the one place every value enters the database: PostgreSQL
refuses NUL in `text` and `jsonb`, so one reply carrying it would abort a whole write (docs/security.md)."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg.abc import AdaptContext

NUL = "\x00"


def without_nul(value: Any) -> Any:
    """`value` with NUL removed from every string in it (dict keys and nested lists included)."""
    if isinstance(value, str):
        return value.replace(NUL, "") if NUL in value else value
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(without_nul(v) for v in value)
    return value


def json_dumps(value: Any) -> str:
    """JSON text of `value` with no NUL in any of its strings (PostgreSQL's jsonb refuses `\\u0000`, the six characters
    `json.dumps` writes NUL as: text without them had none to remove)."""
    text = json.dumps(value)
    return text if "\\u0000" not in text else json.dumps(without_nul(value))


@functools.cache
def _str_dumpers() -> tuple[type, type]:
    """psycopg's text and binary `str` dumpers, dropping NUL. Made on the first PostgreSQL connection: a SQLite
    store never imports psycopg (0.04 s of every command's start)."""
    from psycopg.abc import Buffer
    from psycopg.types.string import StrBinaryDumper, StrDumperUnknown

    class _StrDumper(StrDumperUnknown):
        def dump(self, obj: str) -> Buffer | None:
            return super().dump(obj.replace(NUL, "") if NUL in obj else obj)

    class _StrBinaryDumper(StrBinaryDumper):
        def dump(self, obj: str) -> Buffer | None:
            return super().dump(obj.replace(NUL, "") if NUL in obj else obj)

    return _StrDumper, _StrBinaryDumper


def install(context: AdaptContext) -> None:
    """Make a psycopg connection (or adapters map) send every string and JSON document without NUL."""
    from psycopg.types.json import set_json_dumps

    text_dumper, binary_dumper = _str_dumpers()
    context.adapters.register_dumper(str, binary_dumper)
    context.adapters.register_dumper(str, text_dumper)  # registered last: the default for str, as psycopg's own
    set_json_dumps(json_dumps, context)


def sqlite_parameters(parameters: Any) -> Any:
    """A SQLite statement's parameters (a sequence, a mapping, or a list of them for executemany) without NUL."""
    if isinstance(parameters, dict):
        return {k: without_nul(v) for k, v in parameters.items()}
    if isinstance(parameters, list) and parameters and isinstance(parameters[0], tuple | list | dict):
        return [sqlite_parameters(p) for p in parameters]
    if isinstance(parameters, tuple | list):
        return parameters if _flat_without_nul(parameters) else type(parameters)(without_nul(v) for v in parameters)
    return parameters


_FLAT = (int, float, bytes, type(None))


def _flat_without_nul(values: tuple[Any, ...] | list[Any]) -> bool:
    """True when every value is a scalar and no string holds NUL: the values are returned as they are."""
    for value in values:
        if value.__class__ is str:
            if NUL in value:
                return False
        elif not isinstance(value, _FLAT):
            return False
    return True
