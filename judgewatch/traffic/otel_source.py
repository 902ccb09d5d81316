"""OTLP traces as a traffic source: a decoded export request to rows through the source's own `RowMapper`, and the
`otlp` source kind that reads the OpenTelemetry Collector's file exporter (docs/ingest.md, "The file source")."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from judgewatch.traffic.files import each_file, log_lines
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.otel_decode import MAX_BODY_BYTES, BadSpan, PayloadError, decode_json, spans_of
from judgewatch.traffic.otel_spans import TraceDocuments, payload_rows
from judgewatch.traffic.records import QuarantineReason, RejectedTrafficRow, TrafficRow
from judgewatch.traffic.watermark import WatermarkState

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

logger = logging.getLogger(__name__)

Item = TrafficRow | RejectedTrafficRow
KEPT_ATTRIBUTES = ("user", "session", "service", "latency_ms")  # trace and span id: `TrafficRow.trace_span`


@dataclass
class SpanCounts:
    """What a payload held: LLM spans mapped, spans quarantined, other spans dropped."""

    rows: int = 0
    quarantined: int = 0
    dropped: int = 0


def request_items(
    request: ExportTraceServiceRequest,
    mapper: RowMapper,
    origin: str,
    bad: list[BadSpan] | None = None,
    documents: TraceDocuments | None = None,
) -> tuple[list[Item], SpanCounts]:
    """The request's LLM spans as rows (or quarantine records positioned "<origin>#span=<trace>:<span>"); `bad`:
    spans the decoder could not read; `documents`: retrieved documents remembered from earlier requests."""
    found, dropped = payload_rows([*spans_of(request), *(bad or [])], documents)
    counts = SpanCounts(dropped=dropped)
    items: list[Item] = []
    for entry in found:
        if isinstance(entry, BadSpan):
            where = f"{origin}#{entry.where}"
            items.append(mapper.quarantine(where, QuarantineReason.wrong_type, entry.reason, entry.name))
            counts.quarantined += 1
            continue
        span, raw = entry
        kept = {k: raw["metadata"][k] for k in KEPT_ATTRIBUTES if k in raw["metadata"]}
        item = mapper.map(raw, position=f"{origin}#span={span.key}", fallback_id=span.key, attributes=kept)
        if isinstance(item, TrafficRow):
            counts.rows += 1
            item = item.model_copy(update={"trace_span": (span.trace_id, span.span_id)})
        else:
            counts.quarantined += 1
        items.append(item)
    return items, counts


def read_otlp_files(mapper: RowMapper, state: WatermarkState) -> Iterator[Item]:
    """The source's files in name order (rotated ones included), line by line after the watermark."""
    documents = TraceDocuments()  # a trace's spans may be split over lines and files
    read = partial(read_otlp_file, documents=documents)
    return each_file(mapper, state, read, read)


def read_otlp_file(
    path: str, mapper: RowMapper, state: WatermarkState, documents: TraceDocuments | None = None
) -> Iterator[Item]:
    """One collector file, an OTLP/JSON export request a line; a bad line is quarantined and the next ones read."""
    for line in log_lines(path, mapper, state, MAX_BODY_BYTES + 1):
        if isinstance(line, RejectedTrafficRow):
            yield line
            continue
        if not line.finished and line.end is not None:
            break  # the exporter is still writing this line: read it next time
        items = list(_line_items(line.chunk.strip(), path, line.number, mapper, documents))
        yield from items[:-1]
        state.files[path] = (line.number, line.end)  # the watermark covers the line once its last span is out
        yield from items[-1:]


def _line_items(
    body: bytes, path: str, line_no: int, mapper: RowMapper, documents: TraceDocuments | None
) -> Iterator[Item]:
    if not body:
        return
    where = f"{path}:{line_no}"
    if len(body) > MAX_BODY_BYTES:
        yield mapper.quarantine(where, QuarantineReason.oversize, f"line over {MAX_BODY_BYTES} bytes", body, line_no)
        return
    try:
        request, bad = decode_json(body)
    except PayloadError as exc:
        yield mapper.quarantine(where, QuarantineReason.invalid_json, str(exc), body, line_no)
        return
    items, counts = request_items(request, mapper, where, bad, documents)
    logger.debug("%s: %d LLM spans, %d quarantined, %d other spans dropped", where, counts.rows,
                 counts.quarantined, counts.dropped)  # fmt: skip
    for item in items:
        yield item.model_copy(update={"line": line_no}) if isinstance(item, RejectedTrafficRow) else item
