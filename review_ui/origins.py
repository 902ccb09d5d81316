"""Which web origins may call the review app, and the response headers that say so (docs/security.md). Needed
because Gradio's CORS middleware trusts any origin once the app has a real host name (it echoes `Origin` with
`Allow-Credentials: true`, and its session cookie is `SameSite=None`): a page on another site could label as the
reviewer."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.middleware import Middleware

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAMESITE = re.compile(rb";\s*samesite=[a-z]+", re.IGNORECASE)


def normalize_origin(origin: str) -> str:
    """`scheme://host[:port]` in lower case, default ports dropped; "" for anything that is not an origin."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    default = {"http": 80, "https": 443}[parts.scheme]
    try:
        port = parts.port
    except ValueError:
        return ""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _header(scope: Scope, name: bytes) -> str | None:
    return next((bytes(value).decode("latin-1") for key, value in scope.get("headers", []) if key == name), None)


@dataclass(frozen=True)
class OriginPolicy:
    """The origins allowed besides the app's own (`allowed`: normalized `scheme://host[:port]`)."""

    allowed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, origins: Iterable[str]) -> OriginPolicy:
        normalized = {normalize_origin(o) for o in origins}
        if bad := [o for o in origins if not normalize_origin(o)]:
            raise ValueError(f"review_allowed_origins: not an origin (scheme://host[:port]): {bad[0]!r}")
        return cls(frozenset(normalized))

    def allows(self, scope: Scope, origin: str) -> bool:
        """Whether `origin` is the app's own (the `Host` the request was sent to, any scheme) or configured."""
        normalized = normalize_origin(origin)
        if not normalized:
            return False  # "null" (sandboxed frames, file: pages) and garbage are foreign
        if normalized in self.allowed:
            return True
        host = (_header(scope, b"host") or "").strip().lower()
        netloc = normalized.split("://", 1)[1]
        return bool(host) and {netloc, _without_default_port(netloc)} & {host, _without_default_port(host)} != set()

    def refusal(self, scope: Scope) -> str | None:
        """Why this request is refused as cross-origin, or None."""
        origin = _header(scope, b"origin")
        if origin is not None:
            if self.allows(scope, origin):
                return None
            return f"cross-origin request refused: origin {origin[:200]!r} is not allowed (review_allowed_origins)"
        fetch_site = (_header(scope, b"sec-fetch-site") or "").lower()
        if fetch_site == "cross-site" and str(scope.get("method", "GET")).upper() not in SAFE_METHODS:
            return "cross-origin request refused: a cross-site request may not change anything"
        return None


def _without_default_port(netloc: str) -> str:
    return re.sub(r":(80|443)$", "", netloc)


def same_site_lax(message: Message) -> None:
    """Rewrite every `Set-Cookie` of a response start so the cookie is `SameSite=Lax`."""
    message["headers"] = [
        (key, _SAMESITE.sub(b"", bytes(value)) + b"; SameSite=Lax" if bytes(key).lower() == b"set-cookie" else value)
        for key, value in message.get("headers") or []
    ]


@dataclass
class CorsHeaderFilter:
    """ASGI middleware in front of Gradio's CORS layer: drops `Access-Control-Allow-*` headers (and answers a
    preflight 403) for an origin the policy does not allow."""

    app: ASGIApp
    policy: OriginPolicy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = _header(scope, b"origin") if scope["type"] == "http" else None
        if origin is None or self.policy.allows(scope, origin):
            await self.app(scope, receive, send)
            return
        if scope.get("method") == "OPTIONS" and _header(scope, b"access-control-request-method"):
            await send({"type": "http.response.start", "status": 403, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return

        async def without_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    (k, v)
                    for k, v in message.get("headers") or []
                    if not bytes(k).lower().startswith(b"access-control-allow-")
                ]
            await send(message)

        await self.app(scope, receive, without_cors)


def install_in_front(server_app: Any, policy: OriginPolicy) -> None:
    """Put CorsHeaderFilter outermost on Gradio's running FastAPI app (Gradio adds its CORS layer after the
    app's own middleware, so it cannot be placed there); the stack is rebuilt on the next request."""
    server_app.user_middleware.insert(0, Middleware(CorsHeaderFilter, policy=policy))
    server_app.middleware_stack = None
