"""Property: every reader turns each generated row, however malformed, into an item or a quarantined row.

Rows are generated lines of a JSONL file: valid rows, and rows broken in the ways an audit found (deep nesting,
NUL, oversize fields, wrong types, invalid JSON and UTF-8, non-objects). Nothing raises and nothing is lost:
`judge --input` and traffic sources account for every non-blank line; a golden set names every bad row.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgewatch.contract.items import JudgeItem
from judgewatch.judging.input_rows import read_judge_input
from judgewatch.regression.golden import GoldenSetError, load_golden_set
from judgewatch.storage.quarantine import QuarantineRecord
from judgewatch.testing.settings_env import settings_env
from judgewatch.traffic import RejectedTrafficRow, TrafficRow, parse_source_config, read_source

FIELD_LIMIT = 2048
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_value = st.recursive(
    json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
)


def _valid(i: int) -> dict[str, Any]:
    return {
        "id": f"row-{i}",
        "question": "Who wrote Hamlet?",
        "answer": "Shakespeare.",
        "reference_facts": ["Hamlet is by Shakespeare."],
        "language": "en",
        "timestamp": "2024-06-03T08:00:00+00:00",
    }


@st.composite
def line(draw: st.DrawFn, i: int) -> tuple[bytes, str]:
    """(the line's bytes, how it is broken or "valid"); never blank, never containing a newline."""
    kind = draw(
        st.sampled_from(["valid", "deep", "nul", "oversize", "wrong_type", "garbage", "bad_utf8", "value", "missing"])
    )
    row = _valid(i)
    if kind == "valid":
        return json.dumps(row).encode(), kind
    if kind == "deep":
        depth = draw(st.integers(min_value=65, max_value=3000))
        return (json.dumps(row)[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}").encode(), kind
    if kind == "nul":  # repaired for judging and traffic (valid after), refused by a golden set
        row["question"] = "Who wrote\u0000Hamlet?" + draw(st.text(max_size=5))
        return json.dumps(row).encode(), kind
    if kind == "oversize":
        row["question"] = "x" * draw(st.integers(min_value=FIELD_LIMIT + 1, max_value=4 * FIELD_LIMIT))
        return json.dumps(row).encode(), kind
    if kind == "wrong_type":
        row["question"] = draw(st.sampled_from([1, 2.5, True, {"a": 1}, [1, 2]]))
        return json.dumps(row).encode(), kind
    if kind == "missing":
        del row["question"]
        return json.dumps(row).encode(), kind
    if kind == "bad_utf8":
        return b'{"id": "x", "question": "\xff\xfe"}', kind
    if kind == "value":
        value = draw(json_value.filter(lambda v: not isinstance(v, dict)))
        return json.dumps(value).encode(), kind
    # no NUL bytes: a file of mostly NUL is (rightly) refused whole as UTF-16
    garbage = draw(st.binary(min_size=1, max_size=40))
    return b"{" + garbage.replace(b"\n", b"").replace(b"\r", b"").replace(b"\x00", b""), kind


@st.composite
def files(draw: st.DrawFn) -> list[tuple[bytes, str]]:
    n = draw(st.integers(min_value=1, max_value=12))
    return [draw(line(i)) for i in range(n)]


def _write(lines: list[tuple[bytes, str]], folder: Path) -> Path:
    path = folder / "rows.jsonl"
    path.write_bytes(b"".join(data + b"\n" for data, _ in lines))
    return path


def _bad_lines(lines: list[tuple[bytes, str]], repaired: frozenset[str]) -> list[int]:
    """Line numbers expected in quarantine: every broken kind except those the reader repairs."""
    return [n for n, (_, kind) in enumerate(lines, 1) if kind != "valid" and kind not in repaired]


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(files())
def test_judge_input_accounts_for_every_row(lines: list[tuple[bytes, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = list(read_judge_input(_write(lines, Path(tmp)), max_field_bytes=FIELD_LIMIT))
    items = [r for r in rows if isinstance(r, JudgeItem)]
    bad = [r for r in rows if isinstance(r, QuarantineRecord)]
    assert len(items) + len(bad) == len(lines)
    assert sorted(b.line for b in bad if b.line is not None) == _bad_lines(lines, frozenset({"nul"}))
    assert all("\x00" not in item.question for item in items)
    assert all("\x00" not in b.raw for b in bad)


@PROPERTY
@given(files())
def test_traffic_source_accounts_for_every_row(lines: list[tuple[bytes, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(lines, Path(tmp))
        config = parse_source_config(
            {
                "name": "prop",
                "kind": "jsonl",
                "paths": [str(path)],
                "max_field_bytes": FIELD_LIMIT,
                "mapping": {"messages": None, "question": "question", "answer": "answer"},
            }
        )
        rows = list(read_source(config))
    good = [r for r in rows if isinstance(r, TrafficRow)]
    bad = [r for r in rows if isinstance(r, RejectedTrafficRow)]
    assert len(good) + len(bad) == len(lines)
    assert sorted(b.line for b in bad if b.line is not None) == _bad_lines(lines, frozenset({"nul"}))
    assert all("\x00" not in r.question for r in good) and all("\x00" not in b.excerpt for b in bad)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files().filter(lambda lines: any(kind != "valid" for _, kind in lines)))
def test_golden_set_names_every_bad_row(lines: list[tuple[bytes, str]]) -> None:
    """A golden set is refused whole (a gate must compare the same rows), and every bad row is named."""
    with tempfile.TemporaryDirectory() as tmp, settings_env(max_field_bytes=FIELD_LIMIT):
        path = _write(lines, Path(tmp))
        try:
            load_golden_set(path)
        except GoldenSetError as exc:
            problems = exc.problems
        else:
            raise AssertionError("a golden set with bad rows loaded")
    named = {int(p.split(": row ")[1].split(":")[0].split(" ")[0]) for p in problems if ": row " in p}
    bad = set(_bad_lines(lines, frozenset()))
    assert named == bad
