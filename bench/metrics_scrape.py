"""Scrape time of the metrics endpoint on PostgreSQL stores of 10k, 100k and 1M verdicts.

For each size: a throwaway schema, migrated, filled with `judgewatch.testing.metrics_store.seed_store`
(COPY; every verdict with its interaction, a review item per ten verdicts, labels, gate decisions, a
calibration snapshot, a drift alert, a trust record; verdicts spread over the last 24 hours, so each hour is
dense: ~42k verdicts an hour at 1M), then:
- cold: the first scrape of a new collector, which aggregates every verdict once;
- warm: the median of 5 later scrapes, each after a flow wrote 1,000 new verdicts and re-judged 100 old
  ones (the steady state of a server scraped every 15 s).
The schema is dropped afterwards. Limit: 1 s per scrape (the issue's budget).

    .venv/bin/python bench/metrics_scrape.py [--sizes 10000,100000,1000000] [--url URL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid

from prometheus_client import generate_latest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from judgewatch.metrics.collector import make_registry
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.metrics_store import add_verdicts, rejudge, seed_store

LIMIT_S = 1.0
DEFAULT_URL = os.environ.get("JUDGEWATCH_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
NEW_PER_ROUND, REJUDGED_PER_ROUND, ROUNDS = 1_000, 100, 5


def measure(url: str, size: int) -> tuple[float, float, int]:
    """(cold seconds, warm median seconds, exposition lines) on a fresh store of `size` verdicts."""
    schema = f"jw_bench_metrics_{uuid.uuid4().hex[:8]}"
    admin = create_engine(make_url(url).set(drivername="postgresql+psycopg"))
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    engine = make_engine(scoped.render_as_string(hide_password=False))
    try:
        migrate(engine)
        started = time.perf_counter()
        seed_store(engine, verdicts=size)
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
        print(f"  {size:>9,} verdicts stored in {time.perf_counter() - started:.0f} s", flush=True)
        registry = make_registry(engine, min_interval_s=0)
        started = time.perf_counter()
        lines = generate_latest(registry).decode().count("\n")
        cold = time.perf_counter() - started
        warm = []
        unscored = [k for k in range(0, size, 20)]  # the seed's unscored verdicts
        for round_no in range(ROUNDS):
            add_verdicts(engine, start=size + round_no * NEW_PER_ROUND, count=NEW_PER_ROUND)
            rejudge(engine, positions=unscored[round_no * REJUDGED_PER_ROUND : (round_no + 1) * REJUDGED_PER_ROUND])
            started = time.perf_counter()
            generate_latest(registry)
            warm.append(time.perf_counter() - started)
        return cold, statistics.median(warm), lines
    finally:
        engine.dispose()
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--url", default=DEFAULT_URL)
    args = parser.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        cold, warm, lines = measure(args.url, size)
        rows.append((size, cold, warm, lines))
        print(f"  {size:>9,} verdicts: cold {cold:.3f} s, warm {warm:.3f} s, {lines} lines", flush=True)
    print(f"\nscrape time vs the {LIMIT_S:.0f} s limit (ratio = seconds / limit; <= 1 is within budget)")
    print("| verdicts | cold scrape | ratio | warm scrape (median of 5) | ratio |")
    print("|---|---|---|---|---|")
    for size, cold, warm, _ in rows:
        print(f"| {size:,} | {cold:.3f} s | {cold / LIMIT_S:.2f} | {warm:.3f} s | {warm / LIMIT_S:.2f} |")


if __name__ == "__main__":
    main()
