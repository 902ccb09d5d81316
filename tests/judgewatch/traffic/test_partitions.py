"""Partitions: the same picks, counts and watermark however a file source is split, retries caught across files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judgewatch.testing.gateway_log import write_gateway_logs
from judgewatch.traffic import SourceConfig, parse_source_config, read_source
from judgewatch.traffic.partitions import merge_watermarks, partition_sampler, split_source
from judgewatch.traffic.watermark import Watermark

COUNTS = ("read", "quarantined", "filtered", "duplicate", "eligible", "picked")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("shards")
    # 4 files of 2,501 rows: row 2,501 (first of file 2) is a retry of row 2,500 (last of file 1), and so on
    write_gateway_logs(folder, 4, 2_501)
    return folder


def _config(folder: Path, kind: str, **sampling: Any) -> SourceConfig:
    return parse_source_config(
        {
            "name": "bench",
            "kind": kind,
            "paths": [str(folder / f"log-*.{kind}")],
            "sampling": {"default_rate": 0.1, **sampling},
        }
    )


def _sample(config: SourceConfig, parts: int, since: Watermark | None = None) -> dict[str, Any]:
    picks, counts, marks = [], dict.fromkeys(COUNTS, 0), []
    for partition in split_source(config, since, parts):
        sampler, read = partition_sampler(config, partition)
        picks += [p.row.interaction_id for p in sampler.run(read)]
        stats = sampler.stats
        counts = {k: counts[k] + getattr(stats, k) for k in COUNTS}
        marks.append(read.watermark)
    return {"picks": picks, "counts": counts, "watermark": merge_watermarks(marks)}


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
@pytest.mark.parametrize("window_rows", [50_000, 3])
def test_one_two_and_four_partitions_pick_the_same_rows_and_count_the_same_duplicates(
    shards: Path, kind: str, window_rows: int
) -> None:
    config = _config(shards, kind, dedup={"window_rows": window_rows})
    one, two, four = (_sample(config, parts) for parts in (1, 2, 4))
    assert len(split_source(config, None, 4)) == 4
    assert one["picks"] and one == two == four
    assert one["counts"]["duplicate"] == 101  # every 100th row, one of them across the boundary of files 1 and 2


def test_a_retry_whose_original_is_in_the_previous_partition_is_a_duplicate(shards: Path) -> None:
    config = _config(shards, "jsonl", default_rate=1.0)
    partitions = split_source(config, None, 4)
    sampler, read = partition_sampler(config, partitions[1])
    first = next(iter(sampler.run(read)))
    assert first.row.source_id == "chatcmpl-000000002502"  # 2,501 repeats 2,500, the last row of file 1
    cold = partitions[1].model_copy(update={"warmup": None})
    sampler, read = partition_sampler(config, cold)
    assert next(iter(sampler.run(read))).row.source_id == "chatcmpl-000000002501"  # without the warm window


def test_partitions_resume_from_a_watermark_like_one_pass(shards: Path) -> None:
    config = _config(shards, "jsonl")
    half = split_source(config, None, 2)[0]
    _, read = partition_sampler(config, half)
    list(read)
    since = read.watermark  # the first two files read
    assert _sample(config, 4, since) == _sample(config, 1, since)


def test_a_warm_window_never_reaches_back_past_the_watermark_the_run_started_from(
    gateway_row: Any, write_jsonl: Any, tmp_path: Path
) -> None:
    """Row 15 repeats row 2, read by an earlier run: one pass from the watermark starts cold, so must partitions."""
    same = {"question": "重复的问题", "answer": "重复的回答"}
    first = write_jsonl("log-a.jsonl", [gateway_row(i, **(same if i == 2 else {})) for i in range(10)])
    write_jsonl("log-b.jsonl", [gateway_row(i, **(same if i == 15 else {})) for i in range(10, 20)])
    config = parse_source_config({"name": "t", "kind": "jsonl", "paths": [str(tmp_path / "log-*.jsonl")],
                                  "sampling": {"default_rate": 1.0}})  # fmt: skip
    read = read_source(config.model_copy(update={"paths": [str(first)]}))
    list(read)
    since = read.watermark  # the first file read by an earlier run
    one, two = _sample(config, 1, since), _sample(config, 2, since)
    assert one == two and one["counts"]["duplicate"] == 0 and len(one["picks"]) == 10
    assert _sample(config, 1)["counts"]["duplicate"] == _sample(config, 2)["counts"]["duplicate"] == 1
