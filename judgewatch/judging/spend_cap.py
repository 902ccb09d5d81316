"""The daily judge spend cap (docs/operations.md): today's (UTC) judge spend, and whether sampling-side judging pauses.

The one reading behind the pause, the `judge_spend_*` metrics, the Tiers page and the alert rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlmodel import Session

from judgewatch.judging.costs import Cost, judge_costs
from judgewatch.settings import ModelPrice, Settings
from judgewatch.storage.types import utcnow

SPEND_CAP = "spend_cap"  # the reason a paused run and its picks carry


@dataclass(frozen=True)
class DaySpend:
    """The judge's spend of one UTC day so far, and the cap it is held to (None: no cap)."""

    day: date
    cost: Cost
    cap: float | None

    @property
    def paused(self) -> bool:
        return self.cap is not None and self.cost.amount >= self.cap

    @property
    def resumes_at(self) -> datetime:
        return datetime.combine(self.day + timedelta(days=1), time(), UTC)

    def describe(self) -> str:
        """`Judge spend today (2026-01-05 UTC): 0.0123 USD for ... of the daily cap of 1 USD`."""
        cap = f" of the daily cap of {self.cap:g} {self.cost.currency}" if self.cap is not None else " (no daily cap)"
        return f"Judge spend today ({self.day} UTC): {self.cost.describe()}{cap}"

    def pause_note(self) -> str:
        """Why sampling-side judging is paused and until when: the note a paused run and the pages carry."""
        return (
            f"{SPEND_CAP}: sampling-side judging paused until {self.resumes_at:%Y-%m-%d %H:%M} UTC: "
            f"{self.describe()}; its picks are stored and judged then; release gates are not paused"
        )


def day_spend(
    session: Session,
    *,
    prices: Mapping[str, ModelPrice],
    currency: str,
    cap: float | None,
    now: datetime | None = None,
) -> DaySpend:
    """The spend of the UTC day of `now` (default: the clock) so far."""
    day = (now or utcnow()).astimezone(UTC).date()
    start = datetime.combine(day, time(), UTC)
    total = Cost(currency)
    for cost in judge_costs(session, by="day", prices=prices, currency=currency, since=start).values():
        total.merge(cost)
    return DaySpend(day, total, cap)


def settings_day_spend(session: Session, settings: Settings, now: datetime | None = None) -> DaySpend:
    """`day_spend` with the settings' prices, currency and cap."""
    return day_spend(
        session,
        prices=settings.judge_prices,
        currency=settings.cost_currency,
        cap=settings.judge_daily_spend_cap,
        now=now,
    )
