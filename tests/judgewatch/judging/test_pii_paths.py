"""PII on every path to a judge or a reviewer: `judge --input` rows reach the (real HTTP) judge, the store and
the review screen scrubbed; the `pii_scrub` switch turns it off for inputs known to hold none."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, select
from typer.testing import CliRunner

from judges.base import config_hash, plan, scored_verdict
from judgewatch.cli import get_app
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.contract.verdicts import JudgeIdentity, Verdict
from judgewatch.judging.run import JudgingRun
from judgewatch.regression.golden import load_golden_set
from judgewatch.review.accounts import add_reviewer
from judgewatch.review.queue import ReviewQueue
from judgewatch.review.routing import RoutingPolicy, route_verdicts
from judgewatch.settings import get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.runs import RunKind
from judgewatch.testing.conversations import weather_row
from judgewatch.testing.simulator import run_simulator_in_thread

PLANTED = {
    "ssn": "123-45-6789",
    "ip": "192.168.13.77",
    "iban": "GB82WEST12345698765432",
    "email": "jane.doe@example.com",
    "address": "1600 Amphitheatre Parkway, Mountain View, CA 94043",
    "name": "李雷",
}
TURN_PLANTED = {
    "earlier turn": "172.16.254.1",
    "tool arguments": "bob.smith@example.org",
    "tool result": "DE89370400440532013000",
}
ROWS = [
    {
        "id": "p1",
        "question": f"My SSN is {PLANTED['ssn']} and my IP {PLANTED['ip']}; is my account safe?",
        "answer": f"Write to {PLANTED['email']} or to {PLANTED['address']}.",
        "reference_facts": [f"Refunds go to IBAN {PLANTED['iban']}."],
    },
    {
        "id": "p2",
        "question": f"你好，我叫{PLANTED['name']}，想退货。",
        "answer": "好的，请提供订单号。",
        "language": "zh",
    },
    weather_row(  # a conversation: PII in an earlier turn, a tool call's arguments and a tool's result
        "p3",
        messages=[
            {"role": "user", "content": f"I am Dr. Smith, my work IP is {TURN_PLANTED['earlier turn']}."},
            {"role": "assistant", "content": "Noted. How can I help?"},
            {"role": "user", "content": "Email me my refund status."},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "send_mail",
                            "arguments": json.dumps({"to": TURN_PLANTED["tool arguments"]}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": f"sent; refund to {TURN_PLANTED['tool result']}"},
        ],
        answer="Done: the status is in your inbox.",
        reference_facts=[],
    ),
]


@pytest.fixture
def scrub_setting(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def _judge_file(tmp_path: Path, db_url: str) -> str:
    """Run `judgewatch judge` on the PII rows against the simulator; everything the judge received, as text."""
    path = tmp_path / "pii.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS), encoding="utf-8")
    with run_simulator_in_thread(latency_ms=1) as sim:
        args = ["--input", str(path), "--output", str(tmp_path / "v.jsonl"), "--judge", sim.base_url]
        result = CliRunner().invoke(
            get_app(), ["judge", "--rubric", "answer_quality", *args, "--model", "sim-judge", "--database-url", db_url]
        )
        assert result.exit_code == 0, result.output
        received = httpx.get(f"{sim.root_url}/sim/requests", timeout=10).json()
    assert len(received) >= len(ROWS)
    return json.dumps(received, ensure_ascii=False)


def _review_screens(engine: Engine) -> str:
    """Route every verdict to review and lease them all as one reviewer; the screens' content as text."""
    with session_scope(engine) as session:
        route_verdicts(session=session, policy=RoutingPolicy(review_share=1.0))
        add_reviewer(session=session, name="rita", password="a long test password")
    queue = ReviewQueue(engine, scrub_pii=get_settings().pii_scrub)
    screens = []
    while (item := queue.lease_next("rita")) is not None:
        screens.append(item.model_dump_json())
        queue.skip("rita", item.item_id, "seen", rubric_version_shown=item.rubric_version)
    assert len(screens) == len(ROWS)
    return "\n".join(screens)


