"""Stack throughput: judgments/s through the service (two workers, three concurrent flow runs, one shared judge
budget) against the same figure for the CLI alone, both on the simulator and both over the judge's limit
(`--slots` / latency). The clock runs from the first trigger to the last run's end (bench/README.md, "Stack
throughput").

    .venv/bin/python bench/stack_throughput.py [--dataset halueval_qa_mini] [--slots 16] [--latency-ms 250]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import create_engine, text

from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.settings import REPO_ROOT
from judgewatch.testing.processes import free_port
from judgewatch.testing.simulator import run_simulator_in_thread
from judgewatch.testing.stack import admin_sql, run_via_rest, wait_final

PG = os.environ.get("JUDGEWATCH_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432")
DEPLOYMENT = "post-release-regression/post-release-regression"
BIN = Path(sys.executable).parent


def verdict_count(url: str, releases: list[str]) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            query = "SELECT count(*) FROM verdict v JOIN interaction i ON i.id = v.interaction_id WHERE i.release = :r"
            return sum(int(conn.execute(text(query), {"r": r}).scalar_one()) for r in releases)
    finally:
        engine.dispose()


def through_stack(work: Path, answers: Path, dataset: str, judge_url: str, slots: int, runs: int) -> tuple[int, float]:
    tag = uuid.uuid4().hex[:8]
    env = {
        **{k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"},
        "JUDGEWATCH_STACK_DIR": str(work / "stack"),
        "JUDGEWATCH_PREFECT_PORT": str(free_port()),
        "JUDGEWATCH_REVIEW_PORT": str(free_port()),
        "JUDGEWATCH_PG_URL": PG,
        "JUDGEWATCH_PREFECT_DB": f"jwb_{tag}_prefect",
        "JUDGEWATCH_STORE_DB": f"jwb_{tag}_store",
        "JUDGEWATCH_STACK_JUDGE": "external",
        "JUDGEWATCH_JUDGE_URL": judge_url,
        "JUDGEWATCH_JUDGE_SLOTS": str(slots),
        "JUDGEWATCH_STACK_BIN": str(BIN),
    }
    api = f"http://127.0.0.1:{env['JUDGEWATCH_PREFECT_PORT']}/api"
    store = f"{PG.replace('postgresql:', 'postgresql+psycopg:')}/{env['JUDGEWATCH_STORE_DB']}"
    try:
        subprocess.run(["bash", "scripts/stack.sh", "up"], cwd=REPO_ROOT, env=env, check=True, capture_output=True)
        releases = [f"bench-{i}" for i in range(runs)]
        started = datetime.now(UTC)
        # the simulator scores at random: accepted on purpose, or the gate would refuse it before judging
        params = {"datasets": [dataset], "judge": judge_url, "answers": [f"full={answers}"], "fail_on_gate": False,
                  "accept_unvalidated_judge": True}  # fmt: skip
        ids = [run_via_rest(api, DEPLOYMENT, {**params, "release": release}) for release in releases]
        ended = [wait_final(api, run_id, timeout_s=3600) for run_id in ids]
        if {run["state"]["type"] for run in ended} != {"COMPLETED"}:
            raise SystemExit(f"flow runs ended {[run['state']['type'] for run in ended]}")
        elapsed = (max(datetime.fromisoformat(run["end_time"]) for run in ended) - started).total_seconds()
        return verdict_count(store, releases), elapsed
    finally:
        subprocess.run(["bash", "scripts/stack.sh", "down"], cwd=REPO_ROOT, env=env, capture_output=True)
        for db in (env["JUDGEWATCH_PREFECT_DB"], env["JUDGEWATCH_STORE_DB"]):
            admin_sql(store, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def through_cli(work: Path, answers: Path, dataset: str, judge_url: str, slots: int) -> tuple[int, float]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"JUDGEWATCH_DATA_DIR": str(work / "cli"), "JUDGEWATCH_JUDGE_CONCURRENCY": str(slots)}
    db = f"sqlite:///{work / 'cli.db'}"
    started = time.perf_counter()
    subprocess.run(
        [str(BIN / "judgewatch"), "regress", "--release", "bench-cli", "--dataset", dataset, "--answers",
         f"full={answers}", "--judge", judge_url, "--concurrency", str(slots), "--database-url", db,
         "--accept-unvalidated-judge"],
        env=env, capture_output=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    return verdict_count(db, ["bench-cli"]), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="halueval_qa_mini")
    parser.add_argument("--slots", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=250.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    limit = args.slots / (args.latency_ms / 1000)
    items = load_golden_set(args.dataset).items
    with (
        tempfile.TemporaryDirectory() as tmp,
        run_simulator_in_thread(latency_ms=args.latency_ms, max_concurrency=64) as sim,
    ):
        work = Path(tmp)
        answers = work / "answers.jsonl"
        write_recorded_answers(answers, [(i.id, i.good_answers[0]) for i in items])
        n_cli, t_cli = through_cli(work, answers, args.dataset, sim.base_url, args.slots)
        n_stack, t_stack = through_stack(work, answers, args.dataset, sim.base_url, args.slots, args.runs)
        peak = sim.state.max_in_flight
    print(f"judge limit: {args.slots} slots / {args.latency_ms:.0f} ms = {limit:.0f} judgments/s (simulator)")
    cli, stack = n_cli / t_cli, n_stack / t_stack
    print(f"CLI alone:  {n_cli} judgments in {t_cli:.1f} s = {cli:.1f}/s = {cli / limit:.2f} x the judge's limit")
    print(
        f"stack:      {n_stack} judgments ({args.runs} flow runs, 2 workers) in {t_stack:.1f} s = {stack:.1f}/s"
        f" = {stack / limit:.2f} x the judge's limit; simulator peak in flight {peak} (limit {args.slots})"
    )


if __name__ == "__main__":
    main()
