"""A JSONL block read by pyarrow gives each mapped path's value exactly as `json.loads` + `resolve` do, or is not read.

The oracle is the row path itself: a block holding a line the row path cannot parse (not UTF-8, not JSON, not
one object, too deep) must not be read as a table (the row path then reads it line by line); a block read as a
table must give, on every path, the value `resolve` finds. Both of pyarrow's ways are checked: the explicit
schema of only the mapped paths (`MappedReader` once it has learned their types) and full inference.
Lines are gateway rows broken at random: values of every JSON kind at the mapped paths, escapes, surrogates,
duplicate keys, NaN, big integers, deep nesting, whitespace, and raw byte edits.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgewatch.contract.raw_rows import loads_bounded
from judgewatch.traffic import RejectedTrafficRow, Sampler, parse_source_config, read_source
from judgewatch.traffic.columnar.columns import Unsupported, _walk
from judgewatch.traffic.columnar.line_blocks import LineBlock
from judgewatch.traffic.columnar.line_scan import MappedReader
from judgewatch.traffic.mapping import RowMapper, resolve

from .conftest import _gateway_row

CONFIG = parse_source_config({"name": "scan", "kind": "jsonl", "paths": ["x.jsonl"]})
PATHS = [seg for fallbacks in RowMapper(CONFIG).paths.values() for seg in fallbacks]

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.sampled_from(["", "\u0000", "中文", "😀"])
leaf = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | text
json_value = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3))


MAPPER = RowMapper(CONFIG)
LISTED = {seg for name in ("messages", "reference_facts", "context") for seg in MAPPER.paths[name]}
LEARNED = MappedReader(MAPPER)
LEARNED.read(b"".join(json.dumps(_gateway_row(i)).encode() + b"\n" for i in range(20)))
assert LEARNED.schema is not None


def _reader(learned: bool) -> MappedReader:
    if learned:
        return LEARNED
    fresh = MappedReader(MAPPER)
    fresh.learn = lambda _inferred: None  # type: ignore[method-assign]
    return fresh


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


def _comparable(value: Any) -> Any:
    """A message list compared on the fields the mapping reads (an inferred struct has every key, null or not)."""
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return [{k: m.get(k) for k in ("role", "content")} for m in value]
    return value


def _decided_on(t: pa.DataType, *, listed: bool) -> bool:
    """The column types `columns.decision_columns` reads values from (texts, numbers; lists of texts or records
    where the mapping reads a list): on any other it raises Unsupported and the block is mapped row by row."""
    if pa.types.is_list(t):
        return listed and (_decided_on(t.value_type, listed=False) or pa.types.is_struct(t.value_type))
    return pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_timestamp(t)


def _check(lines: list[bytes], *, learned: bool = True) -> bool:
    """Whether the block was read as a table; if so, every line is the row path's and every value `resolve`'s."""
    block = LineBlock(b"".join(line + b"\n" for line in lines))
    table = block.table(1 << 20, first_line=True, reader=_reader(learned))
    if table is None:
        return False
    raws = [_row_path(line) for line in lines]
    for i, raw in enumerate(raws):
        assert raw is not None, f"line {i} is not what the row path reads, yet read as a table: {lines[i]!r}"
    for segments in PATHS:
        try:
            column = _walk(table, segments, MAPPER.nested_keys)
        except Unsupported:
            continue  # decision_columns maps the whole block row by row
        if column is not None and not _decided_on(column.type, listed=segments in LISTED):
            continue  # decision_columns raises Unsupported on it: the block is mapped row by row
        values = [None] * len(lines) if column is None else column.to_pylist()
        for i, raw in enumerate(raws):
            have, want = values[i], resolve(raw, (segments,))
            if isinstance(have, datetime):
                continue  # an inferred timestamp column: `times` reads it, against its own tests
            same = _comparable(have) == _comparable(want) or (have != have and want != want)  # NaN in both
            assert same, f"line {i}: {segments}: {have!r} != {want!r}"
    return True


@pytest.mark.parametrize("learned", [True, False])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(broken_line(), min_size=1, max_size=8))
def test_every_value_pyarrow_gives_is_the_one_the_row_path_reads(lines: list[bytes], learned: bool) -> None:
    _check(lines, learned=learned)


def test_plain_gateway_rows_are_read_as_a_table_by_both_ways() -> None:
    lines = [json.dumps(_gateway_row(i), ensure_ascii=i % 2 == 0).encode() for i in range(50)]
    assert _check(lines, learned=True) and _check(lines, learned=False)


def test_the_learned_schema_holds_only_the_mapped_paths() -> None:
    schema = LEARNED.schema
    assert schema is not None
    assert set(schema.names) == {segments[0] for segments in PATHS}
    assert schema.field("response").type.get_field_index("id") < 0  # present in every row, never mapped
    assert schema.field("metadata").type.field("tier").type == pa.string()  # absent from the rows: its default


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"id": "a", "id": "b"}', "a key on a path given twice"),
        (b'{"id": "\\ud800"}', "a lone surrogate"),
        (b'{"id": 123456789012345678901}', "an integer past int64"),
        (b'{"response": {"usage": {"prompt_tokens": 123456789012345678901}}}', "past int64, nested (found by fuzzing)"),
        (b'{"x": ' + b"[" * 64 + b"]" * 64 + b"}", "nested 65 deep"),
        (b'{"id": "caf\xe9"}', "not UTF-8"),
        (b'{"id": "a", "unmapped": "caf\xe9"}', "not UTF-8 where nothing is mapped"),
        (b'\xef\xbb\xbf{"id": "bom"}', "a BOM"),
        (b"[1, 2]", "not an object"),
        (b"", "blank"),
        (b'{"id": "a"} x', "extra data"),
        (b'{"id": "a"}{"id": "b"}', "two objects"),
    ],
)
@pytest.mark.parametrize("learned", [True, False])
def test_a_block_with_a_line_the_row_path_must_read_is_not_read_as_a_table(
    line: bytes, why: str, learned: bool
) -> None:
    good = json.dumps(_gateway_row(1)).encode()
    assert not _check([good, line, good], learned=learned), why


def test_two_broken_lines_that_make_one_object_are_not_read_as_a_table() -> None:
    good = json.dumps(_gateway_row(1)).encode()
    assert not _check([good, b'{"id": "a"}{"id":', b'"b"}', good])


def test_a_block_the_learned_schema_does_not_fit_is_read_with_inference() -> None:
    numbered = [json.dumps({**_gateway_row(i), "id": i}).encode() for i in range(5)]  # ids as numbers
    assert _check(numbered, learned=True)


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
