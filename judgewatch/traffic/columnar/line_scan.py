"""Decide before you parse, for JSONL: pyarrow's JSON reader told to decode only the mapping's paths, through a
schema learned from the first block read in full (docs/sampling.md)."""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.json as pa_json

from judgewatch.traffic.mapping import RowMapper

logger = logging.getLogger(__name__)

_RECORD = pa.struct([("role", pa.string()), ("content", pa.string())])
# The type a path gets when no block has shown it yet: what `columns.decision_columns` reads it as.
_DEFAULT = {"messages": pa.list_(_RECORD), "reference_facts": pa.list_(pa.string()), "context": pa.list_(pa.string())}
_COUNTS = {"prompt_tokens", "completion_tokens", "cached_tokens"}
_INDEX = "#"  # every list index of a level: a list has one element type


class MappedReader:
    """Reads a source's JSONL blocks through one explicit schema of the mapping's paths, once it knows their types."""

    def __init__(self, mapper: RowMapper) -> None:
        self.paths: dict[tuple[str, ...], pa.DataType] = {}
        for field, fallbacks in mapper.paths.items():
            default = _DEFAULT.get(field, pa.int64() if field in _COUNTS else pa.string())
            for segments in fallbacks:
                self.paths.setdefault(segments, default)
        self.schema: pa.Schema | None = None
        self.expressible = _expressible(list(self.paths))

    def read(self, data: bytes) -> pa.Table | None:
        """The lines as a table (only the mapped paths once learned); None when pyarrow refuses the block."""
        options = pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, 2 * len(data)))
        if self.schema is not None:
            parse = pa_json.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="ignore")
            try:
                return pa_json.read_json(pa.BufferReader(data), read_options=options, parse_options=parse)
            except (pa.ArrowException, OverflowError) as exc:
                logger.debug("block read in full: the mapped schema does not fit it: %s", exc)
        try:
            table = pa_json.read_json(pa.BufferReader(data), read_options=options)
        except (pa.ArrowException, OverflowError) as exc:
            logger.debug("block read row by row: %s", exc)
            return None
        if self.schema is None and self.expressible:
            self.schema = self.learn(table.schema)
        return table

    def learn(self, inferred: pa.Schema) -> pa.Schema:
        """The explicit schema: each mapped path with the type pyarrow inferred for it, or its default."""
        tree: dict[str, object] = {}
        for segments, default in self.paths.items():
            node = tree
            for seg in segments[:-1]:
                node = node.setdefault(_INDEX if seg.isdigit() else seg, {})  # type: ignore[assignment]
            node[_INDEX if segments[-1].isdigit() else segments[-1]] = _inferred_at(inferred, segments) or default
        return pa.schema([pa.field(key, _type_of(value)) for key, value in tree.items()])


def _expressible(paths: list[tuple[str, ...]]) -> bool:
    """Whether one schema holds every path: none ends where another goes on, no level is both object and list,
    and every index is plain ASCII digits (`resolve` reads "-1" too; pyarrow has no such index)."""
    for a in paths:
        if any(len(b) > len(a) and b[: len(a)] == a for b in paths):
            return False
    levels: dict[tuple[str, ...], set[bool]] = {}
    for segments in paths:
        if segments[0].isdigit():
            return False
        for depth, seg in enumerate(segments[1:], start=1):
            index = seg.isascii() and seg.isdigit()
            if not index and _int_like(seg):
                return False
            levels.setdefault(tuple("#" if s.isdigit() else s for s in segments[:depth]), set()).add(index)
    return all(len(kinds) == 1 for kinds in levels.values())


def _int_like(segment: str) -> bool:
    try:
        int(segment)
    except ValueError:
        return False
    return True


def _inferred_at(schema: pa.Schema, segments: tuple[str, ...]) -> pa.DataType | None:
    """The inferred type at a path (list indexes walk into the list's values); None where absent or all null."""
    if schema.get_field_index(segments[0]) < 0:
        return None
    t = schema.field(segments[0]).type
    for seg in segments[1:]:
        if seg.isdigit() and pa.types.is_list(t):
            t = t.value_type
        elif not seg.isdigit() and pa.types.is_struct(t) and t.get_field_index(seg) >= 0:
            t = t.field(seg).type
        else:
            return None
    return None if pa.types.is_null(t) else t


def _type_of(node: object) -> pa.DataType:
    """A tree level as a type: a leaf's own type, a list (every index leads to its one element), or a struct."""
    if isinstance(node, pa.DataType):
        return node
    assert isinstance(node, dict)
    if _INDEX in node:  # `_expressible`: a level of indexes has no keys
        return pa.list_(_type_of(node[_INDEX]))
    return pa.struct([pa.field(key, _type_of(child)) for key, child in node.items()])
