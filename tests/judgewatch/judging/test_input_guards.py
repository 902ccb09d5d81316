"""`judge --input` rows: one bad row never costs the file, and a file unusable as a whole gets one message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgewatch.contract.items import JudgeItem
from judgewatch.contract.raw_rows import InputFileError
from judgewatch.judging.input_rows import read_judge_input
from judgewatch.storage.quarantine import QuarantineRecord
from judgewatch.testing.conversations import weather_row


def _row(i: int, **extra: object) -> str:
    return json.dumps({"id": f"r{i}", "question": "Who wrote Hamlet?", "answer": "Shakespeare.", **extra})


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _split(rows: object) -> tuple[list[JudgeItem], list[QuarantineRecord]]:
    out = list(rows)  # type: ignore[call-overload]
    return [r for r in out if isinstance(r, JudgeItem)], [r for r in out if isinstance(r, QuarantineRecord)]


def test_a_row_nested_a_thousand_levels_is_quarantined_with_its_line(tmp_path: Path) -> None:
    deep = '{"id": "deep", "question": "q", "answer": "a", "extra": ' + "[" * 1000 + "]" * 1000 + "}"
    path = _write(tmp_path / "in.jsonl", [_row(1), deep, _row(3)])
    items, bad = _split(read_judge_input(path))
    assert [i.id for i in items] == ["r1", "r3"]
    assert [(b.line, "nested more than" in b.reason) for b in bad] == [(2, True)]


def test_nul_is_removed_from_text_and_the_change_is_recorded(tmp_path: Path) -> None:
    path = _write(tmp_path / "in.jsonl", [_row(1), _row(2, answer="Shake\u0000speare.", context=["a\u0000b"])])
    reader = read_judge_input(path)
    items, bad = _split(reader)
    assert bad == []
    assert items[1].answer == "Shakespeare." and items[1].context == ["ab"]
    assert reader.repairs == [
        "line 2: field 'answer': removed 1 NUL character(s); field 'context': removed 1 NUL character(s)"
    ]


def test_a_field_over_the_size_limit_is_quarantined_with_its_size(tmp_path: Path) -> None:
    path = _write(tmp_path / "in.jsonl", [_row(1, answer="x" * 5000), _row(2)])
    items, bad = _split(read_judge_input(path, max_field_bytes=4096))
    assert [i.id for i in items] == ["r2"]
    assert bad[0].line == 1 and "field 'answer': 5000 bytes" in bad[0].reason and "4096" in bad[0].reason


def test_a_line_far_over_any_field_limit_is_skipped_unparsed_with_its_size(tmp_path: Path) -> None:
    path = _write(tmp_path / "in.jsonl", [_row(1, answer="y" * 200_000), _row(2)])
    items, bad = _split(read_judge_input(path, max_field_bytes=1024))
    assert [i.id for i in items] == ["r2"]
    assert bad[0].line == 1 and "line is 200" in bad[0].reason


def test_the_default_field_limit_comes_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judgewatch.settings import get_settings

    monkeypatch.setenv("JUDGEWATCH_MAX_FIELD_BYTES", "100")
    get_settings.cache_clear()
    try:
        path = _write(tmp_path / "in.jsonl", [_row(1, answer="z" * 101)])
        _, bad = _split(read_judge_input(path))
    finally:
        get_settings.cache_clear()
    assert "101 bytes" in bad[0].reason


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"\n  \n", "is empty"),
        ((_row(1) + "\n" + _row(2) + "\n").encode("utf-16"), "UTF-16"),
        ((_row(1) + "\n").encode("utf-16-le"), "UTF-16"),
        ((_row(1) + "\r" + _row(2) + "\r").encode(), "CR-only"),
    ],
)
def test_a_file_unusable_as_a_whole_gets_one_file_level_message(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=message) as info:
        read_judge_input(path)
    assert str(path) in str(info.value)


def test_crlf_files_still_read_normally(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes((_row(1) + "\r\n" + _row(2) + "\r\n").encode())
    items, bad = _split(read_judge_input(path))
    assert [i.id for i in items] == ["r1", "r2"] and bad == []


def test_a_number_too_long_to_convert_is_quarantined(tmp_path: Path) -> None:
    path = _write(tmp_path / "in.jsonl", ['{"id": ' + "9" * 5000 + ', "question": "q", "answer": "a"}', _row(2)])
    items, bad = _split(read_judge_input(path))
    assert [i.id for i in items] == ["r2"] and bad[0].line == 1


def test_a_conversation_row_is_read_and_a_bad_turn_quarantines_its_row_naming_the_field(tmp_path: Path) -> None:
    good = weather_row("c1")
    bad = weather_row("c2")
    bad["messages"][2]["role"] = "robot"
    no_question = {"id": "c3", "answer": "a", "messages": [{"role": "system", "content": "s"}]}
    path = _write(tmp_path / "in.jsonl", [json.dumps(good), json.dumps(bad), json.dumps(no_question), _row(4)])
    items, quarantined = _split(read_judge_input(path))
    assert [i.id for i in items] == ["c1", "r4"]
    assert items[0].question == "What is the weather in Paris right now?" and items[0].is_conversation
    assert [(q.line, q.reason.split(":")[0]) for q in quarantined] == [
        (2, "field 'messages[2].role'"),
        (3, "field 'question'"),
    ]
    assert "no user turn in messages" in quarantined[1].reason
