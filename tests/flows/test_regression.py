"""The post-release regression flow on the embedded defaults: recorded and live tiers, the offline reference judge.

Live tiers talk to a small OpenAI-compatible fake served on 127.0.0.1 by aiohttp (no network). Prefect runs
against a temporary test server (prefect_test_harness) for the whole module.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import func, select, text
from typer.testing import CliRunner

from judgewatch.cli.regress_cmd import standalone_app
from judgewatch.regression.golden import load_golden_set
from judgewatch.regression.serving import write_recorded_answers
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.releases import (
    ReleaseError,
    accept_baseline,
    accepted_baseline,
    declared_baseline_tier,
    get_release_tiers,
    latest_gate_decision,
    record_release_tier,
)
from judgewatch.testing.openai_stub import chat_completion, openai_stub
from judgewatch.testing.quick_demo import QuickDemo

from .conftest import SET, gate

Files = dict[str, Path]


pytestmark = pytest.mark.usefixtures("prefect_server")  # tests/flows/conftest.py: one server per module


@pytest.fixture(scope="module")
def answer_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """good: every item's known-good answer; bad: the known-bad answer on every other item."""
    folder = tmp_path_factory.mktemp("answers")
    items = load_golden_set(SET).items
    good = [(i.id, i.good_answers[0]) for i in items]
    bad = [(i.id, i.bad_answers[0] if n % 2 == 0 else i.good_answers[0]) for n, i in enumerate(items)]
    write_recorded_answers(folder / "good.jsonl", good)
    write_recorded_answers(folder / "bad.jsonl", bad)
    return {"good": folder / "good.jsonl", "bad": folder / "bad.jsonl"}


def read(path: str | Path) -> str:
    return Path(path).read_text(encoding="utf-8")


def recorded(files: dict[str, Path], full: str = "good", quantized: str = "good") -> list[str]:
    return [f"full={files[full]}", f"quantized={files[quantized]}"]


def accept(db: str, release: str) -> None:
    with session_scope(make_engine(db), write=True) as session:
        accept_baseline(session=session, release=release, by="tester")


# What measuring the reference judge before its first gate stores: JUDGEWATCH_TRUST_GATE_ITEMS (20) known-answer
# pairs of halueval_qa_mini (40 answers) and 20 probe items x 12 calls.
MEASURED = 2 * 20 + 12 * 20
REGRESSION_RUN_COUNTS = "SELECT counts FROM eval_run WHERE kind = 'regression'"


def row_counts(db: str) -> dict[str, int]:
    tables = ("interaction", "verdict", "criterion_score", "eval_run", "release_tier", "gate_decision")
    with make_engine(db).connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables}


async def test_first_release_passes_with_a_note_and_is_stored(db: str, tmp_path: Path, answer_files: Files) -> None:
    result = await gate(db, tmp_path, "r1", answers=recorded(answer_files))
    assert result["exit_code"] == 0, result
    assert any("tier full: first release" in n for n in result["notes"])
    with session_scope(make_engine(db)) as session:
        tiers = {r.tier: r for r in get_release_tiers(session=session, release="r1")}
        decision = latest_gate_decision(session=session, release="r1")
        assert set(tiers) == {"full", "quantized"}
        assert tiers["full"].source == f"recorded:{answer_files['good']}"
        assert len(tiers["full"].run_ids) == 1 and tiers["full"].datasets == {SET: load_golden_set(SET).revision}
        assert decision is not None and decision.exit_code == 0 and decision.report_path == result["report"]


