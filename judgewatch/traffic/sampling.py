"""Deterministic, stratified, streaming sampling of traffic rows, with filters, de-duplication and PII scrubbing.

A row is picked when the hash of (salt + interaction id) falls below its stratum's rate: the same row and rate
give the same decision on any worker, in any order, and a sample at a lower rate is a subset of a sample at a
higher one (same salt). Every pick carries its inclusion probability, so estimates can weight it back.
"""

from __future__ import annotations

import fnmatch
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from functools import lru_cache, partial

from pydantic import BaseModel, Field

from judgewatch.contract.pii import Scrubber, scrub_messages
from judgewatch.hashing import UnitHash, hash_units
from judgewatch.traffic.config import FilterConfig, SamplingConfig, SourceConfig, micros_of
from judgewatch.traffic.dedup import DedupWindow, content_key
from judgewatch.traffic.records import Pick, RejectedTrafficRow, TrafficRow
from judgewatch.traffic.sources import SourceRead

logger = logging.getLogger(__name__)


def decide(interaction_id: str, rate: float, salt: str = "") -> bool:
    """Is this interaction in the sample at `rate`? Pure function of its arguments (the stored picks' rule)."""
    return decide_many((interaction_id,), (rate,), salt)[0]


def decide_many(interaction_ids: Sequence[str], rates: Sequence[float], salt: str = "") -> list[bool]:
    """`decide` for each interaction at its rate, in one pass (a block's eligible rows): the rule, written once."""
    units = hash_units(interaction_ids, salt, variant=UnitHash.SAMPLING)
    return [unit < rate for unit, rate in zip(units, rates, strict=True)]


class StratumStats(BaseModel):
    rate: float
    eligible: int = 0
    picked: int = 0


class SampleStats(BaseModel):
    """read = quarantined + filtered + duplicate + eligible; picked <= eligible; each count with its reasons."""

    read: int = 0
    quarantined: int = 0
    quarantined_by: dict[str, int] = Field(default_factory=dict)
    filtered: int = 0
    filtered_by: dict[str, int] = Field(default_factory=dict)
    duplicate: int = 0
    eligible: int = 0
    picked: int = 0
    strata: dict[str, StratumStats] = Field(default_factory=dict)
    pii: dict[str, int] = Field(default_factory=dict)

    def add(self, other: SampleStats) -> None:
        """Count `other`'s rows in too (the partitions of one read, added up)."""
        for name in ("read", "quarantined", "filtered", "duplicate", "eligible", "picked"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.quarantined_by, other.quarantined_by), (self.filtered_by, other.filtered_by),
                             (self.pii, other.pii)):  # fmt: skip
            add_counts(mine, theirs)
        for name, counts in other.strata.items():
            own = self.strata.setdefault(name, StratumStats(rate=counts.rate))
            own.eligible, own.picked = own.eligible + counts.eligible, own.picked + counts.picked


def add_counts(target: dict[str, int], counts: dict[str, int]) -> None:
    """Add each count of `counts` to `target`'s (a missing one is 0; a zero count adds no key)."""
    for key, n in counts.items():
        if n:
            target[key] = target.get(key, 0) + n


def stratum_rate(config: SamplingConfig, tier: str, route: str | None) -> tuple[str, float]:
    """(stratum label, rate): "tier/route" then "tier" then the default rate."""
    if config.stratify_by_route:
        stratum = f"{tier}/{route or '-'}"
        if stratum in config.rates:
            return stratum, config.rates[stratum]
    else:
        stratum = tier
    return stratum, config.rates.get(tier, config.default_rate)


def _matches(value: str | None, patterns: list[str]) -> bool:
    return value is not None and any(fnmatch.fnmatchcase(value, p) for p in patterns)


def label_reason(filters: FilterConfig, route: str | None, department: str | None) -> str | None:
    """Why the labels are out of scope ("route", "department"), or None; pure, so callers memoize it."""
    if (filters.routes is not None and not _matches(route, filters.routes)) or _matches(route, filters.exclude_routes):
        return "route"
    if (filters.departments is not None and not _matches(department, filters.departments)) or _matches(
        department, filters.exclude_departments
    ):
        return "department"
    return None


def value_reason(filters: FilterConfig, timestamp: datetime, answer_chars: int | None) -> str | None:
    """Why the values are out of bounds ("time", "answer_length"), or None; `answer_chars` None: no length bound."""
    timed = filters.since is not None or filters.until is not None
    time, length = filters.out_of_bounds(micros_of(timestamp) if timed else 0, answer_chars)
    return "time" if time else "answer_length" if length else None


