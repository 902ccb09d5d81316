"""Context-window fitting: the judging pipeline's judgments/s with and without fitting, on the same simulator.

The simulator (its own process) enforces vLLM's 2,048-token window; each round judges the same golden items without
and with fitting, then long-context items only fitting can judge (bench/README.md, "Context-window fitting").
Prints judgments/s with fitting as a ratio of without (limit >= 0.9).

    .venv/bin/python bench/context_fit.py [--items 3000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from judge_throughput import bench_items, judge_and_store, simulator_process, timed_run

from judgewatch.contract.rubric import load_rubric
from judgewatch.settings import REPO_ROOT as REPO
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.long_items import long_context_item

WINDOW = 2048
LIMIT = 0.9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--long-items", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=250.0)
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs without/with fitting; best kept")
    args = parser.parse_args()

    rubric = load_rubric("answer_quality", REPO / "rubrics")
    items = bench_items(args.items)
    tmp = Path(tempfile.mkdtemp(prefix="jw-bench-fit-"))
    rates: dict[bool, list[float]] = {False: [], True: []}
    with simulator_process(args.latency_ms, 64, "--max-model-len", str(WINDOW)) as url:
        print(f"simulator {url}: window {WINDOW} tokens, cap 64, {args.latency_ms:g} ms/request")
        for r in range(args.rounds):
            for fit in (False, True):
                engine = make_engine(f"sqlite:///{tmp / f'round{r}-{fit}.db'}")
                migrate(engine)
                summary, wall, _ = timed_run(judge_and_store(url, items, rubric, engine, 64, fit))
                engine.dispose()
                if summary.by_status != {"scored": len(items)}:
                    sys.exit(f"{'with' if fit else 'without'} fitting: {summary.by_status}: no valid figure")
                rates[fit].append(len(items) / wall)
            print(f"round {r + 1}: without fitting {rates[False][-1]:.1f}/s, with fitting {rates[True][-1]:.1f}/s")
        engine = make_engine(f"sqlite:///{tmp / 'long.db'}")
        migrate(engine)
        longs = [long_context_item(f"long{i}") for i in range(args.long_items)]
        summary, wall, _ = timed_run(judge_and_store(url, longs, rubric, engine, 64))
        engine.dispose()
    best_off, best_on = max(rates[False]), max(rates[True])
    paired = statistics.median(on / off for on, off in zip(rates[True], rates[False], strict=True))
    print(f"{len(items)} golden items that fit the window, best of {args.rounds} round(s):")
    print(f"without fitting : {best_off:7.1f} judgments/s")
    print(f"with fitting    : {best_on:7.1f} judgments/s")
    ratio = best_on / best_off
    print(f"with / without  : {ratio:.2f} best/best, {paired:.2f} median per round (limit >= {LIMIT})")
    print(
        f"{len(longs)} items with 30 long passages, with fitting: {len(longs) / wall:.1f} judgments/s, "
        f"{summary.by_status} (without fitting every one is a 400: too_long)"
    )
    if ratio < LIMIT:
        sys.exit(f"ratio {ratio:.2f} below the limit {LIMIT}")


if __name__ == "__main__":
    main()
