"""A Prometheus collector that reads the store at scrape time (docs/operations.md, "Metrics and alerts"), in one
read-only transaction through `queries`. Scrapes closer together than `min_interval_s` share one reading; when the
database cannot be read the scrape still answers, with `judgewatch_store_up 0` and the error logged."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine, text
from sqlmodel import Session

from judgewatch.judging.spend_cap import day_spend
from judgewatch.metrics import names, queries
from judgewatch.metrics.families import StoreReading, families
from judgewatch.settings import ModelPrice, get_settings
from judgewatch.storage.paused import count_paused
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

DEFAULT_MIN_INTERVAL_S = 5.0
STATEMENT_TIMEOUT_MS = 60_000  # a query stuck longer than this fails the reading (store_up 0), not the server
# PostgreSQL: the reading's transaction is read-only, bounded in time, in UTC (hour buckets are UTC hours) and
# without JIT (compiling costs more than these small queries run): one round trip.
SESSION_SETTINGS = text(
    "SELECT set_config('transaction_read_only', 'on', true), "
    f"set_config('statement_timeout', '{STATEMENT_TIMEOUT_MS}', true), "
    "set_config('TimeZone', 'UTC', true), set_config('jit', 'off', true)"
)


def read_store(
    engine: Engine,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
    currency: str = "USD",
    spend_cap: float | None = None,
) -> StoreReading:
    """Every value the endpoint exports, read in one read-only transaction (`prices`: judge model -> price;
    `spend_cap`: the daily judge spend cap)."""
    with Session(engine) as session:
        if engine.dialect.name == "postgresql":
            session.execute(SESSION_SETTINGS)
        counts = queries.bounded_counts(session=session, now=utcnow())
        successes, gate_success = queries.last_successes(session=session)
        reading = StoreReading(
            verdicts=queries.verdict_counts(session=session), labels=counts["label"], drift=counts["drift"],
            queue=queries.review_queue(buckets=counts["queue"], leases=counts["leases"]),
            snapshots=queries.latest_tier_snapshots(session=session), model_change=counts["model_change"],
            gates=counts["gate"], successes=successes, gate_success=gate_success,
            trust=queries.trust_records(session=session), prices=dict(prices or {}), currency=currency,
            spend=day_spend(session, prices=prices or {}, currency=currency, cap=spend_cap),
            paused_picks=count_paused(session=session),
        )  # fmt: skip
    return reading  # closing the session ends the read-only transaction; the rows stay loaded


class StoreCollector(Collector):
    """Collects the catalogue's families from the store on each scrape (reusing a reading for a short while)."""

    def __init__(
        self,
        engine: Engine,
        *,
        min_interval_s: float = DEFAULT_MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        prices: Mapping[str, ModelPrice] | None = None,
        currency: str | None = None,
    ) -> None:
        """`prices`, `currency` and the spend cap come from the settings (judge_prices, cost_currency,
        judge_daily_spend_cap) unless given."""
        settings = get_settings()
        self.engine, self.spend_cap = engine, settings.judge_daily_spend_cap
        self.prices = dict(settings.judge_prices if prices is None else prices)
        self.currency = currency or settings.cost_currency
        self.min_interval_s = min_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._reading: StoreReading | None = None
        self._read_at = float("-inf")
        self._seconds = 0.0
        self._up = False

    def _fresh_reading(self) -> tuple[StoreReading | None, float, bool]:
        with self._lock:  # one reader at a time; the others wait and share its result
            if self._clock() - self._read_at >= self.min_interval_s or self._reading is None:
                started = time.perf_counter()
                try:
                    self._reading = read_store(self.engine, prices=self.prices, currency=self.currency,
                                               spend_cap=self.spend_cap)  # fmt: skip
                    self._up = True
                except Exception:  # a scrape must answer: say store_up 0 and log why, whatever broke
                    logger.exception("metrics: could not read the store at %s", self.engine.url)
                    self._reading, self._up = None, False
                self._seconds = time.perf_counter() - started
                self._read_at = self._clock()
            return self._reading, self._seconds, self._up

    def collect(self) -> Iterator[Metric]:
        reading, seconds, up = self._fresh_reading()
        if reading is not None:
            yield from families(reading)
        yield GaugeMetricFamily(names.STORE_UP.name, names.STORE_UP.help, value=1.0 if up else 0.0)
        yield GaugeMetricFamily(names.SCRAPE_SECONDS.name, names.SCRAPE_SECONDS.help, value=seconds)

    def warm_up(self) -> threading.Thread:
        """Read the store now, in a daemon thread, so the first scrape does not pay for the full read."""
        thread = threading.Thread(target=self._fresh_reading, name="judgewatch-metrics-warm-up", daemon=True)
        thread.start()
        return thread

    def describe(self) -> Iterator[Metric]:
        return iter(())  # registering must not read the database


def make_registry(
    engine: Engine, *, min_interval_s: float = DEFAULT_MIN_INTERVAL_S, warm: bool = False
) -> CollectorRegistry:
    """A registry holding only the store collector (no process or platform metrics). `warm=True` starts the first read
    in the background, so a server's first scrape does not run into Prometheus' scrape timeout on a large store."""
    registry = CollectorRegistry(auto_describe=False)
    collector = StoreCollector(engine, min_interval_s=min_interval_s)
    registry.register(collector)
    if warm:
        collector.warm_up()
    return registry
