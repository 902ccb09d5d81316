"""File sources: JSONL (plain, gzip, globbed) and Parquet, field mapping, quarantine, file watermarks."""

from __future__ import annotations

import gzip
import itertools
import json
from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq

from judgewatch.traffic import (
    FileMark,
    QuarantineReason,
    RejectedTrafficRow,
    TrafficRow,
    Watermark,
    interaction_id,
    read_source,
)


def _split(read) -> tuple[list[TrafficRow], list[RejectedTrafficRow]]:
    items = list(read)
    return [i for i in items if isinstance(i, TrafficRow)], [i for i in items if isinstance(i, RejectedTrafficRow)]


def test_gateway_log_rows_map_to_traffic_rows(write_jsonl, make_config, gateway_row):
    raw = gateway_row(1, model="baichuan2-13b-chat")
    raw["request"]["messages"] = [
        {"role": "system", "content": "你是助手"},
        {"role": "user", "content": "第一问"},
        {"role": "assistant", "content": "第一答"},
        {"role": "user", "content": [{"type": "text", "text": "第二问"}, {"type": "image_url", "image_url": {}}]},
    ]
    raw["response"]["usage"]["prompt_tokens_details"] = {"cached_tokens": 4}
    path = write_jsonl("log.jsonl", [raw])
    config = make_config(paths=[str(path)], tiers={"baichuan2-13b": "full"})
    read = read_source(config)
    (row,) = list(read)
    assert isinstance(row, TrafficRow)
    assert row.question == "第二问"
    assert [m.role for m in row.messages] == ["system", "user", "assistant", "user"]
    assert row.answer == "长江全长约6300公里。（回答 1）"
    assert (row.model, row.tier, row.release, row.route, row.department) == (
        "baichuan2-13b-chat",
        "full",
        "r1",
        "qa/knowledge",
        "地理",
    )
    assert row.timestamp == datetime(2024, 6, 3, 8, 0, 1, tzinfo=UTC)
    assert (row.tokens.prompt, row.tokens.completion, row.tokens.cached) == (12, 30, 4)
    assert row.reference_answer == "约6300公里" and row.reference_facts == ["长江全长约6300公里"]
    assert row.language == "zh"
    assert row.source_id == "chatcmpl-000001"
    assert row.interaction_id == interaction_id("traffic:test-source", "chatcmpl-000001")
    assert row.to_judge_item().id == row.interaction_id
    assert read.rows == 1 and read.quarantined == 0


def test_rereading_gives_the_same_interaction_ids_and_rows_without_id_use_file_and_line(
    write_jsonl, make_config, gateway_row
):
    no_id = gateway_row(2)
    del no_id["id"]
    path = write_jsonl("log.jsonl", [gateway_row(1), no_id])
    config = make_config(paths=[str(path)])
    first = [r.interaction_id for r in read_source(config)]  # type: ignore[union-attr]
    second = [r.interaction_id for r in read_source(config)]  # type: ignore[union-attr]
    assert first == second and len(set(first)) == 2
    rows, _ = _split(read_source(config))
    assert rows[1].source_id == f"{path}:2"


def test_custom_mapping_with_dotted_paths_and_fallbacks(write_jsonl, make_config):
    raw = {
        "req_id": 77,
        "ts": 1_717_401_600_000,  # epoch milliseconds
        "payload": {"input": {"prompt": "What is the capital of France?"}},
        "output": {"candidates": [{"text": "Paris."}]},
        "meta": {"deploy": {"tier": "quantized", "svc": "search"}, "team": "growth"},
        "refs": {"gold": "Paris", "docs": [{"text": "Paris is the capital of France.", "url": "u"}]},
    }
    path = write_jsonl("custom.jsonl", [raw])
    config = make_config(
        paths=[str(path)],
        mapping={
            "id": "req_id",
            "messages": None,
            "question": "payload.input.prompt",
            "answer": ["output.text", "output.candidates.0.text"],
            "tier": "meta.deploy.tier",
            "route": "meta.deploy.svc",
            "department": "meta.team",
            "timestamp": "ts",
            "reference_answer": "refs.gold",
            "context": "refs.docs",
        },
    )
    (row,) = list(read_source(config))
    assert isinstance(row, TrafficRow)
    assert (row.source_id, row.question, row.answer) == ("77", "What is the capital of France?", "Paris.")
    assert (row.tier, row.route, row.department) == ("quantized", "search", "growth")
    assert row.timestamp == datetime(2024, 6, 3, 8, 0, tzinfo=UTC)
    assert row.context == ["Paris is the capital of France."] and row.reference_answer == "Paris"
    assert row.language == "en" and row.messages == []


