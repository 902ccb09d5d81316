"""Benchmark: traffic reader + sampler + PII scrubber over 0.5M and 2M generated gateway-log rows.

Each size runs in a fresh subprocess so its peak RSS (VmHWM) is its own. Limits: RSS(2M)/RSS(0.5M) <= 1.2
(memory does not grow with the log: streaming) and peak RSS / 1 GiB <= 1.0.

    .venv/bin/python bench/sampling.py [--shard-rows 500000] [--shards 4] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RATE = 0.01
RSS_GROWTH_LIMIT = 1.2
RSS_GIB_LIMIT = 1.0
PARQUET_ROW_GROUP = 50_000
MODELS = ["qwen-14b-chat", "baichuan2-13b-chat", "chatglm2-6b", "gpt-3.5-turbo-0613"]
ROUTES = ["qa/knowledge", "qa/misleading", "support/billing", "search/rag"]
DEPARTMENTS = ["历史", "常识", "客服", "finance", "legal"]
WORDS = [
    "模型",
    "回答",
    "问题",
    "历史",
    "朝代",
    "诗人",
    "城市",
    "河流",
    "价格",
    "订单",
    "the",
    "of",
    "answer",
    "question",
    "model",
    "release",
    "river",
    "city",
]
PII = [
    "请联系 zhang.wei{n}@example.com 或 1381234{n:04d}。",
    "my key is sk-proj-{n:08d}abcdefghijklmnopqrstuv",
    "订单号 20240315{n:08d} 已发货，版本 v2.{n}.0",
]


class Run(TypedDict):
    rows: int
    picks: int
    duplicates: int
    pii: dict[str, int]
    seconds: float
    peak_rss_kib: int


def _text(rng: random.Random, words: int) -> str:
    return "".join(rng.choice(WORDS) for _ in range(words))


def _row(i: int, rng: random.Random, start: datetime) -> dict[str, object]:
    """Every 100th call repeats the one before (a client retry): same model, request and response."""
    j = i - 1 if i % 100 == 1 else i
    model = MODELS[j % len(MODELS)]
    texts = random.Random(j)
    question = _text(texts, 12) + "？"
    answer = _text(texts, 40) + "。"
    if j % 50 == 0:
        answer += PII[j % len(PII)].format(n=j % 10_000)
    return {
        "id": f"chatcmpl-{i:012d}",
        "timestamp": (start + timedelta(milliseconds=137 * i)).isoformat(),
        "model": model,
        "request": {"model": model, "messages": [{"role": "user", "content": question}]},
        "response": {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 60},
        },
        "metadata": {"release": "bench", "route": ROUTES[i % 4], "department": DEPARTMENTS[i % 5]},
        "reference": {"answer": _text(rng, 10)},
    }


def generate(folder: Path, shards: int, shard_rows: int) -> None:
    """`shards` JSONL files and `shards` Parquet files of `shard_rows` rows each (same rows in both)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    start = datetime(2024, 6, 1, tzinfo=UTC)
    for shard in range(shards):
        rng = random.Random(shard)
        base = shard * shard_rows
        with (folder / f"log-{shard}.jsonl").open("w", encoding="utf-8") as out:
            writer = None
            for chunk_start in range(0, shard_rows, PARQUET_ROW_GROUP):
                rows = [
                    _row(base + i, rng, start)
                    for i in range(chunk_start, min(shard_rows, chunk_start + PARQUET_ROW_GROUP))
                ]
                out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
                table = pa.Table.from_pylist(rows)
                if writer is None:
                    writer = pq.ParquetWriter(folder / f"log-{shard}.parquet", table.schema)
                writer.write_table(table, row_group_size=PARQUET_ROW_GROUP)
            if writer is not None:
                writer.close()


def child(kind: str, paths: list[str]) -> None:
    """One measured run: read, sample at RATE, scrub; print a JSON line with rows/s and peak RSS."""
    from judgewatch.traffic import Sampler, parse_source_config, read_source

    config = parse_source_config(
        {"name": "bench", "kind": kind, "paths": paths, "sampling": {"default_rate": RATE}}, origin="bench"
    )
    t0 = time.perf_counter()
    read = read_source(config)
    sampler = Sampler(config)
    picks = sum(1 for _ in sampler.run(read))
    seconds = time.perf_counter() - t0
    stats = sampler.stats
    print(
        json.dumps(
            {
                "rows": stats.read,
                "picks": picks,
                "duplicates": stats.duplicate,
                "pii": stats.pii,
                "seconds": seconds,
                "peak_rss_kib": _vm_hwm_kib(),
            }
        )
    )


def _vm_hwm_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(kind: str, paths: list[Path]) -> Run:
    cmd = [sys.executable, __file__, "--child", kind, *map(str, paths)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: Run = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shard-rows", type=int, default=500_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep the generated logs under bench/out/")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1:])
        return 0

    (HERE / "out").mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="sampling-", dir=HERE / "out"))
    try:
        t0 = time.perf_counter()
        generate(folder, args.shards, args.shard_rows)
        print(
            f"generated {args.shards} x {args.shard_rows:,} rows (JSONL + Parquet) in {time.perf_counter() - t0:.0f}s"
        )
        print(f"{'format':8} {'rows':>10} {'rows/s':>9} {'picks':>7} {'dups':>7} {'peak RSS MiB':>13}  PII scrubbed")
        ok = True
        for kind, ext in (("jsonl", "jsonl"), ("parquet", "parquet")):
            files = sorted(folder.glob(f"log-*.{ext}"))
            small, large = measure(kind, files[:1]), measure(kind, files)
            for r in (small, large):
                rate = r["rows"] / r["seconds"]
                print(
                    f"{kind:8} {r['rows']:>10,} {rate:>9,.0f} {r['picks']:>7,} {r['duplicates']:>7,}"
                    f" {r['peak_rss_kib'] / 1024:>13.0f}  {r['pii']}"
                )
            growth = large["peak_rss_kib"] / small["peak_rss_kib"]
            of_gib = large["peak_rss_kib"] / (1024 * 1024)
            print(f"{kind:8} ratio RSS(large)/RSS(small) = {growth:.3f} (limit {RSS_GROWTH_LIMIT})")
            print(f"{kind:8} ratio peak RSS / 1 GiB      = {of_gib:.3f} (limit {RSS_GIB_LIMIT})")
            ok = ok and growth <= RSS_GROWTH_LIMIT and of_gib <= RSS_GIB_LIMIT
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
