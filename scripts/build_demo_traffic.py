"""Build examples/traffic/halluqa_gateway_log.jsonl: HalluQA's real model answers as an OpenAI-gateway log.

Deterministic (the same input gives byte-identical output). HALLUQA_FOLDER holds upstream HalluQA's `HalluQA.json`
and `Chinese_LLMs_outputs/open_generation/` (the repository keeps only the log built from them).

    .venv/bin/python scripts/build_demo_traffic.py HALLUQA_FOLDER [--out examples/traffic]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUTPUTS = {  # model name as logged -> file under Chinese_LLMs_outputs/open_generation/
    "gpt-4-0613": "gpt-4-0613_output_qa_prompt.json",
    "gpt-3.5-turbo-0613": "gpt-3.5-turbo-0613_output_qa_prompt.json",
    "ernie_bot": "ernie_bot_output.json",
    "qwen-14b-chat": "qwen-14b-chat_output_qa_prompt.json",
    "baichuan2-13b-chat": "baichuan2-13b-chat_output_qa_prompt.json",
    "chatglm2-6b": "chatglm2-6b_output_qa_prompt.json",
}
SYSTEM_PROMPT = "你是一个知识渊博、实事求是的中文助手。"
START = datetime(2024, 6, 3, tzinfo=UTC)
SPREAD_SECONDS = 4 * 24 * 3600  # four days of traffic
RELEASE = "2024.06.0"
LOG_NAME = "halluqa_gateway_log.jsonl"


def _stable(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def _tokens(text: str) -> int:
    """Estimate: one token per CJK character, one per four other characters (the data has no counts)."""
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return cjk + (len(text) - cjk + 3) // 4


def gateway_row(model: str, item: dict[str, object], question: dict[str, object]) -> dict[str, object]:
    qid = item["question_id"]
    ts = START + timedelta(seconds=_stable("ts", model, qid) % SPREAD_SECONDS)
    answer = str(item.get("response") or "")
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": str(item["question"])},
    ]
    prompt_tokens = sum(_tokens(m["content"]) + 4 for m in messages)
    facts = [str(question.get(k) or "") for k in ("Best Answer1", "Best Answer2", "Best Answer3", "Best Answer4")]
    facts = [f for f in facts if f.strip()]
    source = str(question.get("Source") or "")
    call_id = f"chatcmpl-{_stable('id', model, qid):016x}"
    return {
        "id": call_id,
        "timestamp": ts.isoformat().replace("+00:00", "Z"),
        "model": model,
        "request": {"model": model, "messages": messages, "stream": False},
        "response": {
            "id": call_id,
            "object": "chat.completion",
            "created": int(ts.timestamp()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": _tokens(answer),
                "total_tokens": prompt_tokens + _tokens(answer),
            },
        },
        "metadata": {
            "release": RELEASE,
            "route": f"qa/{str(question['Category']).lower()}",
            "department": str(question["Class"]),
            "halluqa_question_id": qid,
            "silver_gpt4_hallucination": item.get("is_hallucination"),
        },
        "reference": {
            "answer": facts[0] if facts else None,
            "facts": facts,
            "context": [] if source.startswith("http") else [source],
            "source_url": source if source.startswith("http") else None,
        },
    }


def bad_lines() -> list[str]:
    """Two broken rows a real gateway log has: a line cut mid-write, and an upstream error without answer."""
    truncated = '{"id": "chatcmpl-truncated", "timestamp": "2024-06-04T09:15:00Z", "model": "qwen-14b-chat", "req'
    error = {
        "id": "chatcmpl-upstream-timeout",
        "timestamp": "2024-06-05T14:02:11Z",
        "model": "chatglm2-6b",
        "request": {"model": "chatglm2-6b", "messages": [{"role": "user", "content": "李白是哪个朝代的诗人？"}]},
        "response": {"error": {"message": "upstream timed out after 60s", "type": "timeout", "code": 504}},
        "metadata": {"release": RELEASE, "route": "qa/knowledge", "department": "诗词"},
    }
    return [truncated, json.dumps(error, ensure_ascii=False)]


def build(data: Path, out: Path) -> Path:
    questions = {q["question_id"]: q for q in json.loads((data / "HalluQA.json").read_text(encoding="utf-8"))}
    rows: list[dict[str, object]] = []
    for model, name in OUTPUTS.items():
        items = json.loads((data / "Chinese_LLMs_outputs" / "open_generation" / name).read_text(encoding="utf-8"))
        rows.extend(gateway_row(model, item, questions[item["question_id"]]) for item in items)
    rows.sort(key=lambda r: (r["timestamp"], r["id"]))
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    bad = bad_lines()
    lines.insert(len(lines) // 3, bad[0])
    lines.insert(2 * len(lines) // 3, bad[1])
    out.mkdir(parents=True, exist_ok=True)
    target = out / LOG_NAME
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copyfile(data / "LICENSE", out / "LICENSE.halluqa")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="upstream HalluQA folder (HalluQA.json, Chinese_LLMs_outputs/)")
    parser.add_argument("--out", type=Path, default=REPO / "examples" / "traffic")
    args = parser.parse_args()
    target = build(args.data, args.out)
    print(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