async def test_same_answers_pass_and_bad_quantized_answers_regress(
    db: str, tmp_path: Path, answer_files: Files
) -> None:
    first = await gate(db, tmp_path, "r1", answers=recorded(answer_files))
    assert first["exit_code"] == 0
    assert any("no baseline tier declared" in note for note in first["notes"])  # no role, no tier comparison
    accept(db, "r1")
    same = await gate(db, tmp_path, "r2", answers=recorded(answer_files), baseline_tier="full")
    assert same["exit_code"] == 0, same["summary"]
    worse = await gate(db, tmp_path, "r3", answers=recorded(answer_files, quantized="bad"), baseline_tier="full")
    assert worse["exit_code"] == 1, worse["summary"]
    assert {r["tier"] for r in worse["regressions"]} == {"quantized"}
    with session_scope(make_engine(db)) as session:  # the role the report and the Tiers page compare with
        roles = {t.tier: t.baseline for t in get_release_tiers(session=session, release="r3")}
        assert roles == {"full": True, "quantized": None}
        declared = declared_baseline_tier(session=session)
        assert declared is not None and (declared.release, declared.tier) == ("r3", "full")
    faith = next(r for r in worse["regressions"] if r["criterion"] == "faithfulness")
    assert faith["baseline"] == "r1" and faith["high"] < -0.25 and faith["low"] <= faith["estimate"] <= faith["high"]
    assert f"tier quantized faithfulness {faith['estimate']:+.3f}" in worse["summary"]

    report = read(worse["report"])
    assert "# Regression gate: release r3" in report and "## Tier quantized" in report
    regressed = [row for row in report.splitlines() if row.startswith("| faithfulness |") and "| REGRESSED |" in row]
    assert len(regressed) == 1 and f"{faith['estimate']:+.3f}" in regressed[0]
    baseline_mean, candidate_mean = (float(v) for v in re.findall(r"(\d\.\d\d) \(r[13]\)", regressed[0]))
    assert baseline_mean >= 4.5 > candidate_mean  # r1's good answers score near 5, r3's bad quantized ones do not
    assert "## Tier gap: quantized vs full" in report and "### Worst items" in report
    assert "judge: reference:reference-overlap" in report and "rubric: answer_quality" in report
    data = json.loads(read(worse["report_json"]))
    assert data["gate"]["exit_code"] == 1 and data["tiers"][1]["evaluation"]["baseline_release"] == "r1"
    # each paired criterion states the drop it catches with 80% probability, in the table and the JSON
    power = {(p["tier"], p["criterion"]): p for p in data["gate"]["power"]}
    assert {c for _, c in power} == {"relevance", "faithfulness", "completeness"} and power[
        ("quantized", "faithfulness")
    ]["n"] == 40
    assert all(p["detectable_drop"] >= 0.25 for p in power.values())  # the margin plus what n pairs cannot resolve
    assert (
        "detectable drop (80%)" in report
        and f"| {power[('quantized', 'faithfulness')]['detectable_drop']:.2f} |" in regressed[0]
    )
    assert data["tiers"][1]["worst"][0]["delta"] < 0

    # The same golden items judged pairwise in both orders: quantized's known-bad answers lose to full's.
    assert "## Tier preference on the same items: quantized vs full" in report
    assert "Pairwise judge trust: " in report  # the judge the preference rests on, and what it measured
    (pref,) = data["preferences"]
    shares = pref["shares"]
    assert (pref["candidate"], pref["reference"], pref["dataset"], pref["pairs"]) == ("quantized", "full", SET, 40)
    assert data["pairwise_judge"]["name"] == "reference-overlap" and pref["unscored"] == 0
    assert pref["estimand"] == "tier_preference_same_items"
    assert shares["worse"]["n"] >= 15 and shares["better"]["n"] == 0 and shares["p_value"] < 0.001
    assert shares["worse"]["low"] < shares["worse"]["estimate"] < shares["worse"]["high"]
    assert shares["net"]["high"] < 0
    same_data = json.loads(read(same["report_json"]))["preferences"][0]["shares"]
    assert same_data["tied"]["n"] == 40 and same_data["p_value"] is None  # identical answers: every pair tied


