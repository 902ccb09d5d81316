"""The Judges page shows the leaderboard as a table, self-contained (its own Blocks or a tab of another)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

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

PASSWORD = "a long test password"


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


@pytest.mark.browser
def test_at_1400_px_the_trust_and_auroc_columns_show_and_headers_do_not_wrap_a_letter_a_line(
    page: Any, sqlite_engine: Engine, tmp_path: Path
) -> None:
    """Issue 35 §6.7: at 1400 px the AUROC and trust columns were off-screen, the bias-probe column empty and the
    headers wrapped one letter a line."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from playwright.sync_api import expect

    from judgewatch.review.accounts import add_reviewer
    from judgewatch.settings import Settings
    from judgewatch.storage.db import session_scope
    from judgewatch.trust.policy import TrustPolicy
    from judgewatch.trust.probes import probe_judge
    from judgewatch.trust.validate import known_pairs
    from review_ui.app import serve

    rubric = load_rubric("answer_quality", REPO_ROOT / "rubrics")
    golden = load_golden_set("halluqa_mini", datasets_dir=REPO_ROOT / "datasets")

    async def measure() -> None:
        await measure_judge(ReferenceJudge(), rubric, golden, engine=sqlite_engine)
        pairs = known_pairs(golden, limit=20)
        await probe_judge(ReferenceJudge(), rubric, pairs, engine=sqlite_engine, policy=TrustPolicy())

    with ThreadPoolExecutor(max_workers=1) as pool:  # playwright's event loop runs in this thread
        pool.submit(asyncio.run, measure()).result()
    with session_scope(sqlite_engine, write=True) as session:
        add_reviewer(session=session, name="olga", password=PASSWORD, role="owner")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    app = serve(sqlite_engine, Settings(data_dir=tmp_path), port=port, block=False)
    try:
        page.set_viewport_size({"width": 1400, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/")
        page.get_by_label("username").fill("olga")
        page.get_by_label("password").fill(PASSWORD)
        page.get_by_role("button", name="Login").click()
        page.get_by_role("tab", name="Judges").click()
        grid = page.get_by_role("grid", name="Judge trust")
        expect(grid).to_contain_text("reference:reference-overlap", timeout=60_000)
        expect(grid).to_contain_text("reference-sensitivity")  # the bias-probe column is filled
        for header in ("trust", "AUROC [95% CI]", "bias probes"):
            box = grid.get_by_role("columnheader", name=header).first.bounding_box()
            assert box is not None and box["x"] + box["width"] <= 1400, (header, box)
            assert box["height"] < 80, (header, box)  # one or two lines, never a letter a line
    finally:
        app.close()
