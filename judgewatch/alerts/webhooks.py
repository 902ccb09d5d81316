"""Alert payloads (Slack-compatible and judgewatch's JSON) and their delivery: one POST with a timeout, one retry for
a transient failure (timeout, no connection, HTTP 429 or 5xx), never an exception. The URL is read from its
environment variable at send time and appears in no log line, stored row or error text (they name the webhook
and its host only)."""

from __future__ import annotations

import logging
import os
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from judgewatch.alerts.rules import Rule, Webhook
from judgewatch.storage.alerts import AlertIncident

logger = logging.getLogger(__name__)

TIMEOUT_S = 5.0
RETRY_AFTER_S = 1.0
SOURCE = "judgewatch"


def payload(
    webhook: Webhook, rule: Rule, incident: AlertIncident, event: str, details: dict[str, Any]
) -> dict[str, Any]:
    """What is POSTed for one event ("fired" or "resolved") of an incident, in the webhook's format."""
    title = f"[{SOURCE}] {'FIRING' if event == 'fired' else 'RESOLVED'}: {rule.name} ({rule.condition})"
    if webhook.format == "slack":
        context = f"incident {incident.id} · {incident.subject} · opened {incident.opened_at:%Y-%m-%d %H:%M} UTC"
        return {
            "text": f"{title}: {incident.message}",
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
                {"type": "section", "text": {"type": "mrkdwn", "text": incident.message[:3000]}},
                {"type": "context", "elements": [{"type": "mrkdwn", "text": context}]},
            ],
        }
    return {
        "source": SOURCE,
        "event": event,
        "rule": rule.name,
        "condition": rule.condition,
        "threshold": getattr(rule, "threshold", None),
        "subject": incident.subject,
        "value": incident.value,
        "message": incident.message,
        "incident": {
            "id": incident.id,
            "seq": incident.seq,
            "state": incident.state,
            "opened_at": incident.opened_at.isoformat(),
            "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
        },
        "details": details,
    }


def _label(webhook: Webhook, url: str) -> str:
    """`webhook 'oncall' (hooks.slack.com)`: how logs and stored errors name a webhook."""
    return f"webhook {webhook.name!r} ({urlsplit(url).hostname or '?'})"


def deliver(webhook: Webhook, body: dict[str, Any], *, timeout_s: float = TIMEOUT_S) -> str | None:
    """POST `body`; None when delivered, else why not (one line, no secret). Logged at WARNING when it fails."""
    url = os.environ.get(webhook.url_env, "")
    if not url:
        error = f"webhook {webhook.name!r}: environment variable {webhook.url_env} is not set"
        logger.warning("alert not sent: %s", error)
        return error
    label = _label(webhook, url)
    error = ""
    for attempt in (1, 2):
        try:
            response = httpx.post(url, json=body, timeout=timeout_s)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:  # not a URL to send to: permanent
            error = f"{type(exc).__name__}: {str(exc).replace(url, label)}"
            break
        except httpx.HTTPError as exc:  # timeouts, refused connections, broken responses: transient
            error = f"{type(exc).__name__}: {str(exc).replace(url, label)}".rstrip(": ")
        else:
            if response.is_success:
                return None
            error = f"HTTP {response.status_code}"
            if response.status_code != 429 and response.status_code < 500:
                break
        if attempt == 1:
            time.sleep(RETRY_AFTER_S)
    error = f"{label}: {error}"[:500]
    logger.warning("alert not sent: %s", error)
    return error
