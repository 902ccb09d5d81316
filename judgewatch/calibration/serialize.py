"""Calibration results as JSON: dataclasses to plain dicts, NaN/inf to None (PostgreSQL's JSONB rejects NaN)."""

from __future__ import annotations

import dataclasses
import math
from datetime import date, datetime
from typing import Any

import numpy as np


def jsonable(value: Any) -> Any:
    """A JSON-safe copy of `value`: dataclasses and pydantic models become dicts, non-finite floats None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value
