"""Decide before you parse: the columnar block path picks, counts and quarantines exactly as the row path does."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judgewatch.traffic.columnar.line_scan as line_scan
import judgewatch.traffic.columnar.sampling as block_sampling
from judgewatch.testing.gateway_log import write_gateway_logs
from judgewatch.traffic import Sampler, SourceConfig, load_source_config, parse_source_config, read_source
from judgewatch.traffic.columnar.blocks import ROW_PATH_LINES
from judgewatch.traffic.watermark import FileMark, Watermark

REPO = Path(__file__).resolve().parents[3]
STORED = json.loads((Path(__file__).parent / "data" / "picks_before_columnar.json").read_text())
COUNTS = ("read", "quarantined", "filtered", "duplicate", "eligible", "picked")


@pytest.fixture(autouse=True, params=["mapped schema", "inferred"])
def jsonl_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with both ways pyarrow reads a JSONL block: an explicit schema of only the mapped paths,
    and every field with inferred types (what a mapping no one schema expresses gets)."""
    if request.param == "inferred":
        monkeypatch.setattr(line_scan.MappedReader, "learn", lambda _self, _inferred: None)
    return str(request.param)


def _run(config: SourceConfig, *, rows: bool = False, since: Watermark | None = None) -> dict[str, Any]:
    """Picks (id, stratum, rate, scrubbed answer), counts, quarantine records and the final watermark."""
    quarantined: list[tuple[str, int | None, str, str]] = []
    sampler = Sampler(config, on_quarantine=lambda q: quarantined.append((q.position, q.line, q.reason, q.detail)))
    read = read_source(config, since)
    picks = list(sampler.run(iter(read) if rows else read))
    stats = sampler.stats
    return {
        "picks": [(p.row.interaction_id, p.stratum, p.inclusion_probability, p.row.answer) for p in picks],
        "rows": [p.row for p in picks],
        "counts": {k: getattr(stats, k) for k in COUNTS},
        "by": (stats.filtered_by, stats.quarantined_by, {k: v.model_dump() for k, v in stats.strata.items()}),
        "quarantined": quarantined,
        "watermark": read.watermark,
    }


def _same(config: SourceConfig) -> dict[str, Any]:
    blocks, rows = _run(config), _run(config, rows=True)
    assert blocks == rows
    return blocks


@pytest.fixture(scope="module")
def synthetic_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gateway")
    write_gateway_logs(folder, 2, 20_000)  # the rows the stored picks were made from
    return folder


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
@pytest.mark.slow  # in the full tier only (make test): seconds of work
def test_block_path_picks_the_stored_ids_on_the_benchmarks_synthetic_log(synthetic_log: Path, kind: str) -> None:
    paths = [str(p) for p in sorted(synthetic_log.glob(f"log-*.{kind}"))]
    config = parse_source_config({"name": "bench", "kind": kind, "paths": paths, "sampling": {"default_rate": 0.01}})
    got = _run(config)
    assert [p[0] for p in got["picks"]] == STORED[kind]["picked_ids"]
    assert got["counts"] == STORED[kind]["stats"]  # the 400 client retries are still duplicates


def test_block_path_picks_the_stored_ids_on_the_demo_log() -> None:
    config = load_source_config(REPO / "examples/traffic/demo_source.yaml")
    got = _same(config)
    assert [p[0] for p in got["picks"]] == STORED["demo"]["picked_ids"]
    assert got["counts"] == STORED["demo"]["stats"]
    assert [(q[1], q[2]) for q in got["quarantined"]] == [(901, "invalid_json"), (1801, "missing_response")]


def test_block_path_equals_row_path_with_filters_strata_and_a_small_dedup_window(synthetic_log: Path) -> None:
    config = parse_source_config(
        {
            "name": "bench",
            "kind": "parquet",
            "paths": [str(synthetic_log / "log-0.parquet")],
            "tiers": {"qwen": "full", "chatglm": "quantized"},
            "sampling": {
                "default_rate": 0.05,
                "rates": {"full": 0.2, "quantized/search/rag": 0.5},
                "stratify_by_route": True,
                "dedup": {"window_rows": 3, "window_seconds": 0.2},
            },
            "filters": {
                "exclude_routes": ["support/*"],
                "departments": ["历史", "常识", "finance"],
                "since": "2024-06-01T00:05:00Z",
                "min_answer_chars": 130,
            },
        }
    )
    got = _same(config)
    assert set(got["by"][0]) == {"route", "department", "time", "answer_length"}
    assert got["counts"]["duplicate"] > 0 and got["counts"]["picked"] > 0 and len(got["by"][2]) >= 3


