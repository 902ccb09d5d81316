"""A synthetic OpenAI-gateway log (JSONL and Parquet, same rows) for the sampling benchmark and its tests.

Every 100th call repeats the one before it (a client retry), every 50th answer carries PII.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

PARQUET_ROW_GROUP = 50_000
MODELS = ["qwen-14b-chat", "baichuan2-13b-chat", "chatglm2-6b", "gpt-3.5-turbo-0613"]
ROUTES = ["qa/knowledge", "qa/misleading", "support/billing", "search/rag"]
DEPARTMENTS = ["历史", "常识", "客服", "finance", "legal"]
WORDS = [
    *("模型", "回答", "问题", "历史", "朝代", "诗人", "城市", "河流", "价格", "订单"),
    *("the", "of", "answer", "question", "model", "release", "river", "city"),
]
PII = [
    "请联系 zhang.wei{n}@example.com 或 1381234{n:04d}。",
    "my key is sk-proj-{n:08d}abcdefghijklmnopqrstuv",
    "订单号 20240315{n:08d} 已发货，版本 v2.{n}.0",
]


def _text(rng: random.Random, words: int) -> str:
    return "".join(rng.choice(WORDS) for _ in range(words))


def gateway_row(i: int, rng: random.Random, start: datetime) -> dict[str, object]:
    """Row `i`; every 100th call repeats the one before (a client retry): same model, request and response."""
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


def write_gateway_logs(folder: Path, shards: int, shard_rows: int) -> None:
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
                end = min(shard_rows, chunk_start + PARQUET_ROW_GROUP)
                rows = [gateway_row(base + i, rng, start) for i in range(chunk_start, end)]
                out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
                table = pa.Table.from_pylist(rows)
                if writer is None:
                    writer = pq.ParquetWriter(folder / f"log-{shard}.parquet", table.schema)
                writer.write_table(table, row_group_size=PARQUET_ROW_GROUP)
            if writer is not None:
                writer.close()
