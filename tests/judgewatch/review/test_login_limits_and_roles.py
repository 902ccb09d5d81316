"""Logins are rate limited per account and per address with an expiring lockout; accounts have roles."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, text
from typer.testing import CliRunner

from judgewatch.cli import get_app
from judgewatch.review.accounts import AccountError, Role, add_reviewer, authenticate, role_of, set_role
from judgewatch.review.login_throttle import LoginThrottle, ThrottlePolicy
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import MIGRATIONS, migrate
from judgewatch.testing.clocks import ManualClock

PASSWORD = "correct horse"


@pytest.fixture
def alice(engine: Engine) -> Engine:
    with session_scope(engine) as session:
        add_reviewer(session=session, name="alice", password=PASSWORD)
        add_reviewer(session=session, name="bob", password=PASSWORD)
    return engine


def test_sixty_wrong_passwords_lock_the_account_and_the_right_one_is_then_refused(
    alice: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    throttle = LoginThrottle(ThrottlePolicy(account_failures=5, address_failures=100, lockout_s=600), clock)
    with caplog.at_level(logging.WARNING):
        results = [authenticate(alice, "alice", f"guess {i}", address="10.0.0.1", throttle=throttle) for i in range(60)]
    assert not any(results)
    assert not authenticate(alice, "alice", PASSWORD, address="10.0.0.2", throttle=throttle)  # locked everywhere
    failed = [r for r in caplog.records if r.levelno == logging.WARNING and r.getMessage().startswith("failed login")]
    assert len(failed) == 5 and "'alice'" in failed[0].getMessage() and "10.0.0.1" in failed[0].getMessage()
    assert any("locked out" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)

    clock.now += 601  # the lockout expires
    assert authenticate(alice, "alice", PASSWORD, address="10.0.0.2", throttle=throttle)


def test_one_address_spraying_many_accounts_is_locked_out(alice: Engine) -> None:
    clock = ManualClock()
    throttle = LoginThrottle(ThrottlePolicy(account_failures=100, address_failures=4, lockout_s=60), clock)
    for name in ("alice", "bob", "carol", "dave"):
        assert not authenticate(alice, name, "wrong password", address="10.9.9.9", throttle=throttle)
    assert throttle.locked_for("bob", "10.9.9.9") > 0
    assert not authenticate(alice, "bob", PASSWORD, address="10.9.9.9", throttle=throttle)
    assert authenticate(alice, "bob", PASSWORD, address="10.1.1.1", throttle=throttle)  # another address may
    clock.now += 61
    assert authenticate(alice, "bob", PASSWORD, address="10.9.9.9", throttle=throttle)


def test_failures_outside_the_window_are_forgotten_and_a_success_resets_the_account(alice: Engine) -> None:
    clock = ManualClock()
    throttle = LoginThrottle(ThrottlePolicy(account_failures=3, window_s=60, lockout_s=600), clock)
    for _ in range(2):
        authenticate(alice, "alice", "wrong password", throttle=throttle)
    clock.now += 61
    authenticate(alice, "alice", "wrong password", throttle=throttle)
    assert throttle.locked_for("alice", None) == 0
    assert authenticate(alice, "alice", PASSWORD, throttle=throttle)
    authenticate(alice, "alice", "wrong password", throttle=throttle)
    authenticate(alice, "alice", "wrong password", throttle=throttle)
    assert throttle.locked_for("alice", None) == 0


def test_roles_decide_adjudication_and_a_disabled_account_has_none(engine: Engine) -> None:
    with session_scope(engine) as session:
        owner = add_reviewer(session=session, name="olga", password=PASSWORD, role="owner")
        old_style = add_reviewer(session=session, name="adam", password=PASSWORD, can_adjudicate=True)
        plain = add_reviewer(session=session, name="rita", password=PASSWORD)
        assert (owner.role, owner.can_adjudicate) == ("owner", True)
        assert (old_style.role, plain.role, plain.can_adjudicate) == ("adjudicator", "reviewer", False)
    with session_scope(engine) as session:
        set_role(session=session, name="rita", role=Role.owner)
        assert role_of(session=session, name="rita") == Role.owner
        with pytest.raises(AccountError, match="role 'boss'"):
            set_role(session=session, name="rita", role="boss")


def test_the_role_migration_keeps_existing_adjudicators(db_url: str) -> None:
    engine = make_engine(db_url)
    before_roles = next(i for i, m in enumerate(MIGRATIONS) if m.__name__.endswith("_reviewer_role"))
    migrate(engine, MIGRATIONS[:before_roles])  # a store from before roles, with the old columns only
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE reviewer DROP COLUMN role"))
        conn.execute(
            text(
                "INSERT INTO reviewer (name, password_hash, active, can_adjudicate, created_at) VALUES "
                "('ada', 'x', :yes, :yes, :at), ('rex', 'x', :yes, :no, :at)"
            ),
            {"yes": True, "no": False, "at": datetime(2024, 1, 1, tzinfo=UTC)},
        )
    assert MIGRATIONS[before_roles].__name__ in migrate(engine)
    with engine.connect() as conn:
        roles = dict(conn.execute(text("SELECT name, role FROM reviewer")).all())
    engine.dispose()
    assert roles == {"ada": "adjudicator", "rex": "reviewer"}


def test_reviewer_add_takes_a_role(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    add = ["reviewer", "add", "olga", "--password", PASSWORD, "--role", "owner", "--database-url", db]
    result = runner.invoke(get_app(), add)
    assert result.exit_code == 0, result.output
    assert "role: owner" in result.output
    bad_role = ["reviewer", "add", "x1", "--password", PASSWORD, "--role", "boss", "--database-url", db]
    bad = runner.invoke(get_app(), bad_role)
    assert bad.exit_code == 1 and "role 'boss'" in bad.output
    listing = runner.invoke(get_app(), ["reviewer", "list", "--database-url", db])
    assert "owner" in listing.output
