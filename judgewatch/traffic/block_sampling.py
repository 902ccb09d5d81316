"""Decide before you parse: the sampling rule over columnar blocks, mapping only the rows it picks.

Per block, `columns.decision_columns` gives every row's id, labels, timestamp and de-duplication content from
whole columns; the rule (`Sampler.admit`, `Sampler.choose`) runs on those in source order, and only a picked
row, or one the column checks could not vouch for, is mapped into a `TrafficRow` by the row path's own code.
The watermark is moved to a row before its pick (or quarantine record) is handed out, and to the block's end
once the block is done, so it never covers a pick not yet handed out.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np

from judgewatch.traffic.blocks import RowBlock
from judgewatch.traffic.columns import DecisionColumns, Unsupported, decision_columns
from judgewatch.traffic.mapping import BadRow, RowMapper
from judgewatch.traffic.records import TrafficRow
from judgewatch.traffic.sampling import Pick, Sampler, content_key, value_reason
from judgewatch.traffic.sources import SourceRead

logger = logging.getLogger(__name__)


class _InteractionIds:
    """`records.interaction_id(source, source_id)`, with the hash of the constant prefix computed once."""

    def __init__(self, source: str) -> None:
        self.prefix = b"interaction\x1f" + source.encode() + b"\x1f"

    def __call__(self, source_id: bytes) -> str:
        return hashlib.sha256(self.prefix + source_id + b"\x1f").hexdigest()[:32]


def sample_blocks(sampler: Sampler, read: SourceRead) -> Iterator[Pick]:
    """`Sampler.run` over a file source's blocks: the same picks, counts and quarantine as row by row."""
    filters = sampler.config.filters
    lengths = filters.min_answer_chars > 0 or filters.max_answer_chars is not None
    ids = _InteractionIds(read.mapper.source)
    for block in read.blocks():
        if not isinstance(block, RowBlock):
            pick = sampler.take(block)
            if pick is not None:
                yield pick
            continue
        try:
            cols = decision_columns(
                block.table,
                read.mapper,
                line_sizes=block.line_sizes,
                answer_chars=lengths,
                content=sampler.dedup is not None,
            )
        except Unsupported as exc:
            logger.debug("block of %d rows mapped row by row: %s", block.n, exc)
            yield from _row_by_row(sampler, block, range(block.n))
        else:
            yield from _decide(sampler, block, cols, read.mapper, ids)
        if block.n:
            block.mark(block.n - 1)


blake2b = hashlib.blake2b


def _row_by_row(sampler: Sampler, block: RowBlock, rows: range | list[int]) -> Iterator[Pick]:
    for i in rows:
        block.mark(i)
        item = block.item(i)
        if item is not None:
            pick = sampler.take(item)
            if pick is not None:
                yield pick


def _decide(
    sampler: Sampler, block: RowBlock, cols: DecisionColumns, mapper: RowMapper, ids: _InteractionIds
) -> Iterator[Pick]:
    """The rule on one block: full mapping for the flagged rows, filters, de-duplication in source order,
    then the hash decision on every eligible row at once; only the picks are mapped (and scrubbed)."""
    n, filters = block.n, sampler.config.filters
    full = cols.full.copy()
    ats = _times(cols.timestamp, mapper, full)
    mapped: dict[int, TrafficRow] = {}
    out = np.zeros(n, dtype=bool)  # quarantined rows
    for i in np.flatnonzero(full).tolist():
        item = block.item(i)
        if isinstance(item, TrafficRow):
            mapped[i] = item
            continue
        out[i] = True
        if item is not None:
            sampler.count("read")
            sampler.quarantine(item)
    route, department, tier, chars = cols.route, cols.department, cols.tier, cols.answer_chars
    keys = [blake2b(c, digest_size=16).digest() for c in cols.content] if cols.content is not None else None
    for i, row in mapped.items():  # what the full mapping says wins
        route[i], department[i], tier[i], ats[i] = row.route, row.department, row.tier, row.timestamp
        if chars is not None:
            chars[i] = len(row.answer)
        if keys is not None:
            keys[i] = content_key(row)
    sampler.count("read", n - int(out.sum()))
    pairs = list(zip(route, department, strict=True))
    reason_of = {pair: sampler.labels_reason(*pair) for pair in set(pairs)}
    reasons = list(map(reason_of.__getitem__, pairs))
    timed = filters.since is not None or filters.until is not None or chars is not None
    seen = sampler.dedup.seen if sampler.dedup is not None and keys is not None else None
    stamps = list(map(datetime.timestamp, ats)) if seen is not None else None
    eligible, duplicates, skip = [], 0, out.tolist()
    for i in range(n):
        if skip[i]:
            continue
        reason = reasons[i] or (value_reason(filters, ats[i], chars[i] if chars else None) if timed else None)
        if reason is not None:
            sampler.count("filtered", reason=reason)
        elif seen is not None and seen(keys[i], stamps[i]):  # type: ignore[index]
            duplicates += 1
        else:
            eligible.append(i)
    sampler.count("duplicate", duplicates)
    sampler.count("eligible", len(eligible))
    yield from _choose(sampler, block, cols, mapper, ids, eligible, mapped)


