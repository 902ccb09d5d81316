"""Partitions: the same picks, counts and watermark however a file source is split, retries caught across files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judgewatch.testing.gateway_log import write_gateway_logs
from judgewatch.traffic import SourceConfig, parse_source_config
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
        sampler, read = partition_sampler(partition)
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
    sampler, read = partition_sampler(partitions[1])
    first = next(iter(sampler.run(read)))
    assert first.row.source_id == "chatcmpl-000000002502"  # 2,501 repeats 2,500, the last row of file 1
    cold = partitions[1].model_copy(update={"warmup": None})
    sampler, read = partition_sampler(cold)
    assert next(iter(sampler.run(read))).row.source_id == "chatcmpl-000000002501"  # without the warm window


def test_partitions_resume_from_a_watermark_like_one_pass(shards: Path) -> None:
    config = _config(shards, "jsonl")
    half = split_source(config, None, 2)[0]
    _, read = partition_sampler(half)
    list(read)
    since = read.watermark  # the first two files read
    assert _sample(config, 4, since) == _sample(config, 1, since)
