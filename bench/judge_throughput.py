"""Judge throughput: the full judging pipeline against a bare AsyncOpenAI loop, on the same simulated endpoint.

Both in this process (target >= 0.9 of the bare loop's judgments/s), then end to end (`judgewatch judge` and the
bare loop as fresh processes, side by side; the last line is `judge end_to_end_ratio R cpu_ratio C`, targets
R >= 0.95, C <= 1.2). Setup and figures: bench/README.md, "Judge throughput".

    .venv/bin/python bench/judge_throughput.py [--items 5000] [--rounds 2] [--profile out.prof]
        [--e2e-items 1000] [--faults] [--existing-store]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import openai
from sqlalchemy import Engine

from judges.config import EndpointConfig
from judges.openai_judge import OpenAIJudge
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import render_messages
from judgewatch.contract.reply import response_format
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.judging.pipeline import JudgingSummary, judge_items
from judgewatch.settings import REPO_ROOT as REPO
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.store import count_rows

MODEL = "sim-judge"
SOURCE = "bench"
T = TypeVar("T")


@contextlib.contextmanager
def simulator_process(latency_ms: float, max_concurrency: int, *extra: str) -> Iterator[str]:
    """Start `python -m judgewatch.testing.simulator` on a free port (`extra`: more of its options); yield its URL."""
    cmd = [sys.executable, "-m", "judgewatch.testing.simulator", "--port", "0", "--latency-ms", str(latency_ms)]
    cmd += ["--max-concurrency", str(max_concurrency), *extra]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"simulator did not start: {line!r}")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def bench_items(n: int) -> list[JudgeItem]:
    """n items from the golden sets (English and Chinese, good and bad answers), cycled; synthetic if absent."""
    base: list[JudgeItem] = []
    for name in ("halueval_qa", "halluqa"):
        path = REPO / "datasets" / name / "data.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for kind in ("good_answers", "bad_answers"):
                for k, answer in enumerate(row.get(kind) or []):
                    fields = {f: row.get(f) for f in ("question", "reference_answer", "reference_facts", "context")}
                    base.append(JudgeItem(id=f"{row['id']}:{kind}:{k}", answer=answer, **fields))
    if not base:
        base = [
            JudgeItem(id=f"s{i}", question=f"What is {i} + {i}?", answer=f"It is {2 * i}.", reference_answer=str(2 * i))
            for i in range(500)
        ]
    return [base[i % len(base)].model_copy(update={"id": f"{base[i % len(base)].id}#{i}"}) for i in range(n)]


def bare_request(rubric: Rubric, item: JudgeItem) -> dict[str, Any]:
    """The chat request the judge sends for `item`, as the bare loops send it."""
    to_score = [c.name for c in rubric.applicable(item.has_references)]
    return {"messages": render_messages(rubric, item, to_score), "response_format": response_format(rubric, to_score)}


def timed_run(coro: Coroutine[Any, Any, T]) -> tuple[T, float, float]:
    """asyncio.run(coro) -> (result, wall seconds, process CPU seconds: every thread of this process)."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = asyncio.run(coro)
    return result, time.perf_counter() - wall, time.process_time() - cpu


