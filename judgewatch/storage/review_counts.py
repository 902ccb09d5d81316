"""Review counts kept by the database itself, so a metrics scrape reads a few rows instead of every item and label:
`available` and `leased` share the queue bucket `open`, so a lease (one statement per key press) changes no count.
Triggers keep the rows in the writing statement's transaction, whoever writes (on PostgreSQL once per statement,
from its transition table). `recount` computes the same rows from the tables (m016's backfill, the tests' oracle).
"""

from __future__ import annotations

from sqlalchemy import Connection, case, delete, func, literal_column, select, text
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Field, Session, SQLModel

from judgewatch.storage.db import table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.review import ItemState, ReviewItem, ReviewLabel
from judgewatch.storage.verdict_counts import NO_VALUE

LABEL, QUEUE = "label", "queue"
OPEN = "open"  # the bucket of available and leased items
NO_TIER = NO_VALUE  # the value for a label of an interaction without a tier
OPEN_STATES = (ItemState.available.value, ItemState.leased.value)
CountKey = tuple[str, str]


class ReviewCount(SQLModel, table=True):
    """Scoring labels written per tier (kind 'label'), review items per queue bucket now (kind 'queue')."""

    __tablename__ = "review_count"

    kind: str = Field(primary_key=True)
    value: str = Field(primary_key=True)
    n: int = 0


def _bucket_sql(state: str) -> str:
    opens = ", ".join(f"'{s}'" for s in OPEN_STATES)
    return f"CASE WHEN {state} IN ({opens}) THEN '{OPEN}' ELSE {state} END"


_UPSERT = "ON CONFLICT (kind, value) DO UPDATE SET n = review_count.n + excluded.n"
# A label of an item or interaction that is not there (SQLite does not enforce the foreign keys) counts as 'none'.
_LABEL_TIER = (
    "coalesce((SELECT i.tier FROM review_item r JOIN interaction i ON i.id = r.interaction_id "
    "WHERE r.id = {label}.review_item_id), '" + NO_TIER + "')"
)
_SCORING = "{label}.skipped_reason IS NULL AND NOT {label}.flagged"
_BUCKET_CHANGED = f"{_bucket_sql('OLD.state')} IS DISTINCT FROM {_bucket_sql('NEW.state')}"

_POSTGRES = (
    f"""
CREATE OR REPLACE FUNCTION review_count_labels() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO review_count (kind, value, n)
    SELECT '{LABEL}', t.tier, count(*) FROM (
        SELECT {_LABEL_TIER.format(label="l")} AS tier FROM new_labels l WHERE {_SCORING.format(label="l")}
    ) t GROUP BY t.tier ORDER BY t.tier
    {_UPSERT};
    RETURN NULL;
END $$""",
    f"""
CREATE OR REPLACE FUNCTION review_count_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO review_count (kind, value, n)
        SELECT '{QUEUE}', {_bucket_sql("state")}, count(*) FROM new_items GROUP BY 2 ORDER BY 2 {_UPSERT};
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO review_count (kind, value, n)
        SELECT '{QUEUE}', {_bucket_sql("state")}, -count(*) FROM old_items GROUP BY 2 ORDER BY 2 {_UPSERT};
    ELSE
        INSERT INTO review_count (kind, value, n)
        SELECT '{QUEUE}', b, d
        FROM (VALUES ({_bucket_sql("OLD.state")}, -1), ({_bucket_sql("NEW.state")}, 1)) AS moved (b, d)
        ORDER BY b {_UPSERT};
    END IF;
    RETURN NULL;
END $$""",
    "DROP TRIGGER IF EXISTS review_label_counted ON review_label",
    "CREATE TRIGGER review_label_counted AFTER INSERT ON review_label REFERENCING NEW TABLE AS new_labels "
    "FOR EACH STATEMENT EXECUTE FUNCTION review_count_labels()",
    "DROP TRIGGER IF EXISTS review_item_added ON review_item",
    "CREATE TRIGGER review_item_added AFTER INSERT ON review_item REFERENCING NEW TABLE AS new_items "
    "FOR EACH STATEMENT EXECUTE FUNCTION review_count_items()",
    "DROP TRIGGER IF EXISTS review_item_removed ON review_item",
    "CREATE TRIGGER review_item_removed AFTER DELETE ON review_item REFERENCING OLD TABLE AS old_items "
    "FOR EACH STATEMENT EXECUTE FUNCTION review_count_items()",
    "DROP TRIGGER IF EXISTS review_item_moved ON review_item",
    f"CREATE TRIGGER review_item_moved AFTER UPDATE OF state ON review_item FOR EACH ROW WHEN ({_BUCKET_CHANGED}) "
    "EXECUTE FUNCTION review_count_items()",
)

