"""Benchmark: opening the Tiers page on a store with 1,000,000 verdicts reads a snapshot instead of computing.

Builds a SQLite store (migrated by judgewatch) with VERDICTS sampled-traffic interactions over two tiers, one
scored verdict each (one criterion, so the store stays a few hundred MB), then:
1. computes and stores the page's rendering for the default period once (what the calibration flow does daily,
   and what every page open used to cost);
2. times `tiers_view` (what opening the page does now), best of REPEATS.
Prints "ratio X (page load / LIMIT seconds)": at most 1 passes.

Run: .venv/bin/python bench/tiers_page_load.py [--verdicts 1000000] [--keep PATH]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from judgewatch.calibration.view_snapshot import save_views
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from review_ui.tiers_page import tiers_view

LIMIT = 1.0  # seconds for the page's read
REPEATS = 5
CHUNK = 50_000


def fill(db: Path, verdicts: int) -> None:
    """Insert the interactions, verdicts and criterion scores directly (bulk, one transaction per chunk)."""
    engine = make_engine(f"sqlite:///{db}")
    migrate(engine)
    engine.dispose()
    import sqlite3

    rng = np.random.default_rng(1)
    now = datetime.now(UTC)
    conn = sqlite3.connect(db)
    for start in range(0, verdicts, CHUNK):
        n = min(CHUNK, verdicts - start)
        tiers = rng.choice(["full", "int4"], n)
        routes = rng.choice(["chat", "code"], n)
        scores = rng.integers(1, 6, n)
        ages = rng.integers(0, 30 * 86_400, n)
        inter, verd, crit = [], [], []
        for k in range(n):
            i = start + k
            iid, vid = f"i{i:031d}", f"v{i:031d}"
            tier, route = str(tiers[k]), str(routes[k])
            meta = json.dumps({"inclusion_probability": 0.1, "stratum": f"{tier}/{route}"})
            at = (now - timedelta(seconds=int(ages[k]))).isoformat()
            inter.append((iid, f"traffic:bench-{tier}", str(i), "q", "an answer", tier, route, "en", at, meta))
            verd.append((vid, iid, str(i), int(scores[k]), at, at))
            crit.append((vid, "faithfulness", int(scores[k])))
        conn.executemany(
            "INSERT INTO interaction (id, source, source_id, question, answer, tier, route, language, created_at,"
            " metadata, reference_facts, context) VALUES (?,?,?,?,?,?,?,?,?,?,'[]','[]')",
            inter,
        )
        conn.executemany(
            "INSERT INTO verdict (id, interaction_id, item_id, status, overall, reason, scores, not_applicable,"
            " judge_kind, judge_name, judge_config_hash, rubric_name, rubric_version, rubric_hash, latency_ms,"
            " prompt_tokens, completion_tokens, cached_tokens, attempts, fallback_from, created_at, updated_at)"
            " VALUES (?,?,?,'scored',?,'','{}','[]','bench','bench-judge','benchhash','answer_quality','1.0.0',"
            "'rubrichash',0,0,0,0,1,'[]',?,?)",
            verd,
        )
        conn.executemany(
            "INSERT INTO criterion_score (verdict_id, criterion, score, not_applicable) VALUES (?,?,?,0)", crit
        )
        conn.commit()
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="build the store here and keep it (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.keep or Path(tmp) / "bench.db"
        if not db.exists():
            started = time.perf_counter()
            fill(db, args.verdicts)
            print(f"store: {args.verdicts} verdicts written in {time.perf_counter() - started:.0f} s")
        engine = make_engine(f"sqlite:///{db}")
        started = time.perf_counter()
        save_views(engine, rubric_name="answer_quality", periods=("90d",))
        compute = time.perf_counter() - started
        times = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            view = tiers_view(engine, since="90d")
            times.append(time.perf_counter() - started)
        engine.dispose()
    load = min(times)
    assert "Computed " in view.header and len(view.estimates) == 2, view.header
    print(f"computing the page's numbers (once a day, in the calibration flow): {compute:.1f} s")
    print(
        f"opening the page (read the snapshot), best of {REPEATS}: {load * 1000:.0f} ms; {compute / load:.0f}x faster"
    )
    print(f"ratio {load / LIMIT:.3f} (page load / {LIMIT:.0f} s limit)")


if __name__ == "__main__":
    main()