def _choose(
    sampler: Sampler,
    block: RowBlock,
    cols: DecisionColumns,
    mapper: RowMapper,
    ids: _InteractionIds,
    eligible: list[int],
    mapped: dict[int, TrafficRow],
) -> Iterator[Pick]:
    """`decide` on all eligible rows at once (the same blake2b rule and float arithmetic), then the picks."""
    if not eligible:
        return
    tier_of = mapper.tier_of_model
    triples = [(cols.tier[i], cols.model[i], cols.route[i]) for i in eligible]
    stratum_of = {t: sampler.stratum(t[0] or tier_of(t[1]), t[2]) for t in set(triples)}
    strata = list(map(stratum_of.__getitem__, triples))
    salt = sampler.config.sampling.salt.encode()
    source_ids = [cols.ids[i] or _fallback_id(block, i) for i in eligible]
    sha256, prefix = hashlib.sha256, ids.prefix  # `ids(sid)` inlined: this line runs for every eligible row
    digests = bytearray(
        b"".join(
            [
                blake2b(salt + sha256(prefix + sid + b"\x1f").hexdigest()[:32].encode()).digest()[:8]
                for sid in source_ids
            ]
        )
    )
    if mapped:
        for j, i in enumerate(eligible):
            if i in mapped:  # a fully mapped row: its own interaction id and stratum
                row = mapped[i]
                strata[j] = sampler.stratum(row.tier, row.route)
                digests[8 * j : 8 * j + 8] = blake2b(salt + row.interaction_id.encode()).digest()[:8]
    units = np.frombuffer(digests, dtype=">u8").astype(np.float64) / _TWO_64
    picked = units < np.fromiter((rate for _, rate in strata), dtype=np.float64, count=len(strata))
    picks = np.flatnonzero(picked).tolist()
    chosen = Counter(strata[j] for j in picks)
    for (stratum, rate), count in Counter(strata).items():
        sampler.count_stratum(stratum, rate, count, chosen.get((stratum, rate), 0))
    block.prefetch([eligible[j] for j in picks if eligible[j] not in mapped])
    for j in picks:
        i = eligible[j]
        block.mark(i)
        item = mapped.get(i) or block.item(i)
        if isinstance(item, TrafficRow):
            yield sampler.pick(item, *strata[j])
        elif item is not None:  # a defect only the full mapping sees
            sampler.unpick(strata[j][0], item)


def _fallback_id(block: RowBlock, i: int) -> bytes:
    """A row without an id is keyed as the row path keys it ("path:line" in a file)."""
    return block.fallback_id(i).encode()


def _times(values: list[object], mapper: RowMapper, full: np.ndarray) -> list[datetime]:
    """Each row's timestamp as `RowMapper.timestamp` reads it; a row it rejects is flagged for full mapping."""
    try:
        times = list(map(datetime.fromisoformat, values))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        pass
    else:
        tz = mapper.tz
        return [t if t.tzinfo is not None else t.replace(tzinfo=tz) for t in times]
    out: list[datetime] = []
    for i, value in enumerate(values):
        try:
            out.append(mapper.timestamp(value))
        except BadRow:
            full[i] = True
            out.append(_NO_TIME)
    return out


_NO_TIME = datetime.min.replace(tzinfo=UTC)
_TWO_64 = float(2**64)
