"""The review queue's key-press statements on PostgreSQL, one round trip each, straight through psycopg.

"Lease next" is one statement: the account check, renewing the lease the reviewer already holds, else picking
(`FOR UPDATE SKIP LOCKED`, an expired lease first, then the oldest available item through the partial index)
and leasing the next free item, and the blind screen's columns (no verdict, no tier). "Submit" is a read (the
item's lease, whether it has references, and the other labels when this one completes the item) and one write:
the lease ended and the label stored in one statement, guarded by the lease and by the very state the caller
validated against, so a label is stored only with its release and nothing is stored when either fails.
SQLite runs the same steps through SQLAlchemy under its write lock (`judgewatch.review.queue`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb
from sqlalchemy import Engine

from judgewatch.storage.direct import fetch

NOT_LABELED_BY_ME = "NOT EXISTS (SELECT 1 FROM review_label l WHERE l.review_item_id = {t}.id AND l.reviewer = %(who)s)"
LEASED_COLUMNS = (
    "id, interaction_id, rubric_name, rubric_version, lease_expires_at, leased_at, labels_done, labels_needed"
)

LEASE_NEXT = f"""
WITH me AS (SELECT active FROM reviewer WHERE name = %(who)s),
held AS (
    UPDATE review_item SET lease_expires_at = %(until)s
    WHERE state = 'leased' AND lease_owner = %(who)s AND lease_expires_at > %(now)s AND (SELECT active FROM me)
    RETURNING {LEASED_COLUMNS}
),
claimed AS (
    UPDATE review_item SET state = 'leased', lease_owner = %(who)s, lease_expires_at = %(until)s,
        -- the clock is read before the statement: a lease never starts before the item's last label was stored
        leased_at = GREATEST(
            %(now)s, (SELECT max(l.submitted_at) FROM review_label l WHERE l.review_item_id = review_item.id))
    WHERE id = COALESCE(
            (SELECT e.id FROM review_item e
             WHERE e.state = 'leased' AND e.lease_expires_at <= %(now)s AND {NOT_LABELED_BY_ME.format(t="e")}
             ORDER BY e.lease_expires_at LIMIT 1 FOR UPDATE SKIP LOCKED),
            (SELECT a.id FROM review_item a
             WHERE a.state = 'available' AND {NOT_LABELED_BY_ME.format(t="a")}
             ORDER BY a.created_at, a.id LIMIT 1 FOR UPDATE SKIP LOCKED))
      AND (state = 'available' OR (state = 'leased' AND lease_expires_at <= %(now)s))
      AND {NOT_LABELED_BY_ME.format(t="review_item")}
      AND (SELECT active FROM me) AND NOT EXISTS (SELECT 1 FROM held)
      -- only a row as this statement's snapshot saw it: one leased and labeled by others meanwhile is left for
      -- the next try, so the labels the GREATEST above reads are all the item has
      AND xmin = (SELECT s.xmin FROM review_item s WHERE s.id = review_item.id)
    RETURNING {LEASED_COLUMNS}
)
SELECT me.active, got.id, got.rubric_name, got.rubric_version, got.lease_expires_at, got.leased_at, got.labels_done,
       got.labels_needed,
       i.question, i.answer, i.messages, i.reference_answer, i.reference_facts, i.context, i.language
FROM me
LEFT JOIN (SELECT * FROM held UNION ALL SELECT * FROM claimed) AS got ON true
LEFT JOIN interaction i ON i.id = got.interaction_id
"""

NON_EMPTY = "COALESCE(jsonb_typeof({c}) = 'array' AND jsonb_array_length({c}) > 0, false)"
HELD = f"""
SELECT me.active, r.id, r.rubric_name, r.rubric_version, r.state, r.lease_owner, r.lease_expires_at, r.leased_at,
       r.labels_done, r.labels_needed,
       COALESCE(i.reference_answer, '') <> '' OR {NON_EMPTY.format(c="i.reference_facts")}
           OR {NON_EMPTY.format(c="i.context")} AS has_refs,
       CASE WHEN r.labels_done > 0 AND r.labels_done + 1 >= r.labels_needed THEN
           (SELECT COALESCE(json_agg(l.scores), '[]'::json) FROM review_label l
            WHERE l.review_item_id = r.id AND l.skipped_reason IS NULL AND NOT l.flagged)
       END AS others
