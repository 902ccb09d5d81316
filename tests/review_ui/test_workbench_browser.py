"""In a real browser, on a copy of the quick demo's store: an owner opens an item from its link (as a report links
its worst items), finds items with the Items page's filters, and compares two tiers on the Compare page."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy.engine import make_url

from judgewatch.review.accounts import add_reviewer
from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine, session_scope
from judgewatch.testing.processes import free_port
from judgewatch.testing.quick_demo import QuickDemo
from judgewatch.workbench.compare import Side, compare
from review_ui.app import serve
from review_ui.items_page import item_link

pytestmark = pytest.mark.browser
PASSWORD = "a long test password"
TIMEOUT = 60_000


@pytest.fixture
def demo_app(quick_demo: QuickDemo, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The review app over a copy of the demo's store, with an owner; yields its URL and r3's worst item."""
    copy = tmp_path / "demo.db"
    shutil.copy(str(make_url(quick_demo.database_url).database), copy)
    engine = make_engine(f"sqlite:///{copy}")
    with session_scope(engine) as session:
        add_reviewer(session=session, name="olga", password=PASSWORD, role="owner")
        worst = compare(session, Side.parse("r1"), Side.parse("r3")).regressions[0].interaction_b
    port = free_port()
    app = serve(engine, Settings(data_dir=tmp_path), port=port, block=False)
    try:
        yield f"http://127.0.0.1:{port}", worst
    finally:
        app.close()
        engine.dispose()


def log_in(page: Page, url: str) -> None:
    page.goto(url + "/")
    page.get_by_label("username").fill("olga")
    page.get_by_label("password").fill(PASSWORD)
    page.get_by_role("button", name="Login").click()
    expect(page.get_by_role("tab", name="Queue")).to_be_visible(timeout=TIMEOUT)


def test_an_item_link_opens_the_item_whole(page: Page, demo_app: tuple[str, str]) -> None:
    url, worst = demo_app
    log_in(page, url)
    page.goto(url + item_link(worst))
    expect(page.locator("#jw-item-header")).to_contain_text(worst, timeout=TIMEOUT)
    expect(page.locator("#jw-item-header")).to_contain_text("release r3")
    verdicts = page.locator("#jw-item-verdicts")
    expect(verdicts).to_contain_text("answer_quality", timeout=TIMEOUT)
    expect(verdicts).to_contain_text("faithfulness 1")  # the known-bad answer r3's quantized tier gave
    expect(page.get_by_label("This item in other releases and tiers")).to_contain_text("r1", timeout=TIMEOUT)


def test_the_items_page_lists_filtered_items_and_opens_a_row(page: Page, demo_app: tuple[str, str]) -> None:
    url, _ = demo_app
    log_in(page, url)
    page.get_by_role("tab", name="Items").click()
    page.get_by_label("Release", exact=True).fill("r3")
    page.get_by_label("Tier", exact=True).fill("quantized")
    page.get_by_label("Criterion", exact=True).fill("faithfulness")
    page.get_by_label("Score at most", exact=True).fill("2")
    page.locator("#jw-items-search").click()
    expect(page.locator("#jw-items-where")).to_contain_text("of ", timeout=TIMEOUT)
    listing = page.locator("#jw-items-list")
    expect(listing).to_contain_text("quantized")
    expect(listing).not_to_contain_text("full")
    listing.get_by_role("gridcell").filter(has_text="quantized").first.click()
    expect(page.locator("#jw-item-header")).to_contain_text("tier quantized", timeout=TIMEOUT)


def test_the_compare_page_shows_the_tier_gap_and_its_regressions(page: Page, demo_app: tuple[str, str]) -> None:
    url, _ = demo_app
    log_in(page, url)
    page.get_by_role("tab", name="Compare").click()
    page.locator("#jw-compare-a textarea, #jw-compare-a input").first.fill("r3/full")
    page.locator("#jw-compare-b textarea, #jw-compare-b input").first.fill("r3/quantized")
    page.locator("#jw-compare-go").click()
    expect(page.locator("#jw-compare-summary")).to_contain_text("regressed", timeout=TIMEOUT)
    expect(page.locator("#jw-compare-criteria")).to_contain_text("faithfulness")
    expect(page.get_by_label("Regressions (largest drop first)")).to_contain_text("{+", timeout=TIMEOUT)
