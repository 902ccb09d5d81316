"""Reviewer accounts: salted scrypt hashes, login checks against the database, disable without delete."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from judgewatch.review.accounts import (
    AccountError,
    add_reviewer,
    authenticate,
    hash_password,
    list_reviewers,
    set_active,
    verify_password,
)
from judgewatch.storage.db import session_scope


def test_password_hashes_are_salted_and_verify_only_the_right_password() -> None:
    first, second = hash_password("s3cret-pass"), hash_password("s3cret-pass")
    assert first != second and first.startswith("scrypt$")
    assert "s3cret-pass" not in first
    assert verify_password("s3cret-pass", first) and verify_password("s3cret-pass", second)
    assert not verify_password("s3cret-pasS", first)
    assert not verify_password("s3cret-pass", "garbage")


def test_login_needs_an_existing_active_account_and_its_password(engine: Engine) -> None:
    with session_scope(engine) as session:
        add_reviewer(session=session, name="alice", password="correct horse")
    assert authenticate(engine, "alice", "correct horse")
    assert not authenticate(engine, "alice", "wrong horse!")
    assert not authenticate(engine, "bob", "correct horse")
    assert not authenticate(engine, "", "")
    with session_scope(engine) as session:
        set_active(session=session, name="alice", active=False)
    assert not authenticate(engine, "alice", "correct horse")
    with session_scope(engine) as session:
        assert [(r.name, r.active) for r in list_reviewers(session=session)] == [("alice", False)]


@pytest.mark.parametrize(
    ("name", "password", "message"),
    [
        ("alice", "short", "at least 8"),
        ("bad name", "long enough", "reviewer name"),
        ("alice", "long enough", "exists"),
    ],
)
def test_bad_accounts_are_refused_with_a_reason(engine: Engine, name: str, password: str, message: str) -> None:
    with session_scope(engine) as session:
        add_reviewer(session=session, name="alice", password="original pw")
    with pytest.raises(AccountError, match=message), session_scope(engine) as session:
        add_reviewer(session=session, name=name, password=password)


def test_disabling_an_unknown_reviewer_says_so(engine: Engine) -> None:
    with pytest.raises(AccountError, match="no reviewer"), session_scope(engine) as session:
        set_active(session=session, name="ghost", active=False)