def _bad_lines(gateway_row: Any) -> list[Any]:
    """Rows pyarrow parses fine whose defects only the full mapping names, between good rows."""
    no_answer = gateway_row(3)
    no_answer["response"]["choices"][0]["message"]["content"] = None
    no_user = gateway_row(4)
    no_user["request"]["messages"] = [{"role": "system", "content": "x"}]
    no_role = gateway_row(5)
    no_role["request"]["messages"] = [{"content": "who am I?"}]
    negative = gateway_row(6)
    negative["response"]["usage"]["prompt_tokens"] = -3
    bad_time = gateway_row(7, timestamp="yesterday")
    nul = gateway_row(8, answer="a\u0000b")
    huge = gateway_row(9, answer="x" * 5000)
    return [gateway_row(1), gateway_row(2), no_answer, no_user, no_role, negative, bad_time, nul, huge,
            *(gateway_row(i) for i in range(10, 40))]  # fmt: skip


@pytest.mark.parametrize("rate", [1.0, 0.3])
def test_bad_rows_in_a_columnar_block_are_quarantined_with_their_line_and_the_rest_is_picked(
    write_jsonl: Any, make_config: Any, gateway_row: Any, monkeypatch: pytest.MonkeyPatch, rate: float
) -> None:
    path = write_jsonl("log.jsonl", _bad_lines(gateway_row))
    config = make_config(paths=[str(path)], max_field_bytes=4000, sampling={"default_rate": rate})
    flagged: list[list[int]] = []
    original = block_sampling.decision_columns

    def spy(*args: Any, **kwargs: Any) -> Any:
        cols = original(*args, **kwargs)
        flagged.append(np.flatnonzero(cols.full).tolist())
        return cols

    monkeypatch.setattr(block_sampling, "decision_columns", spy)
    got = _same(config)
    assert flagged == [[2, 3, 4, 5, 7, 8]]  # one columnar block; only the suspect rows are mapped one by one
    assert [(q[1], q[2]) for q in got["quarantined"]] == [
        (3, "missing_response"),
        (4, "missing_field"),
        (5, "wrong_type"),
        (6, "wrong_type"),
        (7, "wrong_type"),
        (9, "oversize"),
    ]
    assert got["counts"]["read"] == 39 and got["counts"]["quarantined"] == 6
    if rate == 1.0:
        assert got["counts"]["picked"] == 33 and got["rows"][2].answer == "ab"  # the NUL removed, as before


def test_lines_the_block_reader_cannot_vouch_for_are_read_by_the_row_paths_own_code(
    write_jsonl: Any, make_config: Any, gateway_row: Any
) -> None:
    lines = [
        gateway_row(1),
        '{"id": "cut", "timestamp": "2024-06-03T08:00',
        b'{"id": "latin1", "answer": "caf\xe9"}',
        "[1, 2, 3]",
        "",
        gateway_row(6, response={"choices": [{"message": {"content": 42}}]}),
        {"id": 7, **{k: v for k, v in gateway_row(7).items() if k != "id"}},
        gateway_row(8),
    ]
    path = write_jsonl("mixed.jsonl", lines)
    got = _same(make_config(paths=[str(path)], sampling={"default_rate": 1.0}))
    assert [q[1] for q in got["quarantined"]] == [2, 3, 4, 6]
    assert got["counts"]["picked"] == 3


