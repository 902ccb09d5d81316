"""Decide before you parse: the few fields the sampling rule needs, read from a batch as whole Arrow columns.

A row these checks cannot vouch for is flagged `full` and mapped by `RowMapper.map`; a batch whose column types they
do not cover raises `Unsupported` and is mapped row by row. Either way the decisions are the row path's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from judgewatch.contract.raw_rows import NUL
from judgewatch.traffic.mapping import Path, RowMapper


class Unsupported(Exception):
    """A batch whose column types the vectorized rules do not cover; its rows are mapped one by one."""


@dataclass
class DecisionColumns:
    """What the rule reads of one batch, as whole columns (index = row of the batch); None: not mapped."""

    ids: pa.Array | None  # text (an integer in decimal, as `str` writes it); null or empty: no id
    model: pa.Array | None  # text columns from here to department
    tier: pa.Array | None  # the mapped tier field; null: the model's tier decides
    route: pa.Array | None
    department: pa.Array | None
    timestamp: pa.Array | None  # raw values, read by `times.epoch_micros` or `RowMapper.timestamp`
    answer_chars: np.ndarray | None  # only when an answer-length filter is set
    content: pa.Array | None  # binary: what `dedup.content_hash` hashes; only when de-duplication is on
    full: np.ndarray  # bool: map this row with RowMapper.map before deciding


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _element_positions(arr: pa.Array, index: int) -> np.ndarray:
    """Where `arr[i][index]` sits in `arr.values`, per row; -1 where the list is null or too short."""
    offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    starts, lengths = offsets[:-1], np.diff(offsets)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool) & (lengths > index)
    return np.where(valid, starts + index, -1)


def _walk(table: pa.Table, segments: tuple[str, ...], nested_keys: list[str]) -> pa.Array | None:
    """One dotted path on whole columns; None when it leads nowhere in this batch (null on every row). A list index
    is applied only to the value the path ends at (`resolve`'s `value[int(seg)]`), so no struct around it is copied."""
    if segments[0] not in table.column_names:
        return None
    column = table.column(segments[0])
    arr = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        raise Unsupported(f"column {segments[0]} is binary")  # the row path decodes it first
    if len(segments) > 1 and _is_text(arr.type) and segments[0] in nested_keys:
        raise Unsupported(f"column {segments[0]} holds JSON text")
    rows: np.ndarray | None = None  # per row, where its value is in `arr` (None: row i is at i)
    for seg in segments[1:]:
        t = arr.type
        if pa.types.is_struct(t):
            if t.get_field_index(seg) < 0:
                return None
            arr = pc.struct_field(arr, [t.get_field_index(seg)])
        elif _is_list(t):
            if not seg.isdigit():
                raise Unsupported(f"list index {seg!r}")
            at = _element_positions(arr, int(seg))
            rows = at if rows is None else np.where(rows >= 0, at[np.maximum(rows, 0)], -1)
            arr = arr.values
        else:  # walking into a scalar or a null column gives None, as `resolve` does
            return None
    if rows is not None:
        arr = arr.take(pa.array(rows, mask=rows < 0))
    return arr


def resolve_column(table: pa.Table, path: Path, nested_keys: list[str]) -> pa.Array | None:
    """The first fallback's non-null value per row (`mapping.resolve` on whole columns)."""
    result = None
    for segments in path:
        arr = _walk(table, segments, nested_keys)
        if arr is None or pa.types.is_null(arr.type):
            continue
        if result is None:
            result = arr
        elif result.type != arr.type:
            raise Unsupported(f"fallbacks of different types: {result.type} and {arr.type}")
        else:
            result = pc.coalesce(result, arr)
    return result


def _labels(arr: pa.Array | None, field: str) -> pa.Array | None:
    if arr is not None and not _is_text(arr.type):
        raise Unsupported(f"{field}: {arr.type}")
    return arr


class _Flags:
    """Rows to map one by one, collected from every check."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.full = np.zeros(n, dtype=bool)

    def rows(self, mask: pa.Array | np.ndarray) -> None:
        values = mask.to_numpy(zero_copy_only=False) if isinstance(mask, pa.Array) else mask
        self.full |= np.asarray(values, dtype=bool)

    def parents(self, listed: pa.Array, element_mask: pa.Array) -> None:
        """Flag the rows whose list holds an element matching `element_mask` (one entry per flat element)."""
        hit = np.asarray(element_mask.to_numpy(zero_copy_only=False), dtype=bool)
        if hit.any():
            parents = pc.list_parent_indices(listed).to_numpy(zero_copy_only=False)
            self.full[parents[hit]] = True


def _may_hold_nul(arr: pa.Array) -> bool:
    """False when the text array's data buffer holds no zero byte at all (a scan at memory speed)."""
    data = arr.buffers()[2]
    return data is not None and bool((np.frombuffer(data, dtype=np.uint8) == 0).any())


def _text_field(arr: pa.Array | None, field: str, flags: _Flags, sizes: list[pa.Array]) -> pa.Array | None:
    if arr is None:
        return None
    if not _is_text(arr.type):
        raise Unsupported(f"{field}: {arr.type}")
    if _may_hold_nul(arr):
        flags.rows(pc.fill_null(pc.match_substring(arr, NUL), False))
    sizes.append(pc.fill_null(pc.binary_length(arr), 0))
    return arr


def _passages(arr: pa.Array | None, field: str, flags: _Flags, sizes: list[pa.Array]) -> None:
    """reference_facts / context: text or a list of texts; a null item is a row for the full mapper."""
    if arr is None:
        return
    if _is_text(arr.type):
        _text_field(arr, field, flags, sizes)
        return
    if not _is_list(arr.type) or not (_is_text(arr.type.value_type) or pa.types.is_null(arr.type.value_type)):
        raise Unsupported(f"{field}: {arr.type}")
    flat = pc.list_flatten(arr)
    flags.parents(arr, pc.is_null(flat))
    if _is_text(flat.type):
        if _may_hold_nul(flat):
            flags.parents(arr, pc.fill_null(pc.match_substring(flat, NUL), False))
        sizes.append(_per_row(arr, pc.fill_null(pc.binary_length(flat), 0)))


def _per_row(listed: pa.Array, element_values: pa.Array) -> pa.Array:
    parents = pc.list_parent_indices(listed).to_numpy(zero_copy_only=False)
    weights = element_values.to_numpy(zero_copy_only=False)
    return pa.array(np.bincount(parents, weights=weights, minlength=len(listed)))


def _counts(arr: pa.Array | None, field: str, flags: _Flags) -> None:
    """Token counts: non-negative integers (a float must be whole), else the row is mapped in full."""
    if arr is None:
        return
    t = arr.type
    if pa.types.is_integer(t):
        flags.rows(pc.fill_null(pc.less(arr, 0), False))
    elif pa.types.is_floating(t):
        ok = pc.and_(pc.is_finite(arr), pc.and_(pc.greater_equal(arr, 0), pc.equal(pc.floor(arr), arr)))
        flags.rows(pc.and_(pc.is_valid(arr), pc.invert(pc.fill_null(ok, False))))
    else:
        raise Unsupported(f"{field}: {t}")


def _messages(arr: pa.Array | None, n: int, flags: _Flags, sizes: list[pa.Array]) -> tuple[pa.Array, np.ndarray]:
    """(per row: the messages as `content_key` hashes them, "" when none; per row: count of user messages)."""
    empty = pa.array([""] * n)
    if arr is None:
        return empty, np.zeros(n)
    t = arr.type
    if not _is_list(t) or not pa.types.is_struct(t.value_type) or t.value_type.get_field_index("role") < 0:
        raise Unsupported(f"messages: {t}")
    flat = pc.list_flatten(arr)
    roles = pc.struct_field(flat, [t.value_type.get_field_index("role")])
    if not _is_text(roles.type):
        raise Unsupported(f"messages.role: {roles.type}")
    flags.parents(arr, pc.is_null(roles))  # a null message, or one without a role
    ci = t.value_type.get_field_index("content")
    contents = pc.struct_field(flat, [ci]) if ci >= 0 else pa.nulls(len(flat), pa.string())
    if pa.types.is_null(contents.type):
        contents = pa.nulls(len(flat), pa.string())
    if not _is_text(contents.type):
        raise Unsupported(f"messages.content: {contents.type}")
    contents = pc.fill_null(contents, "")
    if _may_hold_nul(contents):
        flags.parents(arr, pc.match_substring(contents, NUL))
    lengths = pc.binary_length(contents)
    sizes.append(_per_row(arr, lengths))
    sizes.append(_per_row(arr, lengths))  # the question is the last user message: counted again
    parts = pc.binary_join_element_wise("\x1e", pc.fill_null(roles, ""), "\x1f", contents, "")
    parents = pc.list_parent_indices(arr).to_numpy(zero_copy_only=False)
    per_row = np.bincount(parents, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(per_row)]).astype(np.int32)
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), parts), "")
    users = pc.fill_null(pc.equal(roles, "user"), False).to_numpy(zero_copy_only=False)
    user_counts = np.bincount(parents, weights=users.astype(np.float64), minlength=n)
    return joined, user_counts