async def bare_loop(url: str, requests: list[dict[str, Any]], concurrency: int) -> int:
    """The floor: one AsyncOpenAI client, a semaphore, the same requests, nothing else.

    Same timeouts as the judge client (judges/chat_client.py). A failed request is counted, not raised, so
    the benchmark ends with how many failed (a loaded machine can miss a connect timeout), not a traceback.
    """
    http = openai.DefaultAsyncHttpxClient(
        limits=httpx2.Limits(max_connections=concurrency + 4, max_keepalive_connections=concurrency),
        timeout=httpx2.Timeout(65.0, connect=10.0),
    )
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0, http_client=http)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(request: dict[str, Any]) -> str | None:
        try:
            async with semaphore:
                completion = await client.chat.completions.create(model=MODEL, temperature=0, seed=1234, **request)
        except openai.APIError as exc:
            print(f"bare loop: request failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return None
        return completion.choices[0].message.content

    replies = await asyncio.gather(*(one(r) for r in requests))
    await client.close()
    return sum(r is not None for r in replies)


async def judge_and_store(
    url: str, items: list[JudgeItem], rubric: Rubric, engine: Engine, concurrency: int, fit_prompt: bool = True
) -> JudgingSummary:
    """The project's pipeline: render, call, parse, validate (OpenAIJudge) and store in batches (judge_items)."""
    judge = OpenAIJudge(EndpointConfig(url, MODEL, concurrency=concurrency, fit_prompt=fit_prompt))
    try:
        result = await judge_items(items, rubric, judge, engine=engine, source=SOURCE, collect=False)
    finally:
        await judge.aclose()
    return result.summary


# The floor end to end: a fresh interpreter that imports openai, reads the prepared requests and sends them at the
# same concurrency. A reply that is not JSON is asked for once more, as judgewatch's repair does.
BARE_SCRIPT = """
import asyncio, json, sys
import openai

async def main(url, path, concurrency):
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=2)
    semaphore = asyncio.Semaphore(concurrency)
    requests = [json.loads(line) for line in open(path, encoding="utf-8")]

    async def one(request):
        for _ in range(2):
            try:
                async with semaphore:
                    completion = await client.chat.completions.create(
                        model="sim-judge", temperature=0, seed=1234, **request
                    )
            except openai.APIError:
                return False
            try:
                json.loads(completion.choices[0].message.content or "")
                return True
            except ValueError:
                continue
        return False

    done = await asyncio.gather(*(one(r) for r in requests))
    await client.close()
    print(sum(done))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def child_run(cmd: list[str]) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run a child process to its end -> (result, wall seconds, its CPU seconds: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result, wall, cpu


def end_to_end(
    url: str, items: list[JudgeItem], rubric: Rubric, concurrency: int, rounds: int, tmp: Path, existing_store: bool
) -> None:
    """`judgewatch judge` and the bare loop as fresh processes, alternating; prints the ratios of the medians."""
    input_path, requests_path = tmp / "e2e-items.jsonl", tmp / "e2e-requests.jsonl"
    with input_path.open("w", encoding="utf-8") as rows, requests_path.open("w", encoding="utf-8") as reqs:
        for item in items:
            fields = ("id", "question", "answer", "reference_answer", "reference_facts", "context")
            row = {f: getattr(item, f) for f in fields if getattr(item, f) is not None}
            rows.write(json.dumps(row, ensure_ascii=False) + "\n")
            reqs.write(json.dumps(bare_request(rubric, item), ensure_ascii=False) + "\n")
    bare_cmd = [sys.executable, "-c", BARE_SCRIPT, url, str(requests_path), str(concurrency)]
    walls: dict[str, list[float]] = {"bare": [], "judge": []}
    cpus: dict[str, list[float]] = {"bare": [], "judge": []}

    def measured(kind: str, cmd: list[str]) -> tuple[subprocess.CompletedProcess[str], float, float]:
        """`cmd` run to its end, its wall and CPU seconds kept under `kind`; a failed run ends the benchmark."""
        result, wall, cpu = child_run(cmd)
        if result.returncode != 0:
            name = "bare loop" if kind == "bare" else "judgewatch judge"
            raise SystemExit(f"{name} exited {result.returncode}: {result.stderr.strip()[-500:]}")
        walls[kind].append(wall)
        cpus[kind].append(cpu)
        return result, wall, cpu

    for r in range(rounds):
        measured("bare", bare_cmd)
        judge_cmd = [sys.executable, "-m", "judgewatch", "judge", "--rubric", "answer_quality"]
        judge_cmd += ["--input", str(input_path), "--output", str(tmp / f"e2e-out{r}.jsonl"), "--judge", url]
        judge_cmd += ["--model", MODEL, "--concurrency", str(concurrency), "--no-fallback-reference"]
        store_url = f"sqlite:///{tmp / f'e2e{r}.db'}"
        if existing_store:  # created and migrated before the clock starts
            engine = make_engine(store_url)
            migrate(engine)
            engine.dispose()
        judge_cmd += ["--database-url", store_url]
        result, wall, cpu = measured("judge", judge_cmd)
        print(
            f"e2e round {r + 1}: bare {walls['bare'][-1]:.2f} s wall, {cpus['bare'][-1]:.2f} s CPU; "
            f"judgewatch judge {wall:.2f} s wall, {cpu:.2f} s CPU; {result.stdout.splitlines()[0]}"
        )
    bare_wall, judge_wall = statistics.median(walls["bare"]), statistics.median(walls["judge"])
    bare_cpu, judge_cpu = statistics.median(cpus["bare"]), statistics.median(cpus["judge"])
    per_k = 1000 / len(items)
    print(
        f"end to end, {len(items)} items, concurrency {concurrency}, "
        f"{'an existing' if existing_store else 'a new'} store, median of {rounds}: bare loop {bare_wall:.2f} s "
        f"({bare_cpu * per_k:.2f} s CPU per 1,000), judgewatch judge {judge_wall:.2f} s "
        f"({judge_cpu * per_k:.2f} s CPU per 1,000); load average {os.getloadavg()[0]:.1f}"
    )
    print(f"judge end_to_end_ratio {bare_wall / judge_wall:.2f} cpu_ratio {judge_cpu / bare_cpu:.2f}")


def with_faults(items: list[JudgeItem]) -> list[JudgeItem]:
    """5% of the items get one transient 503, another 5% one malformed reply (simulator markers in the answer)."""
    marked = []
    for i, item in enumerate(items):
        marker = "[[sim:flaky=1]]" if i % 20 == 7 else "[[sim:garbled=1]]" if i % 20 == 13 else ""
        marked.append(item.model_copy(update={"answer": f"{item.answer} {marker}".strip()}) if marker else item)
    return marked


def in_process(args: argparse.Namespace, rubric: Rubric, tmp: Path, limit: float) -> None:
    """The pipeline inside this process against the bare loop, alternating rounds (the judging window only)."""
    items = bench_items(args.items)
    requests = [bare_request(rubric, item) for item in items]
    profiler = cProfile.Profile() if args.profile else None
    bare_runs: list[tuple[float, float]] = []
    pipe_runs: list[tuple[float, float]] = []
    with simulator_process(args.latency_ms, args.sim_concurrency) as url:
        print(f"simulator {url}: cap {args.sim_concurrency}, {args.latency_ms:g} ms/request -> limit {limit:.0f}/s")
        asyncio.run(bare_loop(url, requests[: args.concurrency], args.concurrency))  # warm-up
        for r in range(args.rounds):
            done, wall, cpu = timed_run(bare_loop(url, requests, args.concurrency))
            if done != len(items):
                raise SystemExit(f"bare loop: {len(items) - done} of {len(items)} requests failed: no valid figure")
            bare_runs.append((len(items) / wall, cpu * 1000 / len(items)))

            store_url = f"sqlite:///{tmp / f'round{r}.db'}"
            engine = make_engine(store_url)
            migrate(engine)
            with profiler or contextlib.nullcontext():
                summary, wall, cpu = timed_run(judge_and_store(url, items, rubric, engine, args.concurrency))
            assert summary.by_status == {"scored": len(items)}, summary.by_status
            engine.dispose()
            stored = count_rows(store_url, VerdictRecord)
            assert stored == len(items), f"{stored} verdicts stored for {len(items)} items"
            pipe_runs.append((len(items) / wall, cpu * 1000 / len(items)))
            print(
                f"round {r + 1}: bare {bare_runs[-1][0]:.1f}/s ({bare_runs[-1][1]:.2f} ms CPU/judgment), "
                f"pipeline {pipe_runs[-1][0]:.1f}/s ({pipe_runs[-1][1]:.2f} ms CPU/judgment)"
            )
    if profiler and args.profile:
        profiler.dump_stats(args.profile)

    bare_rate = max(r for r, _ in bare_runs)
    pipe_rate = max(r for r, _ in pipe_runs)
    print(
        f"pipeline = OpenAIJudge + judgewatch.judging.pipeline.judge_items (SQLite store); {len(items)} items, "
        f"concurrency {args.concurrency}, best of {args.rounds} round(s)"
    )
    print(f"bare AsyncOpenAI loop : {bare_rate:7.1f} judgments/s = {bare_rate / limit:.2f} of the endpoint limit")
    print(f"judging pipeline      : {pipe_rate:7.1f} judgments/s = {pipe_rate / limit:.2f} of the endpoint limit")
    paired = statistics.median(p / b for (p, _), (b, _) in zip(pipe_runs, bare_runs, strict=True))
    print(
        f"pipeline / bare loop  : {pipe_rate / bare_rate:.2f} best/best, {paired:.2f} median per round (target >= 0.90)"
    )
    print(
        f"CPU per judgment      : bare {statistics.median(c for _, c in bare_runs):.2f} ms, "
        f"pipeline {statistics.median(c for _, c in pipe_runs):.2f} ms (median over rounds)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=5000, help="items of the in-process comparison (0: skip)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=250.0)
    parser.add_argument("--sim-concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2, help="alternating bare/pipeline runs; the best is kept")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the pipeline runs here")
    parser.add_argument("--e2e-items", type=int, default=1000, help="items of the end-to-end comparison (0: skip)")
    parser.add_argument("--faults", action="store_true", help="end to end: 5%% transient errors, 5%% malformed")
    parser.add_argument("--existing-store", action="store_true", help="end to end: a migrated store, not a new one")
    args = parser.parse_args()

    rubric = load_rubric("answer_quality", REPO / "rubrics")
    limit = args.sim_concurrency / (args.latency_ms / 1000)
    tmp = Path(tempfile.mkdtemp(prefix="jw-bench-"))
    if args.items:
        in_process(args, rubric, tmp, limit)
    if args.e2e_items:  # last, so its line is the last one printed
        e2e = bench_items(args.e2e_items)
        with simulator_process(args.latency_ms, args.sim_concurrency) as url:
            e2e = with_faults(e2e) if args.faults else e2e
            end_to_end(url, e2e, rubric, args.concurrency, args.rounds, tmp, args.existing_store)


if __name__ == "__main__":
    main()