FROM (SELECT (SELECT active FROM reviewer WHERE name = %(who)s) AS active) AS me
LEFT JOIN (review_item r JOIN interaction i ON i.id = r.interaction_id) ON r.id = %(item)s
"""

LABEL_AND_RELEASE = """
WITH released AS (
    UPDATE review_item
    SET state = %(state)s, labels_done = %(done)s, lease_owner = NULL, lease_expires_at = NULL, leased_at = NULL
    WHERE id = %(item)s AND state = 'leased' AND lease_owner = %(who)s AND lease_expires_at > %(now)s
      AND labels_done = %(done_before)s AND leased_at IS NOT DISTINCT FROM %(leased_at)s
      AND (SELECT active FROM reviewer WHERE name = %(who)s)
    RETURNING id, verdict_id, interaction_id
),
labeled AS (
    INSERT INTO review_label (review_item_id, reviewer, scores, skipped_reason, flagged, comment, started_at,
                              submitted_at, duration_ms, rubric_version_shown, via)
    SELECT id, %(who)s, %(scores)s, %(skipped_reason)s, %(flagged)s, %(comment)s, %(started_at)s, %(now)s,
           %(duration_ms)s, %(rubric_version_shown)s, %(via)s
    FROM released
    RETURNING review_item_id
)
SELECT v.scores, v.overall, v.status, v.unscored_reason, v.reason, v.judge_name, i.tier
FROM released
JOIN labeled ON labeled.review_item_id = released.id
JOIN verdict v ON v.id = released.verdict_id
JOIN interaction i ON i.id = released.interaction_id
"""

PROGRESS = f"""
SELECT (SELECT count(*) FROM review_label
        WHERE reviewer = %(who)s AND submitted_at >= %(midnight)s AND skipped_reason IS NULL AND NOT flagged
       ) AS done_today,
       (SELECT count(*) FROM (SELECT 1 FROM review_item a
                              WHERE a.state = 'available' AND {NOT_LABELED_BY_ME.format(t="a")} LIMIT %(limit)s) AS f
       ) + (SELECT count(*) FROM (SELECT 1 FROM review_item e
                                  WHERE e.state = 'leased' AND e.lease_expires_at <= %(now)s
                                    AND {NOT_LABELED_BY_ME.format(t="e")} LIMIT %(limit)s) AS x
       ) AS free,
       (SELECT id FROM review_item
        WHERE state = 'leased' AND lease_owner = %(who)s AND lease_expires_at > %(now)s LIMIT 1) AS holding
"""


def lease_next_row(*, engine: Engine, reviewer: str, now: datetime, until: datetime) -> Any | None:
    """One row: `active` (the account check), the leased item's screen columns (id None when nothing was
    free) and its lease and label counts (what a label is guarded by); None when there is no such account.
    Repeating it is harmless: a second run renews the same lease."""
    params = {"who": reviewer, "now": now, "until": until}
    rows = fetch(engine=engine, sql=LEASE_NEXT, params=params, repeatable=True)
    return rows[0] if rows else None


def held_row(*, engine: Engine, reviewer: str, item_id: str) -> Any:
    """The item as a labeling action checks and validates it: one row with `active` (None: no such account),
    the lease and label counts (id None: no such item), `has_refs`, and `others`: the scores of the other labels
    when this label completes the item, else None."""
    return fetch(engine=engine, sql=HELD, params={"who": reviewer, "item": item_id}, repeatable=True)[0]


def label_and_release(
    *,
    engine: Engine,
    held: Any,
    reviewer: str,
    now: datetime,
    state: str,
    labels_done: int,
    label: dict[str, Any],
) -> Any | None:
    """Store `label` (a review_label row) and end the lease in one statement, only if the item is still as
    `held` read it and leased to `reviewer`; returns the verdict to reveal (scores, overall, status, reasons,
    judge_name, tier), or None when nothing was stored. A second label by the same reviewer raises psycopg's
    UniqueViolation."""
    params = {
        **label,
        "scores": Jsonb(label["scores"]),
        "item": held.id,
        "who": reviewer,
        "now": now,
        "state": state,
        "done": labels_done,
        "done_before": held.labels_done,
        "leased_at": held.leased_at,
    }
    rows = fetch(engine=engine, sql=LABEL_AND_RELEASE, params=params, repeatable=False)
    return rows[0] if rows else None


def progress_row(*, engine: Engine, reviewer: str, now: datetime, midnight: datetime, cap: int) -> Any:
    """One row: `done_today` (labels since `midnight`), `free` (leasable items, each kind counted up to
    `cap` + 1 on its partial index) and `holding` (the item id of a live lease, or None)."""
    params = {"who": reviewer, "now": now, "midnight": midnight, "limit": cap + 1}
    return fetch(engine=engine, sql=PROGRESS, params=params, repeatable=True)[0]
