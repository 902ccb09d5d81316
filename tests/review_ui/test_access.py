"""Nothing in the review app answers without a login checked against the database accounts."""

from __future__ import annotations

import httpx
from sqlalchemy import update

from judgewatch.storage.db import session_scope, table
from judgewatch.storage.review import Reviewer


def test_an_unauthenticated_caller_gets_no_page_data_and_no_api(served) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as client:
        page = client.get("/")
        assert page.status_code == 200 and "capital of France" not in page.text  # only the login page
        assert client.get("/config").status_code == 401
        assert client.get("/gradio_api/info").status_code == 401
        join = client.post("/gradio_api/queue/join", json={"fn_index": 0, "data": [], "session_hash": "x"})
        assert join.status_code == 401
        assert client.post("/gradio_api/run/predict", json={"data": []}).status_code in (401, 404)
        for mcp in ("/gradio_api/mcp/schema", "/gradio_api/mcp/sse"):  # the MCP server is off
            assert client.get(mcp).status_code in (401, 404)


def test_login_uses_the_database_accounts_and_a_disabled_one_is_refused(served, credentials) -> None:
    name, password = credentials
    with httpx.Client(base_url=served.url, timeout=30) as client:
        assert client.post("/login", data={"username": name, "password": "wrong password"}).status_code >= 400
        assert client.get("/config").status_code == 401
        assert client.post("/login", data={"username": name, "password": password}).status_code == 200
        assert client.get("/config").status_code == 200
    reviewers = table(Reviewer)
    with session_scope(served.engine) as session:
        session.execute(update(reviewers).where(reviewers.c.name == name).values(active=False))
    with httpx.Client(base_url=served.url, timeout=30) as client:
        assert client.post("/login", data={"username": name, "password": password}).status_code >= 400
        assert client.get("/config").status_code == 401
