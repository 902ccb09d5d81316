"""Benchmark: decide-before-parse sampling (columnar reader + sampler + PII scrubbing of the picks) at a 1% rate.

Each format on one shard of a synthetic gateway log and on all, beside pyarrow reading the same rows; `--workers W`
adds 1 worker against W. Method and limits: bench/README.md, "Traffic sampling" and "Sampling: partitions across
workers".

    .venv/bin/python bench/sampling.py [--shard-rows 500000] [--shards 4] [--keep] [--logs DIR] [--row-path]
                                       [--workers 2]

The last line is `parquet P rows/s jsonl J rows/s rss_ratio R` (the largest run's rates, the larger RSS ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RATE = 0.01
LIMITS = {"parquet": 200_000, "jsonl": 150_000}
RSS_GROWTH_LIMIT = 1.2
RSS_GIB_LIMIT = 1.0
WORKER_SHARE = 0.75  # of one core's limit, per worker


class Run(TypedDict):
    rows: int
    picks: int
    duplicates: int
    pii: dict[str, int]
    cpu_seconds: float
    wall_seconds: float
    peak_rss_kib: int
    started: float  # epoch seconds: when the measured work began and ended
    ended: float


def _one_core(k: int = 0) -> None:
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[k % len(cores)]})
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


def child(mode: str, kind: str, paths: list[str]) -> None:
    """One measured run, started when the parent says go ("sample", "rows" = the row-by-row path, "ceiling" =
    pyarrow reading only, "scanner" = JSONL's mapped reader only, "part:K/W" = partition K of W sampled)."""
    part, parts = map(int, mode.removeprefix("part:").split("/")) if mode.startswith("part:") else (0, 1)
    _one_core(part)
    import pandas  # noqa: F401  (pyarrow's first `to_numpy` imports it: 0.2 s of CPU, once per worker)
    import pyarrow.compute
    import pyarrow.json
    import pyarrow.parquet  # noqa: F401  (imported before the clock starts, as a long-running worker has them)

    import judgewatch.traffic.columnar.sampling  # noqa: F401
    from judgewatch.traffic import parse_source_config
    from judgewatch.traffic.partitions import partition_sampler, split_source

    config = parse_source_config(
        {"name": "bench", "kind": kind, "paths": paths, "sampling": {"default_rate": RATE}}, origin="bench"
    )
    print("ready", flush=True)
    sys.stdin.readline()  # every child of a measurement starts at once
    cpu, wall, started = time.process_time(), time.perf_counter(), time.time()
    pii: dict[str, int] = {}
    if mode == "ceiling":
        rows, picks, duplicates = _plain_read(kind, paths, config), 0, 0
    elif mode == "scanner":
        rows, picks, duplicates = _scan_only(paths, config), 0, 0
    else:
        sampler, read = partition_sampler(config, split_source(config, None, parts)[part])
        picks = sum(1 for _ in sampler.run(iter(read) if mode == "rows" else read))
        stats = sampler.stats
        rows, duplicates, pii = stats.read, stats.duplicate, stats.pii
    run = Run(
        rows=rows,
        picks=picks,
        duplicates=duplicates,
        pii=pii,
        cpu_seconds=time.process_time() - cpu,
        wall_seconds=time.perf_counter() - wall,
        peak_rss_kib=_vm_hwm_kib(),
        started=started,
        ended=time.time(),
    )
    print(json.dumps(run))


def _jsonl_blocks(paths: list[str]) -> Iterator[bytes]:
    """The sampler's JSONL blocks of whole lines (`columnar.blocks.BLOCK_BYTES`), file by file."""
    from judgewatch.traffic.columnar.blocks import BLOCK_BYTES

    for path in paths:
        with open(path, "rb") as f:
            carry = b""
            while data := f.read(BLOCK_BYTES):
                buf = carry + data
                cut = buf.rfind(b"\n") + 1
                carry = buf[cut:]
                yield buf[:cut]


def _plain_read(kind: str, paths: list[str], config: object) -> int:
    """pyarrow reading the files and doing nothing: the columns the mapping reads, or every JSONL line."""
    import io

    import pyarrow.json as pa_json
    import pyarrow.parquet as pq

    from judgewatch.traffic.columnar.blocks import BLOCK_BYTES, BLOCK_ROWS
    from judgewatch.traffic.mapping import RowMapper

    rows = 0
    if kind == "parquet":
        keys = RowMapper(config).top_level_keys  # type: ignore[arg-type]
        for path in paths:
            pf = pq.ParquetFile(path)
            columns = [name for name in pf.schema_arrow.names if name in keys]
            rows += sum(b.num_rows for b in pf.iter_batches(batch_size=BLOCK_ROWS, columns=columns))
        return rows
    options = pa_json.ReadOptions(use_threads=False, block_size=BLOCK_BYTES)
    return sum(pa_json.read_json(io.BytesIO(block), read_options=options).num_rows for block in _jsonl_blocks(paths))


def _scan_only(paths: list[str], config: object) -> int:
    """pyarrow reading only the mapped fields of every JSONL line (`MappedReader`, with the block's checks), in the
    sampler's blocks, and nothing else."""
    from judgewatch.traffic.columnar.line_blocks import LineBlock
    from judgewatch.traffic.columnar.line_scan import MappedReader
    from judgewatch.traffic.mapping import RowMapper

    mapper = RowMapper(config)  # type: ignore[arg-type]
    reader, limit = MappedReader(mapper), mapper.config.max_row_bytes
    rows = 0
    for block in _jsonl_blocks(paths):
        table = LineBlock(block).table(limit, first_line=rows == 0, reader=reader)
        rows += 0 if table is None else table.num_rows
    return rows


def _vm_hwm_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(modes: list[str], kind: str, paths: list[Path]) -> list[Run]:
    """The runs of one child per mode, each pinned to its core and all started at once once all have imported."""
    pipe = subprocess.PIPE
    procs = [subprocess.Popen([sys.executable, __file__, "--child", mode, kind, *map(str, paths)], stdin=pipe,
                              stdout=pipe, text=True) for mode in modes]  # fmt: skip
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    runs = [json.loads(proc.communicate()[0].strip().splitlines()[-1]) for proc in procs]
    if any(proc.returncode for proc in procs):
        raise RuntimeError(f"a measured run failed: {[proc.returncode for proc in procs]}")
    return runs


def _rate(run: Run) -> float:
    return run["rows"] / run["cpu_seconds"]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shard-rows", type=int, default=500_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="keep the generated logs under bench/out/")
    parser.add_argument("--logs", type=Path, help="measure the logs a --keep run left in this folder")
    parser.add_argument("--row-path", action="store_true", help="also time the row-by-row path (slow)")
    parser.add_argument("--workers", type=int, default=1, help="also read all shards with 1 and with this many workers")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.child[2:])
        return 0
    from judgewatch.testing.gateway_log import write_gateway_logs

    (HERE / "out").mkdir(exist_ok=True)
    folder = args.logs or Path(tempfile.mkdtemp(prefix="sampling-", dir=HERE / "out"))
    try:
        if args.logs is None:
            t0 = time.perf_counter()
            write_gateway_logs(folder, args.shards, args.shard_rows)
            took = time.perf_counter() - t0
            print(f"generated {args.shards} x {args.shard_rows:,} rows (JSONL + Parquet) in {took:.0f}s")
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min) before measuring")
        print("JSONL blocks: pyarrow, an explicit schema of the mapped paths (traffic/columnar/line_scan.py)")
        print(f"{'format':8} {'path':8} {'rows':>10} {'rows/s cpu':>11} {'rows/s wall':>12} {'picks':>7} "
              f"{'dups':>7} {'peak RSS MiB':>13}  PII scrubbed")  # fmt: skip
        ok, final, growths = True, {}, []
        for kind in ("parquet", "jsonl"):
            files = sorted(folder.glob(f"log-*.{kind}"))
            (small,), (large,) = measure(["sample"], kind, files[:1]), measure(["sample"], kind, files)
            (ceiling,) = measure(["ceiling"], kind, files)
            runs = [("sample", small), ("sample", large), ("ceiling", ceiling)]
            scanner = measure(["scanner"], kind, files)[0] if kind == "jsonl" else None
            if scanner is not None:
                runs.append(("scanner", scanner))
            if args.row_path:
                runs.append(("rows", measure(["rows"], kind, files[:1])[0]))
            for mode, r in runs:
                print(
                    f"{kind:8} {mode:8} {r['rows']:>10,} {_rate(r):>11,.0f} {r['rows'] / r['wall_seconds']:>12,.0f}"
                    f" {r['picks']:>7,} {r['duplicates']:>7,} {r['peak_rss_kib'] / 1024:>13.0f}  {r['pii']}"
                )
            rate, growth = _rate(large), large["peak_rss_kib"] / small["peak_rss_kib"]
            of_gib = large["peak_rss_kib"] / (1024 * 1024)
            print(f"{kind:8} ratio rows/s / limit {LIMITS[kind]:,}  = {rate / LIMITS[kind]:.3f} (limit 1.0)")
            print(f"{kind:8} ratio rows/s / plain reader   = {rate / _rate(ceiling):.3f} (the ceiling is 1.0)")
            if scanner is not None and scanner["rows"]:
                print(f"{kind:8} ratio rows/s / line scanner   = {rate / _rate(scanner):.3f} (scanner alone = 1.0)")
            print(f"{kind:8} ratio RSS(large)/RSS(small)   = {growth:.3f} (limit {RSS_GROWTH_LIMIT})")
            print(f"{kind:8} ratio peak RSS / 1 GiB        = {of_gib:.3f} (limit {RSS_GIB_LIMIT})")
            ok = ok and rate >= LIMITS[kind] and growth <= RSS_GROWTH_LIMIT and of_gib <= RSS_GIB_LIMIT
            final[kind] = rate
            growths.append(growth)
        if args.workers > 1:
            ok = _side_by_side(folder, args.workers) and ok
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min) after measuring")
        print("PASS" if ok else "FAIL")
        print(f"parquet {final['parquet']:.0f} rows/s jsonl {final['jsonl']:.0f} rows/s rss_ratio {max(growths):.3f}")
        return 0 if ok else 1
    finally:
        if not args.keep and args.logs is None:
            shutil.rmtree(folder, ignore_errors=True)


