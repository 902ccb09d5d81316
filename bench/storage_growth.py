"""Database growth per sampled call on PostgreSQL, measured with the real traffic-sampling flow.

Runs `traffic-sampling` (reference judge, 10% of scored verdicts routed to review) over the demo gateway log at a
100% rate into a throwaway schema, and divides every table's growth (`pg_total_relation_size`) by the picks stored.
Limit (a budget): 10 KiB per pick, i.e. 10 GB a day for a million picks a day.

    .venv/bin/python bench/storage_growth.py [--url URL] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import Engine, create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's packages, whatever the venv's

from judgewatch.settings import REPO_ROOT
from judgewatch.testing.store import postgres_schema, postgres_url

DEMO = REPO_ROOT / "examples" / "traffic"
LIMIT_BYTES = 10 * 1024
SIZES = """SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :schema AND c.relkind = 'r'"""
TEXT_BYTES = """SELECT avg(octet_length(question) + octet_length(answer) + coalesce(octet_length(messages::text), 0)
           + coalesce(octet_length(reference_answer), 0)) FROM interaction"""


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", default=postgres_url())
    parser.add_argument("--keep", action="store_true", help="keep the bench schema afterwards")
    args = parser.parse_args()
    from judgewatch.cli._flow import prefect_defaults

    prefect_defaults()  # quiet Prefect, and time for its ephemeral server to start on a busy machine
    os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "600"
    from flows.sampling import traffic_sampling
    from judgewatch.storage.migrations import migrate

    schema = f"jw_bench_growth_{uuid.uuid4().hex[:8]}"
    with postgres_schema(args.url, schema, keep=args.keep) as url:
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        migrate(engine)
        before = _sizes(engine, schema)
        report = asyncio.run(_sample_demo_log(traffic_sampling, url))
        with engine.connect() as conn:
            conn.execute(text("VACUUM ANALYZE"))
            text_bytes = float(conn.execute(text(TEXT_BYTES)).scalar_one())
        after = _sizes(engine, schema)
        engine.dispose()
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


def _sizes(engine: Engine, schema: str) -> dict[str, int]:
    with engine.connect() as conn:
        return {name: int(size) for name, size in conn.execute(text(SIZES), {"schema": schema})}


if __name__ == "__main__":
    raise SystemExit(main())
