"""The Tiers and Calibration pages: their content from a seeded store, access checks, and a real browser."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pytest
from PIL import Image
from sqlalchemy import Engine

from judgewatch.calibration.page_snapshots import save_views
from judgewatch.contract.rubric import load_rubric
from judgewatch.contract.verdicts import JudgeIdentity
from judgewatch.review.accounts import add_reviewer, set_active
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.storage.migrations import migrate
from judgewatch.storage.releases import GateDecision, record_gate_decision
from judgewatch.storage.types import utcnow
from judgewatch.testing.synthetic_labels import SyntheticSpec, declared_baseline, write_synthetic
from review_ui.calibration_page import add_calibration_tab, calibration_view
from review_ui.common import require_viewer
from review_ui.tiers_page import add_tiers_tab, tiers_view

from .conftest import tiers_tab_open

PASSWORD = "a long test password"
JUDGE = JudgeIdentity(kind="fake", name="page-judge", config_hash="p" * 16)


def png_ok(data: bytes) -> bool:
    image = Image.open(io.BytesIO(data))
    image.verify()
    return image.format == "PNG"


def seed_store(path: Path) -> Engine:
    """A store with two days of synthetic verdicts and labels, its page views computed, and three accounts."""
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    start = utcnow() - timedelta(days=2)  # inside the pages' default period (90 days)
    spec = SyntheticSpec(judge=JUDGE, days=2, per_day=30, review_share=0.4, start=start)
    write_synthetic(engine, load_rubric("answer_quality"), spec)
    with declared_baseline("full"):  # the service's baseline tier (synthetic traffic comes from no release)
        save_views(engine, rubric_name="answer_quality", categories=[1.0, 2.0, 3.0, 4.0, 5.0])  # the daily flow's job
    with session_scope(engine, write=True) as session:
        add_reviewer(session=session, name="owner", password=PASSWORD, role="owner")
        add_reviewer(session=session, name="rita", password=PASSWORD, role="reviewer")
        add_reviewer(session=session, name="gone", password=PASSWORD, role="owner")
        set_active(session=session, name="gone", active=False)
    return engine


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Engine]:
    """A seeded store of the test's own: for a test that writes to it."""
    engine = seed_store(tmp_path / "pages.db")
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def seeded_read(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One seeded store shared by the tests that only read it (computing its views takes seconds)."""
    engine = seed_store(tmp_path_factory.mktemp("pages") / "pages.db")
    yield engine
    engine.dispose()


def test_tiers_view_shows_every_table_and_plot(seeded_read: Engine) -> None:
    view = tiers_view(seeded_read)
    assert JUDGE.config_hash in view.header and "SYNTHETIC LABELS" in view.header
    assert sorted(set(view.estimates["tier"])) == ["full", "quantized"] and len(view.estimates) == 6
    assert "corrected [95% CI]" in view.estimates.columns
    assert list(view.differences["difference"].unique()) == ["quantized − full"]
    assert len(view.agreement) == 6 and "weighted kappa" in view.agreement.columns
    assert list(view.counts["scored verdicts"]) == ["60", "60"]
    assert view.alerts.iloc[0, 0] == "No open drift alerts."
    assert all(png_ok(p) for p in (view.estimates_png, view.trend_png, view.agreement_png))


def test_tiers_view_reads_the_stored_snapshot_and_says_what_fills_an_empty_page(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    migrate(engine)
    view = tiers_view(engine)
    assert "judgewatch calibrate" in view.header and "judgewatch calibrate" in view.estimates.iloc[0, 0]
    for table in (view.estimates, view.differences, view.agreement, view.counts):
        assert list(table.columns) == ["note"]  # a sentence, never Gradio's "1 2 3" headers
    assert all(png_ok(p) for p in (view.estimates_png, view.trend_png, view.agreement_png))  # "nothing to plot"
    assert view.series == [] and view.shown is None
    # verdicts without a snapshot: the page still computes nothing on open
    write_synthetic(
        engine, load_rubric("answer_quality"), SyntheticSpec(judge=JUDGE, days=1, per_day=10, review_share=0)
    )
    assert "judgewatch calibrate" in tiers_view(engine).header
    save_views(engine, rubric_name="answer_quality")
    assert "Computed " in tiers_view(engine).header and len(tiers_view(engine, since="").estimates) == 6
    # no labels: the agreement table and plot say which step fills them
    view = tiers_view(engine, since="")
    assert "label routed items in the Queue" in view.agreement.iloc[0, 0]
    engine.dispose()


def test_the_page_offers_every_stored_series_and_says_which_it_shows_and_why(seeded: Engine) -> None:
    other = JudgeIdentity(kind="fake", name="newer-judge", config_hash="n" * 16)
    write_synthetic(seeded, load_rubric("answer_quality"), SyntheticSpec(judge=other, days=1, per_day=10,
                    start=utcnow() - timedelta(days=1)))  # fmt: skip
    decision = GateDecision(id="g", release="r9", exit_code=0, outcome="pass", summary="pass",
                            judge_config_hash=JUDGE.config_hash)  # fmt: skip
    with session_scope(seeded, write=True) as session:
        record_gate_decision(session=session, decision=decision)
    save_views(seeded, rubric_name="answer_quality", periods=("90d",))

    view = tiers_view(seeded)  # the default: the series the latest gate used, though the other is newer
    assert [h for _, h in view.series] == [JUDGE.config_hash, other.config_hash] and view.shown == JUDGE.config_hash
    assert view.series[0][0].endswith("(default)")
    first = view.header.splitlines()[0]
    assert (
        first.startswith("**Showing judge series page-judge") and "the judge the latest gate used (release r9" in first
    )

    assert view.lead.startswith("**Latest gate: release r9, pass") and list(view.gate["release"]) == ["r9"]

    picked = tiers_view(seeded, series=other.config_hash)
    assert picked.shown == other.config_hash and len(picked.estimates) == 6
    assert "picked in the Judge series box (default: page-judge" in picked.header.splitlines()[0]
    assert picked.lead.startswith("**No gate decision of this judge series")  # the gate used the other judge
    assert tiers_view(seeded, series="gone").shown == JUDGE.config_hash  # an unknown pick falls back


def test_calibration_view_has_confusion_matrices_and_says_what_is_missing(seeded_read: Engine) -> None:
    view = calibration_view(seeded_read)
    assert sorted(view.confusion) == [f"{t} · {c}" for t in ("full", "quantized")
                                      for c in ("completeness", "faithfulness", "relevance")]  # fmt: skip
    cm = view.confusion["quantized · faithfulness"]
    assert cm.categories == (1.0, 2.0, 3.0, 4.0, 5.0) and cm.n == int(view.agreement.iloc[4]["labels"])
    assert "No item has two labels yet" in view.reviewers.iloc[0, 0]
    assert "No anchor comparison yet" in view.anchors_note and list(view.anchors.columns) == ["note"]
    assert view.alerts.iloc[0, 0] == "No drift alerts."


def test_only_active_owners_and_adjudicators_may_compute_the_pages(seeded_read: Engine) -> None:
    assert require_viewer(seeded_read, SimpleNamespace(username="owner")) == "owner"  # type: ignore[arg-type]
    with pytest.raises(gr.Error, match="for adjudicators and owners"):
        require_viewer(seeded_read, SimpleNamespace(username="rita"))  # type: ignore[arg-type]
    for request in (None, SimpleNamespace(username=None), SimpleNamespace(username="gone")):
        with pytest.raises(gr.Error):
            require_viewer(seeded_read, request)  # type: ignore[arg-type]


def test_both_pages_build_as_tabs_of_the_app(seeded_read: Engine) -> None:
    with gr.Blocks() as app, gr.Tabs():
        tiers, calibration = add_tiers_tab(seeded_read), add_calibration_tab(seeded_read)
    assert (tiers.label, calibration.label) == ("Tiers", "Calibration")
    labels = {getattr(block, "label", None) for block in app.blocks.values()}
    assert {"Tier scores", "Tier difference", "Scores over time", "Anchor comparison", "Heat map"} <= labels
    assert "Judge series" in labels
    tables = [block for block in app.blocks.values() if isinstance(block, gr.Dataframe)]
    assert tables and all(block.value["headers"] == ["note"] for block in tables)  # never "1 2 3" before opening


@pytest.mark.browser
def test_an_owner_opens_the_tiers_tab_and_sees_the_numbers(page: Any, seeded: Engine, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with tiers_tab_open(page, seeded, tmp_path, "owner", PASSWORD):
        body = page.locator("body")
        expect(body).to_contain_text("quantized − full", timeout=60_000)
        expect(body).to_contain_text(JUDGE.config_hash)
        expect(body).to_contain_text("SYNTHETIC LABELS")
        expect(page.get_by_role("grid", name="Tier scores")).to_contain_text("faithfulness")
        assert page.locator("img[src^='data:image/png'], img[src*='.png'], img[src*='/file']").count() >= 3
