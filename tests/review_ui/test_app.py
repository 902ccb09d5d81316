"""Building the review app: its own tabs, the optional pages, and a broken page that must not take it down."""

from __future__ import annotations

from pathlib import Path

import gradio as gr
from sqlalchemy import Engine

from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from review_ui.app import build_app, launch_options


def _engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'app.db'}")
    migrate(engine)
    return engine


def _tab_labels(app: gr.Blocks) -> list[str]:
    return [str(block.label) for block in app.blocks.values() if isinstance(block, gr.Tab)]


def test_the_app_has_queue_and_adjudication_and_takes_extra_tabs(tmp_path: Path) -> None:
    engine = _engine(tmp_path)

    def extra(eng: Engine) -> None:
        assert eng is engine
        with gr.Tab("Extra"):
            gr.Markdown("hello")

    def broken(_: Engine) -> None:
        raise RuntimeError("this page is broken")

    app = build_app(engine, Settings(data_dir=tmp_path), extra_tabs=[broken, extra])
    assert _tab_labels(app) == ["Queue", "Adjudication", "Extra"]


def test_the_optional_pages_present_are_added(tmp_path: Path) -> None:
    app = build_app(_engine(tmp_path), Settings(data_dir=tmp_path))
    labels = _tab_labels(app)
    assert labels[:2] == ["Queue", "Adjudication"]
    if Path(__file__).resolve().parents[2].joinpath("review_ui", "judges_page.py").exists():
        assert "Judges" in labels


def test_launch_options_keep_login_on_and_mcp_off(tmp_path: Path) -> None:
    options = launch_options(_engine(tmp_path))
    assert callable(options["auth"]) and options["mcp_server"] is False
    assert options["auth"]("nobody", "whatever password") is False
