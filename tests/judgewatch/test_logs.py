"""Entry-point logging: JSON lines with run context on request, and credentials in URLs masked everywhere."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from judgewatch.logs import configure_logging
from judgewatch.storage.verdict_counts import link_judge


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level, factory = list(root.handlers), root.level, logging.getLogRecordFactory()
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    logging.setLogRecordFactory(factory)


def test_json_format_is_one_object_a_line_with_run_context_and_masked_urls(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(level="INFO", fmt="json")
    log = logging.getLogger("judgewatch.test")
    log.info(
        "judging via %s",
        "http://u:hunter2@judge/v1",
        extra={"run_id": "r1", "judge": "smollm2", "counts": {"scored": 3}},
    )
    try:
        raise RuntimeError("connect to postgresql://jw:hunter2@db/jw failed")
    except RuntimeError:
        log.exception("store down")
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["message"] == "judging via http://u:***@judge/v1"
    assert (first["level"], first["logger"], first["run_id"], first["judge"]) == (
        "INFO",
        "judgewatch.test",
        "r1",
        "smollm2",
    )
    assert first["counts"] == {"scored": 3}
    assert first["ts"].endswith("+00:00")
    assert "hunter2" not in second["exc_info"] and "jw:***@db" in second["exc_info"]


def test_text_format_masks_too_and_a_bad_format_name_is_refused(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(level="WARNING", fmt="text")
    logging.getLogger("prefect.anything").warning("webhook https://h/x?token=abc failed")
    err = capsys.readouterr().err
    assert "token=***" in err and "abc" not in err
    with pytest.raises(ValueError, match="JUDGEWATCH_LOG_FORMAT"):
        configure_logging(fmt="xml")


def test_configuring_twice_keeps_one_handler(restore_logging: None) -> None:
    configure_logging(fmt="text")
    configure_logging(fmt="json")
    ours = [h for h in logging.getLogger().handlers if getattr(h, "judgewatch_handler", False)]
    assert len(ours) == 1


def test_a_fallback_link_label_loses_its_endpoint_in_metric_labels() -> None:
    assert link_judge("openai:smollm2-135m-instruct@http://judge:s3cret@10.0.0.5:8000/v1") == "smollm2-135m-instruct"
    assert link_judge("reference") == "reference"
