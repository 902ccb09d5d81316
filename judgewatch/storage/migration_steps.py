"""The schema's history: each migration as a named function, in order in `MIGRATIONS` (see `storage.migrations`).

Importing this module loads every table's model; `migrate` does so only when a store has something to apply.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, func, inspect, select, text
from sqlalchemy.schema import CreateColumn
from sqlmodel import Session, SQLModel

from judgewatch.storage import review_counts
from judgewatch.storage.alerts import AlertIncident
from judgewatch.storage.alignments import JudgeAlignment
from judgewatch.storage.calibration import AnchorItem, AnchorSet, CalibrationSnapshot, DriftAlert
from judgewatch.storage.db import table
from judgewatch.storage.interactions import Interaction
from judgewatch.storage.migrations import Migration
from judgewatch.storage.paused import PausedPick
from judgewatch.storage.quarantine import QuarantinedRow
from judgewatch.storage.releases import GateDecision, ReleaseTier
from judgewatch.storage.review import Reviewer, ReviewItem, ReviewLabel, RoutingPlan
from judgewatch.storage.runs import EvalRun
from judgewatch.storage.trust import TrustRecord
from judgewatch.storage.verdict_counts import SpendDay, VerdictCount, rebuild, rebuild_spend
from judgewatch.storage.verdicts import CriterionScore, VerdictRecord, refresh_current
from judgewatch.storage.watermarks import SourceWatermark

logger = logging.getLogger(__name__)


def add_column(conn: Connection, model: type[SQLModel], column_name: str) -> None:
    """ALTER TABLE ADD COLUMN for a column declared on `model`; a no-op if it exists (on a new database m001 created
    the table from the current model)."""
    tbl = table(model)
    if column_name in {c["name"] for c in inspect(conn).get_columns(tbl.name)}:
        return
    ddl = CreateColumn(tbl.c[column_name]).compile(dialect=conn.dialect)
    conn.execute(text(f"ALTER TABLE {tbl.name} ADD COLUMN {ddl}"))


def m001_initial_tables(conn: Connection) -> None:
    models: list[type[SQLModel]] = [Interaction, EvalRun, VerdictRecord, CriterionScore, QuarantinedRow]
    SQLModel.metadata.create_all(conn, tables=[table(m) for m in models])


def m002_trust_records(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, tables=[table(TrustRecord)])


def m003_releases(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, tables=[table(ReleaseTier), table(GateDecision)])


def m004_review(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, tables=[table(m) for m in (Reviewer, ReviewItem, ReviewLabel)])


def m005_calibration(conn: Connection) -> None:
    models: list[type[SQLModel]] = [DriftAlert, AnchorSet, AnchorItem, CalibrationSnapshot]
    SQLModel.metadata.create_all(conn, tables=[table(m) for m in models])


def m006_source_watermarks(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn, tables=[table(SourceWatermark)])


def m007_release_tier_config(conn: Connection) -> None:
    """A live tier's configuration hash and summary, so a changed prompt template is a different configuration."""
    add_column(conn, ReleaseTier, "config_hash")
    add_column(conn, ReleaseTier, "config")


def m008_reviewer_role(conn: Connection) -> None:
    """Reviewer roles: existing adjudicators become role 'adjudicator', everyone else 'reviewer'."""
    add_column(conn, Reviewer, "role")
    tbl = table(Reviewer)
    conn.execute(tbl.update().where(tbl.c.role.is_(None)).values(role="reviewer"))
    conn.execute(tbl.update().where(tbl.c.can_adjudicate.is_(True)).values(role="adjudicator"))


def m009_metrics_indexes(conn: Connection) -> None:
    """`verdict.updated_at`: the metrics collector asks which verdicts changed since its last scrape."""
    # Plain DDL: an `Index` object would attach itself to the shared Table and be created again by m001.
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_verdict_updated_at ON verdict (updated_at)"))


def m010_run_heartbeat(conn: Connection) -> None:
    add_column(conn, EvalRun, "heartbeat_at")


def m011_verdict_superseded_by(conn: Connection) -> None:
    """`verdict.superseded_by`: one current verdict per interaction and rubric; weak duplicates become history."""
    add_column(conn, VerdictRecord, "superseded_by")
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_verdict_superseded_by ON verdict (superseded_by)"))
    tbl = table(VerdictRecord)
    duplicated = (
        select(tbl.c.interaction_id)
        .group_by(tbl.c.interaction_id, tbl.c.rubric_hash)
        .having(func.count() > 1)
        .distinct()
    )
    ids = list(conn.execute(duplicated).scalars())
    if ids:
        with Session(bind=conn) as session:
            changed = refresh_current(session=session, interaction_ids=ids)
            session.flush()
        logger.info("m011: %d verdicts of %d interactions superseded", changed, len(ids))


