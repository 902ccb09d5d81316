"""The review app: Gradio Blocks with the Queue and Adjudication tabs and the owners' aggregate pages, behind a
throttled login (docs/security.md); every handler checks its caller too, as a logged-in session can call any."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from sqlalchemy import Engine
from starlette.middleware import Middleware

from judgewatch.metrics.server import store_metrics_route
from judgewatch.review.accounts import AGGREGATE_ROLES, authenticate, role_of
from judgewatch.review.adjudication import Adjudication
from judgewatch.review.login_throttle import LoginThrottle, ThrottlePolicy
from judgewatch.review.queue import ReviewQueue
from judgewatch.settings import Settings
from judgewatch.storage.db import session_scope
from review_ui.adjudication_page import add_adjudication_tab
from review_ui.calibration_page import add_calibration_tab
from review_ui.compare_page import add_compare_tab
from review_ui.items_page import add_items_tab
from review_ui.judges_page import add_judges_tab
from review_ui.origins import OriginPolicy, install_in_front
from review_ui.queue_page import add_queue_tab
from review_ui.session_guard import SessionGuard, client_address
from review_ui.tiers_page import add_tiers_tab

logger = logging.getLogger(__name__)

TabBuilder = Callable[[Engine], Any]

# The aggregate pages, shown to AGGREGATE_ROLES (owners and adjudicators).
DEFAULT_EXTRA_TABS: tuple[TabBuilder, ...] = (
    add_items_tab,
    add_compare_tab,
    add_judges_tab,
    add_tiers_tab,
    add_calibration_tab,
)
# The app has no upload component; Gradio's upload route still exists, so cap it at one byte (off).
MAX_UPLOAD_BYTES = 1

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


def build_app(engine: Engine, settings: Settings, extra_tabs: Sequence[TabBuilder] | None = None) -> gr.Blocks:
    """The app's Blocks; `extra_tabs` (default: Judges, Tiers, Calibration) each add an aggregate page's tab. Each tab
    is shown only to the roles that may use it (set when the page loads); the handlers check anyway."""
    queue = ReviewQueue(
        engine, lease_seconds=settings.lease_seconds, rubrics_dir=settings.rubrics_dir, scrub_pii=settings.pii_scrub
    )
    gated: list[Any] = []
    with gr.Blocks(title="judgewatch review", analytics_enabled=False) as app:
        gr.Markdown("## judgewatch · human review")
        with gr.Tabs() as tabs:
            add_queue_tab(queue)
            gated.append(add_adjudication_tab(Adjudication(queue)))  # every other tab: AGGREGATE_ROLES
            for add_tab in DEFAULT_EXTRA_TABS if extra_tabs is None else extra_tabs:
                try:
                    tab = add_tab(engine)
                except Exception:  # one broken page must not take the review queue down with it
                    logger.exception("could not add the tab from %r", add_tab)
                    continue
                if isinstance(tab, gr.Tab):
                    gated.append(tab)

        def visible_tabs(request: gr.Request) -> list[Any]:
            with session_scope(engine) as session:
                role = role_of(session=session, name=getattr(request, "username", None))
            return [gr.update(visible=role in AGGREGATE_ROLES) for _ in gated]

        for tab in gated:  # hidden until the page's load event knows the caller's role
            tab.visible = False
        app.load(visible_tabs, outputs=gated, api_visibility="private")
        for tab in gated:  # a page that opens from a link (`/?item=...`) says how on its tab
            if hook := getattr(tab, "open_item", None):
                handler, outputs = hook
                app.load(handler, outputs=[tabs, *outputs], api_visibility="private")
    return app


def launch_options(
    engine: Engine,
    throttle: LoginThrottle | None = None,
    origins: OriginPolicy | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """`launch()` keywords: throttled database login, session guard (other sites' requests refused; `clock`
    times its account re-checks), keyboard shortcuts, no MCP server, no API page, no SSR, no uploads, /metrics."""
    throttle = throttle or LoginThrottle()

    def check(name: str, password: str) -> bool:
        return authenticate(engine, name, password, address=client_address.get(), throttle=throttle)

    return {
        "auth": check,
        # Prometheus scrapes /metrics without a login: aggregate counts only, no item text and no reviewer names.
        "app_kwargs": {
            "middleware": [Middleware(SessionGuard, engine=engine, throttle=throttle, origins=origins, clock=clock)],
            "routes": [store_metrics_route(engine)],
        },
        "max_file_size": MAX_UPLOAD_BYTES,
        "auth_message": "judgewatch review: log in with your reviewer account.",
        "js": KEYBOARD_JS,
        "css": CSS,
        "mcp_server": False,
        "footer_links": [],
        "ssr_mode": False,
        "show_error": False,
    }


def serve(
    engine: Engine,
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 7860,
    block: bool = True,
    extra_tabs: Sequence[TabBuilder] | None = None,
    throttle: LoginThrottle | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> gr.Blocks:
    """Build and launch the app; with `block=False` it serves from a thread and returns (call `app.close()`).
    `clock` times the session guard's account re-checks (tests advance it instead of waiting)."""
    app = build_app(engine, settings, extra_tabs)
    app.queue(default_concurrency_limit=8)
    origins = OriginPolicy.of(settings.review_allowed_origins)
    s = settings
    policy = ThrottlePolicy(s.login_account_failures, s.login_address_failures, s.login_window_s, s.login_lockout_s)
    options = launch_options(engine, throttle or LoginThrottle(policy), origins, clock)
    logger.info("review app on http://%s:%d", host, port)
    app.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=True, **options)
    install_in_front(app.server_app, origins)
    if block:
        app.block_thread()
    return app