async def test_rerunning_a_release_resumes_and_stores_nothing_twice(
    db: str, tmp_path: Path, answer_files: Files
) -> None:
    first = await gate(db, tmp_path, "r1", answers=recorded(answer_files, quantized="bad"), baseline_tier="full")
    before = row_counts(db)
    with make_engine(db).connect() as conn:
        verdict_ids = set(conn.execute(text("SELECT id FROM verdict")).scalars())
    again = await gate(db, tmp_path, "r1", answers=recorded(answer_files, quantized="bad"), baseline_tier="full")
    assert row_counts(db) == before  # the judge's trust measured once, before the first gate: cached since
    # 40 golden items x 2 tiers, plus the 40 quantized-vs-full pairs and their pairwise verdicts; and the judge's
    # measurement before the first gate (JUDGEWATCH_TRUST_GATE_ITEMS = 20 pairs: 40 known answers, 20 x 12 probes)
    assert before["interaction"] == before["verdict"] == 120 + MEASURED and before["gate_decision"] == 1
    assert "judge measured before this gate" in " ".join(first["notes"])
    assert not any("judge measured" in note for note in again["notes"])
    with make_engine(db).connect() as conn:
        assert set(conn.execute(text("SELECT id FROM verdict")).scalars()) == verdict_ids
        counts = [json.loads(c) for c in conn.execute(text(REGRESSION_RUN_COUNTS)).scalars()]
    assert all(c["judged_now"] == 0 for c in counts)
    assert again["run_ids"] == first["run_ids"]


async def test_a_changed_recorded_answer_is_stored_and_judged_again(
    db: str, tmp_path: Path, answer_files: Files
) -> None:
    await gate(db, tmp_path, "r1", answers=recorded(answer_files), baseline_tier="full")
    await gate(db, tmp_path, "r1", answers=recorded(answer_files, quantized="bad"), baseline_tier="full")
    assert row_counts(db)["verdict"] == 120 + MEASURED  # and the judge's trust measurement, once
    with make_engine(db).connect() as conn:
        judged_now = [json.loads(c)["judged_now"] for c in conn.execute(text(REGRESSION_RUN_COUNTS)).scalars()]
    # full unchanged; half of quantized replaced by bad answers, and so the pairs holding those answers
    assert sorted(judged_now) == [0, 20, 20]


# --- live tiers -------------------------------------------------------------------------------------------


@dataclass
class FakeTier:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_first: set[str] = field(default_factory=set)  # questions answered with a 503 the first time


@pytest.fixture
async def fake_tier() -> AsyncIterator[Callable[..., Any]]:
    async def start(fail_first: bool = False, refuse: bool = False) -> FakeTier:
        tier = FakeTier(url="")
        failed: set[str] = set()

        async def models(_: web.Request) -> web.Response:
            return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "t"}]})

        async def chat(request: web.Request) -> web.Response:
            body = await request.json()
            tier.requests.append(body)
            user = body["messages"][-1]["content"]
            if refuse:
                return web.json_response({"error": {"message": "model not found"}}, status=404)
            if fail_first and user not in failed:
                failed.add(user)
                return web.json_response({"error": {"message": "overloaded"}}, status=503)
            first_fact = next(line[2:] for line in user.splitlines() if line.startswith("- "))
            return chat_completion(body["model"], first_fact)

        tier.url = await stubs.enter_async_context(openai_stub(models, chat))
        return tier

    async with AsyncExitStack() as stubs:
        yield start


async def test_live_answers_are_generated_once_per_release_tier_and_item(
    db: str, tmp_path: Path, answer_files: Files, fake_tier: Callable[..., Any]
) -> None:
    tier = await fake_tier()
    live = [f"full={tier.url}#fake-7b"]
    result = await gate(db, tmp_path, "r1", tiers=live, answers=[f"quantized={answer_files['good']}"])
    assert result["exit_code"] == 0, result["summary"]
    assert len(tier.requests) == 40
    sent = tier.requests[0]
    assert sent["model"] == "fake-7b" and sent["temperature"] == 0 and "Context:\n- " in sent["messages"][1]["content"]
    await gate(db, tmp_path, "r1", tiers=live, answers=[f"quantized={answer_files['good']}"])
    assert len(tier.requests) == 40  # the re-run reused every stored generation
    with make_engine(db).connect() as conn:
        rows = conn.execute(text("SELECT tier, release, model, metadata FROM interaction WHERE tier = 'full'")).all()
    assert len(rows) == 40 and {(r[0], r[1], r[2]) for r in rows} == {("full", "r1", "fake-7b")}
    meta = json.loads(rows[0][3])
    assert meta["answer_source"] == f"live:{tier.url}#fake-7b" and meta["dataset"] == SET


