"""A synthetic store for the metrics tests and the scrape benchmark: many verdicts, written in bulk.

Rows follow from their position (no randomness): two tiers, traffic and regression sources, two judges with a
share unscored and a share answered by the fallback, review items in every queue state, labels, gate decisions,
runs, a calibration snapshot, alerts and a trust record; no criterion rows (the metrics never read them).
`seed_store` loads past the verdict writer (COPY) and so rebuilds the verdict counts; `add_verdicts` and `rejudge`
go through the writer, which keeps them. The review counts are kept by the database's triggers (m016).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert, update
from sqlmodel import Session, SQLModel

from judgewatch.storage.calibration import CalibrationSnapshot, DriftAlert
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.releases import GateDecision
from judgewatch.storage.review import Reviewer, ReviewItem, ReviewLabel
from judgewatch.storage.runs import EvalRun
from judgewatch.storage.trust import TrustRecord
from judgewatch.storage.types import JSONValue, stable_id, utcnow
from judgewatch.storage.verdict_counts import rebuild, rebuild_spend
from judgewatch.storage.verdicts import VerdictRecord, upsert_verdicts, verdict_id

logger = logging.getLogger(__name__)

CHUNK = 5_000
TIERS = ("quantized", "full")
JUDGES = ("smollm2-135m-instruct", "reference")
UNSCORED_REASONS = ("parse_error", "timeout", "endpoint_down")
QUEUE_STATES = ("available", "leased", "done", "adjudication", "flagged")
PRIMARY_LINK = "openai:smollm2-135m-instruct@http://judge:s3cret@10.0.0.5:8000/v1"


def _insert(engine: Engine, model: type[SQLModel], rows: list[dict[str, Any]]) -> None:
    """Bulk insert: COPY on PostgreSQL (a million rows in seconds), batched INSERTs elsewhere."""
    if not rows:
        return
    tbl = table(model)
    if engine.dialect.name == "postgresql":
        _copy(engine, tbl, rows)
        return
    with engine.begin() as conn:
        for start in range(0, len(rows), CHUNK):
            conn.execute(insert(tbl), rows[start : start + CHUNK])


def _copy(engine: Engine, tbl: Any, rows: list[dict[str, Any]]) -> None:
    columns = list(rows[0])
    json_columns = {c.name for c in tbl.columns if isinstance(c.type, JSONValue)}
    names = ", ".join(f'"{c}"' for c in columns)
    raw: Any = engine.raw_connection()  # psycopg 3: its cursors have copy()
    try:
        with raw.cursor() as cursor, cursor.copy(f"COPY {tbl.name} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([json.dumps(row[c]) if c in json_columns and row[c] is not None else row[c]
                                for c in columns])  # fmt: skip
        raw.commit()
    finally:
        raw.close()


def _runs(now: Any) -> list[dict[str, Any]]:
    base = {"rubric_name": "answer_quality", "rubric_hash": "r" * 16, "judge_config_hash": "j0", "params": {}}
    return [
        {**base, "id": "run-traffic", "kind": "sampling", "name": "traffic-sampling/prod", "identity": "t",
         "status": "completed", "started_at": now - timedelta(minutes=20), "finished_at": now - timedelta(minutes=10),
         "counts": {}},
        {**base, "id": "run-regression", "kind": "regression", "name": "r2/quantized/halueval", "identity": "r",
         "status": "completed", "started_at": now - timedelta(hours=2), "finished_at": now - timedelta(hours=1),
         "counts": {}},
    ]  # fmt: skip


def seed_store(engine: Engine, *, verdicts: int, batch: int = 50_000) -> None:
    """Write `verdicts` verdicts (and an interaction each) plus review, calibration, gate and trust rows."""
    now = utcnow()
    _insert(engine, EvalRun, _runs(now))
    reviewers = [
        {"name": f"reviewer{k}", "password_hash": "x", "active": True, "can_adjudicate": False, "created_at": now}
        for k in range(3)
    ]
    _insert(engine, Reviewer, reviewers)
    for start in range(0, verdicts, batch):
        stop = min(verdicts, start + batch)
        interactions, rows, items, labels = [], [], [], []
        for k in range(start, stop):
            interactions.append(_interaction(k, now))
            rows.append(_verdict(k, now))
            if k % 10 == 0:
                items.append(_review_item(k, now))
                if items[-1]["state"] == "done":
                    labels.append(_label(k, now))
        _insert(engine, Interaction, interactions)
        _insert(engine, VerdictRecord, rows)
        _insert(engine, ReviewItem, items)
        _insert(engine, ReviewLabel, labels)
        logger.info("seeded %d/%d verdicts", stop, verdicts)
    _insert(engine, GateDecision, [_gate(k, now) for k in range(3)])
    _insert(engine, DriftAlert, [_alert(now)])
    _insert(engine, DriftAlert, [_model_change_alert(now)])
    _insert(engine, CalibrationSnapshot, [_snapshot(now)])
    _insert(engine, TrustRecord, [_trust(now)])
    with Session(engine) as session:
        rebuild(session=session)  # COPY went past the verdict writer
        rebuild_spend(session=session)
        session.commit()


def add_verdicts(engine: Engine, *, start: int, count: int) -> None:
    """`count` new verdicts (positions start.. start+count-1) written now by the verdict writer, as a flow would."""
    now = utcnow()
    _insert(engine, Interaction, [_interaction(k, now) for k in range(start, start + count)])
    _write(engine, [_verdict(k, now) for k in range(start, start + count)])


def written_at(engine: Engine, moment: datetime) -> None:
    """Date every stored verdict's last write at `moment`, the day spends with them: a test's "today" or "yesterday"."""
    with session_scope(engine, write=True) as session:
        session.execute(update(table(VerdictRecord)).values(updated_at=moment))
        rebuild_spend(session=session)


def rejudge(engine: Engine, *, positions: list[int], batch: int = 1_000) -> None:
    """Judge stored items again with the same judge: their verdicts become scored now, in place (same id)."""
    now = utcnow()
    rows = [{**_verdict(k, now), "status": "scored", "unscored_reason": None, "overall": 3.0} for k in positions]
    for start in range(0, len(rows), batch):
        _write(engine, rows[start : start + batch])


def _write(engine: Engine, rows: list[dict[str, Any]]) -> None:
    verdicts = [(row["interaction_id"], VerdictRecord(**row).to_verdict()) for row in rows]
    run_ids = {row["run_id"] for row in rows}
    with session_scope(engine) as session:
        for run_id in sorted(run_ids):  # one writer call per run, as each run's pipeline would store them
            mine = [v for v, row in zip(verdicts, rows, strict=True) if row["run_id"] == run_id]
            upsert_verdicts(session=session, run_id=run_id, verdicts=mine)


def _interaction(k: int, now: Any) -> dict[str, Any]:
    regression = k % 4 == 0
    tier = TIERS[k % 2]
    source = f"release:r2/{tier}/halueval" if regression else "traffic:prod"
    return {
        "id": f"i{k:031d}", "source": source, "source_id": str(k), "question": f"question {k}?",
        "answer": f"answer {k}", "reference_facts": [], "context": [], "language": "en", "tier": tier, "model": "m",
        "release": "r2" if regression else None, "created_at": now, "metadata": {},
    }  # fmt: skip


def seeded_verdict_id(k: int) -> str:
    """The id the verdict writer gives the seed's verdict at position k (so a re-judge replaces it in place)."""
    return verdict_id(f"i{k:031d}", "r" * 16, f"cfg-{JUDGES[1] if k % 7 == 0 else JUDGES[0]}")


