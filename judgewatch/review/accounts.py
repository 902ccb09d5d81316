"""Reviewer accounts: salted scrypt password hashes in the database, a role, enabled or disabled by name. Disabling
never deletes (past labels keep pointing at the account); logins go through a `LoginThrottle`."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import logging
import re
import secrets
from enum import StrEnum

from sqlalchemy import Engine, select, update
from sqlmodel import Session

from judgewatch.review.login_throttle import LoginThrottle
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.review import Reviewer

logger = logging.getLogger(__name__)

# scrypt at n=2**14, r=8, p=1: ~16 MiB and tens of milliseconds per check, per OWASP's minimum.
_N, _R, _P = 2**14, 8, 1
_SALT_BYTES = 16
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
MIN_PASSWORD_CHARS = 8


class AccountError(ValueError):
    """A reviewer account that cannot be created or changed as asked; the message says why."""


class Role(StrEnum):
    """What an account may do; each role includes the ones before it."""

    reviewer = "reviewer"  # labels items from the queue
    adjudicator = "adjudicator"  # also settles disagreements and flagged items, sees the aggregate pages
    owner = "owner"  # also sees the Tiers, Calibration and Judges pages


# Pages with aggregate numbers (Tiers, Calibration, Judges): owners, and adjudicators, who settle the labels
# those numbers rest on. Reviewers stay blind to tiers and judge scores.
AGGREGATE_ROLES = frozenset({Role.owner, Role.adjudicator})


def hash_password(password: str) -> str:
    """`scrypt$n$r$p$salt$hash` with a fresh random salt (base64 parts)."""
    salt = secrets.token_bytes(_SALT_BYTES)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${_N}${_R}${_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    """Constant-time comparison against a `hash_password` string; False for any malformed hash."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# A real hash to check against when the name is unknown, so a wrong name takes as long as a wrong password.
@functools.cache
def _dummy_hash() -> str:
    return hash_password(secrets.token_hex(16))


def add_reviewer(
    *, session: Session, name: str, password: str, can_adjudicate: bool = False, role: Role | str | None = None
) -> Reviewer:
    """Create an account; `role` defaults to adjudicator when `can_adjudicate`, else reviewer."""
    if not _NAME.match(name):
        raise AccountError(f"reviewer name {name!r}: use 1-64 letters, digits, '_', '.', '@' or '-'")
    if len(password) < MIN_PASSWORD_CHARS:
        raise AccountError(f"password for {name!r}: at least {MIN_PASSWORD_CHARS} characters")
    if session.get(Reviewer, name) is not None:
        raise AccountError(f"reviewer {name!r} already exists (use `judgewatch reviewer enable` to re-enable)")
    chosen = _role(role) if role is not None else (Role.adjudicator if can_adjudicate else Role.reviewer)
    reviewer = Reviewer(
        name=name, password_hash=hash_password(password), role=chosen.value, can_adjudicate=chosen != Role.reviewer
    )
    session.add(reviewer)
    session.flush()
    logger.info("reviewer %s added (role: %s)", name, chosen.value)
    return reviewer


def set_role(*, session: Session, name: str, role: Role | str) -> None:
    """Change an account's role (adjudication rights follow the role)."""
    chosen = _role(role)
    _update(session, name, role=chosen.value, can_adjudicate=chosen != Role.reviewer)
    logger.info("reviewer %s is now %s", name, chosen.value)


def role_of(*, session: Session, name: str | None) -> Role | None:
    """The role of an active account; None for an unknown or disabled one."""
    reviewer = session.get(Reviewer, name) if name else None
    if reviewer is None or not reviewer.active:
        return None
    return _role(reviewer.role)


def _role(value: Role | str) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise AccountError(f"role {value!r}: use one of {', '.join(r.value for r in Role)}") from None


def set_active(*, session: Session, name: str, active: bool) -> None:
    _update(session, name, active=active)
    logger.info("reviewer %s %s", name, "enabled" if active else "disabled")


def _update(session: Session, name: str, **values: object) -> None:
    tbl = table(Reviewer)
    result = session.execute(update(tbl).where(tbl.c.name == name).values(**values))
    if getattr(result, "rowcount", 0) != 1:
        raise AccountError(f"no reviewer named {name!r}")


def list_reviewers(*, session: Session) -> list[Reviewer]:
    return list(session.scalars(select(Reviewer).order_by(table(Reviewer).c.name)))


def ensure_reviewer(*, session: Session, name: str) -> Reviewer:
    """The account, created with an unknown random password if missing (for replayed labels: no one logs in)."""
    existing = session.get(Reviewer, name)
    if existing is not None:
        return existing
    return add_reviewer(session=session, name=name, password=secrets.token_urlsafe(24))


def authenticate(
    engine: Engine, name: str, password: str, *, address: str | None = None, throttle: LoginThrottle | None = None
) -> bool:
    """True when `name` is an active reviewer, `password` is theirs, and neither the account nor the address
    is locked out by `throttle`: the Gradio `auth=` callable. A locked-out login is refused unchecked."""
    if throttle is not None and (wait := throttle.locked_for(name or "", address)) > 0:
        logger.warning("login for %r from %s refused: locked out for %.0f s more", name, address or "?", wait)
        return False
    with session_scope(engine) as session:
        reviewer = session.get(Reviewer, name) if _NAME.match(name or "") else None
        stored = reviewer.password_hash if reviewer is not None else _dummy_hash()
        allowed = verify_password(password or "", stored) and reviewer is not None and reviewer.active
    if not allowed:
        if throttle is not None:
            throttle.record_failure(name or "", address)
        else:
            logger.warning("failed login for account %r from %s", name, address or "an unknown address")
    elif throttle is not None:
        throttle.record_success(name)
    return allowed


def is_active(*, session: Session, name: str | None) -> bool:
    reviewer = session.get(Reviewer, name) if name else None
    return reviewer is not None and reviewer.active
