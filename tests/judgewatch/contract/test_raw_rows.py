"""The one JSON-object reader every JSONL reader shares: each reason is worded once, whatever the reader."""

from __future__ import annotations

import pytest

from judgewatch.contract.raw_rows import MAX_JSON_DEPTH, RowError, json_object


def test_an_object_comes_back_from_text_or_bytes() -> None:
    assert json_object('{"id": 1}') == {"id": 1}
    assert json_object('{"q": "法国"}'.encode()) == {"q": "法国"}


def test_a_surrogate_pair_escape_is_text_not_a_bad_line() -> None:
    assert json_object('{"q": "\\ud83d\\ude00"}') == {"q": "\U0001f600"}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"id": "\xff"}', "not valid UTF-8 (invalid start byte at byte 8)"),
        ('{"id": ', "not valid JSON: Expecting value (column 8)"),
        (
            "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
            f"not usable JSON: nested more than {MAX_JSON_DEPTH}",
        ),
        ("[1, 2]", "expected a JSON object, got list"),
        ("null", "expected a JSON object, got null"),
        ('"text"', "expected a JSON object, got str"),
        ('{"id": "\\ud800"}', "not usable JSON: a lone surrogate escape"),
        (b'{"id": "a\\udc00b"}', "not usable JSON: a lone surrogate escape"),
    ],
    ids=["utf8", "json", "depth", "list", "null", "string", "lone-high-surrogate", "lone-low-surrogate"],
)
def test_a_line_that_is_not_an_object_says_why(line: str | bytes, reason: str) -> None:
    with pytest.raises(RowError) as error:
        json_object(line)
    assert str(error.value).startswith(reason)
