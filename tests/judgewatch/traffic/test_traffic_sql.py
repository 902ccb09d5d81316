"""SQL sources against SQLite (a temp file) and the real PostgreSQL: batches, order, watermark, quarantine."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import JSON, Column, DateTime, Integer, MetaData, String, Table, Text, create_engine
from sqlalchemy.engine import Engine

from judgewatch.traffic import QuarantineReason, RejectedTrafficRow, TrafficRow, Watermark, read_source

POSTGRES_URL = os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
T0 = datetime(2024, 6, 3, 8, 0, tzinfo=UTC)
MAPPING = {
    "id": "id",
    "timestamp": "created_at",
    "messages": "request.messages",
    "answer": "response.choices.0.message.content",
    "prompt_tokens": "response.usage.prompt_tokens",
    "model": "model",
    "tier": "tier",
    "route": "route",
    "department": None,
    "reference_answer": "reference_answer",
}


USAGE = ("prompt_tokens", "completion_tokens", "cached_tokens")  # by default read from `response`


class LogTable:
    """A uniquely named gateway-log table: JSON `request`, JSON-as-text `response` (as many gateways store it)."""

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine, self.url = engine, url
        self.name = f"jw_traffic_test_{uuid.uuid4().hex[:10]}"
        self.table = Table(
            self.name,
            MetaData(),
            Column("id", Integer, primary_key=True, autoincrement=True),
            Column("created_at", DateTime(timezone=True), nullable=True),
            Column("model", String(64)),
            Column("tier", String(32)),
            Column("route", String(64)),
            Column("request", JSON),
            Column("response", Text),
            Column("reference_answer", Text),
        )
        self.table.create(engine)

    def insert(self, *rows: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.table.insert(), list(rows))


def log_row(n: int, *, at: datetime | None = None, **overrides: Any) -> dict[str, Any]:
    row = {
        "created_at": at or T0 + timedelta(seconds=n),
        "model": "qwen-14b-chat",
        "tier": "full" if n % 2 else "quantized",
        "route": "qa",
        "request": {"messages": [{"role": "user", "content": f"问题{n}"}]},
        "response": json.dumps(
            {"choices": [{"message": {"content": f"回答{n}"}}], "usage": {"prompt_tokens": n}}, ensure_ascii=False
        ),
        "reference_answer": f"参考{n}",
    }
    row.update(overrides)
    return row


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def log_table(request, tmp_path) -> Iterator[LogTable]:
    url = f"sqlite:///{tmp_path / 'gateway.db'}" if request.param == "sqlite" else POSTGRES_URL
    engine = create_engine(url)
    table = LogTable(engine, url)
    try:
        yield table
    finally:
        table.table.drop(engine)
        engine.dispose()


@pytest.fixture
def sql_config(make_config, log_table) -> Callable[..., Any]:
    def make(**fields: Any):
        return make_config(kind="sql", url=log_table.url, table=log_table.name, mapping=MAPPING, **fields)

    return make


def test_rows_are_read_in_id_order_across_batches(log_table, sql_config):
    log_table.insert(*(log_row(n) for n in range(1, 11)))
    read = read_source(sql_config(batch_size=3))  # creates and disposes its own engine
    rows = list(read)
    assert all(isinstance(r, TrafficRow) for r in rows)
    assert [r.source_id for r in rows] == [str(n) for n in range(1, 11)]  # type: ignore[union-attr]
    first = rows[0]
    assert isinstance(first, TrafficRow)
    assert (first.question, first.answer, first.tier, first.tokens.prompt) == ("问题1", "回答1", "full", 1)
    assert first.timestamp == T0 + timedelta(seconds=1)
    assert first.reference_answer == "参考1"
    assert read.watermark.last_id == 10


def test_reading_after_a_watermark_returns_only_new_rows(log_table, sql_config):
    log_table.insert(*(log_row(n) for n in range(1, 5)))
    config = sql_config(batch_size=2)
    first = read_source(config, engine=log_table.engine)
    assert len(list(first)) == 4
    stored = first.watermark.model_dump_json()  # the lead keeps it as text
    log_table.insert(log_row(5), log_row(6))
    second = read_source(config, Watermark.model_validate_json(stored), engine=log_table.engine)
    assert [r.source_id for r in second] == ["5", "6"]  # type: ignore[union-attr]
    assert list(read_source(config, second.watermark, engine=log_table.engine)) == []


def test_time_order_reads_ties_once_and_resumes_after_the_last_time(log_table, sql_config):
    same = T0 + timedelta(minutes=5)
    log_table.insert(
        log_row(1, at=T0 + timedelta(minutes=9)),
        log_row(2, at=same),
        log_row(3, at=same),
        log_row(4, at=same),
        log_row(5, at=T0),
        log_row(6, created_at=None),  # no time: never read in time order
    )
    config = sql_config(order_by="time", batch_size=2)
    first = read_source(config, engine=log_table.engine)
    assert [r.source_id for r in first] == ["5", "2", "3", "4", "1"]  # type: ignore[union-attr]
    mark = first.watermark
    assert (mark.last_id, datetime.fromisoformat(str(mark.last_order)).minute) == (1, 9)
    log_table.insert(log_row(7, at=T0 + timedelta(minutes=10)), log_row(8, at=same))  # 8 arrives late
    assert [r.source_id for r in read_source(config, mark, engine=log_table.engine)] == ["7"]  # type: ignore[union-attr]


def test_bad_rows_are_quarantined_with_table_and_id(log_table, sql_config):
    log_table.insert(
        log_row(1),
        log_row(2, response='{"choices": [{"message": '),  # JSON text cut off
        log_row(3, response=None),
        log_row(4, request={"messages": "not a list"}),
        log_row(5),
    )
    items = list(read_source(sql_config(), engine=log_table.engine))
    assert [r.source_id for r in items if isinstance(r, TrafficRow)] == ["1", "5"]
    bad = [(q.position, q.reason) for q in items if isinstance(q, RejectedTrafficRow)]
    assert bad == [
        (f"{log_table.name}#id=2", QuarantineReason.invalid_json),
        (f"{log_table.name}#id=3", QuarantineReason.missing_response),
        (f"{log_table.name}#id=4", QuarantineReason.wrong_type),
    ]


def _sample(config: Any, engine: Engine, *, rows: bool) -> tuple[list[str], dict[str, int], list[str], Any]:
    from judgewatch.traffic import Sampler

    quarantined: list[str] = []
    sampler = Sampler(config, on_quarantine=lambda q: quarantined.append(f"{q.position} {q.reason}"))
    read = read_source(config, engine=engine)
    picks = [p.row.interaction_id for p in sampler.run(iter(read) if rows else read)]
    stats = sampler.stats
    counts = {k: getattr(stats, k) for k in ("read", "quarantined", "duplicate", "eligible", "picked")}
    return picks, counts, quarantined, read.watermark


@pytest.mark.parametrize(
    ("changes", "columnar"),
    [({}, 0), ({"answer": "reference_answer", **dict.fromkeys(USAGE), "timestamp": "created_at"}, 3)],
)
def test_sql_blocks_decide_as_the_row_path_does(log_table, make_config, monkeypatch, changes, columnar):
    """JSON held in a text column: each page is mapped row by row; JSON and plain columns: decided on columns."""
    import judgewatch.traffic.columnar.sampling as block_sampling

    decided: list[int] = []
    original = block_sampling.decision_columns

    def spy(*args: Any, **kwargs: Any) -> Any:
        cols = original(*args, **kwargs)
        decided.append(1)  # a page decided on columns (an unsupported one raised before this)
        return cols

    monkeypatch.setattr(block_sampling, "decision_columns", spy)
    log_table.insert(
        *(log_row(n) for n in range(1, 40)),
        log_row(40, response=None, reference_answer=None),
        log_row(41, request={"messages": "not a list"}),
        *(log_row(n) for n in range(42, 60)),
    )
    mapping = {**MAPPING, **changes}
    config = make_config(kind="sql", url=log_table.url, table=log_table.name, mapping=mapping, batch_size=16,
                         sampling={"default_rate": 0.5})  # fmt: skip
    blocks = _sample(config, log_table.engine, rows=False)
    assert blocks == _sample(config, log_table.engine, rows=True)
    assert blocks[1]["read"] == 59 and blocks[1]["quarantined"] == 2 and blocks[3].last_id == 59
    assert len(decided) == columnar  # 3 of the 4 pages; the one holding row 41 has no single column type
