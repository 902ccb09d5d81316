"""A sampled pick as its stored interaction, a rejected row as its quarantine record: one rule each for the
sampling flows and the OTLP receiver."""

from __future__ import annotations

from typing import Any

from judgewatch.contract.items import judged_content
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.quarantine import QuarantineRecord
from judgewatch.traffic.records import RejectedTrafficRow
from judgewatch.traffic.sampling import Pick


def pick_row(pick: Pick) -> dict[str, Any]:
    """A pick as its stored `interaction` row, keyed by interaction id, its sampling facts in `metadata`."""
    row = pick.row
    meta: dict[str, Any] = {
        "inclusion_probability": pick.inclusion_probability,
        "stratum": pick.stratum,
        "sampling_salt": pick.salt,
        "pii_redacted": pick.pii_counts,
        "tokens": {"prompt": row.tokens.prompt, "completion": row.tokens.completion, "cached": row.tokens.cached},
    }
    if row.attributes:
        meta["attributes"] = row.attributes
    if row.trace_span is not None:
        meta["trace_id"], meta["span_id"] = row.trace_span
    return {
        "id": row.interaction_id,
        "source": row.source,
        "source_id": row.source_id,
        **judged_content(row),
        "tier": row.tier,
        "model": row.model,
        "release": row.release,
        "route": row.route,
        "department": row.department,
        "created_at": row.timestamp,
        "metadata": meta,
    }


def pick_interaction(pick: Pick) -> Interaction:
    """`pick_row` as an `Interaction` record."""
    row = pick_row(pick)
    return Interaction(**row, meta=row.pop("metadata"))


def quarantine_record(row: RejectedTrafficRow) -> QuarantineRecord:
    """The stored record of a row a source could not map: position, line, reason with its detail, excerpt."""
    reason = f"{row.reason.value}: {row.detail}" if row.detail else row.reason.value
    return QuarantineRecord(source=row.source, position=row.position, line=row.line, reason=reason, raw=row.excerpt)
