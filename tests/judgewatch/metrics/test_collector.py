"""The store collector on SQLite and the real PostgreSQL: what a scrape exports, and how it follows the store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, insert, select

from judgewatch.metrics.collector import StoreCollector
from judgewatch.storage.db import make_engine, table
from judgewatch.storage.review import ReviewItem, ReviewLabel
from judgewatch.storage.types import utcnow
from judgewatch.testing.clocks import ManualClock
from judgewatch.testing.metrics_store import add_verdicts, rejudge, seed_store

N = 400  # seeded verdicts: every 20th unscored, every 7th answered by the reference judge after a fallback


def scrape(collector: StoreCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(samples: dict, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and all((k, x) in ls for k, x in labels.items()))


@pytest.fixture
def seeded(engine: Engine) -> Engine:
    seed_store(engine, verdicts=N)
    return engine


def test_a_scrape_exports_the_stored_verdicts_queue_calibration_gates_and_trust(seeded: Engine) -> None:
    samples = scrape(StoreCollector(seeded, min_interval_s=0))
    assert total(samples, "judgewatch_verdicts_total") == N
    assert total(samples, "judgewatch_verdicts_total", status="unscored") == N / 20
    assert total(samples, "judgewatch_verdicts_total", source="regression") == N / 4
    assert total(samples, "judgewatch_verdicts_total", source="traffic") == N * 3 / 4
    assert total(samples, "judgewatch_verdicts_total", tier="quantized") == N / 2
    assert total(samples, "judgewatch_unscored_total") == N / 20
    assert total(samples, "judgewatch_unscored_total", reason="endpoint_down") > 0
    fallbacks = len(range(0, N, 7))
    assert (
        total(samples, "judgewatch_fallback_verdicts_total", from_judge="smollm2-135m-instruct", to_judge="reference")
        == fallbacks
    )
    assert total(samples, "judgewatch_judge_latency_seconds_count") == N
    assert total(samples, "judgewatch_judge_latency_seconds_bucket", le="+Inf") == N
    # every verdict of the seed takes 50 ms to 4.05 s
    assert total(samples, "judgewatch_judge_latency_seconds_bucket", le="0.05") < N / 50
    assert total(samples, "judgewatch_judge_latency_seconds_bucket", le="5.0") == N
    assert total(samples, "judgewatch_judge_tokens_total", judge="smollm2-135m-instruct", kind="prompt") == 400 * (
        N - fallbacks
    )
    assert total(samples, "judgewatch_judge_tokens_total", judge="reference") == 0
    queue = {dict(ls)["state"]: v for (n, ls), v in samples.items() if n == "judgewatch_review_queue_items"}
    assert queue == {"waiting": 8, "leased": 8, "labeled": 8, "adjudication": 8, "flagged": 8}
    assert total(samples, "judgewatch_review_labels_total") == 8
    assert samples[
        (
            "judgewatch_tier_score",
            (("criterion", "faithfulness"), ("kind", "raw"), ("rubric", "answer_quality"), ("tier", "full")),
        )
    ] == pytest.approx(3.6)
    assert total(samples, "judgewatch_tier_score", tier="full", kind="corrected") == pytest.approx(3.3)
    assert total(samples, "judgewatch_agreement", tier="quantized", measure="weighted_kappa") == pytest.approx(0.6)
    assert total(samples, "judgewatch_drift_alerts_open", tier="quantized", test="agreement_drop") == 1
    # a served-model change is its own family, never counted as judge drift
    assert total(samples, "judgewatch_drift_alerts_open") == 1
    assert total(samples, "judgewatch_served_model_change_alerts_open", tier="full", release="r7") == 1
    assert {dict(ls)["exit_code"]: v for (n, ls), v in samples.items() if n == "judgewatch_gate_decisions_total"} == {
        "0": 1, "1": 1, "2": 1
    }  # fmt: skip
    flows = {dict(ls)["flow"] for (n, ls), v in samples.items() if n == "judgewatch_last_success_timestamp_seconds"}
    assert flows == {"traffic-sampling", "calibration", "post-release-regression"}
    now = utcnow().timestamp()
    assert 0 < now - total(samples, "judgewatch_last_success_timestamp_seconds", flow="traffic-sampling") < 3600
    assert total(samples, "judgewatch_judge_trust_auroc", dataset="halueval") == pytest.approx(0.52)
    assert samples[("judgewatch_store_up", ())] == 1


def test_a_rejudge_adds_to_the_counters_and_moves_the_current_gauge(seeded: Engine) -> None:
    collector = StoreCollector(seeded, min_interval_s=0)
    before = scrape(collector)
    add_verdicts(seeded, start=N, count=30)
    rejudge(seeded, positions=[20, 40, 60])  # three unscored verdicts are judged again and scored now, in place
    samples = scrape(collector)
    new_unscored = len([k for k in range(N, N + 30) if k % 20 == 0])
    # Counters count writes and never go down: each re-judge is one more verdict written, under "scored".
    assert total(samples, "judgewatch_verdicts_total") == N + 30 + 3
    assert total(samples, "judgewatch_verdicts_total", status="scored") == (
        total(before, "judgewatch_verdicts_total", status="scored") + 30 - new_unscored + 3
    )
    assert total(samples, "judgewatch_unscored_total") == N / 20 + new_unscored
    assert total(samples, "judgewatch_judge_latency_seconds_count") == N + 30 + 3
    for name, labels in before:
        if name.endswith(("_total", "_count", "_bucket", "_sum")):
            assert samples[(name, labels)] >= before[(name, labels)], name
    # The gauge says what stands now: the re-judged verdicts left "unscored".
    assert total(samples, "judgewatch_verdicts_current") == N + 30
    assert total(samples, "judgewatch_verdicts_current", status="unscored") == N / 20 - 3 + new_unscored
    fresh = scrape(StoreCollector(seeded, min_interval_s=0))  # a new collector reads the same counts
    timing = ("judgewatch_scrape_duration_seconds", ())
    assert {k: v for k, v in samples.items() if k != timing} == pytest.approx(
        {k: v for k, v in fresh.items() if k != timing}
    )


def test_a_superseded_fallback_verdict_leaves_the_gauge_but_stays_counted(seeded: Engine) -> None:
    from judgewatch.contract.verdicts import JudgeIdentity
    from judgewatch.storage.db import session_scope
    from judgewatch.storage.verdicts import VerdictRecord, get_verdicts, upsert_verdicts

    before = scrape(StoreCollector(seeded, min_interval_s=0))
    with session_scope(seeded) as session:  # position 7 was answered by the reference judge after a fallback
        record: VerdictRecord = get_verdicts(session=session, interaction_ids=[f"i{7:031d}"])[0]
        verdict = record.to_verdict()
        judge = JudgeIdentity(kind="openai", name="smollm2-135m-instruct", config_hash="cfg-smollm2-135m-instruct")
        again = verdict.model_copy(update={"judge": judge, "fallback_from": []})
        upsert_verdicts(session=session, run_id=None, verdicts=[(record.interaction_id, again)])
    after = scrape(StoreCollector(seeded, min_interval_s=0))
    fallbacks = "judgewatch_fallback_verdicts_total"
    assert total(after, fallbacks) == total(before, fallbacks)  # still written, once
    assert total(after, "judgewatch_verdicts_current", judge="reference") == (
        total(before, "judgewatch_verdicts_current", judge="reference") - 1
    )
    assert total(after, "judgewatch_verdicts_current") == N
    assert total(after, "judgewatch_verdicts_total") == N + 1


def test_labels_are_counted_once_and_new_labels_add_up(seeded: Engine) -> None:
    collector = StoreCollector(seeded, min_interval_s=0)
    assert total(scrape(collector), "judgewatch_review_labels_total") == 8
    assert total(scrape(collector), "judgewatch_review_labels_total") == 8
    now = utcnow()
    with seeded.begin() as conn:
        conn.execute(
            insert(table(ReviewLabel)),
            [
                {"review_item_id": f"q{k:031d}", "reviewer": "reviewer1", "scores": {}, "skipped_reason": skip,
                 "flagged": False, "comment": "", "started_at": now, "submitted_at": now, "duration_ms": 5,
                 "rubric_version_shown": "1.0.0", "via": "ui"}
                for k, skip in ((0, None), (10, "unsure"))
            ],
        )  # fmt: skip
    assert total(scrape(collector), "judgewatch_review_labels_total") == 9  # the skip does not count


def test_a_lease_that_ran_out_counts_as_waiting_and_a_submit_moves_the_item(seeded: Engine) -> None:
    items = table(ReviewItem)
    with seeded.begin() as conn:  # three of the eight leases run out; one leased item is labeled done
        leased = list(conn.execute(select(items.c.id).where(items.c.state == "leased").order_by(items.c.id)).scalars())
        conn.execute(items.update().where(items.c.id.in_(leased[:3])).values(lease_expires_at=utcnow() - timedelta(1)))
        conn.execute(items.update().where(items.c.id == leased[-1]).values(state="done", lease_expires_at=None))
    samples = scrape(StoreCollector(seeded, min_interval_s=0))
    queue = {dict(ls)["state"]: v for (n, ls), v in samples.items() if n == "judgewatch_review_queue_items"}
    assert queue == {"waiting": 8 + 3, "leased": 8 - 3 - 1, "labeled": 8 + 1, "adjudication": 8, "flagged": 8}


def test_scrapes_within_the_interval_share_one_reading(seeded: Engine) -> None:
    clock = ManualClock(0.0)
    collector = StoreCollector(seeded, min_interval_s=15, clock=clock)
    assert total(scrape(collector), "judgewatch_verdicts_total") == N
    add_verdicts(seeded, start=N, count=5)
    clock.now = 10
    assert total(scrape(collector), "judgewatch_verdicts_total") == N
    clock.now = 16
    assert total(scrape(collector), "judgewatch_verdicts_total") == N + 5


def test_an_unreadable_store_answers_store_up_0_and_recovers(tmp_path) -> None:
    path = tmp_path / "gone" / "store.db"
    engine = make_engine(f"sqlite:///{path}")  # no migration: every table is missing
    collector = StoreCollector(engine, min_interval_s=0)
    samples = scrape(collector)
    assert samples[("judgewatch_store_up", ())] == 0
    assert not any(name == "judgewatch_verdicts_total" for name, _ in samples)
    from judgewatch.storage.migrations import migrate

    migrate(engine)
    seed_store(engine, verdicts=40)
    samples = scrape(collector)
    assert samples[("judgewatch_store_up", ())] == 1
    assert total(samples, "judgewatch_verdicts_total") == 40
    engine.dispose()


@pytest.fixture
def big_store(engine: Engine) -> Iterator[Engine]:
    seed_store(engine, verdicts=5000)
    yield engine


def test_label_values_stay_bounded_on_a_store_with_many_items(big_store: Engine, engine: Engine) -> None:
    """5,000 items with unique ids, questions, answers: the series are those of a small store, no value leaks."""
    samples = scrape(StoreCollector(big_store, min_interval_s=0))
    names = {name for name, _ in samples}
    assert len(samples) < 200, f"{len(samples)} series"
    per_family: dict[str, int] = {}
    for name, _ in samples:
        per_family[name] = per_family.get(name, 0) + 1
    assert per_family["judgewatch_verdicts_total"] <= 2 * 2 * 2 * 2 * 2  # judge x rubric x tier x source x status
    values = {value for _, labels in samples for _, value in labels}
    for value in values:
        assert not value.startswith(("i0", "v0", "q0")), value  # no interaction, verdict or review item id
        assert "question" not in value and "answer " not in value, value
        assert "reviewer" not in value, value  # no reviewer names
        assert "s3cret" not in value and "://" not in value, value  # the fallback link's endpoint is dropped
        assert not value.isdigit() or value in {"0", "1", "2"}, value  # only exit codes are numbers
    assert "judgewatch_verdicts_total" in names
