"""The daily judge spend cap: once the UTC day's judge spend reaches it, ingest judging pauses (the run says so in
`runs list`, the metrics and the Tiers page show it) and the next day's run judges every pick it left."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import Engine, text
from typer.testing import CliRunner

from judges.factory import chain, judge_links
from judgewatch.cli import get_app
from judgewatch.contract.rubric import Rubric
from judgewatch.ingest.judging import judge_received
from judgewatch.metrics.collector import StoreCollector
from judgewatch.review.routing import RoutingPolicy
from judgewatch.settings import ModelPrice, get_settings
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import Interaction, interaction_id, upsert_interactions
from judgewatch.storage.paused import pause_picks
from judgewatch.storage.types import utcnow
from judgewatch.testing.metrics_store import JUDGES, seed_store, written_at
from review_ui.tiers_page import tiers_view

PRICE = ModelPrice(input=1.0, output=4.0, cached_input=0.25)
SPENT = 17 * (100 * 1.0 + 300 * 0.25 + 60 * 4.0) / 1_000_000  # the seed's 17 priced verdicts
CAP = 0.005  # under SPENT: the day's cap is reached


@pytest.fixture
def capped(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("JUDGEWATCH_JUDGE_PRICES", json.dumps({JUDGES[0]: PRICE.model_dump()}))
    monkeypatch.setenv("JUDGEWATCH_COST_CURRENCY", "EUR")
    monkeypatch.setenv("JUDGEWATCH_JUDGE_DAILY_SPEND_CAP", str(CAP))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def spend_today(engine: Engine) -> None:
    seed_store(engine, verdicts=20)
    written_at(engine, utcnow())


def a_day_passes(engine: Engine) -> None:
    """Every verdict so far was written yesterday (UTC): today's spend starts again from 0."""
    written_at(engine, utcnow() - timedelta(days=1))


def received(engine: Engine, n: int) -> list[str]:
    """`n` picks the OTLP receiver stored for source `otlp`."""
    rows = [
        Interaction(id=interaction_id("traffic:otlp", f"span-{k}"), source="traffic:otlp", source_id=f"span-{k}",
                    question=f"What is {k} + {k}?", answer=f"{2 * k}", reference_answer=f"{2 * k}", tier="full",
                    meta={"inclusion_probability": 1.0})
        for k in range(n)
    ]  # fmt: skip
    with session_scope(engine, write=True) as session:
        upsert_interactions(session=session, interactions=rows)
    return [row.id for row in rows]


async def judge_otlp(engine: Engine, rubric: Rubric) -> dict[str, object]:
    judge = chain(judge_links("reference", get_settings(), rubric=rubric))
    policy = RoutingPolicy.from_settings(get_settings())
    return await judge_received(engine, source="otlp", rubric=rubric, judge=judge, policy=policy)


def verdicts_on(engine: Engine, ids: list[str]) -> int:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT interaction_id FROM verdict")).scalars()
        return len(set(rows) & set(ids))


@pytest.mark.usefixtures("capped")
async def test_ingest_judging_pauses_at_the_cap_says_so_and_judges_every_pick_the_next_day(
    engine: Engine, db_url: str, rubric: Rubric
) -> None:
    spend_today(engine)
    ids = received(engine, 12)
    paused = await judge_otlp(engine, rubric)
    assert str(paused["paused"]).startswith("spend_cap: sampling-side judging paused until ")
    assert f"{SPENT:.4f} EUR for 20 verdicts" in str(paused["paused"]) and "of the daily cap of 0.005 EUR" in str(
        paused["paused"]
    )
    assert paused["judged"] == {} and verdicts_on(engine, ids) == 0  # stored, not judged, not lost

    listed = CliRunner().invoke(get_app(), ["runs", "list", "--database-url", db_url])
    assert listed.exit_code == 0, listed.output
    (line,) = [row for row in listed.output.splitlines() if "ingest-judge/otlp" in row]
    assert " paused " in line and "paused_items=12" in line
    assert "  paused: spend_cap: sampling-side judging paused until" in listed.output
    (run,) = [json.loads(row) for row in CliRunner().invoke(get_app(), ["runs", "list", "--json", "--database-url",
              db_url]).output.splitlines() if "ingest-judge" in row]  # fmt: skip
    assert run["status"] == "paused" and run["note"] == paused["paused"]

    again = await judge_otlp(engine, rubric)  # the same UTC day: still paused, still nothing judged
    assert again["paused"] and verdicts_on(engine, ids) == 0

    a_day_passes(engine)
    resumed = await judge_otlp(engine, rubric)
    assert resumed["paused"] is None and sum(resumed["judged"].values()) == 12  # type: ignore[union-attr]
    assert verdicts_on(engine, ids) == 12
    (run,) = [json.loads(row) for row in CliRunner().invoke(get_app(), ["runs", "list", "--json", "--database-url",
              db_url]).output.splitlines() if "ingest-judge" in row]  # fmt: skip
    assert run["status"] == "completed" and run["note"] is None


@pytest.mark.usefixtures("capped")
def test_the_metrics_and_the_tiers_page_show_the_pause_and_the_picks_waiting(engine: Engine) -> None:
    spend_today(engine)
    ids = received(engine, 3)
    with session_scope(engine, write=True) as session:
        pause_picks(session=session, source="traffic:otlp", interaction_ids=ids, run_id=None)

    def scrape() -> str:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(StoreCollector(engine, min_interval_s=0))
        return generate_latest(registry).decode()

    metrics = scrape()
    assert "judgewatch_judge_spend_cap_paused 1.0" in metrics
    assert f'judgewatch_judge_spend_today{{currency="EUR"}} {SPENT}' in metrics
    assert "judgewatch_judge_paused_picks 3.0" in metrics
    header = tiers_view(engine).header
    assert "**Judging paused**: spend_cap: sampling-side judging paused until" in header
    assert "(3 sampled picks wait to be judged)" in header and "release gates are not paused" in header

    a_day_passes(engine)
    metrics = scrape()
    assert "judgewatch_judge_spend_cap_paused 0.0" in metrics
    assert 'judgewatch_judge_spend_today{currency="EUR"} 0.0' in metrics
    header = tiers_view(engine).header
    assert "Judging paused" not in header
    assert (
        "Judge spend today" in header and "0.0000 EUR for 0 verdicts" in header and "daily cap of 0.005 EUR" in header
    )