def test_naive_timestamps_take_the_configured_timezone(write_jsonl, make_config, gateway_row):
    path = write_jsonl("log.jsonl", [gateway_row(1, timestamp="2024-06-03 16:00:00")])
    (row,) = list(read_source(make_config(paths=[str(path)], timezone="Asia/Shanghai")))
    assert isinstance(row, TrafficRow)
    assert row.timestamp.utcoffset() == timedelta(hours=8)
    assert row.timestamp == datetime(2024, 6, 3, 8, 0, tzinfo=timezone.utc)  # noqa: UP017


def test_gzip_and_globbed_files_are_read_in_name_order(tmp_path, make_config, gateway_row):
    for n, rows in ((2, [gateway_row(3)]), (1, [gateway_row(1), gateway_row(2)])):
        with gzip.open(tmp_path / f"day-{n}.jsonl.gz", "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    config = make_config(paths=[str(tmp_path / "day-*.jsonl.gz")])
    rows, bad = _split(read_source(config))
    assert [r.source_id for r in rows] == ["chatcmpl-000001", "chatcmpl-000002", "chatcmpl-000003"]
    assert bad == []


def test_each_kind_of_bad_line_is_quarantined_with_line_and_reason(write_jsonl, make_config, gateway_row):
    no_answer = gateway_row(4)
    no_answer["response"] = {"error": {"message": "upstream timeout"}}
    no_time = gateway_row(6)
    del no_time["timestamp"]
    no_user = gateway_row(7)
    no_user["request"]["messages"] = [{"role": "system", "content": "x"}]
    lines = [
        gateway_row(1),
        '{"id": "cut", "timestamp": "2024-06-03T08:00',  # 2: cut mid-line
        b'{"id": "latin1", "answer": "caf\xe9"}',  # 3: not UTF-8
        no_answer,  # 4
        gateway_row(5, response={"choices": [{"message": {"content": 42}}]}),  # 5: wrong type
        no_time,  # 6
        no_user,  # 7
        "[1, 2, 3]",  # 8
        gateway_row(9, answer="联系我 a.b@example.com " + "很长" * 400),  # 9: oversize, PII in excerpt
        gateway_row(10, timestamp="yesterday"),  # 10
        gateway_row(11, response={"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": "12"}}),
        "",  # 12: blank lines are skipped, not quarantined
        gateway_row(13),
    ]
    path = write_jsonl("bad.jsonl", lines)
    read = read_source(make_config(paths=[str(path)], max_row_bytes=2000))
    rows, bad = _split(read)
    assert [r.source_id for r in rows] == ["chatcmpl-000001", "chatcmpl-000013"]
    got = {int(q.position.rsplit(":", 1)[1]): q.reason for q in bad}
    assert all(q.line == int(q.position.rsplit(":", 1)[1]) for q in bad)
    assert got == {
        2: QuarantineReason.invalid_json,
        3: QuarantineReason.undecodable,
        4: QuarantineReason.missing_response,
        5: QuarantineReason.wrong_type,
        6: QuarantineReason.missing_field,
        7: QuarantineReason.missing_field,
        8: QuarantineReason.not_an_object,
        9: QuarantineReason.oversize,
        10: QuarantineReason.wrong_type,
        11: QuarantineReason.wrong_type,
    }
    assert all(q.position.startswith(f"{path}:") and q.source == "traffic:test-source" and q.detail for q in bad)
    oversize = next(q for q in bad if q.reason == QuarantineReason.oversize)
    assert len(oversize.excerpt) <= 500 and "[EMAIL]" in oversize.excerpt and "a.b@example.com" not in oversize.excerpt
    assert (read.rows, read.quarantined) == (2, 10)
    assert len({q.quarantine_id for q in bad}) == 10


def test_unreadable_files_are_quarantined_and_reading_goes_on(tmp_path, make_config, gateway_row, write_jsonl):
    good = write_jsonl("b-good.jsonl", [gateway_row(1)])
    corrupt = tmp_path / "a-corrupt.jsonl.gz"
    corrupt.write_bytes(gzip.compress(b'{"answer": "' + b"x" * 100_000)[:60])  # cut off mid-stream
    config = make_config(paths=[str(tmp_path / "*.jsonl*")])  # a missing path fails the run: test_sample_source_paths
    rows, bad = _split(read_source(config))
    assert [r.source_id for r in rows] == ["chatcmpl-000001"] and good.exists()
    assert {q.reason for q in bad} == {QuarantineReason.unreadable}
    assert {q.position.split(":")[0] for q in bad} == {str(corrupt)}


