"""The `traffic-sampling` flow on the demo gateway log with the offline reference judge, and its source lease.

Prefect runs against a temporary test server (prefect_test_harness) for the whole module, as for the
regression flow. The flow tests use a copy of the demo log so they can append to it.
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select, text

from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.review import ReviewItem
from judgewatch.storage.watermarks import SourceBusy, SourceLease, load_partitions, load_watermark
from judgewatch.testing.sampling_runs import sample_flow as sample
from judgewatch.testing.sampling_runs import stored_sample
from judgewatch.testing.store import postgres_schema, postgres_url

TABLES = ("interaction", "verdict", "review_item", "quarantined_row", "eval_run")


pytestmark = pytest.mark.usefixtures("prefect_server")  # tests/flows/conftest.py: one server per module


def counts(db: str) -> dict[str, int]:
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}
    finally:
        engine.dispose()


def append_rows(log: Path, n: int) -> list[str]:
    """Append `n` new calls (the first n rows under new ids, a day later); returns their ids."""
    with log.open(encoding="utf-8") as f:
        rows = [json.loads(next(f)) for _ in range(n)]
    ids = []
    with log.open("a", encoding="utf-8") as f:
        for i, row in enumerate(rows):
            row["id"] = f"chatcmpl-appended-{i:04d}"
            row["timestamp"] = f"2024-06-07T{i // 60:02d}:{i % 60:02d}:00Z"
            ids.append(row["id"])
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return ids


async def test_first_run_stores_picks_quarantines_judges_and_routes(source: Path, db: str) -> None:
    report = await sample(source, db)
    assert report["read"] == 2702 and report["started_from"] == "the start"
    assert report["quarantined"] == 2 and report["picked"] == report["stored"] > 200
    assert {s: v["rate"] for s, v in report["strata"].items()} == {"full": 0.1, "quantized": 0.1}
    assert report["judged"] == {"scored": report["picked"]} and report["already_judged"] == 0
    assert report["watermark_saved"] and report["run_id"]
    engine = make_engine(db)
    with engine.connect() as conn:
        interactions = conn.execute(text("SELECT source, tier, created_at, metadata FROM interaction")).all()
        quarantined = conn.execute(text("SELECT line, reason, raw, run_id FROM quarantined_row ORDER BY line")).all()
        verdicts = conn.execute(text("SELECT count(DISTINCT interaction_id), count(*) FROM verdict")).one()
    assert len(interactions) == report["picked"] and {i.source for i in interactions} == {"traffic:halluqa-demo"}
    assert {i.tier for i in interactions} == {"full", "quantized"}
    assert min(str(i.created_at) for i in interactions) >= "2024-06-03"  # the call's time, not the run's
    meta = json.loads(interactions[0].metadata)
    assert meta["inclusion_probability"] == 0.1 and meta["stratum"] in ("full", "quantized")
    assert meta["sampling_salt"] == "judgewatch-demo"
    assert [q.line for q in quarantined] == [901, 1801]
    assert quarantined[0].reason.startswith("invalid_json") and "chatcmpl-truncated" in quarantined[0].raw
    assert quarantined[1].reason.startswith("missing_response") and {q.run_id for q in quarantined} == {
        report["run_id"]
    }
    assert tuple(verdicts) == (report["picked"], report["picked"])
    with session_scope(engine) as session:
        items = list(session.scalars(select(ReviewItem)))
        mark = load_watermark(session=session, source="halluqa-demo")
    # ~10% of the scored verdicts, each with its stored inclusion probability (binomial: 280 * 0.1 +- 4 sd)
    assert 10 <= len(items) <= 50 and report["routed"] == {"uniform": len(items)}
    assert {(i.pick_reason, i.inclusion_probability) for i in items} == {("uniform", 0.1)}
    assert mark is not None and mark.run_id == report["run_id"] and mark.lease_owner is None
    assert json.loads(mark.watermark or "{}")["files"][str(source.parent / "gateway.jsonl")]["rows"] == 2702
    engine.dispose()


async def test_second_run_reads_nothing_new_and_stores_nothing(source: Path, db_url: str) -> None:
    first = await sample(source, db_url)  # SQLite and PostgreSQL (its advisory lock, its upserts)
    before = counts(db_url)
    assert before["interaction"] == first["picked"] and before["quarantined_row"] == 2
    again = await sample(source, db_url)
    assert again["read"] == again["picked"] == again["stored"] == 0 and again["run_id"] is None
    assert again["started_from"] == "the stored watermark" and not again["watermark_saved"]
    assert counts(db_url) == before


async def test_appended_lines_are_the_only_ones_read(source: Path, db: str) -> None:
    first = await sample(source, db)
    before = counts(db)
    new_ids = append_rows(source.parent / "gateway.jsonl", 60)
    second = await sample(source, db, review_share=1.0)
    assert second["read"] == 60 and second["quarantined"] == 0 and second["run_id"] != first["run_id"]
    after = counts(db)
    assert after["interaction"] - before["interaction"] == second["picked"] == second["stored"]
    assert after["review_item"] - before["review_item"] == second["picked"]  # review_share=1: every scored one
    with make_engine(db).connect() as conn:
        rows = conn.execute(text("SELECT source_id FROM interaction ORDER BY created_at DESC")).scalars().all()
    assert set(rows[: second["picked"]]) <= set(new_ids)


async def test_since_rereads_a_window_without_storing_duplicates_or_moving_the_watermark(source: Path, db: str) -> None:
    await sample(source, db)
    before = counts(db)
    engine = make_engine(db)
    with session_scope(engine) as session:
        mark = load_watermark(session=session, source="halluqa-demo")
    assert mark is not None
    window = await sample(source, db, since="2024-06-05T00:00:00Z")
    assert window["read"] == 2702 and window["filtered_by"]["time"] > 1000 and window["picked"] > 0
    assert window["already_judged"] == window["picked"] and window["judged"] == {}
    assert window["review_items_created"] == 0 and not window["watermark_saved"]
    after = counts(db)
    assert {t: after[t] for t in TABLES if t != "eval_run"} == {t: before[t] for t in TABLES if t != "eval_run"}
    assert after["eval_run"] == before["eval_run"] + 1  # the re-read is a run of its own
    again = await sample(source, db, since="2024-06-05T00:00:00Z")
    assert again["run_id"] == window["run_id"] and counts(db) == after  # the same window is the same run
    with session_scope(engine) as session:
        unchanged = load_watermark(session=session, source="halluqa-demo")
    assert unchanged is not None and unchanged.watermark == mark.watermark and unchanged.updated_at == mark.updated_at
    engine.dispose()


async def test_dry_run_stores_nothing_and_creates_no_database(source: Path, db: str, tmp_path: Path) -> None:
    dry = await sample(source, db, dry_run=True)
    assert dry["read"] == 2702 and dry["picked"] > 200 and dry["quarantined"] == 2
    assert dry["stored"] == 0 and dry["judged"] == {} and dry["run_id"] is None
    assert not (tmp_path / "jw.db").exists()
    await sample(source, db)
    before = counts(db)
    assert (await sample(source, db, dry_run=True))["read"] == 0  # starts from the stored watermark
    assert counts(db) == before


async def test_a_run_refuses_a_source_held_by_another_run(source: Path, db: str) -> None:
    engine = make_engine(db)
    migrate(engine)
    with SourceLease(engine, "halluqa-demo", owner="other-worker"), pytest.raises(SourceBusy, match="other-worker"):
        await sample(source, db)
    assert counts(db) == dict.fromkeys(TABLES, 0)
    assert (await sample(source, db))["read"] == 2702  # released: the next run gets it
    engine.dispose()


def test_only_one_of_two_concurrent_leases_gets_the_source(engine: Engine) -> None:
    barrier = threading.Barrier(2)
    outcome: dict[str, SourceLease | SourceBusy] = {}

    def attempt(owner: str) -> None:
        lease = SourceLease(engine, "src", owner=owner)
        barrier.wait()
        try:
            outcome[owner] = lease.acquire()
        except SourceBusy as exc:
            outcome[owner] = exc

    threads = [threading.Thread(target=attempt, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    winners = [v for v in outcome.values() if isinstance(v, SourceLease)]
    losers = [v for v in outcome.values() if isinstance(v, SourceBusy)]
    assert len(winners) == 1 and len(losers) == 1
    assert losers[0].owner in (None, winners[0].owner)  # PostgreSQL: the holder may not be recorded yet
    assert SourceLease(engine, "other-source", owner="c").acquire().held  # other sources are independent
    winners[0].renew()
    winners[0].release()
    loser_owner = "b" if winners[0].owner == "a" else "a"
    with SourceLease(engine, "src", owner=loser_owner) as lease:
        assert lease.held


def test_an_expired_sqlite_lease_is_taken_over_and_its_holder_learns_it(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'lease.db'}")
    migrate(engine)
    crashed = SourceLease(engine, "src", owner="crashed", ttl_s=60).acquire()
    with pytest.raises(SourceBusy, match="crashed"):
        SourceLease(engine, "src", owner="fresh").acquire()
    with engine.begin() as conn:  # time passes: the holder crashed and never renewed
        conn.execute(text("UPDATE source_watermark SET lease_expires_at = '2000-01-01 00:00:00'"))
    taker = SourceLease(engine, "src", owner="fresh").acquire()
    with pytest.raises(SourceBusy, match="lost its lease"):
        crashed.renew()
    crashed.release()  # releasing a lost lease leaves the new holder's lease alone
    with session_scope(engine) as session:
        row = load_watermark(session=session, source="src")
    assert row is not None and row.lease_owner == "fresh"
    taker.release()
    engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)  # advisory locks exist on PostgreSQL only
def test_a_postgres_lock_dies_with_its_connection(engine: Engine) -> None:
    assert engine.dialect.name == "postgresql"
    holder = SourceLease(engine, "src", owner="holder").acquire()
    with pytest.raises(SourceBusy):
        SourceLease(engine, "src", owner="second").acquire()
    assert holder._conn is not None
    holder._conn.invalidate()  # the holder's process died: its session, and the lock with it, are gone
    with SourceLease(engine, "src", owner="second") as second:
        assert second.held
        with pytest.raises(SourceBusy, match="lost its lease"):
            holder.renew()
    holder.release()


@pytest.mark.postgres
def test_two_stores_in_one_postgres_database_lease_the_same_source_apart() -> None:
    # advisory locks are database-wide: the key holds the store's schema, so one store's run never blocks another's
    token = uuid.uuid4().hex[:8]
    with (
        postgres_schema(postgres_url(), f"jw_lease_a_{token}") as a_url,
        postgres_schema(postgres_url(), f"jw_lease_b_{token}") as b_url,
    ):
        engines = [make_engine(a_url), make_engine(b_url)]
        for engine in engines:
            migrate(engine)
        with SourceLease(engines[0], "src", owner="a") as first, SourceLease(engines[1], "src", owner="b") as second:
            assert first.held and second.held
            with pytest.raises(SourceBusy, match="by a"):
                SourceLease(engines[0], "src", owner="c").acquire()  # within one store the source is still exclusive
        for engine in engines:
            engine.dispose()


async def test_partitions_as_flow_runs_store_what_one_pass_stores_and_the_whole_watermark(
    split_source: Path, tmp_path: Path
) -> None:
    runs = {parts: await sample(split_source, f"sqlite:///{tmp_path / f'p{parts}.db'}", partitions=parts)
            for parts in (1, 4)}  # fmt: skip
    stored = [stored_sample(f"sqlite:///{tmp_path / f'p{parts}.db'}") for parts in (1, 4)]
    for saved in stored:
        assert {Path(p).name: m["rows"] for p, m in saved["watermark"]["files"].items()} == {
            "part-0.jsonl": 676, "part-1.jsonl": 676, "part-2.jsonl": 676, "part-3.jsonl": 674,
        }  # fmt: skip
    one, four = runs[1], runs[4]
    assert stored[0] == stored[1] and len(stored[0]["interactions"]) == one["picked"] == four["picked"] > 200
    keys = ("read", "picked", "stored", "quarantined", "duplicate", "filtered", "strata", "quarantined_by", "watermark")
    assert {k: one[k] for k in keys} == {k: four[k] for k in keys} and four["judged"] == one["judged"]
    assert sorted(four["partitions"]) == ["1/4", "2/4", "3/4", "4/4"]
    assert all(state.endswith("COMPLETED") for state in four["partitions"].values()), four["partitions"]
    engine = make_engine(f"sqlite:///{tmp_path / 'p4.db'}")
    with engine.connect() as conn:
        names = sorted(conn.execute(text("SELECT name FROM eval_run WHERE name LIKE 'sample-partition/%'")).scalars())
        left = conn.execute(text("SELECT count(*) FROM source_watermark WHERE partition_of IS NOT NULL")).scalar()
    engine.dispose()
    assert names == [f"sample-partition/halluqa-demo#{k}/4" for k in range(1, 5)]  # a run of its own each
    assert left == 0  # merged into the source's watermark once every partition was read
    again = await sample(split_source, f"sqlite:///{tmp_path / 'p4.db'}", partitions=4)
    assert again["read"] == 0  # the saved watermark covers every partition


async def test_a_failed_partition_keeps_its_own_watermark_and_a_rerun_reads_only_what_it_left(
    split_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partition 3 dies after 30 picks: the run fails naming it; the others are read and stored, the source's
    watermark stays; the rerun reads only partition 3's rest, from its own watermark, and the store ends as one
    pass leaves it."""
    import flows.sampling_partition as partition_flow

    real = partition_flow.partition_sampler

    class Died(RuntimeError):
        pass

    def dying(config: Any, partition: Any, **kwargs: Any) -> Any:
        sampler, read = real(config, partition, **kwargs)
        if partition.index == 2:
            run = sampler.run

            def picks_then_death(source: Any) -> Any:
                for k, pick in enumerate(run(source)):
                    if k == 30:
                        raise Died("the worker's machine went away")
                    yield pick

            sampler.run = picks_then_death
        return sampler, read

    db = f"sqlite:///{tmp_path / 'jw.db'}"
    monkeypatch.setattr(partition_flow, "partition_sampler", dying)
    with pytest.raises(partition_flow.PartitionFailed, match="partition 3/4 did not complete"):
        await sample(split_source, db, partitions=4, batch_size=10)
    assert stored_sample(db)["watermark"] is None  # the source's watermark has not moved
    engine = make_engine(db)
    with session_scope(engine) as session:
        planned = load_partitions(session=session, source="halluqa-demo")
    rows = {r.source: (r.completed_at is not None, r.watermark) for r in planned}
    engine.dispose()
    assert [done for done, _ in rows.values()] == [True, True, False, True]
    own = json.loads(rows["halluqa-demo#3/4"][1] or "{}")
    kept = own["files"][str(split_source.parent / "logs" / "part-2.jsonl")]["rows"]
    assert 0 < kept < 676  # its batches of 10 picks were checkpointed before it died

    monkeypatch.setattr(partition_flow, "partition_sampler", real)
    rerun = await sample(split_source, db, partitions=4, batch_size=10)
    assert rerun["read"] == 676 - kept and rerun["started_from"].startswith("the unfinished partitions")
    assert [rerun["partitions"][f"{k}/4"] for k in (1, 2, 4)] == ["read by an earlier run"] * 3
    one_pass = f"sqlite:///{tmp_path / 'one.db'}"
    await sample(split_source, one_pass)
    assert stored_sample(db) == stored_sample(one_pass)  # no pick lost or doubled, the same watermark


async def test_a_dry_run_over_partitions_reports_what_one_pass_reports(split_source: Path, db: str) -> None:
    one = await sample(split_source, db, dry_run=True, partitions=1)
    two = await sample(split_source, db, dry_run=True, partitions=2)
    assert {k: v for k, v in one.items() if k != "batches"} == {k: v for k, v in two.items() if k != "batches"}
