"""Source watermarks: how far each traffic source has been read, and the lease that keeps two runs apart.

`SourceLease` makes one run the only one processing a source: on PostgreSQL a session-level advisory lock keyed by
the store's schema and the source (released when its connection closes, also when the process dies); on SQLite a
lease in the row that expires unless renewed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from types import TracebackType

from sqlalchemy import Connection, Engine, delete, select, text, update
from sqlmodel import Field, Session, SQLModel

from judgewatch.storage.db import session_scope, table, upsert
from judgewatch.storage.types import UTCDateTime, utcnow

logger = logging.getLogger(__name__)

DEFAULT_LEASE_SECONDS = 900.0


class SourceWatermark(SQLModel, table=True):
    __tablename__ = "source_watermark"

    source: str = Field(primary_key=True, max_length=200)  # the source config's `name`
    watermark: str | None = None  # JSON text of judgewatch.traffic.Watermark; None until a run saved one
    updated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    run_id: str | None = None  # the run that saved the watermark last
    lease_owner: str | None = None  # "host:pid:token" of the run processing the source now
    lease_expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # None under a PostgreSQL lock
    # A partition's row only (`partition_key`): its source, what it reads (JSON of traffic.partitions.SourcePartition)
    # and when its run read it to the end.
    partition_of: str | None = Field(default=None, max_length=200)
    partition: str | None = None
    completed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


def load_watermark(*, session: Session, source: str) -> SourceWatermark | None:
    """The source's row (watermark, last run, lease holder), or None when it was never read."""
    return session.get(SourceWatermark, source, populate_existing=True)


def save_watermark(*, session: Session, source: str, watermark: str, run_id: str | None) -> None:
    """Store the watermark; call it only after every row it covers is stored. Leaves the lease alone."""
    values = {"source": source, "watermark": watermark, "updated_at": utcnow(), "run_id": run_id}
    upsert(session, table(SourceWatermark), [values], update_columns=["watermark", "updated_at", "run_id"])


def partition_key(source: str, index: int, parts: int) -> str:
    """The row of partition `index` (from 0) of a run of `source` split in `parts`: "<source>#<index + 1>/<parts>"."""
    return f"{source}#{index + 1}/{parts}"


def plan_partitions(*, session: Session, source: str, partitions: Sequence[str]) -> None:
    """A partitioned run of `source` begins: a row per partition (its JSON, in order), none read yet."""
    rows = [
        {"source": partition_key(source, k, len(partitions)), "partition_of": source, "partition": part,
         "watermark": None, "completed_at": None, "updated_at": utcnow()}
        for k, part in enumerate(partitions)
    ]  # fmt: skip
    upsert(session, table(SourceWatermark), rows, update_columns=["partition_of", "partition", "watermark",
                                                                  "completed_at", "updated_at"])  # fmt: skip


def load_partitions(*, session: Session, source: str) -> list[SourceWatermark]:
    """The partition rows of `source`'s unfinished partitioned run, in partition order; [] when there is none."""
    tbl = table(SourceWatermark)
    rows = session.execute(select(SourceWatermark).where(tbl.c.partition_of == source)).scalars().all()
    return sorted(rows, key=lambda row: int(row.source.rsplit("#", 1)[1].split("/")[0]))


def complete_partition(*, session: Session, key: str) -> None:
    """The partition `key` was read to its end (its last watermark saved before)."""
    tbl = table(SourceWatermark)
    session.execute(update(tbl).where(tbl.c.source == key).values(completed_at=utcnow()))


def merge_partitions(*, session: Session, source: str, watermark: str, run_id: str | None) -> None:
    """Every partition read: the merged watermark becomes the source's and the partition rows go, at once."""
    save_watermark(session=session, source=source, watermark=watermark, run_id=run_id)
    tbl = table(SourceWatermark)
    session.execute(delete(tbl).where(tbl.c.partition_of == source))


class SourceBusy(RuntimeError):
    """Another run holds the source (or this run lost its lease): nothing may be read or stored now."""

    def __init__(self, source: str, owner: str | None, expires_at: datetime | None, *, lost: bool = False) -> None:
        self.source, self.owner, self.expires_at = source, owner, expires_at
        holder = f" by {owner}" if owner else ""
        until = f" until {expires_at:%Y-%m-%d %H:%M:%S} UTC" if expires_at else ""
        what = "lost its lease on" if lost else "cannot take"
        super().__init__(f"this run {what} source {source!r}: it is being processed{holder}{until}")


