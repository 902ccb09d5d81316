"""Traffic files unusable as a whole get one quarantined row; NUL in a row's text is removed and logged."""

from __future__ import annotations

import json
import logging

import pytest

from judgewatch.traffic import QuarantineReason, RejectedTrafficRow, TrafficRow, read_source


def test_a_utf16_log_is_one_quarantined_row_not_one_per_line(tmp_path, make_config, gateway_row) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "log.jsonl"
    path.write_bytes("\n".join(json.dumps(gateway_row(i), ensure_ascii=False) for i in range(50)).encode("utf-16"))
    rows = list(read_source(make_config(paths=[str(path)])))
    assert len(rows) == 1 and isinstance(rows[0], RejectedTrafficRow)
    assert rows[0].reason == QuarantineReason.undecodable and "UTF-16" in rows[0].detail


def test_a_cr_only_log_is_one_quarantined_row(tmp_path, make_config, gateway_row) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "log.jsonl"
    path.write_text("\r".join(json.dumps(gateway_row(i)) for i in range(5)) + "\r", encoding="utf-8")
    rows = list(read_source(make_config(paths=[str(path)])))
    assert len(rows) == 1 and "CR-only" in rows[0].detail  # type: ignore[union-attr]


def test_nul_is_removed_from_traffic_text_and_logged(
    write_jsonl, make_config, gateway_row, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    path = write_jsonl("log.jsonl", [gateway_row(1, answer="six\u0000thousand"), gateway_row(2)])
    with caplog.at_level(logging.WARNING):
        rows = list(read_source(make_config(paths=[str(path)])))
    assert all(isinstance(r, TrafficRow) for r in rows)
    assert rows[0].answer == "sixthousand"  # type: ignore[union-attr]
    assert "removed NUL characters from answer (1)" in caplog.text


def test_a_field_over_max_field_bytes_is_quarantined_as_oversize(write_jsonl, make_config, gateway_row) -> None:  # type: ignore[no-untyped-def]
    path = write_jsonl("log.jsonl", [gateway_row(1, answer="y" * 5000), gateway_row(2)])
    rows = list(read_source(make_config(paths=[str(path)], max_field_bytes=4096)))
    bad = [r for r in rows if isinstance(r, RejectedTrafficRow)]
    assert len(rows) == 2 and len(bad) == 1
    assert bad[0].reason == QuarantineReason.oversize and "answer: 5000 bytes" in bad[0].detail


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_token_count_is_quarantined_as_wrong_type(write_jsonl, make_config, gateway_row, token) -> None:  # type: ignore[no-untyped-def]
    line = json.dumps(gateway_row(1), ensure_ascii=False).replace('"prompt_tokens": 12', f'"prompt_tokens": {token}')
    path = write_jsonl("log.jsonl", [line, gateway_row(2)])
    rows = list(read_source(make_config(paths=[str(path)])))
    bad = [r for r in rows if isinstance(r, RejectedTrafficRow)]
    assert len(rows) == 2 and len(bad) == 1 and bad[0].line == 1
    assert (
        bad[0].reason == QuarantineReason.wrong_type
        and f"prompt_tokens: expected a non-negative integer, got {float(token)!r}" in bad[0].detail
    )