def test_a_line_pyarrow_refuses_costs_the_row_paths_speed_to_a_few_lines_around_it_not_to_its_block(
    write_jsonl: Any, make_config: Any, gateway_row: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines: list[Any] = [gateway_row(i) for i in range(2000)]
    lines[1234] = '{"id": "cut", "timestamp": "2024-06-03T08:00'
    path = write_jsonl("one-bad.jsonl", lines)
    on_columns: list[int] = []
    original = block_sampling.decision_columns

    def spy(table: Any, *args: Any, **kwargs: Any) -> Any:
        on_columns.append(table.num_rows)
        return original(table, *args, **kwargs)

    monkeypatch.setattr(block_sampling, "decision_columns", spy)
    got = _same(make_config(paths=[str(path)], sampling={"default_rate": 1.0}))
    assert [(q[1], q[2]) for q in got["quarantined"]] == [(1235, "invalid_json")]
    assert got["counts"]["picked"] == 1999
    assert 2000 - ROW_PATH_LINES <= sum(on_columns) < 2000  # the halves pyarrow reads, on columns


def test_parquet_with_columns_the_rules_do_not_cover_is_mapped_row_by_row(tmp_path: Path, make_config: Any) -> None:
    table = pa.table(
        {
            "id": [1, 2, 3, 4],
            "timestamp": ["2024-06-03T08:00:00", "2024-06-03T08:00:01", "2024-06-03T08:00:02", None],
            "question": ["q1", "q2", "q3", "q4"],
            "answer": [b"fine", b"caf\xe9", None, b"ok"],
            "tokens": [1.0, 2.5, 3.0, 4.0],
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    mapping = {"id": "id", "question": "question", "answer": "answer", "messages": None, "timestamp": "timestamp",
               "prompt_tokens": "tokens"}  # fmt: skip
    got = _same(make_config(kind="parquet", paths=[str(path)], mapping=mapping, sampling={"default_rate": 1.0}))
    assert [q[0].rsplit("=", 1)[1] for q in got["quarantined"]] == ["2", "3", "4"]


def test_a_pick_moves_the_watermark_to_its_own_line_and_a_resumed_read_picks_the_rest(
    synthetic_log: Path, make_config: Any
) -> None:
    config = make_config(paths=[str(synthetic_log / "log-0.jsonl")], sampling={"default_rate": 0.01})
    whole = _run(config)
    read = read_source(config)
    sampler = Sampler(config)
    first = list(itertools.islice(sampler.run(read), 3))
    line = read.watermark.files[str(synthetic_log / "log-0.jsonl")].rows
    assert first[-1].row.source_id == f"chatcmpl-{line - 1:012d}"  # the third pick's own line, not its block's end
    rest = _run(config, since=read.watermark)
    assert [p.row.interaction_id for p in first] + [p[0] for p in rest["picks"]] == [p[0] for p in whole["picks"]]
    assert rest["watermark"] == whole["watermark"] == _run(config, rows=True)["watermark"]


@pytest.mark.parametrize("gz", [False, True])
def test_small_blocks_an_overlong_line_and_a_resumed_read_match_the_row_path(
    tmp_path: Path, make_config: Any, gateway_row: Any, monkeypatch: pytest.MonkeyPatch, gz: bool
) -> None:
    import gzip

    import judgewatch.traffic.columnar.blocks as blocks

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 3000)  # lines straddle block ends; carries of every length
    rows = [json.dumps(gateway_row(i), ensure_ascii=False) for i in range(60)]
    rows[17] = json.dumps(gateway_row(17, answer="长" * 4000), ensure_ascii=False)  # longer than a row may be
    rows[40] = rows[40].replace("\n", "") + "\r"  # a CRLF line
    data = ("\n".join(rows) + "\n").encode()
    path = tmp_path / ("log.jsonl.gz" if gz else "log.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    config = make_config(paths=[str(path)], max_row_bytes=5000, sampling={"default_rate": 0.5})
    whole = _same(config)
    assert [q[1:3] for q in whole["quarantined"]] == [(18, "oversize")]
    offset = None if gz else sum(len(r.encode()) + 1 for r in rows[:25])
    since = Watermark(files={str(path): FileMark(rows=25, offset=offset)})  # a run stopped after line 25
    rest = _run(config, since=since)
    assert rest == _run(config, rows=True, since=since)
    assert rest["picks"] == [
        p for p, r in zip(whole["picks"], whole["rows"], strict=True) if int(r.source_id[-6:]) >= 25
    ]


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_a_list_index_past_a_short_or_null_list_reads_as_missing_as_in_the_row_path(
    tmp_path: Path, make_config: Any, gateway_row: Any, kind: str
) -> None:
    rows = [gateway_row(i) for i in range(12)]
    rows[2]["response"]["choices"] = []
    rows[4]["response"]["choices"] = None
    rows[6]["response"]["choices"] = [None, {"message": {"content": "the second"}}]
    rows[8]["response"]["choices"] = [{"message": None}]
    rows[9]["response"] = None
    rows[10]["response"]["choices"].append({"message": {"content": "a second choice"}})
    path = tmp_path / f"log.{kind}"
    if kind == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=5)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    got = _same(make_config(kind=kind, paths=[str(path)], sampling={"default_rate": 1.0}))
    assert [q[2] for q in got["quarantined"]] == ["missing_response"] * 5
    first_choices = [r["response"]["choices"][0]["message"]["content"] for r in rows[10:]]
    assert [r.answer for r in got["rows"]][-2:] == first_choices
