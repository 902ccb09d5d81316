"""The C line scanner reads each mapped path's value exactly as `json.loads` + `resolve` do, or flags the line.

The oracle is the row path itself: a line the row path cannot parse (not UTF-8, not JSON, not an object, too
deep) must be suspect; a line the scanner does not flag must give, on every path, the value `resolve` finds.
Lines are gateway rows broken at random: values of every JSON kind at the mapped paths, escapes, surrogates,
duplicate keys, NaN, big integers, deep nesting, whitespace, and raw byte edits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgewatch.contract.raw_rows import loads_bounded
from judgewatch.traffic import RejectedTrafficRow, Sampler, parse_source_config, read_source
from judgewatch.traffic.line_blocks import LineBlock
from judgewatch.traffic.line_scan import NATIVE, SCALAR, TEXTS, ScanPlan, scan_block, scan_plan
from judgewatch.traffic.mapping import RowMapper, resolve

from .conftest import _gateway_row

CONFIG = parse_source_config({"name": "scan", "kind": "jsonl", "paths": ["x.jsonl"]})
PATHS = [seg for fallbacks in RowMapper(CONFIG).paths.values() for seg in fallbacks]

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(["", "\u0000", "中文", "😀"])
leaf = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | text
json_value = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3))


def _plan() -> ScanPlan:
    assert NATIVE, "judgewatch.traffic._line_scan is not built: `make setup` needs gcc"
    plan = scan_plan(RowMapper(CONFIG))
    assert plan is not None
    return plan


def _put(row: dict[str, Any], segments: tuple[str, ...], value: Any) -> None:
    """Set the value at a path, making the dicts (and a one-element list for an index) on the way."""
    node: Any = row
    for seg in segments[:-1]:
        nxt = node.get(seg) if isinstance(node, dict) else None
        if seg.isdigit() and isinstance(node, list):
            while len(node) <= int(seg):
                node.append({})
            node = node[int(seg)]
            continue
        if not isinstance(nxt, dict | list):
            nxt = [{}] if seg == "choices" else {}
            node[seg] = nxt
        node = nxt
    if isinstance(node, dict):
        node[segments[-1]] = value
    elif isinstance(node, list) and segments[-1].isdigit() and int(segments[-1]) < len(node):
        node[int(segments[-1])] = value


@st.composite
def broken_line(draw: st.DrawFn) -> bytes:
    row = _gateway_row(draw(st.integers(0, 10**6)))
    for _ in range(draw(st.integers(0, 3))):
        _put(row, draw(st.sampled_from(PATHS)), draw(json_value))
    if draw(st.booleans()):
        row[draw(text)] = draw(json_value)
    if draw(st.integers(0, 9)) == 0:
        depth = draw(st.integers(55, 70))
        row["deep"] = json.loads("[" * depth + "]" * depth)
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :\r ")]))
    body = json.dumps(row, ensure_ascii=draw(st.booleans()), separators=separators).encode()
    edit = draw(st.integers(0, 11))
    if edit == 0 and body:  # one byte replaced
        at = draw(st.integers(0, len(body) - 1))
        body = body[:at] + bytes([draw(st.integers(0, 255).filter(lambda b: b != 10))]) + body[at + 1 :]
    elif edit == 1:  # a key on a path given twice
        key = draw(st.sampled_from([b'"id"', b'"model"', b'"timestamp"', b'"role"', b'"content"', b'"usage"']))
        colon, comma = separators[1].encode(), separators[0].encode()
        body = body.replace(key + colon, key + colon + b'"dup"' + comma + key + colon, 1)
    elif edit == 2:  # escapes the dumper would not write: lone surrogates, \/ and upper-case hex
        body = body.replace(b"qwen", draw(st.sampled_from([b"\\ud800", b"\\udc00x", b"q\\/en", b"\\u0051wen",
                                                            b"\\uD83D\\uDE00", b"\\ud83d\\u0041"])), 1)  # fmt: skip
    elif edit == 3:  # NaN, Infinity, a number Python reads and int64 does not hold
        body = body.replace(b"12", draw(st.sampled_from([b"NaN", b"-Infinity", b"1e999", b"123456789012345678901",
                                                         b"12.", b"012", b"-0", b"1E2", b"-"])), 1)  # fmt: skip
    elif edit == 4:  # surrounding whitespace, a BOM, a CR
        body = draw(st.sampled_from([b" ", b"\t", b"\r", b"\xef\xbb\xbf", b"\x0c"])) + body + b"\r"
    elif edit == 5:  # a raw control character inside a string
        body = body.replace(b"r1", b"r\x011", 1)
    elif edit == 6:  # text where the mapping walks into an object (JSON held in a text column)
        row["request"] = json.dumps(row["request"])
        body = json.dumps(row).encode()
    return body


def _row_path(body: bytes) -> dict[str, Any] | None:
    """The row as the row path parses it, None where it cannot (the line must then be suspect)."""
    try:
        value = loads_bounded(body.rstrip(b"\r\n").decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _expected(raw: dict[str, Any], segments: tuple[str, ...], mode: int) -> tuple[bool, Any]:
    """(whether the scanner may give a value without flagging the line, the value `resolve` finds)."""
    value = resolve(raw, (segments,))
    if value is None:
        return True, None
    if mode == SCALAR:
        return isinstance(value, str | int | float) and not isinstance(value, bool), value
    if mode == TEXTS:
        if isinstance(value, str):
            return True, [value]
        return isinstance(value, list) and all(isinstance(v, str) for v in value), value
    ok = isinstance(value, list) and all(
        isinstance(m, dict) and all(isinstance(m.get(k), str | None) for k in ("role", "content")) for m in value
    )
    return ok, [{"role": m.get("role"), "content": m.get("content")} for m in value] if ok else value


def _check(lines: list[bytes]) -> np.ndarray:
    plan = _plan()
    block = LineBlock(b"".join(line + b"\n" for line in lines))
    got = scan_block(block.data, block.ends, plan, too_long=np.zeros(block.n, dtype=bool))
    modes = {spec_segments: mode for spec_segments, (_, mode, _) in zip(plan.paths, plan.specs, strict=True)}
    values = {segments: column.to_pylist() for segments, column in got.columns.items()}
    for i, line in enumerate(lines):
        raw = _row_path(line)
        if raw is None:
            assert got.suspect[i], f"line {i} is not what the row path reads, yet not suspect: {line!r}"
            continue
        if got.suspect[i]:
            continue
        for segments, mode in modes.items():
            allowed, want = _expected(raw, segments, mode)
            assert allowed, f"line {i}: {segments} holds {want!r}, which the columns cannot, yet not suspect"
            have = values[segments][i]
            assert have == want and type(have) is type(want), f"line {i}: {segments}: {have!r} != {want!r}"
    return got.suspect


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(broken_line(), min_size=1, max_size=8))
def test_every_value_the_scanner_gives_is_the_one_the_row_path_reads(lines: list[bytes]) -> None:
    _check(lines)


def test_plain_gateway_rows_are_read_without_the_row_path() -> None:
    lines = [json.dumps(_gateway_row(i), ensure_ascii=i % 2 == 0).encode() for i in range(50)]
    assert not _check(lines).any()


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"id": "a", "id": "b"}', "a key on a path given twice"),
        (b'{"id": "\\ud800"}', "a lone surrogate"),
        (b'{"timestamp": NaN}', "NaN"),
        (b'{"id": 123456789012345678901}', "an integer past int64"),
        (b'{"metadata": {"tier": true}}', "true where a label is read"),
        (b'{"response": {"choices": [{"message": {"content": [{"type": "text", "text": "hi"}]}}]}}', "parts"),
        (b'{"request": "{\\"messages\\": []}"}', "JSON held in text"),
        (b'{"x": ' + b"[" * 64 + b"]" * 64 + b"}", "nested 65 deep"),
        (b'{"id": "caf\xe9"}', "not UTF-8"),
        (b'\xef\xbb\xbf{"id": "bom"}', "a BOM"),
        (b"[1, 2]", "not an object"),
        (b"", "blank"),
        (b'{"id": "a"} x', "extra data"),
        (b'{"request": {"messages": [null]}}', "a null message"),
        (b'{"reference": {"facts": ["a", null]}}', "a null passage"),
    ],
)
def test_lines_the_scanner_cannot_vouch_for_are_suspect(line: bytes, why: str) -> None:
    good = json.dumps(_gateway_row(1)).encode()
    assert _check([good, line, good]).tolist() == [False, True, False], why


def test_a_line_nested_64_deep_is_read_and_one_far_deeper_does_not_crash() -> None:
    ok = b'{"x": ' + b"[" * 63 + b"]" * 63 + b', "id": "deep"}'
    hostile = b'{"x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    assert _check([ok, hostile]).tolist() == [False, True]


def test_a_mapping_path_with_an_index_only_python_reads_falls_back_to_pyarrow() -> None:
    config = parse_source_config({"name": "s", "kind": "jsonl", "paths": ["x"], "mapping": {"answer": "choices.-1"}})
    assert scan_plan(RowMapper(config)) is None  # resolve() takes "-1" as the last element: the scanner does not


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(broken_line(), min_size=5, max_size=30), rate=st.sampled_from([1.0, 0.4]))
def test_sampling_on_broken_lines_picks_counts_and_quarantines_as_the_row_path(
    tmp_path: Path, lines: list[bytes], rate: float
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    config = parse_source_config(
        {"name": "scan", "kind": "jsonl", "paths": [str(path)], "sampling": {"default_rate": rate}}
    )
    results = []
    for rows in (False, True):
        quarantined: list[RejectedTrafficRow] = []
        sampler = Sampler(config, on_quarantine=quarantined.append)
        read = read_source(config)
        picks = [(p.row.interaction_id, p.stratum, p.row.answer) for p in sampler.run(iter(read) if rows else read)]
        bad = [(q.line, q.reason, q.detail) for q in quarantined]
        results.append((picks, sampler.stats.model_dump(), bad, read.watermark))
    assert results[0] == results[1]


def test_retries_on_lines_all_mapped_in_full_are_still_duplicates(tmp_path: Path) -> None:
    good = json.dumps(_gateway_row(0)).encode()
    suspect = good.replace(b'"id": ', b'"id": "dup", "id": ', 1)  # json.loads keeps the last id
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in [suspect, suspect, suspect]))
    config = parse_source_config(
        {"name": "scan", "kind": "jsonl", "paths": [str(path)], "sampling": {"default_rate": 1.0}}
    )
    sampler = Sampler(config)
    assert len(list(sampler.run(read_source(config)))) == 1
    assert sampler.stats.duplicate == 2
