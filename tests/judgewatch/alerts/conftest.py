"""A real webhook receiver on loopback (Starlette under uvicorn, a free port) that records every POST."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from judgewatch.testing.ingest_server import serve_in_thread


@dataclass
class Receiver:
    """Records (hook name, JSON body) per POST to /hook/<name>; answers the queued statuses first, then 200."""

    url: str = ""
    posts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    def bodies(self, hook: str) -> list[dict[str, Any]]:
        return [body for name, body in self.posts if name == hook]

    def app(self) -> Starlette:
        async def post(request: Request) -> Response:
            self.posts.append((request.path_params["name"], await request.json()))
            return Response(status_code=self.statuses.pop(0) if self.statuses else 200)

        return Starlette(routes=[Route("/hook/{name}", post, methods=["POST"])])


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    """The receiver, with HOOK_SLACK and HOOK_JSON set to its /hook/slack and /hook/json URLs."""
    found = Receiver()
    with serve_in_thread(found.app(), "webhook") as url:
        found.url = url
        monkeypatch.setenv("HOOK_SLACK", f"{url}/hook/slack")
        monkeypatch.setenv("HOOK_JSON", f"{url}/hook/json")
        yield found


WEBHOOKS = """\
webhooks:
- {name: team-slack, format: slack, url_env: HOOK_SLACK}
- {name: team-json, format: json, url_env: HOOK_JSON}
"""
