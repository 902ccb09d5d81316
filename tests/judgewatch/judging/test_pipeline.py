"""The judging pipeline and the input reader: one verdict per item, concurrency kept, batched off-loop storage."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judges.base import config_hash, plan, scored_verdict
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, TokenUsage, Verdict
from judgewatch.judging import pipeline as judging
from judgewatch.judging.input_rows import read_judge_input
from judgewatch.judging.pipeline import judge_items, percentiles
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.quarantine import QuarantineRecord
from judgewatch.storage.verdicts import VerdictRecord, get_verdicts


class FakeJudge:
    """Bounds its own concurrency like a real judge; finishes items out of order; can raise on chosen ids."""

    kind = "fake"

    def __init__(self, *, concurrency: int | None = 8, fail_ids: frozenset[str] = frozenset()) -> None:
        self.semaphore = asyncio.Semaphore(concurrency) if concurrency else None
        self.fail_ids = fail_ids
        self.calls: Counter[str] = Counter()
        self.pending = 0
        self.max_pending = 0  # calls entered, including those waiting on the semaphore
        self.in_flight = 0
        self.max_in_flight = 0  # calls past the semaphore

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        return JudgeIdentity(kind="fake", name="fake-judge", config_hash=config_hash(rubric, fake=1))

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        self.calls[item.id] += 1
        self.pending += 1
        self.max_pending = max(self.max_pending, self.pending)
        try:
            if self.semaphore is not None:
                async with self.semaphore:
                    await self._work(item)
            else:
                await self._work(item)
        finally:
            self.pending -= 1
        if item.id in self.fail_ids:
            raise RuntimeError(f"boom on {item.id}")
        to_score, not_applicable = plan(rubric, item)
        scores = {name: 1 + int(item.id.split("-")[1]) % 5 for name in to_score}
        identity = self.identity(rubric)
        return scored_verdict(
            item,
            rubric,
            identity,
            scores,
            not_applicable,
            "fake",
            latency_ms=10.0,
            tokens=TokenUsage(prompt=100, completion=10),
        )

    async def _work(self, item: JudgeItem) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.001 * (hash(item.id) % 3))  # out-of-order completion
        self.in_flight -= 1

    async def aclose(self) -> None:
        return None


def make_items(n: int) -> list[JudgeItem]:
    return [
        JudgeItem(id=f"item-{i}", question=f"question {i}?", answer=f"answer {i}.", reference_facts=["fact"])
        for i in range(n)
    ]


async def test_every_item_gets_exactly_one_verdict_delivered_in_input_order(rubric: Rubric) -> None:
    items = make_items(300)
    judge = FakeJudge()
    delivered: list[str] = []
    result = await judge_items(items, rubric, judge, on_verdict=lambda v: delivered.append(v.item_id))
    ids = [i.id for i in items]
    assert delivered == ids
    assert [v.item_id for v in result.verdicts] == ids
    assert set(judge.calls.values()) == {1} and len(judge.calls) == 300
    assert result.summary.items == 300 and result.summary.by_status == {"scored": 300}


async def test_a_judge_exception_becomes_an_unscored_judge_error_verdict_and_is_logged(
    rubric: Rubric, caplog: pytest.LogCaptureFixture
) -> None:
    judge = FakeJudge(fail_ids=frozenset({"item-3", "item-7"}))
    with caplog.at_level(logging.ERROR, logger="judgewatch.judging.pipeline"):
        result = await judge_items(make_items(10), rubric, judge)
    failed = {v.item_id: v for v in result.verdicts if v.status == "unscored"}
    assert set(failed) == {"item-3", "item-7"}
    assert failed["item-3"].unscored_reason == "judge_error"
    assert failed["item-3"].detail == "RuntimeError: boom on item-3"
    assert failed["item-3"].judge == judge.identity(rubric)
    assert len(result.verdicts) == 10
    assert result.summary.by_unscored_reason == {"judge_error": 2}
    assert sum("item-3" in r.getMessage() for r in caplog.records) == 1


async def test_the_judges_own_concurrency_is_saturated_not_serialized(rubric: Rubric) -> None:
    judge = FakeJudge(concurrency=16)
    await judge_items(make_items(400), rubric, judge)
    assert judge.max_in_flight == 16


async def test_pending_calls_stay_within_max_in_flight_and_items_are_read_lazily(rubric: Rubric) -> None:
    judge = FakeJudge(concurrency=None)
    read = 0
    lead = 0

    def lazy() -> Iterator[JudgeItem]:
        nonlocal read, lead
        for item in make_items(500):
            read += 1
            lead = max(lead, read - sum(judge.calls.values()) + judge.pending)
            yield item

    result = await judge_items(lazy(), rubric, judge, max_in_flight=20)
    assert judge.max_pending == 20
    assert lead <= 21  # the iterator is never drained ahead of the in-flight window
    assert result.summary.items == 500


async def test_the_first_request_leaves_before_the_later_items_are_read(rubric: Rubric) -> None:
    """A request goes out a few loop turns after its item is taken (a connection to open): the items behind it
    (read, scrubbed: pyap compiles its patterns at the first address) wait, they do not hold the first requests."""
    read = 0
    read_at_first_send: list[int] = []

    class Connecting(FakeJudge):
        async def _work(self, item: JudgeItem) -> None:
            for _ in range(3):  # the connection, then the request written
                await asyncio.sleep(0)
            read_at_first_send.append(read)
            await super()._work(item)

    def counted() -> Iterator[JudgeItem]:
        nonlocal read
        for item in make_items(300):
            read += 1
            yield item

    result = await judge_items(counted(), rubric, Connecting(concurrency=64), max_in_flight=256)
    assert read_at_first_send[0] <= 8  # started all at once, every one of the 256 workers read its item first
    assert result.summary.items == 300


async def test_verdicts_and_items_are_stored_in_batches_off_the_event_loop(
    rubric: Rubric, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, bool]] = []
    real = judging.store_judged

    def recording(**kwargs: object) -> int:
        judged = kwargs["judged"]
        assert isinstance(judged, list)
        calls.append((len(judged), threading.current_thread() is threading.main_thread()))
        return real(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(judging, "store_judged", recording)
    result = await judge_items(make_items(450), rubric, FakeJudge(), engine=engine, source="test", batch_size=100)
    assert sum(n for n, _ in calls) == 450
    assert max(n for n, _ in calls) <= 100 and len(calls) >= 5
    assert not any(on_main for _, on_main in calls)
    assert result.summary.stored == 450
    with session_scope(engine) as session:
        assert session.execute(select(func.count()).select_from(table(Interaction))).scalar_one() == 450
        stored = get_verdicts(session=session)
    assert {r.item_id for r in stored} == {f"item-{i}" for i in range(450)}


async def test_judging_the_same_items_twice_stores_no_duplicates(rubric: Rubric, engine: Engine) -> None:
    for _ in range(2):
        await judge_items(make_items(120), rubric, FakeJudge(), engine=engine, source="test", batch_size=50)
    with session_scope(engine) as session:
        assert session.execute(select(func.count()).select_from(table(VerdictRecord))).scalar_one() == 120
        assert session.execute(select(func.count()).select_from(table(Interaction))).scalar_one() == 120


async def test_a_store_failure_fails_the_run_with_the_original_error(
    rubric: Rubric, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(judging, "store_judged", broken)
    with pytest.raises(OSError, match="disk full"):
        await asyncio.wait_for(
            judge_items(make_items(2000), rubric, FakeJudge(), engine=engine, batch_size=10), timeout=60
        )


async def test_the_summary_reports_counts_latency_percentiles_and_tokens(rubric: Rubric) -> None:
    result = await judge_items(make_items(20), rubric, FakeJudge(fail_ids=frozenset({"item-0"})), collect=False)
    summary = result.summary
    assert result.verdicts == []
    assert summary.by_status == {"scored": 19, "unscored": 1}
    assert summary.by_judge == {"fake:fake-judge": 20}
    assert summary.tokens == TokenUsage(prompt=1900, completion=190)
    assert summary.latency_ms["p50"] == 10.0 and summary.latency_ms["max"] == 10.0


def test_percentiles_use_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentiles(values) == {"p50": 50.0, "p90": 90.0, "p99": 99.0, "max": 100.0}
    assert percentiles([]) == {}


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


def test_reading_input_quarantines_bad_rows_with_line_and_field(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "items.jsonl",
        [
            '{"id": "a", "question": "q?", "answer": "x", "reference_facts": ["f"], "context": "ctx", '
            '"language": "en"}',
            '{"id": 2, "question": "q?", "answer": "x"}',
            "",
            '{"id": "c", "question": "q?"',
            '{"id": "d", "question": "q?"}',
            '{"id": "e", "question": "q?", "answer": "x", "reference_facts": "not a list"}',
            '{"id": "f", "question": "q?", "answer": "x", "reference_facts": ["ok", 3]}',
            '{"id": "a", "question": "again", "answer": "x"}',
            '["not", "an", "object"]',
            '{"id": "", "question": "q?", "answer": "x"}',
            '{"id": "g", "question": "q?", "answer": "x", "language": "fr"}',
            b'{"id": "h", "question": "\xff", "answer": "x"}',
        ],
    )
    rows = list(read_judge_input(path))
    items = [r for r in rows if isinstance(r, JudgeItem)]
    bad = [r for r in rows if isinstance(r, QuarantineRecord)]
    assert [i.id for i in items] == ["a", "2"]
    assert items[0].context == ["ctx"]
    messages = [q.message for q in bad]
    assert messages[0].startswith("line 4: not valid JSON")
    assert messages[1:] == [
        "line 5: field 'answer': required field is missing",
        "line 6: field 'reference_facts': expected a list of strings, got str",
        "line 7: field 'reference_facts': expected a list of strings, got a list containing int",
        "line 8: field 'id': duplicate id 'a' (first on line 1)",
        "line 9: expected a JSON object, got list",
        "line 10: field 'id': expected a non-empty string or an integer, got str",
        "line 11: field 'language': expected 'en', 'zh' or null, got str",
        messages[8],
    ]
    assert messages[8].startswith("line 12: not valid UTF-8")
    assert bad[1].position == "items.jsonl:5" and bad[1].raw == '{"id": "d", "question": "q?"}'
    assert {q.source for q in bad} == {f"file:{path.resolve()}"}


def test_reading_a_missing_input_file_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        read_judge_input(tmp_path / "missing.jsonl")
