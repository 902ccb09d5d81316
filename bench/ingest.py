"""Benchmark: OTLP/HTTP ingestion, `judgewatch ingest serve` as users run it, storing every LLM span it receives.

The receiver runs in its own process pinned to one core; this process posts protobuf requests of `--batch` spans
(bench/README.md, "OTLP ingestion"). Limits: >= 5,000 LLM spans stored per second of the receiver's CPU time, RSS
after 200k spans / after 50k <= 1.2. Last line: `ingest spans_per_s S rss_ratio R`.

    .venv/bin/python bench/ingest.py [--spans 200000] [--batch 500] [--rate 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SPANS_PER_S_LIMIT = 5_000
RSS_RATIO_LIMIT = 1.2
TOKEN = "bench-ingest-token"
CONFIG = """\
name: bench-otlp
kind: otlp
tiers: {{small-q: quantized, big-fp16: full}}
sampling: {{default_rate: {rate}}}
"""


def make_batch(first_trace: int, llm_spans: int) -> bytes:
    """`llm_spans` LLM spans (4 GenAI : 1 OpenInference) and one retriever span per five, as protobuf."""
    from judgewatch.testing.otlp_payloads import genai_chat, openinference_llm, request, retriever
    from judgewatch.traffic.otel_decode import decode_json

    spans = []
    for k in range(llm_spans // 5):
        t = first_trace + k
        spans.append(retriever(t, 1, f"Order {t} ships from the Rotterdam warehouse within {t % 7 + 1} days."))
        labels = {"judgewatch.route": "support/orders", "user.id": f"user-{t % 997}"}
        for s in range(2, 6):
            question = f"When will order {t}-{s} arrive, and can I change the address?"
            answer = f"Order {t}-{s} ships within {t % 7 + 1} days; the address can be changed until it leaves."
            if t % 50 == 0:  # PII in one answer of 50, as in the sampling benchmark's gateway log
                answer += f" Write to buyer{t}@example.com or call 1381234{t % 10_000:04d}."
            spans.append(genai_chat(t, s, question, answer, **labels))
        spans.append(openinference_llm(t, 6, f"Summarise order {t}", f"Order {t}: 2 items, paid, not shipped."))
    return decode_json(json.dumps(request(*spans)))[0].SerializeToString()


def proc_stat(pid: int) -> tuple[float, int]:
    """(CPU seconds used, RSS bytes) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = next(int(x.split()[1]) * 1024 for x in Path(f"/proc/{pid}/status").read_text().splitlines()
               if x.startswith("VmRSS:"))  # fmt: skip
    return cpu, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--rate", type=float, default=1.0, help="sampling rate (1.0: every LLM span stored)")
    args = parser.parse_args()
    import httpx

    from judgewatch.testing.processes import free_port, stop_process

    work = Path(tempfile.mkdtemp(prefix="jw-ingest-bench-"))
    (work / "source.yaml").write_text(CONFIG.format(rate=args.rate))
    port = free_port()
    env = {**os.environ, "JUDGEWATCH_INGEST_TOKEN": TOKEN, "PYTHONPATH": str(HERE.parent),
           "JUDGEWATCH_DATA_DIR": str(work)}  # fmt: skip
    command = [sys.executable, "-m", "judgewatch", "ingest", "serve", "--config", str(work / "source.yaml"),
               "--port", str(port), "--database-url", f"sqlite:///{work / 'jw.db'}"]  # fmt: skip
    server = subprocess.Popen(command, env=env, preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-protobuf"}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the receiver did not start") from None
                time.sleep(0.2)
        client = httpx.Client(timeout=120)
        batches = args.spans // args.batch

        def post(k: int) -> None:
            body = make_batch(1 + k * args.batch, args.batch)
            try:
                reply = client.post(f"{url}/v1/traces", content=body, headers=headers)
            except httpx.TransportError:  # a kept-alive connection the server closed: retried, as exporters do
                reply = client.post(f"{url}/v1/traces", content=body, headers=headers)
            if reply.status_code != 200:
                raise SystemExit(f"batch {k}: HTTP {reply.status_code}: {reply.text[:200]}")

        post(0)  # warm up: imports, the first transaction
        cpu0, _ = proc_stat(server.pid)
        wall0 = time.perf_counter()
        rss_at: dict[int, int] = {}
        with ThreadPoolExecutor(2) as pool:
            for start in range(1, batches, 20):
                list(pool.map(post, range(start, min(start + 20, batches))))
                sent = min(start + 20, batches) * args.batch
                for mark in (50_000, args.spans):
                    if mark not in rss_at and sent >= mark:
                        rss_at[mark] = proc_stat(server.pid)[1]
        wall = time.perf_counter() - wall0
        cpu = proc_stat(server.pid)[0] - cpu0
        totals = httpx.get(f"{url}/healthz").json()
    finally:
        stop_process(server)
    received = (batches - 1) * args.batch
    if totals.get("llm_spans") != batches * args.batch:
        raise SystemExit(f"received {totals.get('llm_spans')} LLM spans of {batches * args.batch}: {totals}")
    rate = received / cpu
    ratio = rss_at[args.spans] / rss_at[50_000]
    print(f"receiver counts: {totals}")
    print(
        f"{received:,} LLM spans mapped and decided at rate {args.rate}, {totals['picked']:,} stored (all requests), "
        f"in {cpu:.1f} s of receiver CPU ({wall:.1f} s wall, {received / wall:,.0f}/s wall)"
    )
    print(f"spans/s {rate:,.0f} (limit >= {SPANS_PER_S_LIMIT:,}: ratio {rate / SPANS_PER_S_LIMIT:.2f})")
    low, high = rss_at[50_000] / 2**20, rss_at[args.spans] / 2**20
    print(
        f"RSS at 50k {low:.0f} MiB, at {args.spans // 1000}k {high:.0f} MiB: "
        f"ratio {ratio:.3f} (limit <= {RSS_RATIO_LIMIT})"
    )
    print(f"ingest spans_per_s {rate:.0f} rss_ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
