"""Alert incidents: one row per time a rule's condition held for one subject, from when it fired until it cleared.
Each is sent once when it opens and once when it resolves, whatever the number of processes checking: opening is
an insert keyed by (rule, subject, number) only one check wins, resolving and each retry compare-and-set updates.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import update
from sqlmodel import Field, Session, SQLModel, col, select

from judgewatch.storage.db import table, upsert
from judgewatch.storage.types import UTCDateTime, stable_id, utcnow


class IncidentState(StrEnum):
    open = "open"
    resolved = "resolved"


EVENT = {IncidentState.open.value: "fired", IncidentState.resolved.value: "resolved"}  # the event each state sends
IN_FLIGHT = timedelta(minutes=10)  # longer than a delivery's timeouts and retry: a claim this old was abandoned


class AlertIncident(SQLModel, table=True):
    __tablename__ = "alert_incident"

    id: str = Field(primary_key=True, max_length=32)
    rule: str = Field(index=True)
    subject: str  # what the condition held for: "tier=quantized criterion=faithfulness", a drift alert, "day"
    seq: int  # the subject's incident number under the rule, from 1
    state: str = IncidentState.open.value
    opened_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    resolved_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    value: float | None = None  # the figure that fired (or cleared) it
    message: str = ""  # the text of the event due: why it fired, then why it resolved
    sent: str = ""  # the last event delivered: "", "fired" or "resolved"
    attempts: int = 0  # deliveries tried for the event due
    attempted_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)  # when the latest was claimed
    last_error: str | None = None  # why the last delivery failed (None: it did not)
    webhook: str = ""  # the rules file's name of the webhook it goes to (never its URL)

    @property
    def due(self) -> str | None:
        """The event not delivered yet, if any."""
        event = EVENT[self.state]
        return None if self.sent == event else event

    def retry_due(self, now: datetime) -> bool:
        """Whether the due event is for this check to send again: its delivery failed, or was abandoned."""
        failed = self.last_error is not None or now - self.attempted_at > IN_FLIGHT
        return self.due is not None and failed


def incident_id(rule: str, subject: str, seq: int) -> str:
    return stable_id("alert_incident", rule, subject, str(seq))


def latest_incidents(*, session: Session, rule: str) -> dict[str, AlertIncident]:
    """The newest incident of each subject of `rule`."""
    rows = session.exec(select(AlertIncident).where(AlertIncident.rule == rule).order_by(col(AlertIncident.seq)))
    return {row.subject: row for row in rows}


def open_incident(
    *, session: Session, rule: str, subject: str, seq: int, value: float | None, message: str, webhook: str
) -> AlertIncident | None:
    """Open incident `seq` of the subject; None when another check opened it first (it is theirs to send)."""
    row: dict[str, Any] = {
        "id": incident_id(rule, subject, seq), "rule": rule, "subject": subject, "seq": seq,
        "state": IncidentState.open.value, "opened_at": utcnow(), "value": value, "message": message, "sent": "",
        "attempts": 1, "attempted_at": utcnow(), "webhook": webhook,
    }  # fmt: skip
    if not upsert(session, table(AlertIncident), [row], update_columns=None, returning_new=True):
        return None
    return session.get(AlertIncident, row["id"], populate_existing=True)


def _claim(session: Session, incident: AlertIncident, **values: Any) -> AlertIncident | None:
    """Apply `values` if nobody changed the incident since it was read (same state, same attempts)."""
    c = table(AlertIncident).c
    result: Any = session.execute(
        update(table(AlertIncident))
        .where(c.id == incident.id, c.state == incident.state, c.attempts == incident.attempts)
        .values(**values)
    )
    return session.get(AlertIncident, incident.id, populate_existing=True) if result.rowcount == 1 else None


def resolve_incident(
    *, session: Session, incident: AlertIncident, value: float | None, message: str
) -> AlertIncident | None:
    """Resolve an open incident; None when another check resolved it first."""
    values = {"state": IncidentState.resolved.value, "resolved_at": utcnow(), "value": value, "message": message}
    return _claim(session, incident, **values, attempts=1, attempted_at=utcnow(), last_error=None)


def claim_retry(*, session: Session, incident: AlertIncident) -> AlertIncident | None:
    """Take the next delivery attempt of the incident's due event; None when another check took it."""
    return _claim(session, incident, attempts=incident.attempts + 1, attempted_at=utcnow())


def record_delivery(*, session: Session, incident_id: str, event: str, error: str | None) -> None:
    """The outcome of one delivery: the event is sent, or still due with why it failed."""
    values: dict[str, Any] = {"last_error": error}
    if error is None:
        values["sent"] = event
    session.execute(update(table(AlertIncident)).where(table(AlertIncident).c.id == incident_id).values(**values))
