"""Decide before you parse: the sampling rule over columnar blocks, mapping only the rows it picks (docs/sampling.md).

The watermark is moved to a row before its pick (or quarantine record) is handed out, and to the block's end once
the block is done, so it never covers a pick not yet handed out."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from judgewatch.hashing import interaction_ids
from judgewatch.traffic.columnar.blocks import RowBlock
from judgewatch.traffic.columnar.columns import DecisionColumns, Unsupported, decision_columns
from judgewatch.traffic.columnar.times import epoch_micros
from judgewatch.traffic.config import SourceConfig, micros_of
from judgewatch.traffic.dedup import DedupWindow, content_hash, content_key
from judgewatch.traffic.mapping import BadRow, RowMapper
from judgewatch.traffic.records import Pick, RejectedTrafficRow, TrafficRow
from judgewatch.traffic.sources import SourceRead

logger = logging.getLogger(__name__)

REASONS = (None, "route", "department", "time", "answer_length")  # filter reason codes 0-4; 0: in scope
_CODE = {reason: code for code, reason in enumerate(REASONS)}


class Sampler(Protocol):
    """What the block path asks of `traffic.sampling.Sampler`, the rule's one implementation: its config and
    dedup window, its per-row decisions and its counts (declared here so this module need not import it)."""

    config: SourceConfig
    dedup: DedupWindow | None

    def take(self, item: TrafficRow | RejectedTrafficRow) -> Pick | None: ...
    def quarantine(self, item: RejectedTrafficRow) -> None: ...
    def labels_reason(self, route: str | None, department: str | None) -> str | None: ...
    def count(self, name: str, k: int = 1, reason: str | None = None) -> None: ...
    def stratum(self, tier: str, route: str | None) -> tuple[str, float]: ...
    def count_stratum(self, stratum: str, rate: float, eligible: int, picked: int) -> None: ...
    def picked(self, interaction_ids: list[str], rates: list[float]) -> list[bool]: ...
    def unpick(self, stratum: str, rejected: RejectedTrafficRow) -> None: ...
    def pick(self, row: TrafficRow, stratum: str, rate: float) -> Pick: ...


def sample_blocks(sampler: Sampler, read: SourceRead) -> Iterator[Pick]:
    """`Sampler.run` over a source's blocks: the same picks, counts and quarantine as row by row."""
    filters = sampler.config.filters
    lengths = filters.min_answer_chars > 0 or filters.max_answer_chars is not None
    for block in read.blocks():
        if not isinstance(block, RowBlock):
            if (pick := sampler.take(block)) is not None:
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
            yield from _decide(sampler, block, cols, read.mapper)
        if block.n:
            block.mark(block.n - 1)


def _row_by_row(sampler: Sampler, block: RowBlock, rows: range | list[int]) -> Iterator[Pick]:
    for i in rows:
        block.mark(i)
        item = block.item(i)
        if item is not None and (pick := sampler.take(item)) is not None:
            yield pick


def _decide(sampler: Sampler, block: RowBlock, cols: DecisionColumns, mapper: RowMapper) -> Iterator[Pick]:
    """The rule on one block: flagged rows mapped in full, filters, dedup in source order, all decisions at once."""
    n = block.n
    full = cols.full.copy()
    micros = _micros(cols.timestamp, mapper, full)
    mapped: dict[int, TrafficRow] = {}
    out = np.zeros(n, dtype=bool)  # quarantined rows
    for i in np.flatnonzero(full).tolist():
        item = block.item(i)
        if isinstance(item, TrafficRow):
            mapped[i] = item
            micros[i] = micros_of(item.timestamp)
            continue
        out[i] = True
        if item is not None:
            sampler.count("read")
            sampler.quarantine(item)
    sampler.count("read", n - int(out.sum()))
    reasons = _reasons(sampler, cols, micros, mapped)
    for code, k in enumerate(np.bincount(reasons[~out], minlength=len(REASONS)).tolist()):
        if code and k:
            sampler.count("filtered", k, reason=REASONS[code])
    admitted = np.flatnonzero(~out & (reasons == 0))
    if sampler.dedup is not None and len(admitted):
        if cols.content is not None:
            keys = list(map(content_hash, _take(cols.content, admitted, n).to_pylist()))  # C calls only
        else:  # no answer column: every row was mapped in full, and its own key is set below
            keys = [b""] * len(admitted)
        for j, i in _positions(admitted, mapped):
            keys[j] = content_key(mapped[i])
        duplicate = sampler.dedup.seen_many(keys, micros[admitted] / 1e6)
        sampler.count("duplicate", int(duplicate.sum()))
        admitted = admitted[~duplicate]
    sampler.count("eligible", len(admitted))
    if len(admitted):
        yield from _choose(sampler, block, cols, mapper, admitted, mapped)


def _take(arr: pa.Array, rows: np.ndarray, n: int) -> pa.Array:
    return arr if len(rows) == n else arr.take(pa.array(rows))


def _positions(rows: np.ndarray, mapped: dict[int, TrafficRow]) -> list[tuple[int, int]]:
    """(index in `rows`, row) of the fully mapped rows among `rows` (sorted)."""
    if not mapped:
        return []
    wanted = np.fromiter(mapped, dtype=np.int64, count=len(mapped))
    at = np.searchsorted(rows, wanted)
    hit = (at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == wanted)
    return list(zip(at[hit].tolist(), wanted[hit].tolist(), strict=True))