async def test_transient_endpoint_errors_are_retried_by_the_chat_client_not_by_prefect(
    db: str, tmp_path: Path, fake_tier: Callable[..., Any]
) -> None:
    from flows.regression_tasks import generate_answers, judge_answers

    assert generate_answers.retries == 0 and judge_answers.retries == 0  # one retry layer: the chat client
    tier = await fake_tier(fail_first=True)
    result = await gate(db, tmp_path, "r1", tiers=[f"full={tier.url}#fake"])
    assert result["exit_code"] == 0, result["summary"]
    assert len(tier.requests) == 80  # every question failed once with 503, then succeeded on the retry


async def test_answers_a_tier_refuses_are_not_stored_and_too_many_cannot_be_evaluated(
    db: str, tmp_path: Path, fake_tier: Callable[..., Any]
) -> None:
    tier = await fake_tier(refuse=True)
    result = await gate(db, tmp_path, "r1", tiers=[f"full={tier.url}#fake"])
    assert len(tier.requests) == 40  # a 404 is permanent: asked once, never retried
    assert result["exit_code"] == 2 and "tier full: 40/40 (100%): no_answer 40 verdicts unscored" in result["summary"]
    assert row_counts(db)["interaction"] == MEASURED  # no answer stored (a re-run asks again), only the judge's trust


async def test_an_unreachable_tier_endpoint_exits_2_naming_it(db: str, tmp_path: Path, answer_files: Files) -> None:
    result = await gate(db, tmp_path, "r1", tiers=["full=http://127.0.0.1:9/v1#m"], answers=recorded(answer_files)[1:])
    assert result["exit_code"] == 2, result["summary"]
    assert "tier full: endpoint unreachable: http://127.0.0.1:9/v1" in result["summary"]


async def test_an_unreachable_judge_exits_2_before_any_judging(db: str, tmp_path: Path, answer_files: Files) -> None:
    result = await gate(db, tmp_path, "r1", answers=recorded(answer_files), judge="http://127.0.0.1:9/v1")
    assert result["exit_code"] == 2 and "judge endpoint unreachable" in result["summary"]
    assert row_counts(db)["verdict"] == 0


