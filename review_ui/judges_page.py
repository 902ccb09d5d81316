"""The "Judges" page: every judge configuration measured (`judgewatch judges validate`), its trust, and how it
compares with the reference judge. Read-only, for active owners and adjudicators (each handler checks)."""

from __future__ import annotations

import logging

import gradio as gr
import pandas as pd
from sqlalchemy import Engine

from judgewatch.trust.leaderboard import COLUMNS, leaderboard, table
from judgewatch.trust.policy import TrustPolicy
from review_ui.common import require_viewer

logger = logging.getLogger(__name__)

WIDTHS = {"judge": "200px", "trust": "170px", "AUROC [95% CI]": "150px", "bias probes": "220px", "dataset": "170px"}

INTRO = """\
A judge's verdicts are only as good as its measured trust. Each row is one measurement of one judge
configuration: on a golden set's known-good vs known-bad answers (AUROC: 0.5 is chance, 1.0 perfect),
pairwise in both orders (position consistency), or against human labels per tier (weighted kappa).
"reference AUROC" is the offline reference judge on the same items. "bias probes" shows, beside the AUROC on
the same set, whether the judge's scores move when nothing that matters changes: padded with filler (verbosity
shift), a confident bad answer vs a hedged good one (share overtaken), references removed (share still scored),
judged again and with the criteria shuffled (share identical); FAIL over a limit. A gate refuses a judge marked
NOT TRUSTED.
"""


def judges_frame(engine: Engine, policy: TrustPolicy | None = None) -> pd.DataFrame:
    """The leaderboard as a DataFrame of display strings (empty, with the columns, when nothing was measured)."""
    try:
        headers, rows = table(leaderboard(engine, policy))
    except Exception:  # a page that cannot read the store says so instead of crashing the app
        logger.exception("could not read the judge leaderboard")
        return pd.DataFrame(
            [["could not read the store: see the server log"] + [""] * (len(COLUMNS) - 1)], columns=list(COLUMNS)
        )
    return pd.DataFrame(rows, columns=headers)


def add_judges_tab(engine: Engine, policy: TrustPolicy | None = None, *, label: str = "Judges") -> gr.Tab:
    """Add the Judges tab to the `gr.Blocks` being built; the table is read again on each page load and refresh."""
    policy = policy or TrustPolicy()

    def load(request: gr.Request) -> pd.DataFrame:
        require_viewer(engine, request)
        return judges_frame(engine, policy)

    with gr.Tab(label) as tab:
        gr.Markdown(INTRO)
        gr.Markdown(f"Trust policy: {policy.describe()}.")
        # Fixed widths: wrapped headers of sixteen columns in 1400 px came out one letter a line.
        frame = gr.Dataframe(
            headers=list(COLUMNS),
            interactive=False,
            wrap=True,
            label="Judge trust",
            column_widths=[WIDTHS.get(c, "110px") for c in COLUMNS],
            elem_id="jw-judges",
        )
        refresh = gr.Button("Refresh", size="sm")
        for event in (refresh.click, tab.select):
            event(load, outputs=frame, api_visibility="private")
    return tab


def judges_page(engine: Engine, policy: TrustPolicy | None = None) -> gr.Blocks:
    """A stand-alone page with the Judges tab (the review app adds the tab to its own Blocks instead)."""
    with gr.Blocks(title="judgewatch: judges") as page:
        add_judges_tab(engine, policy)
    return page