def _verdict(k: int, now: Any) -> dict[str, Any]:
    unscored = k % 20 == 0
    fallback = k % 7 == 0
    judge = JUDGES[1] if fallback else JUDGES[0]
    return {
        "id": seeded_verdict_id(k), "interaction_id": f"i{k:031d}", "item_id": str(k),
        "run_id": "run-regression" if k % 4 == 0 else "run-traffic",
        "status": "unscored" if unscored else "scored",
        "unscored_reason": UNSCORED_REASONS[k % 3] if unscored else None,
        "overall": None if unscored else float(k % 5 + 1), "reason": "", "scores": {}, "not_applicable": [],
        "judge_kind": "reference" if fallback else "openai", "judge_name": judge, "judge_config_hash": f"cfg-{judge}",
        "rubric_name": "answer_quality", "rubric_version": "1.0.0", "rubric_hash": "r" * 16,
        "latency_ms": float(50 + (k * 37) % 4000),
        "prompt_tokens": 0 if fallback else 400, "completion_tokens": 0 if fallback else 60,
        "cached_tokens": 0 if fallback else 300, "attempts": 1,
        "fallback_from": [PRIMARY_LINK] if fallback else [],
        "created_at": now - timedelta(seconds=k % 86_400), "updated_at": now - timedelta(seconds=k % 86_400),
    }  # fmt: skip


