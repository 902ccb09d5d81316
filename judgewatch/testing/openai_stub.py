"""A scripted OpenAI-compatible endpoint for tests that need their own answer to each request (a tier, a
gateway that checks headers, a recording proxy); `judgewatch.testing.simulator` is the full fake judge."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def chat_completion(model: str, content: str) -> web.Response:
    """A `chat.completion` whose one choice says `content` (10 prompt and 5 completion tokens)."""
    body: dict[str, Any] = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return web.json_response(body)


@asynccontextmanager
async def openai_stub(models: Handler, chat: Handler, pages: Mapping[str, Handler] | None = None) -> AsyncIterator[str]:
    """Serve GET /v1/models and POST /v1/chat/completions on 127.0.0.1 at a free port; yields the base URL.

    `pages`: more GET routes by path, e.g. vLLM's `/version` and `/metrics` at the server root.
    """
    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    for path, handler in (pages or {}).items():
        app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()
