"""Judge cost in money: stored tokens priced per model, per run, release and day, in `runs list` and the metrics;
a model without a price is named as unpriced, never counted as free."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import Engine
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.judging.costs import judge_costs
from judgewatch.metrics.collector import StoreCollector
from judgewatch.settings import ModelPrice, get_settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.testing.metrics_store import JUDGES, seed_store

N = 100
PRICE = ModelPrice(input=1.0, output=4.0, cached_input=0.25)
# The seed's openai verdicts: 400 prompt tokens (300 of them cached), 60 completion; its reference ones: none.
PER_VERDICT = (100 * 1.0 + 300 * 0.25 + 60 * 4.0) / 1_000_000


def openai_verdicts(keep: Callable[[int], bool] | None = None) -> int:
    return sum(1 for k in range(N) if k % 7 != 0 and (keep is None or keep(k)))


@pytest.fixture
def store(tmp_path: Path) -> tuple[Engine, str]:
    url = f"sqlite:///{tmp_path / 'jw.db'}"
    engine = make_engine(url)
    migrate(engine)
    seed_store(engine, verdicts=N)
    return engine, url


def test_costs_per_run_release_and_day_price_each_verdicts_tokens(store: tuple[Engine, str]) -> None:
    engine, _ = store
    prices = {JUDGES[0]: PRICE}
    with session_scope(engine) as session:
        by_run = judge_costs(session, by="run", prices=prices, currency="EUR")
        by_release = judge_costs(session, by="release", prices=prices, currency="EUR")
        by_day = judge_costs(session, by="day", prices=prices, currency="EUR")
    regression = openai_verdicts(lambda k: k % 4 == 0)
    assert by_run["run-regression"].amount == pytest.approx(regression * PER_VERDICT)
    assert by_run["run-traffic"].amount == pytest.approx((openai_verdicts() - regression) * PER_VERDICT)
    assert by_run["run-regression"].verdicts == N // 4  # the reference verdicts are counted, and cost nothing
    assert set(by_release) == {"r2"} and by_release["r2"].amount == pytest.approx(regression * PER_VERDICT)
    assert sum(c.amount for c in by_day.values()) == pytest.approx(openai_verdicts() * PER_VERDICT)
    assert "EUR" in by_run["run-traffic"].describe() and not by_run["run-traffic"].unpriced_models


def test_a_model_without_a_price_is_unpriced_not_free(store: tuple[Engine, str]) -> None:
    engine, _ = store
    with session_scope(engine) as session:
        cost = judge_costs(session, by="run", prices={}, currency="USD")["run-traffic"]
    assert cost.amount == 0 and cost.unpriced_models == {JUDGES[0]: openai_verdicts(lambda k: k % 4 != 0)}
    assert f"not priced (no price in judge_prices): {JUDGES[0]}" in cost.describe()


def test_runs_list_shows_each_runs_cost(store: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, url = store
    monkeypatch.setenv("JUDGEWATCH_JUDGE_PRICES", json.dumps({JUDGES[0]: PRICE.model_dump()}))
    monkeypatch.setenv("JUDGEWATCH_COST_CURRENCY", "EUR")
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(get_app(), ["runs", "list", "--json", "--database-url", url])
        table = CliRunner().invoke(get_app(), ["runs", "list", "--database-url", url])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    runs = {row["id"]: row for row in map(json.loads, result.output.splitlines())}
    regression = openai_verdicts(lambda k: k % 4 == 0)
    assert runs["run-regression"]["cost"]["amount"] == pytest.approx(regression * PER_VERDICT, abs=1e-6)
    assert runs["run-regression"]["cost"]["currency"] == "EUR"
    assert "cost=0.0" in table.output and "EUR" in table.output


def test_the_metrics_export_priced_judges_only(store: tuple[Engine, str]) -> None:
    engine, _ = store
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(engine, prices={JUDGES[0]: PRICE}, currency="USD"))
    text = generate_latest(registry).decode()
    line = next(x for x in text.splitlines() if x.startswith("judgewatch_judge_cost_total{"))
    assert f'judge="{JUDGES[0]}"' in line and float(line.rsplit(" ", 1)[1]) == pytest.approx(
        openai_verdicts() * PER_VERDICT
    )
    assert 'judgewatch_judge_cost_total{currency="USD",judge="reference"}' not in text


def test_the_tiers_pages_cost_line_totals_the_period_and_names_each_release(store: tuple[Engine, str]) -> None:
    from judgewatch.judging.costs import cost_line
    from judgewatch.settings import Settings

    engine, _ = store
    settings = Settings(judge_prices={JUDGES[0]: PRICE}, cost_currency="EUR")
    with session_scope(engine) as session:
        line = cost_line(session, settings, None)
    total = openai_verdicts() * PER_VERDICT
    assert line.startswith(f"Judge cost over the period: {total:.4f} EUR for {N:,} verdicts")
    assert "per release: r2 " in line
    with session_scope(engine) as session:
        unpriced = cost_line(session, Settings(), None)
    assert f"not priced (no price in judge_prices): {JUDGES[0]}" in unpriced