class Sampler:
    """Consumes `TrafficRow | RejectedTrafficRow` items and yields `Pick`s; `stats` is live while it runs. Memory is
    O(dedup window). Quarantined rows go to `on_quarantine` (the lead's table) so they are never lost, else the log."""

    def __init__(
        self,
        config: SourceConfig,
        *,
        on_quarantine: Callable[[RejectedTrafficRow], None] | None = None,
    ) -> None:
        self.config = config
        self.on_quarantine = on_quarantine
        self.scrubber = Scrubber(config.pii.kinds) if config.pii.enabled else None
        dedup = config.sampling.dedup
        self.dedup = DedupWindow(dedup.window_rows, dedup.window_seconds) if dedup.enabled else None
        self._n: Counter[str] = Counter()  # read, quarantined, filtered, duplicate, eligible, picked
        self._filtered_by: Counter[str] = Counter()
        self._quarantined_by: Counter[str] = Counter()
        self._pii: Counter[str] = Counter()
        self._strata: dict[str, list[float]] = {}  # stratum -> [rate, eligible, picked]: plain, updated per row
        # `label_reason` under the config's filters and a row's (stratum, rate), memoized: labels and tiers are few
        self.labels_reason = lru_cache(maxsize=10_000)(partial(label_reason, config.filters))
        self.stratum = lru_cache(maxsize=10_000)(partial(stratum_rate, config.sampling))

    @property
    def stats(self) -> SampleStats:
        return SampleStats(
            **{name: self._n[name] for name in ("read", "quarantined", "filtered", "duplicate", "eligible", "picked")},
            filtered_by=dict(self._filtered_by),
            quarantined_by=dict(self._quarantined_by),
            strata={k: StratumStats(rate=r, eligible=int(e), picked=int(p)) for k, (r, e, p) in self._strata.items()},
            pii=dict(self._pii),
        )

    def run(self, items: Iterable[TrafficRow | RejectedTrafficRow] | SourceRead) -> Iterator[Pick]:
        """The picks, in source order: a `SourceRead` read in columnar blocks (decide, then map), others row by row."""
        if isinstance(items, SourceRead):
            from judgewatch.traffic.columnar.sampling import sample_blocks  # pyarrow and numpy: only to read a source

            return sample_blocks(self, items)
        return (pick for item in items if (pick := self.take(item)) is not None)

    def take(self, item: TrafficRow | RejectedTrafficRow) -> Pick | None:
        """The whole rule for one mapped row (or quarantined one)."""
        self._n["read"] += 1
        if isinstance(item, RejectedTrafficRow):
            self.quarantine(item)
            return None
        key = content_key(item) if self.dedup is not None else None
        if not self.admit(item.route, item.department, item.timestamp, len(item.answer), key):
            return None
        chosen = self.choose(item.tier, item.route, item.interaction_id)
        return None if chosen is None else self.pick(item, *chosen)

    def quarantine(self, item: RejectedTrafficRow) -> None:
        self._n["quarantined"] += 1
        self._quarantined_by[item.reason.value] += 1
        if self.on_quarantine is not None:
            self.on_quarantine(item)
        else:
            logger.warning("quarantined %s: %s %s", item.position, item.reason.value, item.detail)

    def count(self, name: str, k: int = 1, reason: str | None = None) -> None:
        """Add to a count of `stats` ("filtered" with its reason)."""
        self._n[name] += k
        if reason is not None:
            self._filtered_by[reason] += k

    def admit(
        self, route: str | None, department: str | None, at: datetime, answer_chars: int | None, key: bytes | None
    ) -> bool:
        """Filters, then the de-duplication window (`key`: the row's `content_key`); True when eligible."""
        reason = self.labels_reason(route, department) or value_reason(self.config.filters, at, answer_chars)
        if reason is not None:
            self.count("filtered", reason=reason)
            return False
        if self.dedup is not None and key is not None and self.dedup.seen(key, at.timestamp()):
            self.count("duplicate")
            return False
        self.count("eligible")
        return True

    def count_stratum(self, stratum: str, rate: float, eligible: int, picked: int) -> None:
        counts = self._strata.get(stratum)
        if counts is None:
            counts = self._strata[stratum] = [rate, 0, 0]
        counts[1] += eligible
        counts[2] += picked
        self._n["picked"] += picked

    def picked(self, interaction_ids: list[str], rates: list[float]) -> list[bool]:
        """`decide_many` under this source's salt: the columnar path's decisions, by the rule itself."""
        return decide_many(interaction_ids, rates, self.config.sampling.salt)

    def choose(self, tier: str, route: str | None, interaction_id: str) -> tuple[str, float] | None:
        """(stratum, rate) when the eligible row is picked, else None; counted per stratum."""
        stratum, rate = self.stratum(tier, route)
        picked = decide(interaction_id, rate, self.config.sampling.salt)
        self.count_stratum(stratum, rate, 1, int(picked))
        return (stratum, rate) if picked else None

    def unpick(self, stratum: str, rejected: RejectedTrafficRow) -> None:
        """A picked row whose full mapping rejected it after all: counted and stored as quarantined instead."""
        self._n["eligible"] -= 1
        self.count_stratum(stratum, self._strata[stratum][0], -1, -1)
        self.quarantine(rejected)

    def pick(self, row: TrafficRow, stratum: str, rate: float) -> Pick:
        clean, pii_counts = self._scrubbed(row)
        salt = self.config.sampling.salt
        return Pick(row=clean, stratum=stratum, inclusion_probability=rate, salt=salt, pii_counts=pii_counts)

    def _scrubbed(self, row: TrafficRow) -> tuple[TrafficRow, dict[str, int]]:
        """The row with PII replaced in every text a judge or reviewer will see."""
        if self.scrubber is None:
            return row, {}
        counts: Counter[str] = Counter()
        scrub = self.scrubber.scrub_into
        update = {
            "question": scrub(row.question, counts),
            "answer": scrub(row.answer, counts),
            "messages": scrub_messages(row.messages, self.scrubber, counts),
            "reference_answer": (scrub(row.reference_answer, counts) if row.reference_answer is not None else None),
            "reference_facts": [scrub(t, counts) for t in row.reference_facts],
            "context": [scrub(t, counts) for t in row.context],
            "attributes": {k: scrub(v, counts) if isinstance(v, str) else v for k, v in row.attributes.items()},
        }
        if not counts:  # every replacement is counted: nothing counted, nothing changed
            return row, {}
        self._pii.update(counts)
        return row.model_copy(update=update), dict(counts)
