"""Scrape time of the metrics endpoint on PostgreSQL stores of 10k, 100k and 1M verdicts.

Per size, a throwaway schema seeded by `testing.metrics_store`: the first scrape of a fresh process, the steady
state while verdicts are written, and after 10% are judged again (bench/README.md, "Metrics scrape time");
`--store-schema NAME` measures a kept schema instead. Limit: 1 s per scrape.

    .venv/bin/python bench/metrics_scrape.py [--sizes 10000,100000,1000000] [--url URL] [--store-schema NAME]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
import uuid

from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import Engine, text

from judgewatch.metrics.collector import make_registry
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.metrics_store import add_verdicts, rejudge, seed_store
from judgewatch.testing.store import postgres_schema, postgres_url

LIMIT_S = 1.0
NEW_PER_ROUND, ROUNDS, REJUDGE_SCRAPES, FIRST_PROCESSES = 1_000, 5, 3, 3
# A fresh process: open the store as the CLI does (migrate), then time its first scrape alone.
FIRST_SCRAPE = """
import sys, time
from prometheus_client import generate_latest
from judgewatch.metrics.collector import make_registry
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
engine = make_engine(sys.argv[1])
migrate(engine)
registry = make_registry(engine, min_interval_s=0)
started = time.perf_counter()
text = generate_latest(registry).decode()
print(time.perf_counter() - started if "judgewatch_store_up 1.0" in text else "inf")
"""


def _scrape(registry: CollectorRegistry) -> float:
    """Seconds one scrape took; infinity if it could not read the store (a statement timeout is no figure)."""
    started = time.perf_counter()
    text_format = generate_latest(registry).decode()
    seconds = time.perf_counter() - started
    if "judgewatch_store_up 1.0" not in text_format:
        print(f"  a scrape failed after {seconds:.1f} s (judgewatch_store_up 0): see the log above", flush=True)
        return math.inf
    return seconds


def _first_scrape(url: str) -> float:
    """Seconds of the first scrape in a new Python process (its start-up and imports not counted)."""
    # Run from this file's folder: `-c` puts the working directory first on sys.path, and a checkout there
    # would shadow the judgewatch this process imported (PYTHONPATH), so the two could measure different code.
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run(
        [sys.executable, "-c", FIRST_SCRAPE, url], capture_output=True, text=True, timeout=600, check=True, cwd=here
    )
    return float(done.stdout.strip().splitlines()[-1])


def _has_verdicts(engine: Engine) -> bool:
    with engine.connect() as conn:
        if conn.execute(text("SELECT to_regclass('verdict')")).scalar() is None:
            return False
        return bool(conn.execute(text("SELECT EXISTS (SELECT 1 FROM verdict)")).scalar())


def measure(url: str, size: int, keep: str | None = None) -> tuple[float, float, float, float, float, float]:
    """(first median, first worst, steady, re-judged scrape seconds, seconds per 1,000 verdicts written,
    re-judge seconds) at `size`; in the kept schema `keep` if given."""
    schema = keep or f"jw_bench_metrics_{uuid.uuid4().hex[:8]}"
    with postgres_schema(url, schema, keep=keep is not None) as scoped_url:
        engine = make_engine(scoped_url)
        try:
            return _measure(engine, scoped_url, size, schema if keep else None)
        finally:
            engine.dispose()


def _measure(engine: Engine, url: str, size: int, kept: str | None) -> tuple[float, float, float, float, float, float]:
    seeded = kept is not None and _has_verdicts(engine)
    started = time.perf_counter()
    applied = migrate(engine)
    if seeded:
        print(f"  kept store {kept}: migrations {applied or 'none'} applied in "
              f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
    else:
        seed_store(engine, verdicts=size)
        print(f"  {size:>9,} verdicts stored in {time.perf_counter() - started:.0f} s", flush=True)
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
    firsts = [_first_scrape(url) for _ in range(FIRST_PROCESSES)]
    registry = make_registry(engine, min_interval_s=0)
    _scrape(registry)  # this process's first scrape: already counted above, in fresh processes
    steady, writes = [], []
    with engine.connect() as conn:  # new positions follow the stored ones (a kept store grows on each run)
        stored = int(conn.execute(text("SELECT count(*) FROM interaction")).scalar_one())
    for round_no in range(ROUNDS):
        t0 = time.perf_counter()
        add_verdicts(engine, start=stored + round_no * NEW_PER_ROUND, count=NEW_PER_ROUND)
        writes.append(time.perf_counter() - t0)
        steady.append(_scrape(registry))
    t0 = time.perf_counter()
    rejudge(engine, positions=list(range(0, size, 10)))
    rejudge_s = time.perf_counter() - t0
    rejudged = [_scrape(registry) for _ in range(REJUDGE_SCRAPES)]
    medians = (statistics.median(steady), statistics.median(rejudged), statistics.median(writes))
    return statistics.median(firsts), max(firsts), *medians, rejudge_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--url", default=postgres_url())
    parser.add_argument("--store-schema", help="measure this kept schema (seeded if empty, never dropped)")
    args = parser.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        first, worst, steady, rejudged, write_s, rejudge_s = measure(args.url, size, args.store_schema)
        rows.append((size, first, steady, rejudged))
        print(
            f"  {size:>9,} verdicts (load {os.getloadavg()[0]:.1f}): first {first:.3f} s (worst of "
            f"{FIRST_PROCESSES} {worst:.3f} s), steady {steady:.3f} s, after re-judging 10% "
            f"{rejudged:.3f} s; writing 1,000 verdicts took {write_s:.2f} s, re-judging {size // 10:,} "
            f"took {rejudge_s:.0f} s ({size / 10 / rejudge_s:.0f} verdicts/s)",
            flush=True,
        )
    print(f"\nscrape time vs the {LIMIT_S:.0f} s limit (ratio = seconds / limit; <= 1 is within budget)")
    print("| verdicts | first scrape | ratio | steady state | ratio | after re-judging 10% | ratio |")
    print("|---|---|---|---|---|---|---|")
    for size, first, steady, rejudged in rows:
        print(
            f"| {size:,} | {first:.3f} s | {first / LIMIT_S:.2f} | {steady:.3f} s | {steady / LIMIT_S:.2f} "
            f"| {rejudged:.3f} s | {rejudged / LIMIT_S:.2f} |"
        )


if __name__ == "__main__":
    main()
