"""Helpers the review app's pages share: who is asking (and may they), the period controls, empty tables. Every
handler starts with `require_role`: Gradio's `api_visibility` only hides a handler, a logged-in session can call it."""

from __future__ import annotations

import io
from collections.abc import Collection

import gradio as gr
import pandas as pd
from PIL import Image
from sqlalchemy import Engine

from judgewatch.review.accounts import AGGREGATE_ROLES, Role, role_of
from judgewatch.storage.db import session_scope
from review_ui.session_guard import end_sessions

SINCE_CHOICES = [("last 7 days", "7d"), ("last 30 days", "30d"), ("last 90 days", "90d"), ("all time", "")]


def username(request: gr.Request | None) -> str:
    """The logged-in account's name; a gr.Error when there is none."""
    name = getattr(request, "username", None) if request is not None else None
    if not name:
        raise gr.Error("Log in first.")
    return str(name)


def require_role(engine: Engine, request: gr.Request | None, roles: Collection[Role] | None = None) -> str:
    """The caller's name when the account is active (and, given `roles`, has one of them); a gr.Error otherwise. A
    disabled account also loses its sessions here, so its next page load asks for a login again."""
    name = username(request)
    with session_scope(engine) as session:
        role = role_of(session=session, name=name)
    if role is None:
        end_sessions(request, name)
        raise gr.Error("Your account is not active.")
    if roles is not None and role not in roles:
        allowed = " and ".join(sorted(f"{r.value}s" for r in roles))
        raise gr.Error(f"This page is for {allowed}.")
    return name


def require_viewer(engine: Engine, request: gr.Request | None) -> str:
    """The caller's name when it is an active account allowed to see aggregate pages (owner, adjudicator)."""
    return require_role(engine, request, AGGREGATE_ROLES)


def page_controls(rubric: str) -> tuple[gr.Textbox, gr.Dropdown, gr.Button]:
    """The aggregate pages' rubric box, period dropdown and Refresh button, in one row."""
    with gr.Row():
        rubric_box = gr.Textbox(value=rubric, label="Rubric", scale=2)
        since_box = gr.Dropdown(SINCE_CHOICES, value="90d", label="Period", scale=2)
        refresh = gr.Button("Refresh", size="sm", scale=1)
    return rubric_box, since_box, refresh


def image(png: bytes) -> Image.Image | None:
    """A stored PNG as an image; None for an empty picture (nothing to plot yet)."""
    return Image.open(io.BytesIO(png)) if png else None


def message_frame(text: str) -> pd.DataFrame:
    """A one-cell table that says what is missing (and which command fills it), instead of empty headers."""
    return pd.DataFrame({"note": [text]})
