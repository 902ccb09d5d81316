"""The Judges page shows the leaderboard as a table, self-contained (its own Blocks or a tab of another)."""

from __future__ import annotations

import gradio as gr
import pytest
from sqlalchemy import Engine

from judges.reference import ReferenceJudge
from judgewatch.contract.rubric import load_rubric
from judgewatch.regression.golden import load_golden_set
from judgewatch.settings import REPO_ROOT
from judgewatch.trust.leaderboard import COLUMNS
from judgewatch.trust.validate import measure_judge
from review_ui.judges_page import add_judges_tab, judges_frame, judges_page


@pytest.fixture
def sqlite_engine(tmp_path: object) -> Engine:
    from judgewatch.storage.db import make_engine
    from judgewatch.storage.migrations import migrate

    engine = make_engine(f"sqlite:///{tmp_path}/jw.db")
    migrate(engine)
    return engine


async def test_judges_frame_lists_measured_judges(sqlite_engine: Engine) -> None:
    assert judges_frame(sqlite_engine).empty
    rubric = load_rubric("answer_quality", REPO_ROOT / "rubrics")
    golden = load_golden_set("halluqa_mini", datasets_dir=REPO_ROOT / "datasets")
    await measure_judge(ReferenceJudge(), rubric, golden, engine=sqlite_engine)
    frame = judges_frame(sqlite_engine)
    assert list(frame.columns) == list(COLUMNS)
    assert frame.iloc[0]["judge"] == "reference:reference-overlap" and frame.iloc[0]["trust"] == "not probed"
    assert frame.iloc[0]["bias probes"] == "not probed"  # AUROC alone trusts no judge

    from judgewatch.trust.policy import TrustPolicy
    from judgewatch.trust.probes import probe_judge
    from judgewatch.trust.validate import known_pairs

    await probe_judge(
        ReferenceJudge(), rubric, known_pairs(golden, limit=20), engine=sqlite_engine, policy=TrustPolicy()
    )
    frame = judges_frame(sqlite_engine)
    assert len(frame) == 1 and frame.iloc[0]["trust"] == "trusted"  # the probes sit beside the AUROC they qualify
    probes = frame.iloc[0]["bias probes"]
    assert probes.startswith("verbosity ") and "reference-sensitivity +3.60 ok" in probes and "FAIL" not in probes


def test_judges_page_builds_stand_alone_and_as_a_tab(sqlite_engine: Engine) -> None:
    page = judges_page(sqlite_engine)
    assert isinstance(page, gr.Blocks)
    with gr.Blocks() as app:
        with gr.Tab("Queue"):
            gr.Markdown("queue")
        tab = add_judges_tab(sqlite_engine)
    assert isinstance(tab, gr.Tab) and tab.label == "Judges"
    labels = [getattr(block, "label", None) for block in app.blocks.values()]
    assert "Judge trust" in labels


def test_an_unreadable_store_shows_a_message_instead_of_crashing(tmp_path: object) -> None:
    from judgewatch.storage.db import make_engine

    frame = judges_frame(make_engine(f"sqlite:///{tmp_path}/empty.db"))  # no tables: never migrated
    assert frame.iloc[0]["judge"].startswith("could not read the store")
