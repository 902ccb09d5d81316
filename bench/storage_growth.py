"""Database growth per sampled call on PostgreSQL, measured with the real traffic-sampling flow.

Runs `traffic-sampling` (offline reference judge, 10% of scored verdicts routed to review, 10% of those labeled
twice) over the demo gateway log at a 100% rate into a throwaway PostgreSQL schema, and divides the growth of
every table (heap, TOAST and indexes: `pg_total_relation_size`) by the number of picks stored: the bytes one
sampled call costs the store (its interaction, its verdict and its share of review items and run records).
Human labels come later, in the review UI; their rows are not counted here. Limit (a budget, not a law):
10 KiB per pick, i.e. 10 GB a day for a million picks a day.

    .venv/bin/python bench/storage_growth.py [--url URL] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DEMO = HERE.parent / "examples" / "traffic"
DEFAULT_URL = os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
LIMIT_BYTES = 10 * 1024
SIZES = """SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :schema AND c.relkind = 'r'"""
TEXT_BYTES = """SELECT avg(octet_length(question) + octet_length(answer) + coalesce(octet_length(messages::text), 0)
           + coalesce(octet_length(reference_answer), 0)) FROM interaction"""


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--keep", action="store_true", help="keep the bench schema afterwards")
    args = parser.parse_args()
    from judgewatch.cli._flow import prefect_defaults

    prefect_defaults()  # quiet Prefect, and time for its ephemeral server to start on a busy machine
    os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "600"
    from flows.sampling import traffic_sampling
    from judgewatch.storage.migrations import migrate

    with _throwaway_schema(args.url, keep=args.keep) as (engine, schema):
        migrate(engine)
        before = _sizes(engine, schema)
        report = asyncio.run(_sample_demo_log(traffic_sampling, engine.url.render_as_string(hide_password=False)))
        with engine.connect() as conn:
            conn.execute(text("VACUUM ANALYZE"))
            text_bytes = float(conn.execute(text(TEXT_BYTES)).scalar_one())
        after = _sizes(engine, schema)
    picks = int(report["stored"])
    growth = {name: after[name] - before.get(name, 0) for name in after}
    print(f"stored {picks:,} picks, {report['review_items_created']:,} review items; texts {text_bytes:,.0f} B/pick")
    for name, grown in sorted(growth.items(), key=lambda kv: -kv[1]):
        if grown:
            print(f"  {name:24} {grown:>12,} B  {grown / picks:>9,.0f} B/pick")
    per_pick = sum(growth.values()) / picks
    print(f"bytes per pick {per_pick:,.0f} (texts {text_bytes:,.0f} of it on average)")
    print(f"ratio bytes per pick / {LIMIT_BYTES:,} = {per_pick / LIMIT_BYTES:.3f} (limit 1.0)")
    return 0 if per_pick <= LIMIT_BYTES else 1


async def _sample_demo_log(traffic_sampling: Any, url: str) -> dict[str, Any]:
    """The flow over the demo log at a 100% rate (a copy of its config pointing at the log)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = yaml.safe_load((DEMO / "demo_source.yaml").read_text(encoding="utf-8"))
        config["paths"] = [str(DEMO / "halluqa_gateway_log.jsonl")]
        config["sampling"].update(default_rate=1.0, rates={})
        source = Path(tmp) / "source.yaml"
        source.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        result: dict[str, Any] = await traffic_sampling(
            source=str(source), judge="reference", review_share=0.1, database_url=url
        )
        return result


@contextmanager
def _throwaway_schema(url: str, *, keep: bool) -> Iterator[tuple[Engine, str]]:
    """An engine whose connections use a new schema, dropped on the way out unless `keep`."""
    schema = f"jw_bench_growth_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    engine = create_engine(scoped, isolation_level="AUTOCOMMIT")
    try:
        yield engine, schema
    finally:
        engine.dispose()
        with admin.connect() as conn:
            if not keep:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


def _sizes(engine: Engine, schema: str) -> dict[str, int]:
    with engine.connect() as conn:
        return {name: int(size) for name, size in conn.execute(text(SIZES), {"schema": schema})}


if __name__ == "__main__":
    raise SystemExit(main())