_SQLITE = (
    f"""
CREATE TRIGGER IF NOT EXISTS review_label_counted AFTER INSERT ON review_label WHEN {_SCORING.format(label="NEW")}
BEGIN
    INSERT INTO review_count (kind, value, n) VALUES ('{LABEL}', {_LABEL_TIER.format(label="NEW")}, 1) {_UPSERT};
END""",
    f"""
CREATE TRIGGER IF NOT EXISTS review_item_added AFTER INSERT ON review_item
BEGIN
    INSERT INTO review_count (kind, value, n) VALUES ('{QUEUE}', {_bucket_sql("NEW.state")}, 1) {_UPSERT};
END""",
    f"""
CREATE TRIGGER IF NOT EXISTS review_item_removed AFTER DELETE ON review_item
BEGIN
    INSERT INTO review_count (kind, value, n) VALUES ('{QUEUE}', {_bucket_sql("OLD.state")}, -1) {_UPSERT};
END""",
    f"""
CREATE TRIGGER IF NOT EXISTS review_item_moved AFTER UPDATE OF state ON review_item WHEN {_BUCKET_CHANGED}
BEGIN
    INSERT INTO review_count (kind, value, n) VALUES ('{QUEUE}', {_bucket_sql("OLD.state")}, -1) {_UPSERT};
    INSERT INTO review_count (kind, value, n) VALUES ('{QUEUE}', {_bucket_sql("NEW.state")}, 1) {_UPSERT};
END""",
)


def install_triggers(conn: Connection) -> None:
    """Create (or replace) the triggers that keep `review_count` (migration m016)."""
    for ddl in _POSTGRES if conn.dialect.name == "postgresql" else _SQLITE:
        conn.execute(text(ddl))


def bucket(state: ColumnElement[str]) -> ColumnElement[str]:
    """The queue bucket of a state column: `open` for available and leased, the state itself otherwise."""
    # literals, not bound values: GROUP BY repeats the expression, and must find the same one
    opens: list[ColumnElement[str]] = [literal_column(f"'{s}'") for s in OPEN_STATES]
    return case((state.in_(opens), literal_column(f"'{OPEN}'")), else_=state)


def recount(*, session: Session) -> dict[CountKey, int]:
    """The counts as the tables hold them now (rows of zero left out)."""
    lab, item, i = table(ReviewLabel).c, table(ReviewItem).c, table(Interaction).c
    tier = func.coalesce(i.tier, NO_TIER)
    labels = (
        select(tier, func.count())
        .select_from(
            table(ReviewLabel)
            .outerjoin(table(ReviewItem), item.id == lab.review_item_id)
            .outerjoin(table(Interaction), i.id == item.interaction_id)
        )
        .where(lab.skipped_reason.is_(None), lab.flagged.is_(False))
        .group_by(tier)
    )
    queue = select(bucket(item.state), func.count()).group_by(bucket(item.state))
    counts = {(LABEL, str(t)): int(n) for t, n in session.execute(labels)}
    counts.update({(QUEUE, str(b)): int(n) for b, n in session.execute(queue)})
    return {key: n for key, n in counts.items() if n}


def stored_counts(*, session: Session) -> dict[CountKey, int]:
    """The kept counts (rows of zero left out)."""
    c = table(ReviewCount).c
    return {(kind, value): int(n) for kind, value, n in session.execute(select(c.kind, c.value, c.n)) if n}


def rebuild(*, session: Session) -> int:
    """Replace the kept counts with a recount (m016's backfill); returns the number of rows."""
    session.execute(delete(table(ReviewCount)))
    counts = recount(session=session)
    if counts:
        session.execute(
            table(ReviewCount).insert(), [{"kind": k, "value": v, "n": n} for (k, v), n in sorted(counts.items())]
        )
    return len(counts)
