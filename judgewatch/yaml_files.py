"""A configuration YAML file (a tiers file, a traffic source, alert rules) read with one line naming the file on any
failure, its validation errors as lines naming the file, the entry and the field, and the one pattern of an
environment variable's name such files refer to secrets by."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
Model = TypeVar("Model", bound=BaseModel)


def read_yaml(path: Path, error: type[Exception], what: str) -> object:
    """The parsed file, or `error` with one line: unreadable, not UTF-8, or not YAML (its message on one line)."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise error(f"{path}: the {what} is not valid UTF-8") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None


def error_line(origin: str, where: str, loc: Sequence[str | int], message: str) -> str:
    """`FILE: ENTRY: field 'a.b': message`, from a validation error's location (within the entry) and message."""
    field = ".".join(str(part) for part in loc)
    return f"{origin}: {where}" + (f"field '{field}': " if field else "") + message.removeprefix("Value error, ")


def validated(model: type[Model], data: object, error: type[Exception], line: Callable[[ErrorDetails], str]) -> Model:
    """`data` as `model`, or `error` with one line per validation error (`line`: how an error reads)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error("\n".join(line(err) for err in exc.errors())) from None