def m012_verdict_trimmed(conn: Connection) -> None:
    """`verdict.trimmed`: what reference material was left out to fit the judge's context window."""
    add_column(conn, VerdictRecord, "trimmed")


def m013_verdict_counts(conn: Connection) -> None:
    """`verdict_count`: verdict counts kept at write time for the metrics, backfilled from the stored verdicts."""
    SQLModel.metadata.create_all(conn, tables=[table(VerdictCount)])
    with Session(bind=conn) as session:
        groups = rebuild(session=session)
        session.flush()
    logger.info("m013: %d verdict count rows backfilled", groups)


def m014_drift_alert_release(conn: Connection) -> None:
    """Drift alerts per release (a new release starts a new series) and served-model-change alerts' numbers."""
    for column in ("release", "score_ref", "score_cur", "p_score_shift"):
        add_column(conn, DriftAlert, column)
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_drift_alert_release ON drift_alert (release)"))


def m015_verdict_expected_scores(conn: Connection) -> None:
    """Probability-weighted scores beside the integers: `verdict.expected_scores`, `verdict.score_reading`
    and `criterion_score.expected` (None on older rows: read as integers)."""
    add_column(conn, VerdictRecord, "expected_scores")
    add_column(conn, VerdictRecord, "score_reading")
    add_column(conn, CriterionScore, "expected")


def m016_review_counts(conn: Connection) -> None:
    """`review_count`: labels per tier and items per queue bucket, kept by triggers for the metrics; backfilled."""
    SQLModel.metadata.create_all(conn, tables=[table(review_counts.ReviewCount)])
    review_counts.install_triggers(conn)
    with Session(bind=conn) as session:
        rows = review_counts.rebuild(session=session)
        session.flush()
    logger.info("m016: %d review count rows backfilled", rows)


def m017_release_tier_baseline(conn: Connection) -> None:
    """Which tier is a release's baseline tier, so reports and pages compare the tiers the way the gate did."""
    add_column(conn, ReleaseTier, "baseline")


def m018_source_partitions(conn: Connection) -> None:
    """A partitioned sampling run keeps a watermark per partition: its row says which source and what it reads."""
    for column in ("partition_of", "partition", "completed_at"):
        add_column(conn, SourceWatermark, column)


def m019_alert_incidents(conn: Connection) -> None:
    """`alert_incident`: what the alert rules fired, resolved and delivered. Drift alerts reach webhooks through
    the rules now: their own webhook outcome columns go."""
    SQLModel.metadata.create_all(conn, tables=[table(AlertIncident)])
    existing = {c["name"] for c in inspect(conn).get_columns("drift_alert")}
    for column in ("webhook_status", "webhook_at"):
        if column in existing:
            conn.execute(text(f"ALTER TABLE drift_alert DROP COLUMN {column}"))


def m020_spend_cap(conn: Connection) -> None:
    """`judge_spend_day`: the tokens written per UTC day and judge, kept by the verdict writer (backfilled), so the
    daily spend cap reads a few rows; `paused_pick`: picks stored but not judged while the cap held."""
    SQLModel.metadata.create_all(conn, tables=[table(SpendDay), table(PausedPick)])
    with Session(bind=conn) as session:
        rebuild_spend(session=session)
        session.flush()


def m023_judge_alignments(conn: Connection) -> None:
    """Aligned judge configurations (`judges align`): each one built, its measurement, which one is in use."""
    SQLModel.metadata.create_all(conn, tables=[table(JudgeAlignment)])


def m024_routing_plan(conn: Connection) -> None:
    """`routing_plan`: each day's uncertainty-weighted review routing, fixed at its first use."""
    SQLModel.metadata.create_all(conn, tables=[table(RoutingPlan)])


MIGRATIONS: tuple[Migration, ...] = (  # storage.migrations.LATEST and COUNT name its end
    m001_initial_tables,
    m002_trust_records,
    m003_releases,
    m004_review,
    m005_calibration,
    m006_source_watermarks,
    m007_release_tier_config,
    m008_reviewer_role,
    m009_metrics_indexes,
    m010_run_heartbeat,
    m011_verdict_superseded_by,
    m012_verdict_trimmed,
    m013_verdict_counts,
    m014_drift_alert_release,
    m015_verdict_expected_scores,
    m016_review_counts,
    m017_release_tier_baseline,
    m018_source_partitions,
    m019_alert_incidents,
    m020_spend_cap,
    m023_judge_alignments,
    m024_routing_plan,
)