def _review_item(k: int, now: Any) -> dict[str, Any]:
    state = QUEUE_STATES[(k // 10) % len(QUEUE_STATES)]
    leased = state == "leased"
    return {
        "id": f"q{k:031d}", "verdict_id": seeded_verdict_id(k), "interaction_id": f"i{k:031d}",
        "rubric_name": "answer_quality", "rubric_version": "1.0.0", "inclusion_probability": 0.1,
        "pick_reason": "uniform", "labels_needed": 1, "labels_done": 1 if state == "done" else 0, "state": state,
        "lease_owner": "reviewer0" if leased else None,
        "lease_expires_at": now + timedelta(minutes=10) if leased else None,
        "leased_at": now if leased else None, "created_at": now,
    }  # fmt: skip


def _label(k: int, now: Any) -> dict[str, Any]:
    return {
        "review_item_id": f"q{k:031d}", "reviewer": f"reviewer{k % 3}", "scores": {"faithfulness": 3},
        "flagged": False, "comment": "", "started_at": now, "submitted_at": now,
        "duration_ms": 1000, "rubric_version_shown": "1.0.0", "via": "ui",
    }  # fmt: skip


def _gate(k: int, now: Any) -> dict[str, Any]:
    return {
        "id": stable_id("gate", k), "release": f"r{k}", "exit_code": k, "outcome": ("pass", "regression", "error")[k],
        "summary": "secret summary text", "reasons": [], "notes": [], "baselines": {}, "run_ids": [], "detail": {},
        "decided_at": now - timedelta(hours=3 - k),
    }  # fmt: skip


def _alert(now: Any) -> dict[str, Any]:
    return {
        "id": "alert-1", "judge_config_hash": "cfg", "judge_name": JUDGES[0], "rubric_name": "answer_quality",
        "rubric_version": "1.0.0", "tier": "quantized", "criterion": "faithfulness", "window": "daily",
        "window_start": now - timedelta(days=1), "window_end": now, "reference_start": now - timedelta(days=8),
        "kind": "agreement_drop", "state": "open", "n_ref": 100, "n_cur": 40, "alpha": 0.01,
        "test": "one-sided permutation test of weighted kappa", "message": "agreement dropped",
        "created_at": now, "updated_at": now,
    }  # fmt: skip


def _model_change_alert(now: Any) -> dict[str, Any]:
    """A served-model change on the full tier of release r7: exported apart from judge drift."""
    return {
        **_alert(now), "id": "alert-2", "tier": "full", "kind": "served_model_change", "release": "r7",
        "score_ref": 4.1, "score_cur": 3.6, "p_score_shift": 1e-5, "message": "scores moved, judge stable",
    }  # fmt: skip


def _estimate(value: float) -> dict[str, Any]:
    return {"estimate": value, "low": value - 0.1, "high": value + 0.1, "n": 50}


def _snapshot(now: Any) -> dict[str, Any]:
    estimates = [
        {"tier": tier, "criterion": "faithfulness", "n_verdicts": 1000, "n_labels": 50, "n_synthetic_labels": 0,
         "raw_mean": 3.5 + k / 10, "ppi": {**_estimate(3.2 + k / 10), "n_all": 1000, "effective_n": 80.0},
         "human_only": _estimate(3.1)}
        for k, tier in enumerate(TIERS)
    ]  # fmt: skip
    agreement = [
        {"tier": tier, "criterion": "faithfulness", "n": 50, "weighted_kappa": _estimate(0.6),
         "cohen_kappa": _estimate(0.4), "spearman": _estimate(0.5), "bias": _estimate(0.2), "exact": _estimate(0.45)}
        for tier in TIERS
    ]  # fmt: skip
    return {
        "id": stable_id("calibration_snapshot", "tiers", "seed", now.date().isoformat()), "kind": "tiers",
        "scope": "answer_quality 1.0.0 judge=cfg", "day": now.date().isoformat(), "rubric_name": "answer_quality",
        "rubric_version": "1.0.0", "judge_config_hash": "cfg",
        "payload": {"estimates": estimates, "agreement": agreement}, "computed_at": now - timedelta(minutes=30),
    }  # fmt: skip


def _trust(now: Any) -> dict[str, Any]:
    return {
        "id": "trust-1", "judge_kind": "openai", "judge_name": JUDGES[0], "judge_config_hash": "cfg",
        "rubric_name": "answer_quality", "rubric_version": "1.0.0", "rubric_hash": "r",
        "evidence": "known_answers", "dataset": "halueval", "dataset_revision": "1", "tier": None, "n_items": 200,
        "trustworthy": False, "summary": "", "figures": {"criteria": {"faithfulness": {"auroc": 0.52}}},
        "policy": {}, "measured_at": now,
    }  # fmt: skip
