"""ASGI middleware in front of the Gradio app: records the caller's address for the login throttle (Gradio's `auth`
gets name and password only), answers 429 to a locked-out address, ends a disabled account's sessions, refuses
other web origins (`review_ui.origins`)."""

from __future__ import annotations

import contextvars
import json
import logging
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

from sqlalchemy import Engine

from judgewatch.review.accounts import is_active
from judgewatch.review.login_throttle import LoginThrottle
from judgewatch.storage.db import session_scope
from review_ui.origins import ASGIApp, OriginPolicy, Receive, Scope, Send, same_site_lax

logger = logging.getLogger(__name__)


client_address: contextvars.ContextVar[str | None] = contextvars.ContextVar("client_address", default=None)


def end_sessions(request: object, name: str) -> None:
    """Forget every Gradio session token of `name` in the app serving `request`."""
    _drop_tokens(getattr(getattr(request, "request", None), "app", None), name)


def _drop_tokens(app: object, name: str) -> None:
    tokens = getattr(app, "tokens", None)
    if not isinstance(tokens, dict):
        return
    mine = [token for token, user in list(tokens.items()) if user == name]
    for token in mine:
        tokens.pop(token, None)
    if mine:
        logger.info("ended %d session(s) of disabled account %r", len(mine), name)


@dataclass
class SessionGuard:
    """The ASGI middleware; `engine` answers "is this account active", `throttle` "is this address locked"."""

    app: ASGIApp
    engine: Engine
    throttle: LoginThrottle
    origins: OriginPolicy | None = None
    recheck_s: float = 2.0
    clock: Callable[[], float] = time.monotonic
    _checked: dict[str, tuple[float, bool]] = field(default_factory=dict, init=False)  # name -> (when, active)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else None
        token = client_address.set(address)
        try:
            refusal = (self.origins or OriginPolicy()).refusal(scope)
            if refusal is not None:
                logger.warning("%s (%s %s from %s)", refusal, scope.get("method"), scope.get("path"), address)
                await _refuse(send, 403, refusal)
                return
            login = scope.get("method") == "POST" and str(scope.get("path", "")).rstrip("/").endswith("/login")
            if login and address and (wait := self.throttle.locked_for("", address)) > 0:
                detail = f"Too many failed logins from this address; try again in {wait:.0f} s."
                await _refuse(send, 429, detail, [(b"retry-after", str(int(wait) + 1).encode())])
                return
            self._end_disabled_session(scope)

            async def lax_cookies(message: MutableMapping[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    same_site_lax(message)
                await send(message)

            await self.app(scope, receive, lax_cookies)
        finally:
            client_address.reset(token)

    def _end_disabled_session(self, scope: Scope) -> None:
        gradio_app = scope.get("app")
        tokens = getattr(gradio_app, "tokens", None)
        if not tokens:
            return
        for value in _cookie_values(scope):
            name = tokens.get(value)
            if name is not None and not self._active(str(name)):
                _drop_tokens(gradio_app, str(name))

    def _active(self, name: str) -> bool:
        now = self.clock()
        seen = self._checked.get(name)
        if seen is not None and now - seen[0] < self.recheck_s:
            return seen[1]
        with session_scope(self.engine) as session:
            active = is_active(session=session, name=name)
        if len(self._checked) > 10_000:
            self._checked.clear()
        self._checked[name] = (now, active)
        return active


def _cookie_values(scope: Scope) -> list[str]:
    """Values of the request's access-token cookies (Gradio names them access-token-<id>)."""
    values = []
    for key, raw in scope.get("headers", []):
        if key == b"cookie":
            jar = SimpleCookie()
            try:
                jar.load(raw.decode("latin-1"))
            except Exception:  # a malformed cookie header is Gradio's to reject, not ours
                continue
            values += [morsel.value for cookie, morsel in jar.items() if cookie.startswith("access-token")]
    return values


async def _refuse(send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
