"""The `traffic-sampling` flow over a SQL source split into key ranges: partition flow runs, stored picks, watermark."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, Text, create_engine

from judgewatch.testing.sampling_runs import sample_flow as sample
from judgewatch.testing.sampling_runs import stored_sample as stored
from judgewatch.traffic import load_source_config
from judgewatch.traffic.partitions import split_source

pytestmark = pytest.mark.usefixtures("prefect_server")  # tests/conftest.py: one server per module

POSTGRES_URL = os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
T0 = datetime(2024, 6, 3, 8, 0, tzinfo=UTC)
N = 400
BAD = 250  # id of the row with no answer: inside the third of 4 ranges (ids cut at 100, 200, 300)
KEYS = ("read", "picked", "quarantined", "quarantined_by", "duplicate", "filtered", "strata", "watermark")


@pytest.fixture
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A gateway table of N calls (ids 1..N, every 37th repeats the one before) and its source YAML: in SQLite,
    or (param "postgres") in a uniquely named table on the PostgreSQL server."""
    on_postgres = getattr(request, "param", "sqlite") == "postgres"
    url = POSTGRES_URL if on_postgres else f"sqlite:///{tmp_path / 'gateway.db'}"
    name = f"jw_flow_partitions_{uuid.uuid4().hex[:10]}"
    engine = create_engine(url)
    table = Table(
        name,
        MetaData(),
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("created_at", DateTime(timezone=True)),
        *(Column(name, String(64)) for name in ("model", "tier")),
        *(Column(name, Text) for name in ("question", "answer")),
    )
    table.create(engine)
    rows = []
    for i in range(1, N + 1):
        j = i - 1 if i % 37 == 2 else i
        rows.append({"id": i, "created_at": T0 + timedelta(seconds=i), "model": "qwen-14b-chat",
                     "tier": ["full", "quantized"][j % 2], "question": f"长江有多长？（{j}）",
                     "answer": None if i == BAD else f"长江全长约6300公里。（{j}）"})  # fmt: skip
    with engine.begin() as conn:
        conn.execute(table.insert(), rows)
    mapping = {"id": "id", "timestamp": "created_at", "messages": None, "question": "question", "answer": "answer",
               "model": "model", "tier": "tier", "route": None, "department": None, "release": None,
               **dict.fromkeys(("prompt_tokens", "completion_tokens", "cached_tokens", "reference_answer")),
               **dict.fromkeys(("reference_facts", "context", "language"))}  # fmt: skip
    config = {"name": "gateway-table", "kind": "sql", "url": url, "table": name, "batch_size": 64,
              "mapping": mapping, "sampling": {"default_rate": 0.2}}  # fmt: skip
    path = tmp_path / "source.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    try:
        yield path
    finally:
        table.drop(engine)
        engine.dispose()


@pytest.mark.parametrize("source", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
async def test_key_ranges_as_flow_runs_store_what_one_pass_stores_and_the_whole_watermark(
    source: Path, tmp_path: Path
) -> None:
    reports, saved = [], []
    for parts in (1, 4):
        db = f"sqlite:///{tmp_path / f'p{parts}.db'}"
        reports.append(await sample(source, db, partitions=parts))
        saved.append(stored(db))
    one, four = reports
    assert {k: one[k] for k in KEYS} == {k: four[k] for k in KEYS}
    assert one["read"] == N and one["duplicate"] == 11 and one["quarantined_by"] == {"missing_response": 1}
    assert saved[0] == saved[1] and len(saved[0]["interactions"]) == one["picked"] > 40
    assert saved[0]["watermark"]["last_id"] == N and saved[0]["quarantined"][0][1].startswith("missing_response")
    again = await sample(source, f"sqlite:///{tmp_path / 'p4.db'}", partitions=4)
    assert again["read"] == 0 and again["started_from"] == "the stored watermark"


async def test_a_failed_range_keeps_the_source_watermark_and_a_rerun_reads_only_that_range(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.sampling_partition as partition_flow

    real = partition_flow.partition_sampler

    def failing(config: Any, partition: Any, **kwargs: Any) -> Any:
        if partition.index == 2:
            raise ConnectionError("the gateway database went away")
        return real(config, partition, **kwargs)

    ranges = split_source(load_source_config(source), None, 4)
    db = f"sqlite:///{tmp_path / 'jw.db'}"
    monkeypatch.setattr(partition_flow, "partition_sampler", failing)
    with pytest.raises(partition_flow.PartitionFailed, match=r"partition 3/4 did not complete.*went away"):
        await sample(source, db, partitions=4)
    assert stored(db)["watermark"] is None  # the source's watermark moves once every range is read
    monkeypatch.setattr(partition_flow, "partition_sampler", real)
    rerun = await sample(source, db, partitions=4)
    third = ranges[2]
    assert third.since is not None and third.until is not None
    assert rerun["read"] == int(third.until.last_id or 0) - int(third.since.last_id or 0) == 100  # range 3 alone
    one_pass = f"sqlite:///{tmp_path / 'one.db'}"
    await sample(source, one_pass)
    assert stored(db) == stored(one_pass)
