"""Factories for gateway-log rows, log files and source configs used by the traffic tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from judgewatch.traffic import SourceConfig, parse_source_config

START = datetime(2024, 6, 3, 8, 0, tzinfo=UTC)

RowFactory = Callable[..., dict[str, Any]]


def _gateway_row(i: int, **overrides: Any) -> dict[str, Any]:
    """One OpenAI-gateway log row; keyword overrides replace top-level keys or metadata entries."""
    model = overrides.pop("model", "qwen-14b-chat")
    question = overrides.pop("question", f"第{i}个问题：长江有多长？")
    answer = overrides.pop("answer", f"长江全长约6300公里。（回答 {i}）")
    meta = {
        "release": "r1",
        "route": overrides.pop("route", "qa/knowledge"),
        "department": overrides.pop("department", "地理"),
    }
    if "tier" in overrides:
        meta["tier"] = overrides.pop("tier")
    row = {
        "id": f"chatcmpl-{i:06d}",
        "timestamp": (START + timedelta(seconds=overrides.pop("second", i))).isoformat(),
        "model": model,
        "request": {"model": model, "messages": [{"role": "user", "content": question}]},
        "response": {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 30},
        },
        "metadata": meta,
        "reference": {"answer": "约6300公里", "facts": ["长江全长约6300公里"], "context": []},
    }
    row.update(overrides)
    return row


@pytest.fixture
def gateway_row() -> RowFactory:
    return _gateway_row


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[[str, Iterable[dict[str, Any] | str | bytes]], Path]:
    """Write rows (dicts as JSON, str/bytes verbatim) one per line into tmp_path/name."""

    def write(name: str, rows: Iterable[dict[str, Any] | str | bytes]) -> Path:
        path = tmp_path / name
        with path.open("wb") as f:
            for row in rows:
                if isinstance(row, dict):
                    row = json.dumps(row, ensure_ascii=False)
                f.write((row.encode() if isinstance(row, str) else row) + b"\n")
        return path

    return write


@pytest.fixture
def make_config() -> Callable[..., SourceConfig]:
    def make(**fields: Any) -> SourceConfig:
        data = {"name": "test-source", "kind": "jsonl", **fields}
        return parse_source_config(data)

    return make
