"""Partitions as flow runs on a work pool against the same run in one flow-run process: wall time on the stack.

`scripts/stack.sh up` (its own ports and PostgreSQL databases, dropped afterwards; two workers of 3 flow runs
each; the simulator as the judge behind a global limit of 16) and one Parquet source of `--shards` files of
`--shard-rows` rows. Three `traffic-sampling` runs of the deployment, one after the other, each into a store
database of its own: one pass (`partitions=1`), `--shards` partitions on the flow's threads, and `--shards`
partitions as `sample-partition` flow runs (`partition_runs=True`). The clock runs from the trigger to the run's
final state (pull step, start-up, reading, storing, judging included); the stored picks must be the same.

    .venv/bin/python bench/partition_runs.py [--shards 4] [--shard-rows 250000] [--rate 0.002] [--ports 8402,8403]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import yaml

from judgewatch.testing.gateway_log import write_gateway_logs
from judgewatch.testing.processes import free_port
from judgewatch.testing.sampling_runs import stored_sample
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.testing.stack import admin_sql, source_repository

PG = os.environ.get("JUDGEWATCH_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
REPO = Path(__file__).resolve().parents[1]
DEPLOYMENT = "traffic-sampling/traffic-sampling"
MODES: dict[str, dict[str, Any]] = {
    "one pass": {"partitions": 1},
    "threads": {},  # partitions filled in
    "flow runs": {"partition_runs": True},
}


def run_once(api: str, params: dict[str, Any]) -> tuple[str, float]:
    deployment = httpx.get(f"{api}/deployments/name/{DEPLOYMENT}", timeout=30).raise_for_status().json()["id"]
    started = time.perf_counter()
    run_id = (
        httpx.post(f"{api}/deployments/{deployment}/create_flow_run", json={"parameters": params}, timeout=30)
        .raise_for_status()
        .json()["id"]
    )
    while True:
        time.sleep(1)
        state = httpx.get(f"{api}/flow_runs/{run_id}", timeout=30).json()["state"]["type"]
        if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            return state, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--shard-rows", type=int, default=250_000)
    parser.add_argument("--rate", type=float, default=0.002)
    parser.add_argument("--ports", default="", help="the Prefect server's and the review UI's, e.g. 8402,8403")
    args = parser.parse_args()
    port, review_port = (int(p) for p in args.ports.split(",")) if args.ports else (free_port(), free_port())
    tag = uuid.uuid4().hex[:8]
    base = PG.rsplit("/", 1)[0]
    dbs = {"prefect": f"jwb_{tag}_prefect", "store": f"jwb_{tag}_store"} | {
        m: f"jwb_{tag}_{i}" for i, m in enumerate(MODES)
    }
    with tempfile.TemporaryDirectory(dir=REPO / "bench" / "out") as tmp, run_simulator_in_thread(
        latency_ms=20, max_concurrency=64
    ) as sim:  # fmt: skip
        work = Path(tmp)
        t0 = time.perf_counter()
        write_gateway_logs(work, args.shards, args.shard_rows)
        for extra in work.glob("log-*.jsonl"):
            extra.unlink()
        print(f"generated {args.shards} x {args.shard_rows:,} rows (Parquet) in {time.perf_counter() - t0:.0f} s")
        source = work / "source.yaml"
        source.write_text(yaml.safe_dump({"name": "bench-partitions", "kind": "parquet",
                                          "paths": [str(work / "log-*.parquet")],
                                          "sampling": {"default_rate": args.rate}}))  # fmt: skip
        env = {
            **{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"},
            "PREFECT_WORKER_QUERY_SECONDS": "2",
            "JUDGEWATCH_STACK_DIR": str(work / "stack"),
            "JUDGEWATCH_PREFECT_PORT": str(port),
            "JUDGEWATCH_REVIEW_PORT": str(review_port),
            "JUDGEWATCH_PG_URL": base.replace("+psycopg", ""),
            "JUDGEWATCH_PREFECT_DB": dbs["prefect"],
            "JUDGEWATCH_STORE_DB": dbs["store"],
            "JUDGEWATCH_STACK_JUDGE": "external",
            "JUDGEWATCH_JUDGE_URL": sim.base_url,
            "JUDGEWATCH_JUDGE_SLOTS": "16",
            "JUDGEWATCH_WORKER_LIMIT": "3",
            "JUDGEWATCH_GIT_REPOSITORY": str(source_repository(work / "origin")),
            "JUDGEWATCH_GIT_BRANCH": "main",
            "JUDGEWATCH_STACK_BIN": str(Path(sys.executable).parent),
        }
        api = f"http://127.0.0.1:{port}/api"
        try:
            for mode in MODES:
                admin_sql(PG, f'CREATE DATABASE "{dbs[mode]}"')
            subprocess.run(["bash", "scripts/stack.sh", "up"], cwd=REPO, env=env, check=True, capture_output=True)
            stored = {}
            rows = args.shards * args.shard_rows
            for mode, extra in MODES.items():
                params = {
                    "source": str(source),
                    "partitions": args.shards,
                    **extra,
                    "database_url": f"{base}/{dbs[mode]}",
                }
                state, took = run_once(api, params)
                stored[mode] = stored_sample(f"{base}/{dbs[mode]}")
                load = os.getloadavg()[0]
                print(f"{mode:10s} {state:9s} {took:6.1f} s  {rows / took:9,.0f} rows/s  "
                      f"{len(stored[mode]['interactions'])} picks  load {load:.1f}")  # fmt: skip
            same = all(s == stored["one pass"] for s in stored.values())
            print(f"same picks, quarantine and watermark in every mode: {same}")
        finally:
            subprocess.run(["bash", "scripts/stack.sh", "down"], cwd=REPO, env=env, capture_output=True)
            for db in dbs.values():
                admin_sql(PG, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


if __name__ == "__main__":
    main()
