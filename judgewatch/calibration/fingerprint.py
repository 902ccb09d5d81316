"""The judge endpoint's fingerprint: what the server says it serves, not only the model name in settings.

The judge configuration hash covers the model *name*, sampling parameters and template; swapping the weights
behind that name (a new checkpoint, another quantization, a vLLM upgrade) leaves it unchanged. The fingerprint
adds what an OpenAI-compatible vLLM endpoint reports: `/v1/models` (id, root = the weights' path, max_model_len)
and `/version`. The calibration flow stores it per endpoint; when it changes, the anchors are re-judged at once
and the change is reported, so a moving score is not mistaken for judge drift or a served-model change.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx
from sqlalchemy import Engine, select

from judgewatch.redact import mask_url
from judgewatch.storage.calibration import CalibrationSnapshot, save_snapshot
from judgewatch.storage.db import session_scope, table
from judgewatch.url_secrets import reveal

logger = logging.getLogger(__name__)

KIND = "judge_fingerprint"


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What the endpoint reports about the model it serves; None where it reports nothing."""

    endpoint: str
    model_id: str | None
    root: str | None
    max_model_len: int | None
    server_version: str | None

    @property
    def digest(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if k != "endpoint"}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class FingerprintCheck:
    current: Fingerprint
    previous_digest: str | None  # None: first time this endpoint is seen
    changed: bool  # the endpoint now serves something else than when last recorded


def _server_root(base_url: str) -> str:
    """`http://host:8012/v1` -> `http://host:8012` (vLLM serves /version at the root)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def fetch_fingerprint(base_url: str, *, model: str | None = None, timeout_s: float = 10.0) -> Fingerprint:
    """Ask the endpoint what it serves. Raises httpx.HTTPError when /v1/models cannot be read; a missing
    /version (servers other than vLLM) leaves `server_version` None."""
    base = reveal(base_url).rstrip("/")
    with httpx.Client(timeout=timeout_s) as client:
        response = client.get(f"{base}/models")
        response.raise_for_status()
        models = response.json().get("data") or []
        entry = next((m for m in models if model is None or m.get("id") == model), models[0] if models else {})
        try:
            version_response = client.get(f"{_server_root(base)}/version")
            version = version_response.json().get("version") if version_response.is_success else None
        except (httpx.HTTPError, ValueError):
            version = None
    max_len = entry.get("max_model_len")
    return Fingerprint(
        endpoint=mask_url(base),  # stored and logged: never the credential
        model_id=entry.get("id"),
        root=entry.get("root"),
        max_model_len=int(max_len) if max_len is not None else None,
        server_version=str(version) if version is not None else None,
    )


def record_fingerprint(engine: Engine, fingerprint: Fingerprint) -> FingerprintCheck:
    """Store today's fingerprint of the endpoint and compare it with the last one recorded before."""
    c = table(CalibrationSnapshot).c
    query = (
        select(c.payload).where(c.kind == KIND, c.scope == fingerprint.endpoint).order_by(c.computed_at.desc()).limit(1)
    )
    with session_scope(engine) as session:
        row = session.execute(query).first()
    previous = row[0].get("digest") if row else None
    payload = {**asdict(fingerprint), "digest": fingerprint.digest, "previous_digest": previous}
    with session_scope(engine, write=True) as session:
        snapshot = CalibrationSnapshot(id="", kind=KIND, scope=fingerprint.endpoint, day="", payload=payload)
        if previous is not None and previous != fingerprint.digest:
            snapshot.day = f"{snapshot.computed_at.date().isoformat()} {fingerprint.digest}"  # keep both of the day
        save_snapshot(session=session, snapshot=snapshot)
    changed = previous is not None and previous != fingerprint.digest
    if changed:
        logger.warning(
            "judge endpoint %s now serves %s (root %s, vLLM %s): fingerprint %s -> %s",
            fingerprint.endpoint,
            fingerprint.model_id,
            fingerprint.root,
            fingerprint.server_version,
            previous,
            fingerprint.digest,
        )
    return FingerprintCheck(fingerprint, previous, changed)
