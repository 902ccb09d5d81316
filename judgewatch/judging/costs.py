"""What judging cost in money: the tokens stored per verdict, priced by the settings' table per judge model.

A verdict's price is `ModelPrice.of` its tokens. A model missing from the table is never priced at 0: its verdicts
and tokens are counted as unpriced and every total says so. Per run or release the tokens are the stored verdicts';
per UTC day every verdict write's of that day, re-judges included (`storage.verdict_counts.SpendDay`, kept by the
verdict writer), read in a few rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import Engine, func, select
from sqlmodel import Session

from judgewatch.settings import ModelPrice, Settings
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.verdict_counts import SpendDay
from judgewatch.storage.verdicts import VerdictRecord


@dataclass
class Cost:
    """Judge cost of one group of verdicts (a run, a release, a day)."""

    currency: str
    amount: float = 0.0  # priced verdicts only
    verdicts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    unpriced_models: dict[str, int] = field(default_factory=dict)  # model -> verdicts that used tokens, no price

    def add(self, model: str, n: int, prompt: int, completion: int, cached: int, price: ModelPrice | None) -> None:
        self.verdicts += n
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cached_tokens += cached
        if price is not None:
            self.amount += price.of(prompt, completion, cached)
        elif prompt or completion:
            self.unpriced_models[model] = self.unpriced_models.get(model, 0) + n

    def merge(self, other: Cost) -> None:
        """Add another group's figures (same currency) to this one."""
        for name in ("amount", "verdicts", "prompt_tokens", "completion_tokens", "cached_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for model, n in other.unpriced_models.items():
            self.unpriced_models[model] = self.unpriced_models.get(model, 0) + n

    def describe(self) -> str:
        """`0.0123 USD for 1,000 verdicts (812,400 prompt / 40,210 completion tokens)`, unpriced models named."""
        text = (
            f"{self.amount:.4f} {self.currency} for {self.verdicts:,} verdicts "
            f"({self.prompt_tokens:,} prompt, {self.cached_tokens:,} of them cached, "
            f"{self.completion_tokens:,} completion tokens)"
        )
        if self.unpriced_models:
            names = ", ".join(f"{m} ({n:,} verdicts)" for m, n in sorted(self.unpriced_models.items()))
            text += f"; not priced (no price in judge_prices): {names}"
        return text

    def to_json(self) -> dict[str, object]:
        return asdict(self) | {"amount": round(self.amount, 6)}


GroupBy = Literal["run", "release", "day"]


def judge_costs(
    session: Session,
    *,
    by: GroupBy,
    prices: Mapping[str, ModelPrice],
    currency: str,
    run_ids: list[str] | None = None,
    releases: list[str] | None = None,
    since: datetime | None = None,
) -> dict[str, Cost]:
    """Judge cost per run id, release or UTC day (YYYY-MM-DD; from the day of `since`), priced by `prices`."""
    if by == "day":
        if run_ids is not None or releases is not None:
            raise ValueError("the cost per day covers every run and release: it cannot be narrowed to some")
        return _day_costs(session, prices, currency, since)
    v, i = table(VerdictRecord).c, table(Interaction).c
    key = {"run": v.run_id, "release": i.release}[by]
    query = select(
        key,
        v.judge_name,
        func.count(),
        func.coalesce(func.sum(v.prompt_tokens), 0),
        func.coalesce(func.sum(v.completion_tokens), 0),
        func.coalesce(func.sum(v.cached_tokens), 0),
    )
    if by == "release" or releases is not None:
        query = query.join(Interaction, i.id == v.interaction_id)
    if run_ids is not None:
        query = query.where(v.run_id.in_(run_ids))
    if releases is not None:
        query = query.where(i.release.in_(releases))
    if since is not None:
        query = query.where(v.updated_at >= since)
    costs: dict[str, Cost] = {}
    for group, model, n, prompt, completion, cached in session.execute(query.group_by(key, v.judge_name)):
        if group is None:
            continue
        cost = costs.setdefault(str(group), Cost(currency))
        cost.add(model, int(n), int(prompt), int(completion), int(cached), prices.get(model))
    return costs


def _day_costs(
    session: Session, prices: Mapping[str, ModelPrice], currency: str, since: datetime | None
) -> dict[str, Cost]:
    d = table(SpendDay).c
    query = select(d.day, d.judge, d.verdicts, d.prompt_tokens, d.completion_tokens, d.cached_tokens)
    if since is not None:
        query = query.where(d.day >= since.astimezone(UTC).date().isoformat())
    costs: dict[str, Cost] = {}
    for day, model, n, prompt, completion, cached in session.execute(query):
        costs.setdefault(day, Cost(currency)).add(model, n, prompt, completion, cached, prices.get(model))
    return costs


def release_cost(engine: Engine, release: str, settings: Settings) -> dict[str, object]:
    """The judge's cost for every verdict on a release's interactions so far, as JSON with its one-line `text`."""
    with session_scope(engine) as session:
        costs = judge_costs(
            session, by="release", prices=settings.judge_prices, currency=settings.cost_currency, releases=[release]
        )
    cost = costs.get(release, Cost(settings.cost_currency))
    return {**cost.to_json(), "text": cost.describe()}


def cost_line(session: Session, settings: Settings, since: datetime | None) -> str:
    """One line for a page: the judge's cost over the period, in all (UTC days from the day of `since`) and per
    release (the verdicts written since `since`; priced models only)."""
    prices, currency = settings.judge_prices, settings.cost_currency
    per_day = judge_costs(session, by="day", prices=prices, currency=currency, since=since)
    total = Cost(currency)
    for day in per_day.values():
        total.merge(day)
    releases = judge_costs(session, by="release", prices=prices, currency=currency, since=since)
    per_release = ", ".join(f"{r} {c.amount:.4f}" for r, c in sorted(releases.items()))
    return f"Judge cost over the period: {total.describe()}" + (f"; per release: {per_release}" if per_release else "")


def run_cost(engine: Engine, run_id: str, settings: Settings) -> str:
    """One run's judge cost in one line (`judge`'s summary)."""
    with session_scope(engine) as session:
        costs = judge_costs(
            session, by="run", prices=settings.judge_prices, currency=settings.cost_currency, run_ids=[run_id]
        )
    return costs.get(run_id, Cost(settings.cost_currency)).describe()
