"""`judgewatch sample`: prints what a run read, picked, quarantined, judged and routed; exit 2 when it cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from judgewatch.cli.sample_cmd import standalone_app
from judgewatch.settings import REPO_ROOT
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.storage.watermarks import SourceLease

DEMO_SOURCE = REPO_ROOT / "examples" / "traffic" / "demo_source.yaml"


def run(*args: str) -> Result:
    return CliRunner().invoke(standalone_app(), ["sample", "--source", str(DEMO_SOURCE), *args])


def line(output: str, label: str) -> str:
    return next(x for x in output.splitlines() if x.startswith(label))


def test_dry_run_prints_what_it_read_picked_and_quarantined_and_stores_nothing(db: str, tmp_path: Path) -> None:
    result = run("--dry-run", "--database-url", db)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("DRY RUN: nothing stored, nothing judged. source halluqa-demo")
    assert line(result.output, "read").split()[1] == "2702"
    picked = line(result.output, "picked")
    assert "full " in picked and "quantized " in picked and "at rate 0.1" in picked
    assert line(result.output, "filtered").split()[1] == "4" and "answer_length: 4" in result.output
    assert "quarantined  2 (invalid_json: 1, missing_response: 1)" in result.output
    assert "halluqa_gateway_log.jsonl:901 (invalid_json)" in result.output
    assert "halluqa_gateway_log.jsonl:1801 (missing_response)" in result.output
    assert not [x for x in result.output.splitlines() if x.startswith(("stored", "judged", "routed"))]
    assert "watermark    not saved (dry run): read " in result.output
    assert not (tmp_path / "jw.db").exists()


def test_json_output_is_the_report(db: str) -> None:
    result = run("--dry-run", "--database-url", db, "--json", "--since", "2024-06-06")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["dry_run"] and report["read"] == 2702 and report["filtered_by"]["time"] > 1000
    assert report["started_from"] == "--since 2024-06-06T00:00:00+00:00"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "--since 'yesterday': expected an age (30m, 24h, 7d, 2w) or an ISO 8601"),
        (["--source", "/nonexistent/source.yaml"], "cannot read"),
    ],
)
def test_a_run_that_cannot_start_exits_2_with_one_line(db: str, args: list[str], message: str) -> None:
    result = run("--dry-run", "--database-url", db, *args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.usefixtures("prefect_server")
def test_a_run_prints_judged_and_routed_counts_then_nothing_new(db: str) -> None:
    first = run("--database-url", db, "--judge", "reference")
    assert first.exit_code == 0, first.output
    picked = int(line(first.output, "picked").split()[1])
    assert line(first.output, "stored").split()[1] == str(picked)
    assert line(first.output, "judged").startswith(f"judged       {picked} (scored: {picked})")
    routed = line(first.output, "routed")
    n_routed = int(routed.split()[1])
    assert 0 < n_routed < picked and f"uniform {n_routed}, targeted 0" in routed
    assert "watermark    saved: read " in first.output and "halluqa_gateway_log.jsonl up to row 2702" in first.output
    second = run("--database-url", db, "--judge", "reference")
    assert second.exit_code == 0, second.output
    assert "read         0 rows, from the stored watermark" in second.output
    assert line(second.output, "judged").startswith("judged       0,")
    assert "watermark    unchanged: read " in second.output


@pytest.mark.usefixtures("prefect_server")
def test_a_source_held_by_another_run_exits_2(db: str) -> None:
    engine = make_engine(db)
    migrate(engine)
    with SourceLease(engine, "halluqa-demo", owner="worker-7"):
        result = run("--database-url", db, "--judge", "reference")
    engine.dispose()
    assert result.exit_code == 2
    assert "source 'halluqa-demo'" in result.output and "worker-7" in result.output
