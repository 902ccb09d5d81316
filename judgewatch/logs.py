"""Logging for entry points (the CLI, `python -m flows.* serve`), never library code: text or JSON lines. URL
credentials are masked when a record is created, so every handler, Prefect's included, sees the masked text.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any

from judgewatch.redact import mask_urls_in

# Attributes a record may carry (via `extra=`) that the JSON format lifts into top-level fields.
CONTEXT_FIELDS = ("run_id", "flow", "flow_run_id", "judge", "rubric", "release", "tier", "source", "counts")
_STANDARD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


def _mask_value(value: Any) -> Any:
    if isinstance(value, str):
        return mask_urls_in(value)
    if isinstance(value, dict):
        return {k: _mask_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_value(v) for v in value]
    return value


def _prefect_context() -> dict[str, str]:
    """The running Prefect flow's name and run id, when this record is logged inside a flow run."""
    if "prefect.context" not in sys.modules:  # never import Prefect just to log
        return {}
    try:
        from prefect.context import FlowRunContext

        ctx = FlowRunContext.get()
    except Exception:  # a log line must never fail because of the context lookup
        return {}
    if ctx is None or ctx.flow_run is None:
        return {}
    return {"flow": str(ctx.flow.name) if ctx.flow else "", "flow_run_id": str(ctx.flow_run.id)}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line; exceptions go into `exc_info` as masked text."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        body.update(_prefect_context())
        extras = {k: v for k, v in record.__dict__.items() if k not in _STANDARD_ATTRS and not k.startswith("_")}
        for key in CONTEXT_FIELDS:
            if key in extras:
                body[key] = _mask_value(extras.pop(key))
        for key, value in extras.items():
            if isinstance(value, str | int | float | bool | type(None)):
                body.setdefault(key, _mask_value(value))
        if record.exc_info:
            body["exc_info"] = mask_urls_in(self.formatException(record.exc_info))
        return json.dumps(body, default=str, ensure_ascii=False)


class MaskingFormatter(logging.Formatter):
    """The plain text format, with the formatted line (traceback included) masked."""

    def format(self, record: logging.LogRecord) -> str:
        return mask_urls_in(super().format(record))


def _masking_factory(base: Any) -> Any:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = base(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler to report, as logging does
            return record
        masked = mask_urls_in(message)
        if masked != message or record.args:
            record.msg, record.args = masked, None
        return record

    factory.judgewatch_masking = True  # type: ignore[attr-defined]
    return factory


def configure_logging(level: str | None = None, fmt: str | None = None, *, default_level: str = "WARNING") -> None:
    """Set up the root logger for an entry point from JUDGEWATCH_LOG_LEVEL and JUDGEWATCH_LOG_FORMAT (text|json)."""
    level = (level or os.environ.get("JUDGEWATCH_LOG_LEVEL") or default_level).upper()
    fmt = (fmt or os.environ.get("JUDGEWATCH_LOG_FORMAT") or "text").lower()
    if fmt not in ("text", "json"):
        raise ValueError(f"JUDGEWATCH_LOG_FORMAT must be 'text' or 'json', got {fmt!r}")
    handler = logging.StreamHandler()
    text = MaskingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(JsonFormatter() if fmt == "json" else text)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "judgewatch_handler", False)]:
        root.removeHandler(old)
    handler.judgewatch_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    current = logging.getLogRecordFactory()
    if not getattr(current, "judgewatch_masking", False):
        logging.setLogRecordFactory(_masking_factory(current))
