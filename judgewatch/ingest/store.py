"""The receiver's writer: spans mapped, sampled by the source's own `Sampler`, picks and quarantined spans upserted
in one transaction per export request; one `SpanStore` a process, calls serialized (its dedup window is ordered)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING

from judgewatch.ingest.picks import pick_row, quarantine_record
from judgewatch.storage.db import session_scope
from judgewatch.storage.interactions import upsert_interaction_rows
from judgewatch.storage.quarantine import quarantine_rows
from judgewatch.traffic.config import SourceConfig
from judgewatch.traffic.mapping import RowMapper
from judgewatch.traffic.otel_decode import BadSpan, PayloadError, payload_origin
from judgewatch.traffic.otel_source import request_items
from judgewatch.traffic.otel_spans import TraceDocuments
from judgewatch.traffic.records import QuarantineReason, RejectedTrafficRow
from judgewatch.traffic.sampling import Pick, Sampler

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from sqlalchemy import Engine


class Accepted:
    """What one export request came to: counts of its spans by fate, and the first quarantine reasons."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.reasons: list[str] = []

    @property
    def rejected(self) -> int:
        return self.counts["quarantined"]


class SpanStore:
    """Maps, samples and stores the spans of export requests; `totals` counts everything since start."""

    def __init__(self, engine: Engine, config: SourceConfig) -> None:
        self.engine = engine
        self.config = config
        self.mapper = RowMapper(config)
        self._quarantined: list[RejectedTrafficRow] = []
        self.sampler = Sampler(config, on_quarantine=self._quarantined.append)
        self.totals: Counter[str] = Counter()
        self.documents = TraceDocuments()  # retrieved documents of recent traces, for LLM spans sent later
        self._lock = threading.Lock()

    def store_request(self, request: ExportTraceServiceRequest, origin: str, bad: list[BadSpan]) -> Accepted:
        """One export request mapped, sampled and upserted; returns once committed (an acknowledged span is stored)."""
        with self._lock:
            items, counts = request_items(request, self.mapper, origin, bad, self.documents)
            before = self.sampler.stats
            picks = [pick for item in items if (pick := self.sampler.take(item)) is not None]
            after = self.sampler.stats
            quarantined, self._quarantined[:] = list(self._quarantined), []
            self._write(picks, quarantined)
        accepted = Accepted()
        accepted.counts.update(
            llm_spans=counts.rows,
            dropped=counts.dropped,
            quarantined=len(quarantined),
            picked=len(picks),
            filtered=after.filtered - before.filtered,
            duplicate=after.duplicate - before.duplicate,
        )
        accepted.reasons = [f"{q.position}: {q.reason.value} {q.detail}".strip() for q in quarantined[:5]]
        self.totals.update(accepted.counts)
        self.totals["requests"] += 1
        return accepted

    def store_unreadable(self, body: bytes, error: PayloadError) -> None:
        """A payload that did not decode: kept in quarantine (a scrubbed excerpt and the reason) before the 400."""
        record = self.mapper.quarantine(payload_origin(body), QuarantineReason.invalid_json, str(error), body)
        with self._lock:
            self._write([], [record])
            self.totals["unreadable_payloads"] += 1

    def _write(self, picks: list[Pick], quarantined: list[RejectedTrafficRow]) -> None:
        if not picks and not quarantined:
            return
        with session_scope(self.engine) as session:
            if picks:
                upsert_interaction_rows(session=session, rows=[pick_row(p) for p in picks])
            if quarantined:
                quarantine_rows(session=session, records=[quarantine_record(q) for q in quarantined])
