"""Review queue latency at scale: "lease next item" and "submit" with 20 concurrent reviewers, 1M items.

A throwaway PostgreSQL schema of 1,000,000 review items; reviewer threads call `ReviewQueue.lease_next` and
`.submit` alone, concurrently, with a compressed think time and as the app's handlers (bench/README.md, "Review
queue at 1M items"). Limit: p99 <= 100 ms per call (a key press answered within 100 ms feels instant).

    .venv/bin/python bench/review_queue.py [--items 1000000] [--ops 1000] [--reviewers 20] [--url URL] [--keep]
        [--schema NAME]    # reuse a schema kept by --keep (no build), e.g. to run two versions on the same data
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time
import uuid
from functools import partial

import numpy as np
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from judgewatch.review.accounts import hash_password
from judgewatch.review.queue import ReviewQueue
from judgewatch.storage.migrations import migrate
from judgewatch.testing.store import postgres_schema, postgres_url
from judgewatch.testing.threads import run_together

LIMIT_MS = 100.0
SCORES = {"relevance": 4, "faithfulness": 3, "completeness": 5}

POPULATE = [
    """INSERT INTO interaction (id, source, source_id, question, answer, reference_answer, reference_facts, context,
           language, tier, created_at, metadata)
       SELECT md5('i' || g), 'bench', g::text, 'Question number ' || g || ': what does the reference say?',
              'An answer of moderate length for item ' || g || ', written to look like a real reply.',
              'The reference answer ' || g, '["a reference fact"]'::jsonb, '[]'::jsonb, 'en',
              CASE WHEN g % 2 = 0 THEN 'quantized' ELSE 'full' END, now(), '{}'::jsonb
       FROM generate_series(1, :n) AS g""",
    """INSERT INTO verdict (id, interaction_id, item_id, status, reason, scores, not_applicable, judge_kind,
           judge_name, judge_config_hash, rubric_name, rubric_version, rubric_hash, overall, latency_ms,
           prompt_tokens, completion_tokens, cached_tokens, attempts, fallback_from, created_at, updated_at)
       SELECT md5('v' || g), md5('i' || g), g::text, 'scored', 'bench verdict',
              '{"relevance": 4, "faithfulness": 4, "completeness": 3}'::jsonb, '[]'::jsonb, 'fake', 'bench-judge',
              'cfg', 'answer_quality', '1.0.0', 'rubrichash', 3.67, 100, 300, 40, 0, 1, '[]'::jsonb, now(), now()
       FROM generate_series(1, :n) AS g""",
    """INSERT INTO review_item (id, verdict_id, interaction_id, rubric_name, rubric_version, inclusion_probability,
           pick_reason, labels_needed, labels_done, state, created_at)
       SELECT md5('r' || g), md5('v' || g), md5('i' || g), 'answer_quality', '1.0.0', 0.1, 'uniform',
              CASE WHEN g % 10 = 0 THEN 2 ELSE 1 END,
              CASE WHEN g <= :done THEN 1 WHEN g % 10 = 0 AND g <= :done + 50000 THEN 1 ELSE 0 END,
              CASE WHEN g <= :done THEN 'done' ELSE 'available' END,
              timestamp '2026-01-01' + g * interval '1 millisecond'
       FROM generate_series(1, :n) AS g""",
    """INSERT INTO review_label (review_item_id, reviewer, scores, flagged, comment, started_at, submitted_at,
           duration_ms, rubric_version_shown, via)
       SELECT md5('r' || g), 'bench-' || lpad((g % :reviewers)::text, 2, '0'), '{"relevance": 4}'::jsonb, false, '',
              timestamp '2026-01-01' + g * interval '1 second', timestamp '2026-01-01' + g * interval '1 second',
              20000, '1.0.0', 'replay'
       FROM generate_series(1, :n) AS g
       WHERE g <= :done OR (g % 10 = 0 AND g <= :done + 50000)""",
]

PICK_PLAN = (
    "EXPLAIN SELECT id FROM review_item WHERE state = 'available' AND NOT EXISTS (SELECT 1 FROM "
    "review_label l WHERE l.review_item_id = review_item.id AND l.reviewer = 'bench-00') "
    "ORDER BY created_at, id LIMIT 1"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--ops", type=int, default=1000, help="lease+submit cycles in total")
    parser.add_argument("--reviewers", type=int, default=20)
    parser.add_argument("--url", default=postgres_url())
    parser.add_argument("--keep", action="store_true", help="keep the bench schema afterwards")
    parser.add_argument("--schema", help="an existing bench schema (kept by --keep) to run on, without building")
    parser.add_argument("--think", default="5,30", help="think time range in real seconds (min,max)")
    parser.add_argument("--time-scale", type=float, default=20.0, help="think times are divided by this")
    parser.add_argument("--profile", type=int, default=0, help="only profile N cycles of one reviewer (cProfile)")
    args = parser.parse_args()

    schema = args.schema or f"jw_bench_review_{uuid.uuid4().hex[:8]}"
    with postgres_schema(args.url, schema, keep=args.keep or args.schema is not None) as url:
        # A pool as large as the number of reviewers: the bench measures the database, not a wait for a connection.
        engine = create_engine(
            make_url(url).set(drivername="postgresql+psycopg"), pool_size=args.reviewers + 2, pool_pre_ping=True
        )
        try:
            bench(engine, args, schema)
        finally:
            engine.dispose()


def bench(engine: Engine, args: argparse.Namespace, schema: str) -> None:
    names = [f"bench-{i:02d}" for i in range(args.reviewers)]
    low, high = (float(x) / args.time_scale for x in args.think.split(","))
    if args.schema is not None:
        if args.profile:
            profile(ReviewQueue(engine, lease_seconds=600), names[0], args.profile)
        else:
            run(engine, names, args.ops, (low, high))
        return
    migrate(engine)
    done = int(args.items * 0.3)
    started = time.perf_counter()
    with engine.begin() as conn:
        password = hash_password("bench password")
        conn.execute(
            text(
                "INSERT INTO reviewer (name, password_hash, active, can_adjudicate, created_at) "
                "VALUES (:name, :hash, true, false, now())"
            ),
            [{"name": n, "hash": password} for n in names],
        )
        for statement in POPULATE:
            conn.execute(text(statement), {"n": args.items, "done": done, "reviewers": args.reviewers})
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    print(f"built {args.items:,} review items ({done:,} done) in {time.perf_counter() - started:.0f} s")
    if args.keep:
        print(f"schema kept: {schema}")
    run(engine, names, args.ops, (low, high))


def run(engine: Engine, names: list[str], ops: int, think: tuple[float, float]) -> None:
    queue = ReviewQueue(engine, lease_seconds=600)
    with engine.connect() as conn:
        plan = conn.execute(text(PICK_PLAN)).scalars().all()
    print("plan of the pick:", " / ".join(p.strip() for p in plan[:3]))
    report(queue, names[:1], min(100, ops), "1 reviewer alone (no queueing)")
    report(queue, names, ops, f"{len(names)} concurrent reviewers, no think time")
    title = f"{len(names)} concurrent reviewers, think time {think[0]:.2f}-{think[1]:.2f} s (5-30 s compressed)"
    report(queue, names, max(1, ops // 3), title, think=think)
    # Two more measures, the ones above unchanged: the first concurrent run opens a connection per reviewer
    # (and plans every statement on it), which a served app pays once after it starts; and the app's handlers
    # also redraw the progress line after each lease and each submit (review_ui.queue_page), so a key press
    # waits for that as well.
    report(queue, names, ops, f"{len(names)} concurrent reviewers, no think time, again (connections open)")
    title = f"{len(names)} concurrent reviewers, no think time, as the app's handlers: lease/submit + progress"
    report(queue, names, ops, title, with_progress=True)
    timings = []
    for _ in range(20):
        t0 = time.perf_counter()
        queue.progress(names[0])
        timings.append((time.perf_counter() - t0) * 1000)
    print(f"progress line (done today, left capped at 100): median {statistics.median(timings):.1f} ms")


def profile(queue: ReviewQueue, name: str, ops: int) -> None:
    """Where one reviewer's lease+submit cycle spends its time: cProfile's own time per package, per cycle."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(ops):
        item = queue.lease_next(name)
        assert item is not None
        queue.submit(name, item.item_id, SCORES, rubric_version_shown=item.rubric_version)
    profiler.disable()
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, dict[object, object]]]
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    shares: dict[str, float] = {}
    for (path, _, func), (_, _, own, _, _) in stats.items():
        if "{method 'execute'" in func or "wait" in func or "poll" in func or "select" in func:
            part = "waiting on PostgreSQL (socket, wait)"
        else:
            part = next(
                (pkg for pkg in ("sqlalchemy/orm", "sqlalchemy", "sqlmodel", "psycopg", "pydantic", "judgewatch")
                 if f"/{pkg}/" in path),
                "other Python",
            )  # fmt: skip
        shares[part] = shares.get(part, 0.0) + own
    total = sum(shares.values())
    print(f"profile of {ops} cycles of one reviewer: {total / ops * 1000:.2f} ms per cycle")
    for part, own in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {part:<40} {own / ops * 1000:6.2f} ms per cycle ({own / total:.0%})")


