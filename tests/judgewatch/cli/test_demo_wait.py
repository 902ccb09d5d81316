"""`judgewatch demo --judge-wait`: the demo waits for a vLLM judge that `make demo` started beside the gate steps."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from judgewatch.cli.demo_run import wait_for_judge
from judgewatch.settings import REPO_ROOT


def answers_after(calls: int) -> tuple[list[int], Callable[[], bool]]:
    seen: list[int] = []

    def healthy() -> bool:
        seen.append(len(seen))
        return len(seen) > calls

    return seen, healthy


def test_a_judge_that_comes_up_while_waiting_is_used_and_the_wait_is_said_once() -> None:
    seen, healthy = answers_after(3)
    lines: list[str] = []
    assert wait_for_judge(healthy, wait_s=5, echo=lines.append, poll_s=0.01)
    assert len(seen) == 4
    assert len(lines) == 2 and lines[0].startswith("   waiting up to 5 s") and lines[1].startswith("   up after")


def test_a_judge_that_never_comes_up_is_given_up_after_the_wait() -> None:
    seen, healthy = answers_after(10**9)
    lines: list[str] = []
    assert not wait_for_judge(healthy, wait_s=0.05, echo=lines.append, poll_s=0.01)
    assert len(seen) >= 2 and len(lines) == 1


def test_without_a_wait_the_judge_is_asked_once() -> None:
    seen, healthy = answers_after(1)
    lines: list[str] = []
    assert not wait_for_judge(healthy, wait_s=0, echo=lines.append)
    assert seen == [0] and lines == []


def test_judge_serve_wait_fails_fast_when_nothing_was_started(tmp_path: Path) -> None:
    """`scripts/judge_serve.sh wait` says the judge was not started instead of polling for minutes."""
    env = {"PATH": "/usr/bin:/bin", "JUDGEWATCH_JUDGE_HOME": str(tmp_path), "JUDGEWATCH_JUDGE_PORT": "1"}
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "judge_serve.sh"), "wait", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "not started on 127.0.0.1:1" in done.stderr


def test_the_demo_says_how_long_make_demo_took_in_all_when_make_says_when_it_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    from judgewatch.cli.demo_run import _since_make

    monkeypatch.delenv("JUDGEWATCH_MAKE_STARTED", raising=False)
    assert _since_make() == ""
    monkeypatch.setenv("JUDGEWATCH_MAKE_STARTED", str(int(time.time()) - 462))
    assert _since_make().startswith(" (make demo: 46") and "set-up included" in _since_make()


def test_the_demo_says_a_trust_finding_once_warnings_held_back_errors_kept(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from judgewatch.cli.demo_run import said_here

    log = logging.getLogger("judgewatch.trust.runs")
    with caplog.at_level(logging.INFO), said_here("judgewatch.trust.runs"):
        log.warning("judge trust: NOT TRUSTWORTHY")
        log.error("the judge stays unmeasured in this run")
    assert [r.getMessage() for r in caplog.records] == ["the judge stays unmeasured in this run"]
    with caplog.at_level(logging.INFO):
        log.warning("said again after the step")
    assert caplog.records[-1].getMessage() == "said again after the step"


def test_the_demo_wraps_long_lines_and_says_a_note_repeated_on_every_release_once() -> None:
    from judgewatch.cli.demo_run import WIDTH, Outcome, _show

    trust = (
        "judge trust: judge reference:reference-overlap (config b3da66e1673e): trustworthy ("
        + "; ".join(
            f"known answers set{k}: faithfulness: AUROC 0.94 [0.87, 1.00], gap +2.98, unscored 0%, n=40"
            for k in range(5)
        )
        + ")"
    )  # the ~560-character note the gate adds to every release's result
    summary = "REGRESSION (exit 1, margin 0.25): " + "; ".join(
        f"tier quantized c{k} -0.713 [-1.087, -0.412]" for k in range(5)
    )
    lines: list[str] = []
    seen: dict[str, str] = {}
    for release in ("r1", "r2", "r3"):
        result = {"exit_code": 1, "summary": summary, "notes": [trust], "report": f"/tmp/{release}.md"}
        _show(lines.append, Outcome(release, "reference judge", 1, result, 1.0), seen)
    assert len(trust) > 400 and all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    text = "\n".join(lines)
    assert text.count("AUROC") == 5  # the note once, whole (wrapped), for r1
    assert lines.count("   note: judge trust: as for release r1") == 2  # r2 and r3 name it
    lines.clear()
    _show(lines.append, Outcome("r4", "reference judge", 1, result, 1.0), {trust: "measured above"})
    assert "   note: judge trust: as measured above" in lines
    assert text.count("tier quantized c4") == 3  # each release's own summary stays


def test_a_reason_the_summary_already_states_is_not_printed_again() -> None:
    from judgewatch.cli.demo_run import Outcome, _show

    reason = "judge not trustworthy: judge openai:smollm2 (config ca5f0a20239a): NOT TRUSTWORTHY (AUROC 0.50)"
    result = {"exit_code": 2, "summary": f"COULD NOT EVALUATE (exit 2): {reason}", "reasons": [reason], "report": "r"}
    lines: list[str] = []
    _show(lines.append, Outcome("r3", "judge smollm2", 2, result, 1.0), {})
    assert " ".join(lines).count("AUROC 0.50") == 1 and not any("reason:" in line for line in lines), lines
    other = {**result, "reasons": ["endpoint quantized unreachable"]}
    lines.clear()
    _show(lines.append, Outcome("r4", "reference judge", 2, other, 1.0), {})
    assert "   reason: endpoint quantized unreachable" in lines  # a reason the summary does not hold stays


def test_the_demos_closing_hint_creates_an_account_that_sees_the_pages_it_names_and_names_judge_down() -> None:
    from judgewatch.cli.demo_cmd import HINT_ROLE, closing_hint
    from judgewatch.review.accounts import AGGREGATE_ROLES, Role

    lines = closing_hint(49, 0.1)
    text = "\n".join(lines)
    assert f"reviewer add YOUR_NAME --role {HINT_ROLE}" in text and "Judges and Tiers pages" in text
    assert Role(HINT_ROLE) in AGGREGATE_ROLES  # the Judges and Tiers pages' require_viewer lets this role in (§6.4)
    assert "keeps running; `make judge-down` stops it" in lines[-1]  # §6.5
    assert all(len(line) <= 110 for line in lines)


def test_prefect_starts_quiet_and_without_telemetry_unless_the_operator_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The demo and every flow command set these before Prefect is imported: its telemetry banner and INFO lines
    ("Starting temporary server ...") stay out of the demo's output (issue 35 §6.9)."""
    import os

    from judgewatch.cli._flow import prefect_defaults

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_LOGGING_LEVEL"] = "DEBUG"  # the operator's own choice stays
    monkeypatch.setattr(os, "environ", env)
    prefect_defaults()
    assert env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false" and env["PREFECT_LOGGING_LEVEL"] == "DEBUG"
    del env["PREFECT_LOGGING_LEVEL"]
    prefect_defaults()
    assert env["PREFECT_LOGGING_LEVEL"] == "WARNING"
