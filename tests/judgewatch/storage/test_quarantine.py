"""Quarantined input rows: stored with where they were and why, idempotently, with a bounded excerpt."""

from __future__ import annotations

from sqlalchemy import Engine

from judgewatch.storage.db import session_scope
from judgewatch.storage.quarantine import QuarantineRecord, get_quarantined, quarantine_rows


def test_quarantined_rows_round_trip_with_a_bounded_excerpt(engine: Engine) -> None:
    records = [
        QuarantineRecord(
            source="file:/x/items.jsonl",
            position="items.jsonl:7",
            line=7,
            reason="field 'reference_facts': expected a list of strings",
            raw='{"id": 7}',
        ),
        QuarantineRecord(
            source="file:/x/items.jsonl", position="items.jsonl:9", line=9, reason="not valid JSON", raw="界" * 5000
        ),
    ]
    for _ in range(2):
        with session_scope(engine) as session:
            quarantine_rows(session=session, records=records)
    with session_scope(engine) as session:
        back = get_quarantined(session=session, source="file:/x/items.jsonl")
    assert [(r.line, r.reason) for r in back] == [(7, records[0].reason), (9, "not valid JSON")]
    assert back[0].raw == '{"id": 7}'
    assert len(back[1].raw.encode()) <= 2048
    assert back[0].message == "line 7: field 'reference_facts': expected a list of strings"
