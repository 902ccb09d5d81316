"""No NUL reaches PostgreSQL, whatever its source: a judge reply, a reviewer comment, a JSON payload.

PostgreSQL refuses U+0000 in text and jsonb; before the storage boundary cleaned every value, one judge reply
with a NUL in its reason aborted the whole run (0 of 20 stored) and a reviewer's comment with one lost the label.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import Engine, select
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.runs import EvalRun
from judgewatch.storage.verdicts import VerdictRecord
from judgewatch.testing.simulator import run_simulator_in_thread


def test_a_judge_reply_with_nul_in_its_reason_is_stored_without_it(db_url: str, tmp_path: Path) -> None:
    rows = [{"id": f"n{i}", "question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(20)]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with run_simulator_in_thread(latency_ms=0, mode="nul") as sim:
        args = ["judge", "--rubric", "answer_quality", "--input", str(items), "--output", str(tmp_path / "out.jsonl")]
        args += ["--judge", sim.base_url, "--model", "sim-judge", "--no-fallback-reference", "--database-url", db_url]
        result = CliRunner().invoke(get_app(), args)
    assert result.exit_code == 0, result.output
    engine = make_engine(db_url)
    try:
        with session_scope(engine) as session:
            reasons = [v.reason for v in session.scalars(select(VerdictRecord)).all()]
            (run,) = session.scalars(select(EvalRun)).all()
    finally:
        engine.dispose()
    assert len(reasons) == 20 and run.status == "completed"
    assert all(r and "after NUL" in r and "\x00" not in r for r in reasons)


def test_json_and_text_columns_drop_nul_on_both_back_ends(engine: Engine) -> None:
    with session_scope(engine) as session:
        run = EvalRun(
            id="r1", kind="judge", name="nul\x00name", identity="i", params={"note\x00": ["a\x00b", {"c": "d\x00"}]}
        )
        session.add(run)
    with session_scope(engine) as session:
        (stored,) = session.scalars(select(EvalRun)).all()
    assert stored.name == "nulname"
    assert stored.params == {"note": ["ab", {"c": "d"}]}


def test_a_sqlite_store_opens_without_importing_psycopg(tmp_path: Path) -> None:
    # psycopg's dumpers are made on the first PostgreSQL connection: a SQLite store's commands start without it
    url = f"sqlite:///{tmp_path / 'jw.db'}"
    script = (
        "import sys\n"
        "from judgewatch.cli._store import open_store\n"
        f"open_store({url!r}).dispose()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'psycopg'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
