"""Benchmark: opening the Tiers page on a store with 1,000,000 verdicts reads a snapshot instead of computing.

Times the Tiers page (both series), the Calibration page and `report tiers --format json` over the snapshots the
calibration flow stores, best of REPEATS. Prints "ratio X (slowest page load / LIMIT seconds)": at most 1 passes.

Run: .venv/bin/python bench/tiers_page_load.py [--verdicts 1000000] [--keep PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import Engine

from judgewatch.calibration.page_snapshots import save_views
from judgewatch.calibration.report_render import write_blocks
from judgewatch.cli.report_cmd import stored_report
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.timing import best_of
from review_ui.calibration_page import calibration_view
from review_ui.tiers_page import tiers_view

LIMIT = 1.0  # seconds for the page's read
REPEATS = 5
CHUNK = 50_000
SECOND = 10_000  # verdicts of the older, second judge series
SERIES = ("benchhash", "benchhash-older")


def fill(db: Path, verdicts: int) -> None:
    """Insert the interactions, verdicts and criterion scores directly (bulk, one transaction per chunk)."""
    engine = make_engine(f"sqlite:///{db}")
    migrate(engine)
    engine.dispose()
    import sqlite3

    rng = np.random.default_rng(1)
    now = datetime.now(UTC)
    conn = sqlite3.connect(db)
    total = verdicts + SECOND
    for start in range(0, total, CHUNK):
        n = min(CHUNK, total - start)
        tiers = rng.choice(["full", "int4"], n)
        routes = rng.choice(["chat", "code"], n)
        scores = rng.integers(1, 6, n)
        ages = rng.integers(0, 30 * 86_400, n)
        inter, verd, crit = [], [], []
        for k in range(n):
            i = start + k
            iid, vid = f"i{i:031d}", f"v{i:031d}"
            tier, route = str(tiers[k]), str(routes[k])
            config = SERIES[0] if i < verdicts else SERIES[1]
            if i >= verdicts:  # the older series: its verdicts were stored a day before the others
                ages[k] += 86_400
            meta = json.dumps({"inclusion_probability": 0.1, "stratum": f"{tier}/{route}"})
            at = (now - timedelta(seconds=int(ages[k]))).isoformat()
            inter.append((iid, f"traffic:bench-{tier}", str(i), "q", "an answer", tier, route, "en", at, meta))
            verd.append((vid, iid, str(i), int(scores[k]), config, at, at))
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
            " VALUES (?,?,?,'scored',?,'','{}','[]','bench','bench-judge',?,'answer_quality','1.0.0',"
            "'rubrichash',0,0,0,0,1,'[]',?,?)",
            verd,
        )
        conn.executemany(
            "INSERT INTO criterion_score (verdict_id, criterion, score, not_applicable) VALUES (?,?,?,0)", crit
        )
        conn.commit()
    conn.execute(
        "INSERT INTO gate_decision (id, release, exit_code, outcome, summary, reasons, notes, baselines, run_ids,"
        " judge_config_hash, detail, decided_at) VALUES ('g1', 'r1', 0, 'pass', 'pass', '[]', '[]', '{}', '[]', ?,"
        " '{}', ?)",
        (SERIES[0], now.isoformat()),
    )
    conn.commit()
    conn.close()


def report_from_snapshot(engine: Engine, path: Path) -> None:
    """What `judgewatch report tiers --since 90d --format json` does when the flow stored that period."""
    stored = stored_report(engine, "answer_quality", "90d", None)
    assert stored is not None, "no snapshot to write the report from"
    content, document, title = stored
    write_blocks(content, document, path, "json", title=title)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="build the store here and keep it (default: a temp dir)")
    args = parser.parse_args()
    os.environ.setdefault("JUDGEWATCH_BASELINE_TIER", "full")  # the service names its baseline: the gaps are computed
    with tempfile.TemporaryDirectory() as tmp:
        db = args.keep or Path(tmp) / "bench.db"
        if not db.exists():
            started = time.perf_counter()
            fill(db, args.verdicts)
            print(f"store: {args.verdicts} verdicts written in {time.perf_counter() - started:.0f} s")
        engine = make_engine(f"sqlite:///{db}")
        started = time.perf_counter()
        stored = save_views(engine, rubric_name="answer_quality", periods=("90d",))
        compute = time.perf_counter() - started
        view = tiers_view(engine, since="90d")
        assert "Computed " in view.header and len(view.estimates) == 2, view.header
        assert [h for _, h in view.series] == list(SERIES) and view.shown == SERIES[0], view.series
        assert "the judge the latest gate used" in view.header, view.header
        calls: dict[str, Callable[[], object]] = {
            "Tiers page, default series": lambda: tiers_view(engine, since="90d"),
            "Tiers page, other series picked": lambda: tiers_view(engine, since="90d", series=SERIES[1]),
            "Calibration page": lambda: calibration_view(engine, since="90d"),
            "report tiers --since 90d --format json": lambda: report_from_snapshot(engine, Path(tmp) / "tiers.json"),
        }
        loads = {name: best_of(call, REPEATS) for name, call in calls.items()}
        engine.dispose()
    print(f"computing the pages' numbers (once a day, in the calibration flow; {stored} views): {compute:.1f} s")
    for name, seconds in loads.items():
        print(f"{name}, best of {REPEATS}: {seconds * 1000:.0f} ms")
    slowest = max(loads.values())
    print(f"ratio {slowest / LIMIT:.3f} (slowest page load / {LIMIT:.0f} s limit)")


if __name__ == "__main__":
    main()
