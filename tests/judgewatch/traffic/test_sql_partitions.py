"""SQL partitions: key ranges of a table give the same picks, counts, quarantine and watermark as one pass."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, Text, create_engine
from sqlalchemy.engine import Engine

from judgewatch.traffic import SourceConfig, TrafficRow, interaction_id, parse_source_config, read_source
from judgewatch.traffic.partitions import merge_watermarks, partition_sampler, split_source
from judgewatch.traffic.records import source_label
from judgewatch.traffic.watermark import Watermark

POSTGRES_URL = os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
T0 = datetime(2024, 6, 3, 8, 0, tzinfo=UTC)
N = 2_100
BAD = (1_010, 1_700)  # read positions of rows with no answer (quarantined)
RETRY_AT_FIRST_CUT = 525  # id order: the first row of the second of 4 ranges (ids 1..2100 cut at 525, 1050, 1575)
LATE_RETRY = 100  # the last call repeats this one, 2,000 calls later: a duplicate only in a window that long
COUNTS = ("read", "quarantined", "filtered", "duplicate", "eligible", "picked")
MAPPING = {
    **dict.fromkeys(("messages", "department", "release", "prompt_tokens", "completion_tokens", "cached_tokens")),
    **dict.fromkeys(("reference_answer", "reference_facts", "context", "language")),
    "id": "id",
    "timestamp": "created_at",
    "question": "question",
    "answer": "answer",
    "model": "model",
    "tier": "tier",
    "route": "route",
}


def original(p: int) -> int:
    """Every 37th call (and the first one of the second range in id order) repeats the one read before it."""
    if p == N - 1:
        return LATE_RETRY
    return p - 1 if p % 37 == 1 or p == RETRY_AT_FIRST_CUT else p


def log_rows(layout: str) -> list[dict[str, Any]]:
    """N calls in read order p = 0..N-1. "id": ids 1..N, a second apart. "time": 3 calls per second, ids
    shuffled between seconds (read by time, then id). "text": ids "req-000000"..., read by id."""
    rows = []
    for p in range(N):
        j = original(p)
        if layout == "time":
            group, groups = divmod(p, 3)[0], N // 3
            row_id: int | str = (group * 7919 % groups) * 3 + p % 3 + 1
            at = T0 + timedelta(seconds=group)
        else:
            row_id = p + 1 if layout == "id" else f"req-{p:06d}"
            at = T0 + timedelta(seconds=p)
        rows.append({
            "id": row_id, "created_at": at, "model": ["qwen-14b-chat", "chatglm2-6b"][j % 2],
            "tier": ["full", "quantized"][j % 2], "route": "qa", "question": f"问题{j}",
            "answer": None if p in BAD else f"回答{j}",
        })  # fmt: skip
    return rows


class LogTable:
    """A uniquely named table of plain columns holding `log_rows(layout)`."""

    def __init__(self, engine: Engine, url: str, layout: str) -> None:
        self.engine, self.url, self.layout = engine, url, layout
        self.name = f"jw_partition_test_{uuid.uuid4().hex[:10]}"
        id_type = String(32) if layout == "text" else Integer
        self.table = Table(
            self.name,
            MetaData(),
            Column("id", id_type, primary_key=True, autoincrement=False),
            Column("created_at", DateTime(timezone=True)),
            *(Column(name, String(64)) for name in ("model", "tier", "route")),
            *(Column(name, Text) for name in ("question", "answer")),
        )
        self.table.create(engine)
        with engine.begin() as conn:
            conn.execute(self.table.insert(), log_rows(layout))

    def config(self, **sampling: Any) -> SourceConfig:
        return parse_source_config({
            "name": "gateway-table", "kind": "sql", "url": self.url, "table": self.name, "mapping": MAPPING,
            "order_by": "time" if self.layout == "time" else "id", "batch_size": 200,
            "sampling": {"default_rate": 0.2, **sampling},
        })  # fmt: skip


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "postgres":
        yield POSTGRES_URL
    else:
        yield f"sqlite:///{tmp_path_factory.mktemp('sqlparts') / 'gateway.db'}"


@pytest.fixture(scope="module")
def tables(database: str) -> Iterator[dict[str, LogTable]]:
    engine = create_engine(database)
    made = {layout: LogTable(engine, database, layout) for layout in ("id", "time", "text")}
    try:
        yield made
    finally:
        for table in made.values():
            table.table.drop(engine)
        engine.dispose()


def sample(config: SourceConfig, parts: int, since: Watermark | None = None) -> dict[str, Any]:
    picks: list[str] = []
    quarantined: list[str] = []
    counts, marks = dict.fromkeys(COUNTS, 0), []
    for partition in split_source(config, since, parts):
        sampler, read = partition_sampler(config, partition, on_quarantine=lambda q: quarantined.append(
            f"{q.position} {q.reason.value}"))  # fmt: skip
        picks += [p.row.interaction_id for p in sampler.run(read)]
        counts = {k: counts[k] + getattr(sampler.stats, k) for k in COUNTS}
        marks.append(read.watermark)
    return {"picks": picks, "counts": counts, "quarantined": quarantined, "watermark": merge_watermarks(marks)}


@pytest.mark.parametrize("layout", ["id", "time", "text"])
@pytest.mark.parametrize("window_rows", [50_000, 3])
def test_one_two_and_four_key_ranges_pick_the_same_rows_and_count_the_same_duplicates(
    tables: dict[str, LogTable], layout: str, window_rows: int
) -> None:
    config = tables[layout].config(dedup={"window_rows": window_rows})
    one, two, four = (sample(config, parts) for parts in (1, 2, 4))
    assert len(split_source(config, None, 4)) == 4
    assert one["picks"] and one == two == four
    late = window_rows > N  # the late retry is caught by a window that holds 2,000 calls
    assert one["counts"]["read"] == N and one["counts"]["duplicate"] == 57 + 1 + late  # every 37th, the first cut's
    last = log_rows(layout)[-1]
    assert one["watermark"].last_id == last["id"]


@pytest.mark.parametrize("layout", ["id", "time", "text"])
def test_key_ranges_read_every_row_once_and_keep_a_second_s_calls_together(
    tables: dict[str, LogTable], layout: str
) -> None:
    """Ids and times are cut at evenly spaced values moved back to a real row, text ids at offsets of the count."""
    partitions = split_source(tables[layout].config(), None, 4)
    assert [p.since for p in partitions[1:]] == [p.until for p in partitions[:-1]] and partitions[-1].until is None
    ids = []
    for partition in partitions:
        for item in read_source(tables[layout].config(), partition.since, until=partition.until):
            ids.append(item.source_id if isinstance(item, TrafficRow) else item.position.rpartition("=")[2])
    order = sorted(log_rows(layout), key=lambda r: (r["created_at"], r["id"]) if layout == "time" else r["id"])
    assert ids == [str(r["id"]) for r in order]  # in read order, each once, the bad rows included
    ends = [ids.index(str(p.until.last_id)) for p in partitions[:-1] if p.until is not None]
    sizes = [b - a for a, b in zip([-1, *ends], [*ends, N - 1], strict=True)]
    assert len(sizes) == 4 and max(sizes) - min(sizes) <= 3
    if layout == "text":
        assert [ids[i] for i in ends] == ["req-000524", "req-001049", "req-001574"]
    if layout == "time":  # each cut is the last call of its second
        assert all(order[i]["created_at"] < order[i + 1]["created_at"] for i in ends)


def test_a_retry_whose_original_is_in_the_previous_range_is_a_duplicate(tables: dict[str, LogTable]) -> None:
    config = tables["id"].config(default_rate=1.0)
    partitions = split_source(config, None, 4)
    assert partitions[1].since is not None and partitions[1].since.last_id == RETRY_AT_FIRST_CUT
    sampler, read = partition_sampler(config, partitions[1])
    assert next(iter(sampler.run(read))).row.source_id == str(RETRY_AT_FIRST_CUT + 2)  # 526 repeats 525
    cold = partitions[1].model_copy(update={"warmup": None})
    sampler, read = partition_sampler(config, cold)
    assert next(iter(sampler.run(read))).row.source_id == str(RETRY_AT_FIRST_CUT + 1)  # without the warm window


def test_a_bad_row_inside_a_range_is_quarantined_with_its_reason(tables: dict[str, LogTable]) -> None:
    table = tables["id"]
    partitions = split_source(table.config(), None, 4)
    inside = partitions[3]
    quarantined: list[str] = []
    sampler, read = partition_sampler(table.config(), inside, on_quarantine=lambda q: quarantined.append(
        f"{q.position} {q.reason.value}"))  # fmt: skip
    list(sampler.run(read))
    assert quarantined == [f"{table.name}#id={BAD[1] + 1} missing_response"]  # the one in range 4, not its warm-up
    assert sampler.stats.quarantined_by == {"missing_response": 1}


@pytest.mark.parametrize("layout", ["id", "time"])
def test_a_rerun_after_a_failed_range_resumes_from_the_watermark_of_the_ranges_done(
    tables: dict[str, LogTable], layout: str
) -> None:
    config = tables[layout].config()
    whole = sample(config, 1)
    done = split_source(config, None, 4)[:2]  # ranges 1 and 2 stored, range 3 failed: range 4 is not saved
    marks, picks, read = [], [], 0
    for partition in done:
        sampler, rows = partition_sampler(config, partition)
        picks += [p.row.interaction_id for p in sampler.run(rows)]
        marks.append(rows.watermark)
        read += sampler.stats.read
    saved = merge_watermarks(marks)
    assert saved == done[1].until
    rerun = sample(config, 4, saved)
    assert rerun == sample(config, 1, saved)  # a rerun's window starts at the watermark, as one pass's does
    assert read + rerun["counts"]["read"] == N and rerun["watermark"] == whole["watermark"]
    assert len(split_source(config, whole["watermark"], 4)) == 1  # nothing after it: one (empty) range
    late = interaction_id(source_label(config.name), str(log_rows(layout)[-1]["id"]))
    # the late retry's original was read by the first run: the rerun's window cannot catch it, one pass's does
    assert [i for i in picks + rerun["picks"] if i != late] == [i for i in whole["picks"] if i != late]
    assert late not in whole["picks"]
