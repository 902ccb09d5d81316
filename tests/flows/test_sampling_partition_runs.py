"""`traffic-sampling` with `partition_runs`: each partition a `sample-partition` flow run of its own.

The children run here as subflows of the test's process (`partition_deployment=None`): `run_deployment` needs
a worker to run them, which tests/integration/test_partition_workers.py starts with a real server. Everything
else is the same path: the children store, judge and route their partitions and leave their reports in the
store, and the parent reads them back and advances the watermark over the completed prefix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from flows.sampling_partition import PartitionFailed
from judgewatch.storage.db import make_engine
from judgewatch.testing.sampling_runs import sample_flow as sample
from judgewatch.testing.sampling_runs import stored_sample

pytestmark = pytest.mark.usefixtures("prefect_server")  # tests/conftest.py: one server per module

KEYS = ("read", "picked", "quarantined", "duplicate", "filtered", "strata", "quarantined_by", "watermark", "stored")
ROWS = {"part-0.jsonl": 676, "part-1.jsonl": 676, "part-2.jsonl": 676, "part-3.jsonl": 674}


def in_child_runs(source: Path, db: str, **params: Any) -> Any:
    return sample(source, db, partition_runs=True, partition_deployment=None, **params)


def review_and_verdicts(db: str) -> tuple[list[str], list[str]]:
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            verdicts = sorted(conn.execute(text("SELECT interaction_id FROM verdict")).scalars())
            review = sorted(conn.execute(text("SELECT verdict_id FROM review_item")).scalars())
    finally:
        engine.dispose()
    return verdicts, review


async def test_child_runs_store_what_one_pass_stores_with_1_2_and_4_partitions(
    split_source: Path, tmp_path: Path
) -> None:
    one_db = f"sqlite:///{tmp_path / 'one.db'}"
    one = await sample(split_source, one_db)
    expected = stored_sample(one_db)
    assert {Path(p).name: m["rows"] for p, m in expected["watermark"]["files"].items()} == ROWS
    for parts in (1, 2, 4):
        db = f"sqlite:///{tmp_path / f'runs-{parts}.db'}"
        report = await in_child_runs(split_source, db, partitions=parts)
        assert stored_sample(db) == expected, parts  # picks, quarantined rows, the saved watermark
        assert {k: report[k] for k in KEYS} == {k: one[k] for k in KEYS}, parts
        assert review_and_verdicts(db) == review_and_verdicts(one_db), parts  # same verdicts, same review items
        assert report["watermark_saved"] and report["judged"] == {"scored": one["picked"]}
        engine = make_engine(db)
        with engine.connect() as conn:
            runs = conn.execute(text("SELECT name, identity, params, status FROM eval_run ORDER BY name")).all()
            tags = set(conn.execute(text("SELECT run_id FROM quarantined_row")).scalars())
        engine.dispose()
        children = [r for r in runs if r.name.startswith("sample-partition/")]
        assert len(children) == parts and {r.status for r in runs} == {"completed"}
        assert {json.loads(r.params)["parent_run"] for r in children} == {report["run_id"]} == tags
        assert sorted(r.identity.rsplit("#", 1)[1] for r in children) == [f"{k}/{parts}" for k in range(1, parts + 1)]


async def test_child_runs_are_flow_runs_of_the_sample_partition_flow(split_source: Path, db: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    async with get_client() as client:
        before = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["sample-partition"])))
        await in_child_runs(split_source, db, partitions=4)
        after = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["sample-partition"])))
    new = [r for r in after if r.id not in {b.id for b in before}]
    assert len(new) == 4 and all(r.parent_task_run_id is not None for r in new)  # linked under the parent
    assert {r.state.type.value for r in new if r.state} == {"COMPLETED"}


async def test_a_failed_child_leaves_the_watermark_after_the_partitions_before_it_and_a_rerun_resumes(
    split_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.sampling_tasks as tasks

    real = tasks.partition_sampler

    def failing(partition: Any, **kwargs: Any) -> Any:
        if partition.index == 2:
            raise ConnectionError("the shared disk went away")
        return real(partition, **kwargs)

    db = f"sqlite:///{tmp_path / 'jw.db'}"
    monkeypatch.setattr(tasks, "partition_sampler", failing)
    with pytest.raises(PartitionFailed, match="partition 3 of 4 did not complete") as failed:
        await in_child_runs(split_source, db, partitions=4)
    assert "stays after partition 2" in str(failed.value)
    first = stored_sample(db)
    # Partition 4 completed, but the watermark stops before the failed one.
    assert {Path(p).name: m["rows"] for p, m in first["watermark"]["files"].items()} == {
        "part-0.jsonl": 676,
        "part-1.jsonl": 676,
    }
    monkeypatch.setattr(tasks, "partition_sampler", real)
    rerun = await in_child_runs(split_source, db, partitions=4)
    assert rerun["started_from"] == "the stored watermark" and rerun["read"] == 676 + 674
    one_pass = f"sqlite:///{tmp_path / 'one.db'}"
    await sample(split_source, one_pass)
    # Partition 4's picks were stored by the failed run and again by the rerun: once each. No retry straddles
    # the part-1/part-2 boundary in the demo log, so the rerun's cold window decides as one pass does.
    assert stored_sample(db) == stored_sample(one_pass)
    assert review_and_verdicts(db)[0] == review_and_verdicts(one_pass)[0]


async def test_without_the_sample_partition_deployment_the_run_fails_saying_so_and_reads_nothing(
    split_source: Path, db: str
) -> None:
    # The test server has no deployments: run_deployment finds none to create the children from.
    with pytest.raises(PartitionFailed, match=r"no deployment sample-partition/sample-partition.*prefect deploy"):
        await sample(split_source, db, partitions=2, partition_runs=True)
    assert stored_sample(db) == {"interactions": [], "quarantined": [], "watermark": None}


async def test_children_no_worker_picks_up_are_cancelled_after_the_patience_and_the_run_fails(
    split_source: Path, db: str
) -> None:
    """A deployment on a work pool that nothing polls: the children stay scheduled; after the patience the parent
    cancels them, fails naming the pool's missing worker, and saves no watermark."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    from flows.sampling_partition import sample_partition

    async with get_client() as client:
        await client.create_work_pool(WorkPoolCreate(name="nobody-polls", type="process"))
    deployment = await sample_partition.to_deployment(name="idle", work_pool_name="nobody-polls")
    await deployment.apply()
    with pytest.raises(PartitionFailed, match=r"still SCHEDULED after 3 s with no partition running; no worker"):
        await sample(
            split_source, db, partitions=2, partition_runs=True,
            partition_deployment="sample-partition/idle", partition_patience_s=3.0,
        )  # fmt: skip
    assert stored_sample(db)["watermark"] is None and stored_sample(db)["interactions"] == []
    async with get_client() as client:
        runs = await client.read_flow_runs()
    children = [r for r in runs if r.name.endswith("-of-2")]
    assert len(children) == 2 and {r.state.type.value for r in children if r.state} == {"CANCELLED"}


