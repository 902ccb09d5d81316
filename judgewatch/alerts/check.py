"""Checking the alert rules: incidents opened and resolved as docs/operations.md says; a subject that cannot be
evaluated changes nothing, and a failed delivery is stored and tried again by the next check."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from judgewatch.alerts.conditions import Observation, observe
from judgewatch.alerts.rules import Rule, RulesDocument, load_rules
from judgewatch.alerts.webhooks import deliver, payload
from judgewatch.settings import Settings
from judgewatch.storage.alerts import (
    AlertIncident,
    IncidentState,
    claim_retry,
    latest_incidents,
    open_incident,
    record_delivery,
    resolve_incident,
)
from judgewatch.storage.db import session_scope
from judgewatch.storage.types import utcnow

logger = logging.getLogger(__name__)

GONE = {  # why an open incident resolves when its subject is no longer observed
    "corrected_score_below": "no longer in the newest calibration snapshot",
    "drift_alert": "the drift alert is no longer open (a later window tested within chance, or it was acknowledged)",
    "unscored_share_above": "no longer observed",
    "judge_spend_above": "a new UTC day began: the day's judge spend starts again from 0",
}


@dataclass(frozen=True)
class Sent:
    rule: str
    subject: str
    event: str  # "fired" | "resolved"
    webhook: str
    error: str | None  # None: delivered


@dataclass
class CheckReport:
    observed: dict[str, list[Observation]] = field(default_factory=dict)  # rule -> its subjects now
    sent: list[Sent] = field(default_factory=list)

    @property
    def failed(self) -> list[Sent]:
        return [s for s in self.sent if s.error is not None]

    def to_json(self) -> dict[str, Any]:
        """Counts per rule and every delivery: what a flow run returns."""
        rules = {
            name: {state: sum(1 for o in obs if o.firing is value) for state, value in STATES.items()}
            for name, obs in self.observed.items()
        }
        return {"rules": rules, "sent": [s.__dict__ for s in self.sent]}


STATES = {"firing": True, "ok": False, "not_evaluated": None}


class _Check:
    def __init__(self, engine: Engine, document: RulesDocument) -> None:
        self.engine, self.report = engine, CheckReport()
        self.hooks = {w.name: w for w in document.webhooks}
        self.failed_hooks: set[str] = set()

    def send(self, rule: Rule, incident: AlertIncident | None, details: dict[str, Any]) -> None:
        """Deliver the incident's due event (when this check claimed it: `incident` is not None)."""
        if incident is None or incident.due is None:
            return
        event, webhook = incident.due, self.hooks[rule.webhook]
        error = "not tried: the webhook failed earlier in this check" if webhook.name in self.failed_hooks else None
        error = error or deliver(webhook, payload(webhook, rule, incident, event, details))
        if error is not None:
            self.failed_hooks.add(webhook.name)
        with session_scope(self.engine, write=True) as session:
            record_delivery(session=session, incident_id=incident.id, event=event, error=error)
        self.report.sent.append(Sent(rule.name, incident.subject, event, webhook.name, error))

    def rule(self, rule: Rule, settings: Settings, now: datetime) -> None:
        with session_scope(self.engine) as session:
            observed = observe(session, rule, settings, now)
            latest = latest_incidents(session=session, rule=rule.name)
        self.report.observed[rule.name] = observed
        by_subject = {o.subject: o for o in observed}
        for subject in [*by_subject, *(s for s in latest if s not in by_subject)]:
            self.subject(rule, by_subject.get(subject), latest.get(subject), subject)

    def subject(self, rule: Rule, obs: Observation | None, last: AlertIncident | None, subject: str) -> None:
        is_open = last is not None and last.state == IncidentState.open.value
        details = obs.details if obs is not None else {}
        with session_scope(self.engine, write=True) as session:
            if obs is not None and obs.firing and not is_open:
                claimed = open_incident(session=session, rule=rule.name, subject=subject,
                                        seq=last.seq + 1 if last else 1, value=obs.value, message=obs.text,
                                        webhook=rule.webhook)  # fmt: skip
            elif is_open and last is not None and (obs is None or obs.firing is False):
                why = obs.text if obs is not None else f"{subject}: {GONE[rule.condition]}"
                value = obs.value if obs is not None else None
                claimed = resolve_incident(session=session, incident=last, value=value, message=why)
            elif last is not None and last.retry_due(utcnow()):  # a delivery that failed before: try it again
                claimed = claim_retry(session=session, incident=last)
            else:
                return
        self.send(rule, claimed, details)


def check_alerts(engine: Engine, document: RulesDocument, settings: Settings) -> CheckReport:
    """Check every rule once (see the module doc); delivery failures are in the report, never raised."""
    check, now = _Check(engine, document), utcnow()
    for rule in document.rules:
        check.rule(rule, settings, now)
    for sent in check.report.sent:  # failures were logged where they happened
        if sent.error is None:
            logger.info("alert %s %s (%s): sent to webhook %r", sent.rule, sent.event, sent.subject, sent.webhook)
    return check.report


def check_alerts_quietly(engine: Engine, settings: Settings) -> dict[str, Any]:
    """`check_alerts` with the settings' rules file for a flow run: {} without one; an error logged and returned,
    never raised (an alert that cannot be checked or sent must not fail the run that judged)."""
    if settings.alert_rules_file is None:
        return {}
    try:
        return check_alerts(engine, load_rules(settings.alert_rules_file), settings).to_json()
    except Exception as exc:
        logger.exception("alert rules not checked")
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
