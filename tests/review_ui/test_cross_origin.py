"""Over real HTTP, served under a real host name: another site cannot log in, read or label through a
reviewer's browser. Only the app's own origin and the configured `review_allowed_origins` get CORS headers,
and the session cookies are SameSite=Lax."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from judgewatch.settings import Settings
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from review_ui.app import serve

from .conftest import PASSWORD, _free_port, seed

HOST = "review.example.com"
OWN = f"http://{HOST}"
FOREIGN = "https://evil.example"
PARTNER = "https://tools.example.org"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[httpx.Client]:
    engine = make_engine(f"sqlite:///{tmp_path / 'review.db'}")
    migrate(engine)
    seed(engine, "Paris is the capital of France.")
    port = _free_port()
    settings = Settings(data_dir=tmp_path, review_allowed_origins=[PARTNER])
    app = serve(engine, settings, host="127.0.0.1", port=port, block=False, extra_tabs=[])
    try:
        # Every request names the public host, as behind a reverse proxy; Gradio trusts any origin then.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Host": HOST}, timeout=30) as http:
            yield http
    finally:
        app.close()
        engine.dispose()


def _login(client: httpx.Client, origin: str | None) -> httpx.Response:
    headers = {"Origin": origin} if origin else {}
    return client.post("/login", data={"username": "alice", "password": PASSWORD}, headers=headers)


def test_a_login_from_another_site_is_refused_and_sets_no_cookie(client: httpx.Client) -> None:
    answer = _login(client, FOREIGN)
    assert answer.status_code == 403 and "cross-origin request refused" in answer.text
    assert "set-cookie" not in answer.headers
    assert "access-control-allow-origin" not in answer.headers
    assert _login(client, "null").status_code == 403  # sandboxed frames and file: pages send "null"


def test_the_own_origins_login_sets_samesite_lax_cookies(client: httpx.Client) -> None:
    answer = _login(client, OWN)
    assert answer.status_code == 200, answer.text
    cookies = answer.headers.get_list("set-cookie")
    assert len(cookies) == 2 and all(c.lower().count("samesite=") == 1 for c in cookies)
    assert all("samesite=lax" in c.lower() for c in cookies), cookies
    assert _login(client, None).status_code == 200  # non-browser clients send no Origin


def test_another_site_cannot_read_or_act_with_a_reviewers_cookie(client: httpx.Client) -> None:
    assert _login(client, OWN).status_code == 200  # the victim is logged in; the client holds the cookie
    for method, path in (("GET", "/config"), ("GET", "/gradio_api/info"), ("POST", "/gradio_api/queue/join")):
        body = {"data": [], "fn_index": 0, "session_hash": "x"} if method == "POST" else None
        own = client.request(method, path, json=body, headers={"Origin": OWN})
        foreign = client.request(method, path, json=body, headers={"Origin": FOREIGN})
        assert own.status_code != 403, (path, own.text)
        assert foreign.status_code == 403, (path, foreign.status_code)
        assert "access-control-allow-origin" not in foreign.headers
        assert "access-control-allow-credentials" not in foreign.headers
        assert "capital of France" not in foreign.text


def test_a_preflight_from_another_site_is_not_granted(client: httpx.Client) -> None:
    headers = {"Origin": FOREIGN, "Access-Control-Request-Method": "POST"}
    answer = client.options("/gradio_api/queue/join", headers=headers)
    assert answer.headers.get("access-control-allow-origin") is None
    assert answer.status_code == 403


def test_a_configured_origin_is_allowed_with_cors_headers(client: httpx.Client) -> None:
    answer = _login(client, PARTNER)
    assert answer.status_code == 200
    assert answer.headers.get("access-control-allow-origin") == PARTNER
    preflight = client.options(
        "/gradio_api/queue/join", headers={"Origin": PARTNER, "Access-Control-Request-Method": "POST"}
    )
    assert preflight.headers.get("access-control-allow-origin") == PARTNER


def test_a_cross_site_state_change_without_an_origin_is_refused(client: httpx.Client) -> None:
    answer = client.post(
        "/login", data={"username": "alice", "password": PASSWORD}, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert answer.status_code == 403


def _scope(host: str, origin: str | None = None, method: str = "POST", **extra: str) -> dict:
    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    headers += [(k.replace("_", "-").encode(), v.encode()) for k, v in extra.items()]
    return {"type": "http", "method": method, "headers": headers}


def test_the_policy_compares_origins_by_host_and_port_and_refuses_null() -> None:
    from review_ui.origins import OriginPolicy, normalize_origin

    policy = OriginPolicy.of(["HTTPS://Tools.Example.org:443/"])
    assert normalize_origin("https://tools.example.org:443") == "https://tools.example.org"
    assert policy.refusal(_scope("review.example.com", "https://review.example.com")) is None  # behind TLS proxy
    assert policy.refusal(_scope("review.example.com:8443", "https://review.example.com:8443")) is None
    assert policy.refusal(_scope("[::1]:7860", "http://[::1]:7860")) is None
    assert policy.refusal(_scope("x.example", "https://tools.example.org")) is None
    assert policy.refusal(_scope("review.example.com", "https://review.example.com.evil.example")) is not None
    assert policy.refusal(_scope("review.example.com", "null")) is not None
    assert policy.refusal(_scope("review.example.com", None, "GET", sec_fetch_site="cross-site")) is None
    assert policy.refusal(_scope("review.example.com", None, "POST", sec_fetch_site="cross-site")) is not None
    with pytest.raises(ValueError, match="not an origin"):
        OriginPolicy.of(["review.example.com"])
