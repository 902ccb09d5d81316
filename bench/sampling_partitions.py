"""Benchmark: reading a source's partitions on a process pool instead of the flow's threads (issue 16).

Generates `--shards` Parquet files of `--shard-rows` synthetic gateway rows (one source, read as a glob), then,
inside one Prefect flow run (ephemeral server, started before the clock), reads and decides every partition
the way the `traffic-sampling` flow does (`flows.sampling._partitions`, 1% rate), twice: mapped on threads and
mapped on `ProcessPoolTaskRunner`. The wall clock counts everything a run pays, pool start and imports in the
processes included; the picks must be the same. Limit: the process pool's speed-up over threads is at least
0.75 x the cores it can use (min(partitions, cores)), printed as a ratio; below one core's worth of partitions
per process there is nothing to gain.

    .venv/bin/python bench/sampling_partitions.py [--shard-rows 500000] [--shards 4] [--keep]

The machine's other load shows up directly in the wall clock: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RATE = 0.01
EFFICIENCY_LIMIT = 0.75


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shard-rows", type=int, default=500_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep the generated logs under bench/out/")
    args = parser.parse_args()
    from judgewatch.cli._flow import prefect_defaults

    prefect_defaults()  # quiet, no telemetry (before Prefect is imported), as the CLI runs flows
    from prefect import flow

    from flows.sampling import _partitions
    from judgewatch.testing.gateway_log import write_gateway_logs
    from judgewatch.traffic import parse_source_config

    (HERE / "out").mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="partitions-", dir=HERE / "out"))
    try:
        t0 = time.perf_counter()
        write_gateway_logs(folder, args.shards, args.shard_rows)
        for extra in folder.glob("log-*.jsonl"):
            extra.unlink()  # the Parquet files are the source
        print(f"generated {args.shards} x {args.shard_rows:,} rows (Parquet) in {time.perf_counter() - t0:.0f}s")
        config = parse_source_config(
            {"name": "bench", "kind": "parquet", "paths": [str(folder / "log-*.parquet")],
             "sampling": {"default_rate": RATE}},
            origin="bench",
        )  # fmt: skip

        @flow(name="bench-sampling-partitions")
        def read_all(processes: bool) -> tuple[list[str], int, float]:
            started = time.perf_counter()
            picks, rows = [], 0
            for part in _partitions(config, None, args.shards, processes=processes):
                picks.extend(pick.row.interaction_id for pick in part.picks)
                rows += part.stats.read
            return picks, rows, time.perf_counter() - started

        cores = min(args.shards, os.cpu_count() or 1)
        print(f"load average {_load()} (1, 5, 15 min) before measuring; {cores} core(s) for {args.shards} partitions")
        threads = read_all(False)
        processes = read_all(True)
        if sorted(threads[0]) != sorted(processes[0]) or threads[1] != processes[1]:
            print("FAIL: the process pool picked other rows than the threads")
            return 1
        for name, (picks, rows, wall) in (("threads", threads), ("processes", processes)):
            rate = rows / wall
            print(f"{name:10} {rows:>10,} rows  {len(picks):>7,} picks  {wall:7.1f} s wall  {rate:>10,.0f} rows/s")
        speedup = threads[2] / processes[2]
        ratio = speedup / (EFFICIENCY_LIMIT * cores)
        print(f"speed-up {speedup:.2f}x on {cores} core(s); ratio speed-up / ({EFFICIENCY_LIMIT} x cores) = {ratio:.3f}"
              " (limit 1.0)")  # fmt: skip
        print(f"load average {_load()} (1, 5, 15 min) after measuring")
        print("PASS" if ratio >= 1.0 else "FAIL")
        return 0 if ratio >= 1.0 else 1
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