def decision_columns(
    table: pa.Table,
    mapper: RowMapper,
    *,
    line_sizes: np.ndarray | None = None,
    answer_chars: bool = False,
    content: bool = True,
) -> DecisionColumns:
    """Resolve and check a batch; `line_sizes` are JSONL line lengths (None: sized from the texts, as Parquet)."""
    p, n, keys = mapper.paths, table.num_rows, mapper.nested_keys
    flags, sizes = _Flags(n), list[pa.Array]()

    def col(name: str) -> pa.Array | None:
        return resolve_column(table, p[name], keys) if p[name] else None

    raw_id = col("id")
    ids: pa.Array | None = None
    if raw_id is not None:
        if not (_is_text(raw_id.type) or pa.types.is_integer(raw_id.type)):
            raise Unsupported(f"id: {raw_id.type}")
        ids = pc.cast(raw_id, pa.string())  # an integer as `str(int)` writes it
    answer = _text_field(col("answer"), "answer", flags, sizes)
    flags.rows(np.ones(n, dtype=bool) if answer is None else pc.is_null(answer))  # missing_response
    question = _text_field(col("question"), "question", flags, sizes)
    joined, users = _messages(col("messages"), n, flags, sizes)
    no_question = users == 0 if question is None else pc.and_(pc.is_null(question), pa.array(users == 0))
    flags.rows(no_question)  # missing_field: no question and no user message
    _text_field(col("reference_answer"), "reference_answer", flags, sizes)
    _passages(col("reference_facts"), "reference_facts", flags, sizes)
    _passages(col("context"), "context", flags, sizes)
    for name in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        _counts(col(name), name, flags)
    stamp = col("timestamp")
    if stamp is None:
        flags.rows(np.ones(n, dtype=bool))  # no timestamp
    elif not any(f(stamp.type) for f in (_is_text, pa.types.is_integer, pa.types.is_floating, pa.types.is_timestamp)):
        raise Unsupported(f"timestamp: {stamp.type}")
    model = _labels(col("model"), "model")
    _labels(col("release"), "release")  # checked only (the rule does not read it): not text, the row path maps it
    # Oversize: a row over either byte limit is mapped in full, which measures it exactly.
    bound = min(mapper.config.max_row_bytes, mapper.max_field_bytes)
    if line_sizes is not None:
        flags.rows(line_sizes > mapper.max_field_bytes)
    elif sizes:
        total = np.sum([s.to_numpy(zero_copy_only=False).astype(np.float64) for s in sizes], axis=0)
        flags.rows(total > bound)
    return DecisionColumns(
        ids=ids,
        model=model,
        tier=_labels(col("tier"), "tier"),
        route=_labels(col("route"), "route"),
        department=_labels(col("department"), "department"),
        timestamp=stamp,
        answer_chars=_numbers(pc.fill_null(pc.utf8_length(answer), 0)) if answer_chars and answer is not None else None,
        content=_content(model, joined, question, answer) if content and answer is not None else None,
        full=flags.full,
    )


def _numbers(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64)


def _content(model: pa.Array | None, joined: pa.Array, question: pa.Array | None, answer: pa.Array) -> pa.Array:
    """Per row the bytes `dedup.content_bytes` builds: model, messages (or question), answer."""
    has_messages = pc.greater(pc.binary_length(joined), 0)
    asked = pc.binary_join_element_wise("\x1e", pc.fill_null(question, ""), "") if question is not None else None
    middle = joined if asked is None else pc.if_else(has_messages, joined, asked)
    models = pc.cast(pc.fill_null(model, ""), pa.string()) if model is not None else pa.array([""] * len(answer))
    whole = pc.binary_join_element_wise(models, middle, "\x1d", pc.fill_null(answer, ""), "")
    return pc.cast(whole, pa.binary())
