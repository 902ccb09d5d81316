"""Deterministic, stratified, streaming sampling of traffic rows, with filters, de-duplication and PII scrubbing.

A row is picked when the hash of (salt + interaction id) falls below its stratum's rate: the same row and rate
give the same decision on any worker, in any order, and a sample at a lower rate is a subset of a sample at a
higher one (same salt). Every pick carries its inclusion probability, so estimates can weight it back.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from judgewatch.traffic.config import FilterConfig, SamplingConfig, SourceConfig
from judgewatch.traffic.pii import Scrubber
from judgewatch.traffic.records import Message, RejectedTrafficRow, TrafficRow

logger = logging.getLogger(__name__)

_TWO_64 = float(2**64)


def hash_unit(interaction_id: str, salt: str = "") -> float:
    """First 8 bytes of blake2b(salt + id) as a big-endian uint64, scaled to [0, 1)."""
    digest = hashlib.blake2b((salt + interaction_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _TWO_64


def decide(interaction_id: str, rate: float, salt: str = "") -> bool:
    """Is this interaction in the sample at `rate`? Pure function of its arguments."""
    return hash_unit(interaction_id, salt) < rate


class Pick(BaseModel):
    """A sampled row (PII already scrubbed) with what an estimator needs to weight it."""

    model_config = ConfigDict(frozen=True)

    row: TrafficRow
    stratum: str
    inclusion_probability: float
    salt: str
    pii_counts: dict[str, int] = Field(default_factory=dict)


class StratumStats(BaseModel):
    rate: float
    eligible: int = 0
    picked: int = 0


class SampleStats(BaseModel):
    """read = quarantined + filtered + duplicate + eligible; picked <= eligible."""

    read: int = 0
    quarantined: int = 0
    filtered: int = 0
    duplicate: int = 0
    eligible: int = 0
    picked: int = 0
    filtered_by: dict[str, int] = Field(default_factory=dict)
    quarantined_by: dict[str, int] = Field(default_factory=dict)
    strata: dict[str, StratumStats] = Field(default_factory=dict)
    pii: dict[str, int] = Field(default_factory=dict)


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


def filter_reason(row: TrafficRow, filters: FilterConfig) -> str | None:
    """Why the row is out of scope ("route", "department", "time", "answer_length"), or None."""
    if (filters.routes is not None and not _matches(row.route, filters.routes)) or _matches(
        row.route, filters.exclude_routes
    ):
        return "route"
    if (filters.departments is not None and not _matches(row.department, filters.departments)) or _matches(
        row.department, filters.exclude_departments
    ):
        return "department"
    if (filters.since is not None and row.timestamp < filters.since) or (
        filters.until is not None and row.timestamp >= filters.until
    ):
        return "time"
    n = len(row.answer)
    if n < filters.min_answer_chars or (filters.max_answer_chars is not None and n > filters.max_answer_chars):
        return "answer_length"
    return None


def content_key(row: TrafficRow) -> bytes:
    """Hash of what makes two calls identical: model, request messages (or question) and response."""
    h = hashlib.blake2b(digest_size=16)
    h.update((row.model or "").encode())
    if row.messages:
        for m in row.messages:
            h.update(b"\x1e" + m.role.encode() + b"\x1f" + m.content.encode())
    else:
        h.update(b"\x1e" + row.question.encode())
    h.update(b"\x1d" + row.answer.encode())
    return h.digest()


class DedupWindow:
    """Bounded LRU of content hashes: at most `max_rows` entries, and only matches within `seconds`."""

    def __init__(self, max_rows: int, seconds: float | None) -> None:
        self.max_rows = max_rows
        self.seconds = seconds
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self._latest = float("-inf")

    def __len__(self) -> int:
        return len(self._seen)

    def seen(self, key: bytes, at: float) -> bool:
        """True when `key` was seen within the window; records it either way."""
        self._latest = max(self._latest, at)
        before = self._seen.get(key)
        duplicate = before is not None and (self.seconds is None or abs(at - before) <= self.seconds)
        self._seen[key] = max(at, before) if before is not None else at
        self._seen.move_to_end(key)
        if self.seconds is not None:
            horizon = self._latest - self.seconds
            while self._seen and next(iter(self._seen.values())) < horizon:
                self._seen.popitem(last=False)
        while len(self._seen) > self.max_rows:
            self._seen.popitem(last=False)
        return duplicate


class Sampler:
    """Consumes `TrafficRow | RejectedTrafficRow` items and yields `Pick`s; `stats` is live while it runs.

    Memory is O(dedup window). Quarantined rows are counted and handed to `on_quarantine` (the lead's
    quarantine table) so they are never lost; without a callback they are logged.
    """

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
        self._stats = SampleStats()
        self._filtered_by: Counter[str] = Counter()
        self._quarantined_by: Counter[str] = Counter()
        self._pii: Counter[str] = Counter()
        self._strata: dict[str, StratumStats] = {}

    @property
    def stats(self) -> SampleStats:
        return self._stats.model_copy(
            update={
                "filtered_by": dict(self._filtered_by),
                "quarantined_by": dict(self._quarantined_by),
                "strata": {k: v.model_copy() for k, v in self._strata.items()},
                "pii": dict(self._pii),
            }
        )

    def run(self, items: Iterable[TrafficRow | RejectedTrafficRow]) -> Iterator[Pick]:
        s, sampling, filters = self._stats, self.config.sampling, self.config.filters
        for item in items:
            s.read += 1
            if isinstance(item, RejectedTrafficRow):
                s.quarantined += 1
                self._quarantined_by[item.reason.value] += 1
                if self.on_quarantine is not None:
                    self.on_quarantine(item)
                else:
                    logger.warning("quarantined %s: %s %s", item.position, item.reason.value, item.detail)
                continue
            reason = filter_reason(item, filters)
            if reason is not None:
                s.filtered += 1
                self._filtered_by[reason] += 1
                continue
            if self.dedup is not None and self.dedup.seen(content_key(item), item.timestamp.timestamp()):
                s.duplicate += 1
                continue
            s.eligible += 1
            stratum, rate = stratum_rate(sampling, item.tier, item.route)
            counts = self._strata.get(stratum)
            if counts is None:
                counts = self._strata[stratum] = StratumStats(rate=rate)
            counts.eligible += 1
            if not decide(item.interaction_id, rate, sampling.salt):
                continue
            s.picked += 1
            counts.picked += 1
            row, pii_counts = self._scrubbed(item)
            yield Pick(row=row, stratum=stratum, inclusion_probability=rate, salt=sampling.salt, pii_counts=pii_counts)

    def _scrubbed(self, row: TrafficRow) -> tuple[TrafficRow, dict[str, int]]:
        """The row with PII replaced in every text a judge or reviewer will see."""
        if self.scrubber is None:
            return row, {}
        counts: Counter[str] = Counter()
        scrub = self.scrubber.scrub_into
        clean = row.model_copy(
            update={
                "question": scrub(row.question, counts),
                "answer": scrub(row.answer, counts),
                "messages": [Message(role=m.role, content=scrub(m.content, counts)) for m in row.messages],
                "reference_answer": (scrub(row.reference_answer, counts) if row.reference_answer is not None else None),
                "reference_facts": [scrub(t, counts) for t in row.reference_facts],
                "context": [scrub(t, counts) for t in row.context],
            }
        )
        self._pii.update(counts)
        return clean, dict(counts)