def _side_by_side(folder: Path, workers: int) -> bool:
    """Each format's rows/s (wall) with 1 and with `workers` workers, each over its limit, and the cores the machine
    gave them (CPU seconds over wall: other jobs' load shows there); True when both limits are met."""
    print(f"{'format':8} {'workers':>7} {'rows/s wall':>12} {'/ limit':>18} {'cores used':>10} {'picks':>7}")
    ok = True
    for kind in ("parquet", "jsonl"):
        files, rates, picks = sorted(folder.glob(f"log-*.{kind}")), [], []
        for w in (1, workers):
            runs = measure([f"part:{k}/{w}" for k in range(w)], kind, files)
            wall = max(r["ended"] for r in runs) - min(r["started"] for r in runs)
            rate, cores = sum(r["rows"] for r in runs) / wall, sum(r["cpu_seconds"] for r in runs) / wall
            limit = LIMITS[kind] * (1 if w == 1 else w * WORKER_SHARE)
            rates.append(rate)
            picks.append(sum(r["picks"] for r in runs))
            print(
                f"{kind:8} {w:>7} {rate:>12,.0f} {rate / limit:>7.3f} of {limit:>7,.0f} {cores:>10.2f} {picks[-1]:>7,}"
            )
            ok = ok and rate >= limit and picks[-1] == picks[0]
        print(f"{kind:8} speed-up {workers} workers / 1 = {rates[1] / rates[0]:.2f}")
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