def test_jsonl_watermark_reads_only_appended_lines(write_jsonl, make_config, gateway_row):
    path = write_jsonl("log.jsonl", [gateway_row(i) for i in range(3)])
    config = make_config(paths=[str(path)])
    first = read_source(config)
    assert len(list(first)) == 3
    mark = Watermark.model_validate_json(first.watermark.model_dump_json())  # survives storage as text
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(gateway_row(3)) + "\n" + json.dumps(gateway_row(4)) + "\n")
    second = read_source(config, mark)
    rows, _ = _split(second)
    assert [r.source_id for r in rows] == ["chatcmpl-000003", "chatcmpl-000004"]
    assert second.watermark.files[str(path)].rows == 5
    assert list(read_source(config, second.watermark)) == []


def test_an_unfinished_last_line_is_left_for_the_next_read(write_jsonl, make_config, gateway_row):
    path = write_jsonl("log.jsonl", [gateway_row(0)])
    whole = json.dumps(gateway_row(1))
    with path.open("a", encoding="utf-8") as f:
        f.write(whole[:40])  # the writer is mid-line
    config = make_config(paths=[str(path)])
    first = read_source(config)
    assert [i.source_id for i in first] == ["chatcmpl-000000"]  # type: ignore[union-attr]
    with path.open("a", encoding="utf-8") as f:
        f.write(whole[40:] + "\n")
    second = read_source(config, first.watermark)
    assert [i.source_id for i in second] == ["chatcmpl-000001"]  # type: ignore[union-attr]


def test_gzip_watermark_skips_rows_already_read(tmp_path, make_config, gateway_row):
    path = tmp_path / "log.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(gateway_row(i)) + "\n" for i in range(5))
    config = make_config(paths=[str(path)])
    mark = Watermark(files={str(path): FileMark(rows=3)})
    assert [i.source_id for i in read_source(config, mark)] == ["chatcmpl-000003", "chatcmpl-000004"]  # type: ignore[union-attr]


def _write_parquet(path, rows, row_group_size=None) -> None:
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)


def test_parquet_rows_stream_with_nested_columns_and_watermark(tmp_path, make_config, gateway_row):
    rows = [gateway_row(i) for i in range(10)]
    for r in rows:
        r["unrelated_blob"] = "x" * 100  # not mapped: never read
    path = tmp_path / "log.parquet"
    _write_parquet(path, rows, row_group_size=3)
    config = make_config(kind="parquet", paths=[str(path)])
    first = read_source(config)
    got, bad = _split(first)
    assert [r.source_id for r in got] == [f"chatcmpl-{i:06d}" for i in range(10)] and bad == []
    assert got[0].question == "第0个问题：长江有多长？" and got[0].timestamp.tzinfo is not None
    assert first.watermark.files[str(path)].rows == 10
    mark = Watermark(files={str(path): FileMark(rows=7)})  # inside the third row group
    assert [i.source_id for i in read_source(config, mark)] == [f"chatcmpl-{i:06d}" for i in (7, 8, 9)]  # type: ignore[union-attr]


def test_parquet_bad_rows_are_quarantined_by_row_number(tmp_path, make_config):
    ts = datetime(2024, 6, 3, tzinfo=UTC)
    table = pa.table(
        {
            "id": ["a", "b", "c"],
            "timestamp": [ts, ts, ts],
            "question": ["q1", "q2", "q3"],
            "answer": [b"fine", b"caf\xe9", None],
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    (tmp_path / "zz-broken.parquet").write_bytes(b"PAR1 this is not parquet")
    config = make_config(
        kind="parquet",
        paths=[str(tmp_path / "*.parquet")],
        mapping={"id": "id", "question": "question", "answer": "answer", "messages": None, "timestamp": "timestamp"},
    )
    rows, bad = _split(read_source(config))
    assert [r.answer for r in rows] == ["fine"]
    assert [(q.position, q.reason) for q in bad] == [
        (f"{path}#row=2", QuarantineReason.undecodable),
        (f"{path}#row=3", QuarantineReason.missing_response),
        (str(tmp_path / "zz-broken.parquet"), QuarantineReason.unreadable),
    ]


def test_stopping_early_leaves_a_watermark_at_the_last_row_handed_out(write_jsonl, make_config, gateway_row):
    path = write_jsonl("log.jsonl", [gateway_row(i) for i in range(5)])
    config = make_config(paths=[str(path)])
    first = read_source(config)
    taken = [r.source_id for r in itertools.islice(first, 2)]  # type: ignore[union-attr]
    rest = [r.source_id for r in read_source(config, first.watermark)]  # type: ignore[union-attr]
    assert taken + rest == [f"chatcmpl-{i:06d}" for i in range(5)]
    assert taken == ["chatcmpl-000000", "chatcmpl-000001"]