async def test_an_unknown_answer_id_exits_2_naming_file_line_and_id(
    db: str, tmp_path: Path, answer_files: Files
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(answer_files["good"].read_text() + '{"id": "nope-1", "answer": "x"}\n', encoding="utf-8")
    result = await gate(db, tmp_path, "r1", answers=[f"full={answer_files['good']}", f"quantized={broken}"])
    assert result["exit_code"] == 2
    assert f"tier quantized: {broken}:41: id nope-1: unknown id" in result["summary"]


async def test_an_invalid_dataset_exits_2(db: str, tmp_path: Path, answer_files: Files) -> None:
    bad_set = tmp_path / "broken_set.jsonl"
    bad_set.write_text('{"id": "x1", "question": "?"}\n', encoding="utf-8")
    result = await gate(db, tmp_path, "r1", answers=recorded(answer_files), datasets=[str(bad_set)])
    assert result["exit_code"] == 2 and "dataset" in result["summary"] and "invalid" in result["summary"]


async def test_an_untrustworthy_judge_exits_2_without_judging(
    db: str, tmp_path: Path, answer_files: Files, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.regression

    @dataclass
    class Untrusted:
        trustworthy: bool | None = False
        summary: str = "judge x: NOT TRUSTWORTHY\n  - faithfulness: AUROC 0.50"
        accepted_on_purpose: bool = False

    monkeypatch.setattr(flows.regression, "resolve_trust", lambda *_args, **_kwargs: Untrusted())
    result = await gate(db, tmp_path, "r1", answers=recorded(answer_files))
    assert result["exit_code"] == 2 and result["reasons"] == ["judge not trustworthy: judge x: NOT TRUSTWORTHY"]
    assert row_counts(db)["verdict"] == 0
    assert "WARNING: judge trust" in read(result["report"])


async def test_an_explicit_baseline_must_have_answers_for_the_tier(
    db: str, tmp_path: Path, answer_files: Files
) -> None:
    await gate(db, tmp_path, "r1", answers=recorded(answer_files))
    vs_r1 = await gate(db, tmp_path, "r2", answers=recorded(answer_files, quantized="bad"), baseline="r1")
    assert vs_r1["exit_code"] == 1  # r1 was never accepted, but named explicitly
    unknown = await gate(db, tmp_path, "r2", answers=recorded(answer_files), baseline="r0")
    assert unknown["exit_code"] == 2 and "baseline release r0 has no stored answers" in unknown["summary"]


async def test_a_deployment_run_ends_failed_when_the_gate_does_not_pass(db: str, tmp_path: Path) -> None:
    from flows.regression import post_release_regression

    state = await post_release_regression(
        release="r1",
        datasets=[SET],
        answers=[f"full={tmp_path / 'missing.jsonl'}"],
        judge="reference",
        database_url=db,
        report=str(tmp_path / "r1.md"),
        return_state=True,
    )
    assert state.is_failed() and state.message.startswith("gate exit 2: COULD NOT EVALUATE")


# --- storage and CLI --------------------------------------------------------------------------------------


def test_the_baseline_is_the_latest_accepted_release_other_than_the_candidate(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'jw.db'}")
    migrate(engine)
    with session_scope(engine, write=True) as session:
        for release in ("r1", "r2", "r3"):
            record_release_tier(session=session, release=release, tier="full", source="s", model=None, datasets={})
        assert accepted_baseline(session=session, tier="full") is None
        accept_baseline(session=session, release="r1", by="a")
        accept_baseline(session=session, release="r2", by="b")
        assert accepted_baseline(session=session, tier="full").release == "r2"  # type: ignore[union-attr]
        assert accepted_baseline(session=session, tier="full", exclude_release="r2").release == "r1"  # type: ignore[union-attr]
        with pytest.raises(ReleaseError, match=r"release 'r9' is not in the store \(known releases: r1, r2, r3"):
            accept_baseline(session=session, release="r9", by="a")
        count = session.execute(select(func.count()).select_from(text("release_tier"))).scalar_one()
        assert count == 3


def ci_files(tmp_path: Path, release: str) -> list[str]:
    return ["--junit", str(tmp_path / f"{release}.xml"), "--summary-md", str(tmp_path / f"{release}.summary.md")]


def junit_counts(tmp_path: Path, release: str) -> tuple[int, int, int]:
    """(tests, failures, errors) of the release's JUnit file, as junitparser (a CI publisher's parser) reads it."""
    from junitparser import JUnitXml

    [suite] = list(JUnitXml.fromfile(str(tmp_path / f"{release}.xml")))
    return suite.tests, suite.failures, suite.errors


def test_cli_gate_exit_codes_ci_files_and_baseline_commands(tmp_path: Path, answer_files: Files) -> None:
    """Each outcome's JUnit file and pull-request summary agree with the exit code and the report."""
    # Importing Prefect's flow API sets up its console log handler on the current stderr: do it here, not inside
    # CliRunner, whose stderr is closed after each invoke (the next run's log lines would then fail to print).
    import flows.regression  # noqa: F401

    db = f"sqlite:///{tmp_path / 'jw.db'}"
    runner, app = CliRunner(), standalone_app()
    common = ["--dataset", SET, "--judge", "reference", "--database-url", db]
    files = ["--answers", f"full={answer_files['good']}"]

    good, bad = f"quantized={answer_files['good']}", f"quantized={answer_files['bad']}"
    first = runner.invoke(
        app,
        ["regress", "--release", "r1", *common, *files, "--answers", good, "--report", str(tmp_path / "r1.md"),
         *ci_files(tmp_path, "r1")],
    )  # fmt: skip
    assert first.exit_code == 0, first.output
    assert "PASS (exit 0)" in first.output and f"report: {tmp_path / 'r1.md'}" in first.output
    assert f"junit: {tmp_path / 'r1.xml'}" in first.output
    assert junit_counts(tmp_path, "r1")[1:] == (0, 0)  # first release: nothing compared, nothing red
    assert read(tmp_path / "r1.summary.md").startswith("### Release gate: r1: PASS (exit 0)\n")

    missing = runner.invoke(app, ["baseline", "accept", "--release", "r0", "--database-url", db])
    assert missing.exit_code == 2 and "release 'r0' is not in the store" in missing.output
    accepted = runner.invoke(app, ["baseline", "accept", "--release", "r1", "--by", "ci", "--database-url", db])
    assert accepted.exit_code == 0 and "release r1 is the baseline of tier full (by ci)" in accepted.output

    worse = runner.invoke(
        app,
        ["regress", "--release", "r2", *common, *files, "--answers", bad, "--report", str(tmp_path / "r2.md"),
         *ci_files(tmp_path, "r2")],
    )  # fmt: skip
    assert worse.exit_code == 1, worse.output
    assert "REGRESSION (exit 1, margin 0.25): tier quantized" in worse.output
    report = json.loads(read(tmp_path / "r2.json"))
    criteria = [c["criterion"] for t in report["tiers"] for c in t["evaluation"]["comparisons"]]
    assert junit_counts(tmp_path, "r2") == (len(criteria), len(report["gate"]["regressions"]), 0)
    summary = read(tmp_path / "r2.summary.md")
    assert summary.startswith("### Release gate: r2: REGRESSION (exit 1)\n")
    assert "| quantized | faithfulness | r2 − r1 |" in summary and "REGRESSED |" in summary
    worst = report["tiers"][1]["worst"][0]
    assert f"[{worst['key']}](http://127.0.0.1:7860/?item={worst['interaction_id']})" in summary

    listing = runner.invoke(app, ["baseline", "list", "--database-url", db])
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    assert any(line.startswith("* r1") and "quantized" in line for line in lines)
    assert any(line.startswith("  r2") and "gate exit 1 (regression)" in line for line in lines)

    broken = runner.invoke(
        app,
        ["regress", "--release", "r3", *common, "--tier", "full=not-a-url#m", "--report", str(tmp_path / "r3.md"),
         *ci_files(tmp_path, "r3")],
    )  # fmt: skip
    assert broken.exit_code == 2 and "is not an http(s) URL" in broken.output
    assert junit_counts(tmp_path, "r3") == (1, 0, 1)
    assert read(tmp_path / "r3.summary.md").startswith("### Release gate: r3: COULD NOT EVALUATE (exit 2)\n")


def test_quick_demo_passes_r1_and_r2_catches_r3_and_cannot_evaluate_r4(quick_demo: QuickDemo) -> None:
    engine, outcomes, lines = quick_demo.engine, quick_demo.outcomes, quick_demo.lines
    assert [(o.release, o.result["exit_code"]) for o in outcomes] == [("r1", 0), ("r2", 0), ("r3", 1), ("r4", 2)]
    assert all(o.as_expected for o in outcomes)
    text_out = "\n".join(lines)
    assert "RECORDED answers built from the real data" in text_out and "trustworthy" in text_out
    assert "tier quantized faithfulness" in outcomes[2].result["summary"]
    assert any("did not answer GET /models" in reason for reason in outcomes[3].result["reasons"])
    assert "the gate's three outcomes (pass 0, regression 1, cannot evaluate 2)" in text_out
    with session_scope(engine) as session:
        assert accepted_baseline(session=session, tier="quantized").release == "r1"  # type: ignore[union-attr]
    from judgewatch.calibration.page_snapshots import stored_views

    view = stored_views(engine, rubric_name="answer_quality", period="90d").pick(None)  # what the Tiers page opens on
    assert view is not None and "Showing judge series reference" in view.header[0]
    scores = view.tables["Tier scores"]
    assert set(scores["estimand"]) == {"release_quality"} and {"r1", "r2", "r3"} <= {
        p.split(" / ")[0] for p in scores["population"]
    }


def test_plan_gate_reads_the_paired_spread_of_a_release_and_says_how_many_items_a_margin_needs(
    quick_demo: QuickDemo,
) -> None:
    from judgewatch.cli import get_app

    run = CliRunner().invoke(
        get_app(),
        [
            "plan",
            "gate",
            "--from-release",
            "r3",
            "--dataset",
            "halueval_qa_mini",
            "--database-url",
            quick_demo.database_url,
        ],
    )
    assert run.exit_code == 0, run.output
    lines = [line for line in run.output.splitlines() if line.startswith("  tier quantized faithfulness")]
    assert len(lines) == 1 and "on halueval_qa_mini (vs r1)" in lines[0]
    sd, n, need = (float(v) for v in re.findall(r"paired sd ([\d.]+) over (\d+) items; needs (\d+)", lines[0])[0])
    from judgewatch.stats.power import items_needed

    assert n >= 20 and need == items_needed(sd, 0.25, 0.5)
    unknown = CliRunner().invoke(
        get_app(), ["plan", "gate", "--from-release", "nope", "--database-url", quick_demo.database_url]
    )
    assert unknown.exit_code == 2 and "release nope has no gate decision" in unknown.output


def small_set(tmp_path: Path, n: int, *, known_bad: bool = True) -> tuple[Path, list[str], Path]:
    """The first n items of the mini set as a golden set file (without their bad answers unless `known_bad`),
    its rows, and recorded known-good answers to it."""
    rows = (load_golden_set(SET).path / "data.jsonl").read_text(encoding="utf-8").splitlines()[:n]  # type: ignore[operator]
    if not known_bad:
        rows = [json.dumps({**json.loads(r), "bad_answers": []}, ensure_ascii=False) for r in rows]
    golden = tmp_path / "small.jsonl"
    golden.write_text("\n".join(rows) + "\n", encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    write_recorded_answers(answers, [(i.id, i.good_answers[0]) for i in load_golden_set(golden).items])
    return golden, rows, answers


async def test_a_judge_that_cannot_be_measured_exits_2_unless_accepted_on_purpose(db: str, tmp_path: Path) -> None:
    golden, _, answers = small_set(tmp_path, 12, known_bad=False)
    params: dict[str, Any] = {"datasets": [str(golden)], "answers": [f"full={answers}"]}
    refused = await gate(db, tmp_path, "r1", **params)
    assert refused["exit_code"] == 2 and refused["reasons"][0].startswith("judge not measured: judge reference:")
    assert "no golden set (small) carries known-good and known-bad answers" in " ".join(refused["notes"])
    assert row_counts(db)["verdict"] == 0  # nothing judged on a judge nobody can vouch for

    from flows.regression import post_release_regression

    report = tmp_path / "accepted.md"
    state = await post_release_regression(
        release="r1",
        database_url=db,
        report=str(report),
        judge="reference",
        accept_unvalidated_judge=True,
        return_state=True,
        **params,
    )
    accepted = await state.aresult()
    assert accepted["exit_code"] == 0 and accepted["accepted_unvalidated"].startswith("ACCEPTED ON PURPOSE")
    # what the release pipeline reads first: the flow run's state message
    assert state.message is not None
    assert state.message.startswith(f"WARNING: {accepted['accepted_unvalidated']} | PASS (exit 0)")
    assert read(report).splitlines()[0] == f"**WARNING: {accepted['accepted_unvalidated']}**"


async def test_too_few_known_answers_to_measure_the_judge_exit_2_judge_not_measured(db: str, tmp_path: Path) -> None:
    golden, _, answers = small_set(tmp_path, 12)
    result = await gate(db, tmp_path, "r1", datasets=[str(golden)], answers=[f"full={answers}"])
    assert result["exit_code"] == 2 and result["reasons"][0].startswith("judge not measured: ")
    assert "n=12 (fewer than 20 items: inconclusive)" in result["reasons"][0]
    assert "known answers on small" in " ".join(result["notes"])  # measured, stored, shown: just not enough


async def test_a_golden_set_changed_since_the_baseline_is_noted(db: str, tmp_path: Path, answer_files: Files) -> None:
    await gate(db, tmp_path, "r0", answers=recorded(answer_files))  # measures the judge on the mini set's 40 items
    golden, rows, answers = small_set(tmp_path, 12)
    params = {"datasets": [str(golden)], "answers": [f"full={answers}"]}
    assert (await gate(db, tmp_path, "r1", **params))["exit_code"] == 0
    accept(db, "r1")
    first = json.loads(rows[0])
    rows[0] = json.dumps({**first, "question": first["question"] + " (reworded)"})
    golden.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = await gate(db, tmp_path, "r2", **params)
    assert result["exit_code"] == 0
    assert any("golden set small changed since baseline r1" in note for note in result["notes"])
