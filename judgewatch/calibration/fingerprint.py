"""The judge endpoint's fingerprint: what the server says it serves, beyond the model name the configuration hash
covers (new weights behind the same name, another quantization, a vLLM upgrade leave that hash unchanged). What is
read, and what a change sets off: docs/operations.md, "What the judge serves"."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from sqlalchemy import Engine, select

from judgewatch.redact import mask_url
from judgewatch.storage.calibration import CalibrationSnapshot, save_snapshot
from judgewatch.storage.db import session_scope, table
from judgewatch.url_secrets import reveal

logger = logging.getLogger(__name__)

KIND = "judge_fingerprint"
# `vllm:*_info` labels read into `Fingerprint.serving`: how the weights are served (not runtime counters).
_SERVING_LABELS = ("dtype", "quantization")
_SKIP_INFO = ("vllm:lora_requests_info",)  # which adapters run right now: traffic, not configuration


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What the endpoint reports about the model it serves; None where it reports nothing."""

    endpoint: str
    model_id: str | None
    root: str | None
    max_model_len: int | None
    server_version: str | None
    owned_by: str | None = None
    parent: str | None = None
    # From /metrics: "<config>.<label>" -> value, e.g. {"cache_config.cache_dtype": "auto",
    # "cache_config.kv_bytes_per_token": "23000"}; empty when the server exports no `vllm:*_info` gauge.
    serving: dict[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if k != "endpoint"}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class FingerprintCheck:
    current: Fingerprint
    previous_digest: str | None  # None: first time this endpoint is seen
    changed: bool  # the endpoint now serves something else than when last recorded
    # What changed, field by field: name -> (before, now); empty when nothing did or nothing was recorded before
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def describe_changes(self) -> str:
        """`root: /m/a -> /m/b; serving.cache_config.kv_bytes_per_token: 23000 -> 46000`."""
        return "; ".join(f"{name}: {before} -> {now}" for name, (before, now) in self.changes.items())


def _server_root(base_url: str) -> str:
    """`http://host:8012/v1` -> `http://host:8012` (vLLM serves /version at the root)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def serving_facts(metrics_text: str) -> dict[str, str]:
    """The serving configuration a vLLM `/metrics` page states in its `vllm:*_info` gauges (see the module
    docstring); {} for a page without them or one that does not parse."""
    from prometheus_client.parser import text_string_to_metric_families

    facts: dict[str, str] = {}
    try:
        families = list(text_string_to_metric_families(metrics_text))
    except ValueError as exc:
        logger.warning("judge endpoint /metrics does not parse, its serving facts are left out: %s", exc)
        return facts
    for family in families:
        if not family.name.startswith("vllm:") or not family.name.endswith("_info") or family.name in _SKIP_INFO:
            continue
        config = family.name.removeprefix("vllm:").removesuffix("_info")
        for sample in family.samples[:1]:  # one engine's labels: replicas of one engine report the same
            labels = sample.labels
            for name, value in labels.items():
                if name in _SERVING_LABELS or name.endswith("_dtype"):
                    facts[f"{config}.{name}"] = value
            try:
                per_token = float(labels["kv_cache_memory_bytes"]) / float(labels["kv_cache_size_tokens"])
            except (KeyError, ValueError, ZeroDivisionError):
                continue
            facts[f"{config}.kv_bytes_per_token"] = str(int(float(f"{per_token:.2g}")))  # two significant digits
    return facts


def _optional_get(client: httpx.Client, url: str) -> httpx.Response | None:
    """GET `url`; None when the server has no such page or cannot be read (servers other than vLLM)."""
    try:
        response = client.get(url)
    except httpx.HTTPError:
        return None
    return response if response.is_success else None


def fetch_fingerprint(base_url: str, *, model: str | None = None, timeout_s: float = 10.0) -> Fingerprint:
    """Ask the endpoint what it serves. Raises httpx.HTTPError when /v1/models cannot be read; a missing
    /version or /metrics (servers other than vLLM) leaves `server_version` None and `serving` empty."""
    base = reveal(base_url).rstrip("/")
    with httpx.Client(timeout=timeout_s) as client:
        response = client.get(f"{base}/models")
        response.raise_for_status()
        models = response.json().get("data") or []
        entry = next((m for m in models if model is None or m.get("id") == model), models[0] if models else {})
        version_response = _optional_get(client, f"{_server_root(base)}/version")
        try:
            version = version_response.json().get("version") if version_response is not None else None
        except ValueError:
            version = None
        metrics_response = _optional_get(client, f"{_server_root(base)}/metrics")
        serving = serving_facts(metrics_response.text) if metrics_response is not None else {}
    max_len = entry.get("max_model_len")
    return Fingerprint(
        endpoint=mask_url(base),  # stored and logged: never the credential
        model_id=entry.get("id"),
        root=entry.get("root"),
        max_model_len=int(max_len) if max_len is not None else None,
        server_version=str(version) if version is not None else None,
        owned_by=entry.get("owned_by"),
        parent=entry.get("parent"),
        serving=serving,
    )


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    """A fingerprint record's fields with its `serving` facts as `serving.<fact>`, the endpoint left out."""
    kept = {
        k: v for k, v in record.items() if k in Fingerprint.__dataclass_fields__ and k not in ("endpoint", "serving")
    }
    return kept | {f"serving.{k}": v for k, v in (record.get("serving") or {}).items()}


def record_fingerprint(engine: Engine, fingerprint: Fingerprint) -> FingerprintCheck:
    """Store today's fingerprint of the endpoint and compare it with the last one recorded before."""
    c = table(CalibrationSnapshot).c
    query = (
        select(c.payload).where(c.kind == KIND, c.scope == fingerprint.endpoint).order_by(c.computed_at.desc()).limit(1)
    )
    with session_scope(engine) as session:
        row = session.execute(query).first()
    previous_payload: dict[str, Any] = dict(row[0]) if row else {}
    previous = previous_payload.get("digest")
    payload = {**asdict(fingerprint), "digest": fingerprint.digest, "previous_digest": previous}
    changed = previous is not None and previous != fingerprint.digest
    with session_scope(engine, write=True) as session:
        snapshot = CalibrationSnapshot(id="", kind=KIND, scope=fingerprint.endpoint, day="", payload=payload)
        if changed:
            snapshot.day = f"{snapshot.computed_at.date().isoformat()} {fingerprint.digest}"  # keep both of the day
        save_snapshot(session=session, snapshot=snapshot)
    before, now = _flat(previous_payload), _flat(asdict(fingerprint))  # fields and `serving.<fact>`s that differ
    changes = {
        k: (before.get(k), now.get(k)) for k in sorted(now.keys() | before.keys()) if before.get(k) != now.get(k)
    }
    check = FingerprintCheck(fingerprint, previous, changed, changes if changed else {})
    if changed:
        logger.warning("judge endpoint %s now serves %s otherwise: fingerprint %s -> %s (%s)", fingerprint.endpoint,
                       fingerprint.model_id, previous, fingerprint.digest, check.describe_changes())  # fmt: skip
    return check