def _micros(values: pa.Array | None, mapper: RowMapper, full: np.ndarray) -> np.ndarray:
    """Each row's timestamp in epoch microseconds as `RowMapper.timestamp` reads it; a row it rejects is flagged."""
    if values is None:  # no timestamp: every row is flagged already
        return np.zeros(len(full), dtype=np.int64)
    micros, covered = epoch_micros(values, mapper.tz)
    rest = np.flatnonzero(~covered & ~full)
    if len(rest):
        for i, value in zip(rest.tolist(), values.take(pa.array(rest)).to_pylist(), strict=True):
            try:
                micros[i] = micros_of(mapper.timestamp(value))
            except BadRow:
                full[i] = True
    return micros


def _codes(arr: pa.Array | None, n: int) -> tuple[np.ndarray, list[str | None]]:
    """(per row an index into the values, the values: None first, for a null or a missing column)."""
    if arr is None:
        return np.zeros(n, dtype=np.int64), [None]
    encoded = pc.dictionary_encode(arr)
    indices = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return indices + 1, [None, *encoded.dictionary.to_pylist()]


def _combine(*columns: tuple[np.ndarray, list[str | None]]) -> tuple[np.ndarray, list[tuple[str | None, ...]]]:
    """(per row an index into the distinct value tuples, those tuples in order of first appearance)."""
    code = np.zeros(len(columns[0][0]), dtype=np.int64)
    for indices, values in columns:
        code = code * len(values) + indices
    distinct, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    combos = []
    for value in distinct[order].tolist():
        parts = []
        for _, values in reversed(columns):
            value, k = divmod(value, len(values))
            parts.append(values[k])
        combos.append(tuple(reversed(parts)))
    return rank[inverse.reshape(-1)], combos


def _reasons(sampler: Sampler, cols: DecisionColumns, micros: np.ndarray, mapped: dict[int, TrafficRow]) -> np.ndarray:
    """Per row the filter reason code (`REASONS`): labels, then time, then answer length, as `Sampler.admit`."""
    n, filters = len(micros), sampler.config.filters
    reasons = np.zeros(n, dtype=np.int64)
    listed = filters.routes is not None or filters.departments is not None
    if listed or filters.exclude_routes or filters.exclude_departments:
        rows, pairs = _combine(_codes(cols.route, n), _codes(cols.department, n))
        table = np.array([_CODE[sampler.labels_reason(route, dept)] for route, dept in pairs], dtype=np.int64)
        reasons = table[rows]
        for i, row in mapped.items():
            reasons[i] = _CODE[sampler.labels_reason(row.route, row.department)]
    chars = None
    if cols.answer_chars is not None:
        chars = cols.answer_chars.copy()
        for i, row in mapped.items():
            chars[i] = len(row.answer)
    time, length = filters.out_of_bounds(micros, chars)
    reasons = np.where((reasons == 0) & time, _CODE["time"], reasons)
    return np.where((reasons == 0) & length, _CODE["answer_length"], reasons)


def _choose(
    sampler: Sampler,
    block: RowBlock,
    cols: DecisionColumns,
    mapper: RowMapper,
    eligible: np.ndarray,
    mapped: dict[int, TrafficRow],
) -> Iterator[Pick]:
    """`Sampler.picked` on all eligible rows (strata per distinct tier, model and route), then the picks."""
    n, k = block.n, len(eligible)
    columns = [_codes(_take(c, eligible, n) if c is not None else None, k) for c in (cols.tier, cols.model, cols.route)]
    rows, combos = _combine(*columns)
    of_combo = [sampler.stratum(mapper.tier(tier, model), route) for tier, model, route in combos]
    table = list(dict.fromkeys(of_combo))  # (stratum, rate), in order of first appearance
    index = {s: t for t, s in enumerate(table)}
    strata = np.array([index[s] for s in of_combo], dtype=np.int64)[rows]
    ids = _interaction_ids(block, cols, mapper, eligible)
    for j, i in _positions(eligible, mapped):
        row = mapped[i]
        ids[j] = row.interaction_id
        s = sampler.stratum(row.tier, row.route)
        if s not in index:
            index[s] = len(table)
            table.append(s)
        strata[j] = index[s]
    rates = np.array([rate for _, rate in table], dtype=np.float64)[strata].tolist()
    picked = np.array(sampler.picked(ids, rates), dtype=bool)
    totals = np.bincount(strata, minlength=len(table)).tolist()
    chosen = np.bincount(strata[picked], minlength=len(table)).tolist()
    for t, (stratum, rate) in enumerate(table):
        if totals[t]:
            sampler.count_stratum(stratum, rate, totals[t], chosen[t])
    picks = np.flatnonzero(picked).tolist()
    picked_rows = eligible[picks].tolist()
    block.prefetch([i for i in picked_rows if i not in mapped])
    for j, i in zip(picks, picked_rows, strict=True):
        block.mark(i)
        stratum, rate = table[strata[j]]
        item = mapped.get(i) or block.item(i)
        if isinstance(item, TrafficRow):
            yield sampler.pick(item, stratum, rate)
        elif item is not None:  # a defect only the full mapping sees
            sampler.unpick(stratum, item)


def _interaction_ids(block: RowBlock, cols: DecisionColumns, mapper: RowMapper, rows: np.ndarray) -> list[str]:
    """Each row's interaction id; a row without an id is keyed as the row path keys it ("path:line" in a file)."""
    ids = _take(cols.ids, rows, block.n).to_pylist() if cols.ids is not None else [None] * len(rows)
    keys = [sid or block.fallback_id(i) for sid, i in zip(ids, rows.tolist(), strict=True)]
    return interaction_ids(mapper.source, keys)