def report(
    queue: ReviewQueue,
    names: list[str],
    ops: int,
    title: str,
    *,
    think: tuple[float, float] = (0.0, 0.0),
    with_progress: bool = False,
) -> None:
    """Print the latencies of `ops` lease+submit cycles shared by one thread per reviewer (reading for `think`
    seconds between the lease and the submit, uniform); each call timed as the app sees it, with the progress line
    read after it when `with_progress` (as the app's handlers do)."""
    lease_ms: list[float] = []
    submit_ms: list[float] = []
    remaining = [ops]
    guard = threading.Lock()

    def reviewer(name: str) -> None:
        rng = random.Random(name)
        while True:
            with guard:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
            t0 = time.perf_counter()
            item = queue.lease_next(name)
            if with_progress:
                queue.progress(name)
            leased = time.perf_counter()
            assert item is not None
            if think[1] > 0:
                time.sleep(rng.uniform(*think))
            t1 = time.perf_counter()
            queue.submit(name, item.item_id, SCORES, rubric_version_shown=item.rubric_version)
            if with_progress:
                queue.progress(name)
            t2 = time.perf_counter()
            with guard:
                lease_ms.append((leased - t0) * 1000)
                submit_ms.append((t2 - t1) * 1000)

    started = time.perf_counter()
    errors = run_together([partial(reviewer, n) for n in names], timeout_s=3600)
    if errors:
        raise errors[0]
    wall = time.perf_counter() - started
    print(f"{title}: {len(lease_ms)} lease+submit cycles in {wall:.1f} s ({len(lease_ms) / wall:.0f} cycles/s)")
    for label, values in (("lease next item", lease_ms), ("submit", submit_ms)):
        median, p99 = statistics.median(values), float(np.percentile(values, 99, method="nearest"))
        print(
            f"  {label:<16} median {median:6.1f} ms   p99 {p99:6.1f} ms   / limit {LIMIT_MS:.0f} ms: "
            f"median {median / LIMIT_MS:.2f}, p99 {p99 / LIMIT_MS:.2f}"
        )


if __name__ == "__main__":
    main()