def advisory_key(source: str, schema: str) -> int:
    """A signed 64-bit PostgreSQL advisory lock key for the source of the store in `schema`: advisory locks are
    database-wide, so two stores in one database (a schema each) must not share a source's lock."""
    digest = hashlib.blake2b(f"judgewatch:source:{schema}:{source}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class SourceLease:
    """Exclusive processing of one source, as a context manager: `acquire()` or raise SourceBusy, `renew()` (on SQLite
    more often than `ttl_s`, or another run may take the source over: renewing it then raises), `release()`."""

    def __init__(
        self, engine: Engine, source: str, *, owner: str | None = None, ttl_s: float = DEFAULT_LEASE_SECONDS
    ) -> None:
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        self.engine, self.source, self.ttl_s = engine, source, ttl_s
        self.owner = owner or default_owner()
        self.advisory = engine.dialect.name == "postgresql"
        self._conn: Connection | None = None
        self._key = 0
        self._held = False
        self._renewed_at = 0.0

    @property
    def held(self) -> bool:
        return self._held

    def acquire(self) -> SourceLease:
        if self._held:
            return self
        if self.advisory:
            self._lock_advisory()
        else:
            self._take_lease()
        self._held = True
        self._renewed_at = time.monotonic()
        logger.info("source %s: lease taken by %s", self.source, self.owner)
        return self

    def _lock_advisory(self) -> None:
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            self._key = advisory_key(self.source, conn.execute(text("SELECT current_schema()")).scalar_one())
            got = conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": self._key})
            if not got.scalar_one():
                row = self._row()
                raise SourceBusy(self.source, row.lease_owner if row else None, None)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        with session_scope(self.engine) as session:  # the holder, for operators: the lock itself is authoritative
            values = {"source": self.source, "lease_owner": self.owner, "lease_expires_at": None}
            upsert(session, table(SourceWatermark), [values], update_columns=["lease_owner", "lease_expires_at"])

    def _take_lease(self) -> None:
        with session_scope(self.engine, write=True) as session:
            tbl, now = table(SourceWatermark), utcnow()
            row = session.execute(
                select(tbl.c.lease_owner, tbl.c.lease_expires_at).where(tbl.c.source == self.source)
            ).first()
            if row is not None and row.lease_owner not in (None, self.owner):
                if row.lease_expires_at is None or row.lease_expires_at > now:
                    raise SourceBusy(self.source, row.lease_owner, row.lease_expires_at)
                logger.warning("source %s: taking over the expired lease of %s", self.source, row.lease_owner)
            expires = now + timedelta(seconds=self.ttl_s)
            values = {"source": self.source, "lease_owner": self.owner, "lease_expires_at": expires}
            upsert(session, table(SourceWatermark), [values], update_columns=["lease_owner", "lease_expires_at"])

    def renew(self) -> None:
        """Extend the lease (SQLite) or check the lock's connection is alive (PostgreSQL); SourceBusy if lost."""
        if not self._held:
            raise RuntimeError(f"source {self.source!r}: renew() of a lease that is not held")
        if self.advisory:
            assert self._conn is not None
            try:
                self._conn.execute(text("SELECT 1"))
            except Exception as exc:
                self._held = False
                raise SourceBusy(self.source, None, None, lost=True) from exc
        else:
            tbl = table(SourceWatermark)
            with session_scope(self.engine, write=True) as session:
                expires = utcnow() + timedelta(seconds=self.ttl_s)
                done = session.execute(
                    update(tbl)
                    .where(tbl.c.source == self.source, tbl.c.lease_owner == self.owner)
                    .values(lease_expires_at=expires)
                )
                if getattr(done, "rowcount", 0) != 1:
                    row = self._row(session)
                    self._held = False
                    raise SourceBusy(self.source, row.lease_owner if row else None, None, lost=True)
        self._renewed_at = time.monotonic()

    def renew_if_due(self) -> None:
        """`renew()` when a third of the lease time has passed since the last renewal; cheap otherwise."""
        if self._held and time.monotonic() - self._renewed_at >= self.ttl_s / 3:
            self.renew()

    def release(self) -> None:
        """Give the source back (idempotent); never raises for a lease that was already lost."""
        if not self._held and self._conn is None:
            return
        self._held = False
        try:
            tbl = table(SourceWatermark)
            with session_scope(self.engine) as session:
                session.execute(
                    update(tbl)
                    .where(tbl.c.source == self.source, tbl.c.lease_owner == self.owner)
                    .values(lease_owner=None, lease_expires_at=None)
                )
        except Exception:
            logger.warning("source %s: could not clear the lease row", self.source, exc_info=True)
        finally:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                try:
                    conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self._key})
                except Exception:  # a dead connection has released its lock already
                    logger.warning("source %s: advisory unlock failed", self.source, exc_info=True)
                finally:
                    conn.close()
        logger.info("source %s: lease released by %s", self.source, self.owner)

    def _row(self, session: Session | None = None) -> SourceWatermark | None:
        if session is not None:
            return load_watermark(session=session, source=self.source)
        with session_scope(self.engine) as own:
            return load_watermark(session=own, source=self.source)

    def __enter__(self) -> SourceLease:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
