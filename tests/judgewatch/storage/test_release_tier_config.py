"""The release-tier config migration adds a config hash and summary to a store that has release tiers already."""

from __future__ import annotations

from sqlalchemy import inspect, text

from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import MIGRATIONS, migrate
from judgewatch.storage.releases import get_release_tiers, record_release_tier


def test_an_existing_release_tier_table_gains_the_config_columns_and_keeps_its_rows(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        before = next(i for i, m in enumerate(MIGRATIONS) if m.__name__.endswith("_release_tier_config"))
        migrate(engine, MIGRATIONS[:before])
        with engine.begin() as conn:  # the table as a database created before that migration has it
            conn.execute(text("ALTER TABLE release_tier DROP COLUMN config_hash"))
            conn.execute(text("ALTER TABLE release_tier DROP COLUMN config"))
            conn.execute(
                text(
                    "INSERT INTO release_tier (id, release, tier, source, datasets, run_ids, created_at, updated_at) "
                    "VALUES ('t1', 'r0', 'full', 'live:http://h/v1#m', '{}', '[]', :now, :now)"
                ),
                {"now": "2026-01-01 00:00:00"},
            )
        assert MIGRATIONS[before].__name__ in migrate(engine)
        assert {"config_hash", "config"} <= {c["name"] for c in inspect(engine).get_columns("release_tier")}
        with session_scope(engine, write=True) as session:
            old = get_release_tiers(session=session, release="r0")
            assert [(r.tier, r.config, r.config_hash) for r in old] == [("full", None, None)]
            config = {"config_hash": "abc", "template": "t.j2", "params": {"max_tokens": 8}}
            record_release_tier(
                session=session, release="r1", tier="full", source="s", model="m", datasets={}, config=config
            )
        with session_scope(engine) as session:
            (row,) = get_release_tiers(session=session, release="r1")
            assert row.config == config and row.config_hash == "abc"
    finally:
        engine.dispose()
