"""m018: a store whose sources were read before partitions kept watermarks gains the partition columns, keeps its
watermarks, and holds a partitioned run's rows until they are merged into the source's."""

from __future__ import annotations

from sqlalchemy import inspect, text

from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import MIGRATIONS, migrate
from judgewatch.storage.watermarks import (
    complete_partition,
    load_partitions,
    load_watermark,
    merge_partitions,
    plan_partitions,
)


def test_an_old_watermark_table_gains_the_partition_columns_and_a_plan_lives_until_merged(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        before = [m.__name__ for m in MIGRATIONS].index("m018_source_partitions")
        migrate(engine, MIGRATIONS[:before])
        with engine.begin() as conn:  # the table as a store created before that migration has it
            for column in ("partition_of", "partition", "completed_at"):
                conn.execute(text(f"ALTER TABLE source_watermark DROP COLUMN {column}"))
            conn.execute(text("INSERT INTO source_watermark (source, watermark) VALUES ('gw', '{\"last_id\": 7}')"))
        assert MIGRATIONS[before].__name__ in migrate(engine)
        columns = {c["name"] for c in inspect(engine).get_columns("source_watermark")}
        assert {"partition_of", "partition", "completed_at"} <= columns
        with session_scope(engine, write=True) as session:
            plan_partitions(session=session, source="gw", partitions=['{"index": 0}', '{"index": 1}'])
            plan_partitions(session=session, source="gw#other", partitions=['{"index": 0}'])  # another source
            complete_partition(session=session, key="gw#2/2")
        with session_scope(engine) as session:
            rows = load_partitions(session=session, source="gw")
            assert [(r.source, r.partition, r.completed_at is not None) for r in rows] == [
                ("gw#1/2", '{"index": 0}', False),
                ("gw#2/2", '{"index": 1}', True),
            ]
        with session_scope(engine, write=True) as session:
            merge_partitions(session=session, source="gw", watermark='{"last_id": 9}', run_id="r1")
        with session_scope(engine) as session:
            assert load_partitions(session=session, source="gw") == []
            own = load_watermark(session=session, source="gw")
            assert own is not None and own.watermark == '{"last_id": 9}' and own.run_id == "r1"
            assert [r.source for r in load_partitions(session=session, source="gw#other")] == ["gw#other#1/1"]
    finally:
        engine.dispose()