async def test_a_child_on_a_worker_without_the_partitions_files_fails_naming_the_host_and_stores_nothing(
    split_source: Path, db: str
) -> None:
    """The files the parent found travel in the job; a worker that cannot see one fails the child instead of
    quarantining the file as missing (which would pass for a completed read)."""
    import socket

    from flows.sampling_partition import PartitionJob, sample_partition
    from judgewatch.traffic import load_source_config
    from judgewatch.traffic.partitions import split_source as split

    parts = split(load_source_config(split_source), None, 2)
    job = PartitionJob.of(parts[1], partitions=2, identity="idem", parent_run="parent", database_url=db)
    assert [Path(p).name for p in job.files] == ["part-0.jsonl", "part-1.jsonl", "part-2.jsonl", "part-3.jsonl"]
    _remove(job.files[0])  # a warm-up file (partition 2 warms its window from partition 1's rows)
    state = await sample_partition(job=job, return_state=True)
    assert state.is_failed()
    with pytest.raises(FileNotFoundError, match=rf"partition 2 of 2: 1 of its files are not on worker host "
                       rf"{socket.gethostname()}, first .*part-0.jsonl"):  # fmt: skip
        await state.result()
    assert not _exists(db.removeprefix("sqlite:///"))  # it failed before opening the store


def _remove(path: str) -> None:
    Path(path).unlink()


def _exists(path: str) -> bool:
    return Path(path).exists()
