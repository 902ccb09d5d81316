"""After the demo's data is loaded (`judgewatch demo --quick`, without the slow vLLM step), the Tiers page opens
populated: estimates of the releases, corrected with labels derived from the golden sets' annotations and
labelled `dataset_annotation`, on the series the latest gate used; checked in the store and in a real browser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from judgewatch.calibration.page_snapshots import stored_views
from judgewatch.review.accounts import add_reviewer
from judgewatch.storage.db import session_scope, table
from judgewatch.storage.trust import TrustEvidence, TrustRecord
from judgewatch.testing.quick_demo import QuickDemo
from review_ui.tiers_page import tiers_view

from .conftest import tiers_tab_open

PASSWORD = "a long test password"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def demo_store(quick_demo: QuickDemo) -> Engine:
    """The quick demo's releases, labels and calibration snapshot, with an owner account to open the pages.

    Session-scoped like `quick_demo`: the browser test runs after every other test (tests/conftest.py), so this
    module's two tests are not adjacent, and a module fixture would be set up twice on the one shared store."""
    lines = quick_demo.lines
    assert all(o.as_expected for o in quick_demo.outcomes), lines
    assert any("label_via=dataset_annotation, not a reviewer's" in line for line in lines), lines
    with session_scope(quick_demo.engine, write=True) as session:
        add_reviewer(session=session, name="owner", password=PASSWORD, role="owner")
    return quick_demo.engine


def test_the_demo_leaves_release_estimates_corrected_by_dataset_annotations_and_no_trust_records(
    demo_store: Engine,
) -> None:
    view = tiers_view(demo_store)  # the page's default period (90 days) and series
    # the gate's question first: r4 could not be evaluated, r3 regressed on quantized against r1
    assert view.lead.startswith("**Latest gate: release r4, could not evaluate")
    assert (
        "Release r3 regressed: tier quantized, " in view.lead
        and "against baseline release r1, margin 0.25" in view.lead
    )
    gate = view.gate
    assert list(gate["release"])[:2] == ["r4", "r3"] and set(gate[gate["release"] == "r3"]["tier"]) == {"quantized"}
    worst = gate[gate["release"] == "r3"].iloc[0]["candidate − baseline [95% CI]"]
    assert worst.startswith("-1.") and "[" in worst  # the gate's estimate and its interval
    assert "release r3 (the regressing release the gate names" in view.captions["estimates"]
    pooled = "releases r1, r2, r3, r4 (golden sets) pooled"  # the over-time plots say what a day pools
    assert pooled in view.captions["trend"] and pooled in view.captions["agreement"]
    first = view.header.splitlines()[0]
    assert (
        first.startswith("**Showing judge series reference") and "the judge the latest gate used (release r4" in first
    )
    assert "DATASET ANNOTATION LABELS" in view.header and "SYNTHETIC" not in view.header
    scores = view.estimates
    assert set(scores["estimand"]) == {"release_quality"} and {"r1", "r2", "r3"} <= {
        p.split(" / ")[0] for p in scores["population"]
    }
    faith = scores[scores["criterion"] == "faithfulness"]
    labeled = faith[faith["n labeled"].astype(int) > 0]  # the gate routed 10% of each release's verdicts
    assert len(labeled) >= len(faith) // 2 and labeled["labels by"].str.endswith("dataset_annotation").all()
    others = scores[scores["criterion"] != "faithfulness"]  # the annotations say nothing about these
    assert (others["n labeled"].astype(int) == 0).all()
    assert (others["labels by"] == "-").all() and (others["n effective"] == "-").all()  # never "people" with 0 labels
    few = scores["corrected [95% CI]"].str.startswith("too few labels")
    assert (scores.loc[few, "n effective"] == "-").all() and scores.loc[~few, "n effective"].astype(int).gt(0).all()
    assert "quantized − full" in set(view.differences["difference"])
    assert int(view.counts["of which dataset_annotation"].astype(int).sum()) > 0
    with session_scope(demo_store) as session:  # labels derived from a dataset are never trust evidence
        evidence = set(session.execute(select(table(TrustRecord).c.evidence)).scalars())
    assert evidence and TrustEvidence.human_labels.value not in evidence


def test_after_the_demo_no_estimate_on_fewer_than_the_minimum_of_labels_has_an_interval(demo_store: Engine) -> None:
    """The document `judgewatch report tiers --format json` prints: below the minimum, a null interval and why."""
    view = stored_views(demo_store, rubric_name="answer_quality", period="90d").pick(None)
    assert view is not None
    doc, need = view.document, view.document["min_labels"]
    few = [r for r in doc["release"] if r["n_labeled"] < need]
    assert few  # the demo routes 10% of each release's verdicts: a handful of labels per tier and golden set
    for row in few:
        assert row["low"] is None and row["high"] is None
        assert row["interval_note"] == f"too few labels (n={row['n_labeled']}, need {need})"
    for row in doc["release"] + doc["gaps"]:
        if row["low"] is not None:
            assert row["high"] > row["low"] and not row["interval_note"], row
    for row in doc["agreement"]:
        if row["n"] < need:
            assert row["interval_note"] and row["weighted_kappa"]["low"] is None


def test_the_demo_prints_every_line_whole_within_the_width_and_the_judges_trust_once(quick_demo: QuickDemo) -> None:
    """Issue 35 §6.9: 400-560-character lines (the judge's trust, on every release) came 3-4 times."""
    from judgewatch.cli.demo_run import WIDTH

    lines = [line for said in quick_demo.lines for line in said.splitlines()]
    assert lines and max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert sum(line.count("AUROC") for line in lines) == 2  # measured once (two golden sets), named after
    assert sum(line.endswith("judge trust: as measured above") for line in lines) == 4  # r1 to r4
    first_gate = next(k for k, line in enumerate(lines) if line.startswith("== release r1"))
    assert any("waits for Prefect's local server" in line for line in lines[:first_gate])  # never silent first


@pytest.mark.browser
def test_an_owner_opens_the_tiers_page_after_the_demo_and_sees_estimates_labelled_dataset_annotation(
    page: Any, demo_store: Engine, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with tiers_tab_open(page, demo_store, tmp_path, "owner", PASSWORD):
        body = page.locator("body")
        expect(body).to_contain_text("Showing judge series reference", timeout=60_000)
        lead = page.get_by_text("Release r3 regressed: tier quantized")
        expect(lead).to_be_visible()
        series_line = page.get_by_text("Showing judge series reference").first
        assert lead.bounding_box()["y"] < series_line.bounding_box()["y"]  # the gate's question comes first
        expect(page.get_by_role("grid", name="The gate's question")).to_contain_text("REGRESSION")
        expect(body).to_contain_text("the judge the latest gate used")
        grid = page.get_by_role("grid", name="Tier scores")
        expect(grid).to_contain_text("release_quality")
        expect(grid).to_contain_text("dataset_annotation")
        expect(grid).to_contain_text("faithfulness")
        expect(page.get_by_role("grid", name="Tier difference")).to_contain_text("quantized − full")
        expect(body).to_contain_text("DATASET ANNOTATION LABELS")
        expect(body).not_to_contain_text("Nothing computed for this period yet")
