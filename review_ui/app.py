"""The review app: Gradio Blocks with the Queue and Adjudication tabs, plus pages other modules add.

Everything sits behind Gradio's login, checked against the reviewer accounts in the database; the MCP server
and the API page stay off. Login is only the first gate: every handler passes `request.username` to the review
service, which checks the account and the lease on each call (a logged-in session can call any handler).
`judgewatch review-ui` calls `serve`; tests call `build_app` + `launch_options` on a free port.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from sqlalchemy import Engine

from judgewatch.metrics.server import store_metrics_route
from judgewatch.review.accounts import authenticate
from judgewatch.review.adjudication import Adjudication
from judgewatch.review.queue import ReviewQueue
from judgewatch.settings import Settings
from review_ui.adjudication_page import add_adjudication_tab
from review_ui.queue_page import add_queue_tab

logger = logging.getLogger(__name__)

TabBuilder = Callable[[Engine], Any]

# Pages other modules provide, added as tabs when present: (module, function taking the engine).
OPTIONAL_TABS = (
    ("review_ui.judges_page", "add_judges_tab"),
    ("review_ui.tiers_page", "add_tiers_tab"),
    ("review_ui.calibration_page", "add_calibration_tab"),
)

# Keys act on the page unless the reviewer is typing (text inputs, textareas) or a focused button takes Enter.
KEYBOARD_JS = """
() => {
  if (window.__jwKeys) return;
  window.__jwKeys = true;
  const visible = (el) => !!el && el.offsetParent !== null;
  const click = (id) => {
    const el = document.getElementById(id);
    if (!visible(el) || el.disabled) return false;
    el.click();
    return true;
  };
  const criteria = () => Array.from(document.querySelectorAll('.jw-criterion')).filter(visible);
  const current = () => criteria().find((c) => !c.querySelector('input[type=radio]:checked'));
  const mark = () => {
    const cur = current();
    for (const c of criteria()) {
      if ((c === cur) !== c.classList.contains('jw-current')) c.classList.toggle('jw-current');
    }
  };
  new MutationObserver(mark).observe(document.body, { subtree: true, childList: true });
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const tag = t && t.tagName;
    if (tag === 'TEXTAREA' || (tag === 'INPUT' && t.type !== 'radio') || (t && t.isContentEditable)) return;
    const k = e.key;
    if (/^[0-9]$/.test(k)) {
      const c = current();
      if (!c) return;
      const input = Array.from(c.querySelectorAll('input[type=radio]')).find(
        (i) => ((i.closest('label') || {}).textContent || '').trim().split(' ')[0] === k);
      if (input && !input.disabled) { e.preventDefault(); input.click(); setTimeout(mark, 50); }
    } else if (k === 'Enter') {
      if (tag === 'BUTTON') return;
      e.preventDefault();
      if (!click('jw-submit')) click('jw-next');
    } else if (k === 's' || k === 'S') {
      const box = document.querySelector('#jw-skip-reason textarea, #jw-skip-reason input');
      if (visible(box)) { e.preventDefault(); box.focus(); }
    } else if (k === 'f' || k === 'F') {
      if (click('jw-flag')) e.preventDefault();
    } else if (k === 'n' || k === 'N') {
      if (click('jw-next')) e.preventDefault();
    }
  });
}
"""

CSS = """
.jw-current { outline: 3px solid #f59e0b; outline-offset: 2px; border-radius: 8px; }
#jw-answer { max-height: 28rem; overflow-y: auto; }
"""


def default_extra_tabs() -> list[TabBuilder]:
    """The optional pages that exist in this checkout (see OPTIONAL_TABS)."""
    builders: list[TabBuilder] = []
    for module_name, function in OPTIONAL_TABS:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # a broken optional page must not take the review queue down with it
            if not (isinstance(exc, ModuleNotFoundError) and exc.name == module_name):
                logger.exception("page %s is broken: the app runs without it", module_name)
            continue
        builders.append(getattr(module, function))
    return builders


def build_app(engine: Engine, settings: Settings, extra_tabs: Sequence[TabBuilder] | None = None) -> gr.Blocks:
    """The app's Blocks; `extra_tabs` (default: the optional pages present) each add a tab given the engine."""
    queue = ReviewQueue(engine, lease_seconds=settings.lease_seconds, rubrics_dir=settings.rubrics_dir)
    with gr.Blocks(title="judgewatch review", analytics_enabled=False) as app:
        gr.Markdown("## judgewatch · human review")
        with gr.Tabs():
            add_queue_tab(queue)
            add_adjudication_tab(Adjudication(queue))
            for add_tab in default_extra_tabs() if extra_tabs is None else extra_tabs:
                try:
                    add_tab(engine)
                except Exception:  # an optional page must not take the review queue down with it
                    logger.exception("could not add the tab from %r", add_tab)
    return app


def launch_options(engine: Engine) -> dict[str, Any]:
    """`launch()` keywords: database login, keyboard shortcuts, no MCP server, no API page, no SSR, /metrics."""

    def check(name: str, password: str) -> bool:
        return authenticate(engine, name, password)

    return {
        "auth": check,
        "auth_message": "judgewatch review: log in with your reviewer account.",
        "js": KEYBOARD_JS,
        "css": CSS,
        "mcp_server": False,
        "footer_links": [],
        "ssr_mode": False,
        "show_error": False,
        # Prometheus scrapes /metrics without a login: aggregate counts only, no item text and no reviewer names.
        "app_kwargs": {"routes": [store_metrics_route(engine)]},
    }


def serve(
    engine: Engine,
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    block: bool = True,
    extra_tabs: Sequence[TabBuilder] | None = None,
) -> gr.Blocks:
    """Build and launch the app; with `block=False` it serves from a thread and returns (call `app.close()`)."""
    app = build_app(engine, settings, extra_tabs)
    app.queue(default_concurrency_limit=8)
    logger.info("review app on http://%s:%d", host, port)
    app.launch(server_name=host, server_port=port, prevent_thread_lock=not block, quiet=True, **launch_options(engine))
    return app