def test_judge_input_reaches_the_judge_the_store_and_the_reviewer_scrubbed(
    tmp_path: Path, db_url: str, scrub_setting: None
) -> None:
    sent = _judge_file(tmp_path, db_url)
    engine = make_engine(db_url)
    try:
        with session_scope(engine) as session:
            stored = " ".join(i.model_dump_json() for i in session.scalars(select(Interaction)))
        screens = _review_screens(engine)
    finally:
        engine.dispose()
    for kind, value in {**PLANTED, **TURN_PLANTED}.items():
        assert value not in sent, f"{kind} reached the judge"
        assert value not in stored, f"{kind} was stored"
        assert value not in screens, f"{kind} reached a reviewer"
    for placeholder in ("[SSN]", "[IP]", "[IBAN]", "[EMAIL]", "[ADDRESS]", "[NAME]"):
        assert placeholder in sent and placeholder in screens
    for scrubbed in ("refund to [IBAN]", '{\\"to\\": \\"[EMAIL]\\"}', "work IP is [IP]"):  # every turn
        assert scrubbed in sent and scrubbed in stored and scrubbed in screens, scrubbed


def test_the_switch_off_sends_content_as_it_is(
    tmp_path: Path, db_url: str, scrub_setting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGEWATCH_PII_SCRUB", "false")
    get_settings.cache_clear()
    sent = _judge_file(tmp_path, db_url)
    assert all(value in sent for value in {**PLANTED, **TURN_PLANTED}.values())


def test_content_stored_unscrubbed_is_scrubbed_on_the_review_screen(engine: Engine) -> None:
    from judgewatch.contract.verdicts import RubricIdentity, VerdictStatus
    from judgewatch.storage.interactions import upsert_interactions
    from judgewatch.storage.verdicts import upsert_verdicts

    item = JudgeItem(id="x", question=f"My SSN is {PLANTED['ssn']}", answer=f"Mail {PLANTED['email']}")
    row = Interaction.from_item(item, source="older:path")
    verdict = Verdict(
        item_id="x",
        status=VerdictStatus.scored,
        scores={"relevance": 3, "completeness": 3},
        overall=3.0,
        reason="ok",
        judge=JudgeIdentity(kind="fake", name="fake", config_hash="c"),
        rubric=RubricIdentity(name="answer_quality", version="1.0.0", hash="h"),
    )
    with session_scope(engine) as session:
        upsert_interactions(session=session, interactions=[row])
        upsert_verdicts(session=session, run_id=None, verdicts=[(row.id, verdict)])
        route_verdicts(session=session, policy=RoutingPolicy(review_share=1.0))
        add_reviewer(session=session, name="rita", password="a long test password")
    shown = ReviewQueue(engine).lease_next("rita")
    assert shown is not None
    assert shown.question == "My SSN is [SSN]" and shown.answer == "Mail [EMAIL]"
    raw = ReviewQueue(engine, scrub_pii=False).lease_next("rita")
    assert raw is not None and PLANTED["ssn"] in raw.question


class _Recorder:
    """A judge that records what it was sent and scores every criterion 3."""

    kind = "fake"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind="fake", name="recorder", config_hash=config_hash(rubric, recorder=1))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        self.seen.append(item.model_dump_json())
        to_score, not_applicable = plan(rubric, item)
        return scored_verdict(item, rubric, self.identity(rubric), dict.fromkeys(to_score, 3), not_applicable, "ok")

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(("front_matter", "scrubbed"), [("pii: none\n", False), ("", True)])
def test_a_golden_set_whose_card_declares_no_pii_is_judged_unscrubbed(
    tmp_path: Path, front_matter: str, scrubbed: bool
) -> None:
    folder = tmp_path / "curated"
    folder.mkdir()
    row = {"id": "a", "question": "Who is Mr. Charles Darwin?", "language": "en", "good_answers": ["A naturalist."]}
    (folder / "data.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (folder / "README.md").write_text(f"---\nname: curated\n{front_matter}---\n", encoding="utf-8")
    golden = load_golden_set(folder)
    judge = _Recorder()
    run = JudgingRun(
        None, kind=RunKind.validation, name="v", identity="v", rubric=load_rubric("answer_quality"), judge=judge,
        scrub_pii=golden.scrub_pii,
    )  # fmt: skip
    with run:
        (item,) = golden.items
        asyncio.run(
            run.judge_new([item.to_judge_item(item.good_answers[0], item_id="a:good")], source="golden:curated")
        )
    assert len(judge.seen) == 1
    assert ("Charles Darwin" not in judge.seen[0]) is scrubbed
    assert ("[NAME]" in judge.seen[0]) is scrubbed
