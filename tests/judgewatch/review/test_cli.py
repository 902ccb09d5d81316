"""`judgewatch reviewer ...` and `judgewatch review ...` on a SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from judgewatch.cli.review_cmd import review_app, reviewer_app
from judgewatch.review.accounts import authenticate
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.review import ReviewItem

pytestmark = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
runner = CliRunner()


def test_reviewer_add_disable_and_list(db_url: str, engine) -> None:
    db = ["--database-url", db_url]
    added = runner.invoke(reviewer_app, ["add", "alice", "--password", "pass-word-1", "--adjudicator", *db])
    assert added.exit_code == 0, added.output
    from_env = runner.invoke(reviewer_app, ["add", "bob", *db], env={"JUDGEWATCH_REVIEWER_PASSWORD": "pass-word-2"})
    assert from_env.exit_code == 0, from_env.output
    prompted = runner.invoke(reviewer_app, ["add", "carol", *db], input="pass-word-3\npass-word-3\n")
    assert prompted.exit_code == 0, prompted.output
    assert authenticate(engine, "carol", "pass-word-3") and authenticate(engine, "bob", "pass-word-2")
    duplicate = runner.invoke(reviewer_app, ["add", "alice", "--password", "pass-word-1", *db])
    assert duplicate.exit_code == 1 and "already exists" in duplicate.output
    assert runner.invoke(reviewer_app, ["disable", "bob", *db]).exit_code == 0
    assert not authenticate(engine, "bob", "pass-word-2")
    listing = runner.invoke(reviewer_app, ["list", *db]).output
    assert "alice" in listing and "adjudicator" in listing and "disabled" in listing
    assert runner.invoke(reviewer_app, ["disable", "nobody", *db]).exit_code == 1


@pytest.mark.usefixtures("engine")
def test_route_replay_and_status(db_url: str, store_judged_items, tmp_path: Path) -> None:
    store_judged_items(20)
    db = ["--database-url", db_url]
    routed = runner.invoke(review_app, ["route", "--share", "1.0", "--double-share", "0", *db])
    assert routed.exit_code == 0 and "20 routed (uniform 20), 20 new items" in routed.output
    with session_scope(make_engine(db_url)) as session:
        item_ids = sorted(item.id for item in session.scalars(select(ReviewItem)))
    labels = tmp_path / "labels.jsonl"
    scores = {"relevance": 5, "faithfulness": 5, "completeness": 5}
    labels.write_text("\n".join(json.dumps({"item_id": i, "reviewer": "ann", "scores": scores}) for i in item_ids[:3]))
    replayed = runner.invoke(review_app, ["replay", "--labels", str(labels), *db])
    assert replayed.exit_code == 0 and "3 rows: submitted 3" in replayed.output
    status = runner.invoke(review_app, ["status", *db]).output
    assert "review items: 20" in status and "done          3" in status and "labels: 3" in status
    assert runner.invoke(review_app, ["replay", *db]).exit_code == 1  # neither --labels nor --pandalm


@pytest.mark.usefixtures("engine")
def test_route_takes_the_settings_shares_unless_given_and_refuses_a_share_over_one(
    db_url: str, store_judged_items, monkeypatch: pytest.MonkeyPatch
) -> None:
    from judgewatch.settings import get_settings

    store_judged_items(20)
    db = ["--database-url", db_url]
    monkeypatch.setenv("JUDGEWATCH_REVIEW_SHARE", "1.0")
    monkeypatch.setenv("JUDGEWATCH_DOUBLE_LABEL_SHARE", "0")
    get_settings.cache_clear()
    try:
        over = runner.invoke(review_app, ["route", "--unscored-share", "1.5", *db])
        assert over.exit_code == 2 and "--unscored-share" in over.output  # the option named, nothing routed
        routed = runner.invoke(review_app, ["route", *db])
        assert routed.exit_code == 0 and "20 routed (uniform 20), 20 new items" in routed.output
    finally:
        get_settings.cache_clear()
