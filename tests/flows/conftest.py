"""Fixtures and helpers the flow tests share."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from judgewatch.settings import REPO_ROOT

DEMO = REPO_ROOT / "examples" / "traffic"
SET = "halueval_qa_mini"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """The demo source config, reading a copy of the demo log in tmp_path (same name, same rows)."""
    log = tmp_path / "gateway.jsonl"
    shutil.copyfile(DEMO / "halluqa_gateway_log.jsonl", log)
    config = yaml.safe_load((DEMO / "demo_source.yaml").read_text(encoding="utf-8"))
    config["paths"] = [str(log)]
    path = tmp_path / "source.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture
def split_source(tmp_path: Path) -> Path:
    """The demo source over its log cut into 4 files (676 lines each but the last), read as one glob; its two
    quarantined lines (901, 1801) fall in part-1 and part-2."""
    lines = (DEMO / "halluqa_gateway_log.jsonl").read_bytes().splitlines(keepends=True)
    folder = tmp_path / "logs"
    folder.mkdir()
    for k in range(4):
        (folder / f"part-{k}.jsonl").write_bytes(b"".join(lines[k * 676 : (k + 1) * 676]))
    config = yaml.safe_load((DEMO / "demo_source.yaml").read_text(encoding="utf-8"))
    config["paths"] = [str(folder / "part-*.jsonl")]
    path = tmp_path / "source.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


async def gate(db: str, folder: Path, release: str, **params: Any) -> dict[str, Any]:
    """The post-release regression flow's result for `release` (on SET and the reference judge unless `params`
    say otherwise), its report written in `folder`; a failing gate is a result, not an exception."""
    from flows.regression import post_release_regression

    params.setdefault("datasets", [SET])
    params.setdefault("judge", "reference")
    result = await post_release_regression(
        release=release, database_url=db, report=str(folder / f"{release}.md"), fail_on_gate=False, **params
    )
    assert isinstance(result, dict)
    return result
