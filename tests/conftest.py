"""Shared fixtures: a database URL for SQLite and for the real PostgreSQL, and a migrated engine on it.

PostgreSQL tests get a fresh, uniquely named schema each (via the URL's `options=-csearch_path=...`), dropped
afterwards, so parallel sessions, pytest-xdist workers (`make test-fast`) and CI jobs never collide. Override the
server with JUDGEWATCH_TEST_POSTGRES_URL; deselect with `-m "not postgres"`.

Every test runs under the path guard (judgewatch/testing/path_guard.py): a test, fixture or the code under
test that opens a file beside the checkout (a data folder next to it) instead of inside it fails, naming the path.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import socket
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine

from judgewatch.contract.rubric import Rubric, load_rubric
from judgewatch.settings import REPO_ROOT, Settings
from judgewatch.storage.db import make_engine
from judgewatch.storage.migrations import migrate
from judgewatch.testing.path_guard import PathGuard, install
from judgewatch.testing.quick_demo import QuickDemo, run_quick_demo
from judgewatch.testing.store import postgres_schema, postgres_url

# Prefect's ephemeral server migrates a new PREFECT_HOME on first start; on a busy 2-core machine that takes
# longer than Prefect's default 20 s start-up timeout. Quiet and telemetry-free, as the CLI runs it.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# HF `datasets` looks for its packaged JSON builder on S3 when it may go online; the golden sets are local files.
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no version check against api.gradio.app

_SESSION_TOKEN = uuid.uuid4().hex[:8]
_schema_numbers = itertools.count(1)
PATH_GUARD = install(REPO_ROOT)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Allow pytest's tmp_path base (it may sit beside the checkout, e.g. with --basetemp=../tmp)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None:
        PATH_GUARD.allow(factory.getbasetemp())


def _guarded(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    """Run one phase of a test under the guard; fail it when it opened a path beside the checkout."""
    PATH_GUARD.take()
    PATH_GUARD.active = True
    try:
        result = yield
    finally:
        PATH_GUARD.active = False
    if found := sorted(set(PATH_GUARD.take())):
        shown = ", ".join(found[:5]) + (f" (+{len(found) - 5} more)" if len(found) > 5 else "")
        pytest.fail(
            f"{item.nodeid} ({phase}) opened {len(found)} path(s) outside the checkout {REPO_ROOT}: {shown}. "
            "Everything tests, benchmarks and scripts read must live in the repository.",
            pytrace=False,
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    _arm_endpoint_guard(item)
    return (yield from _guarded(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item, "teardown"))


@pytest.fixture(scope="module")
def prefect_server() -> Iterator[None]:
    """A temporary Prefect server for the tests of one module that run flows or concurrency limits for real."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect.logging.configuration import setup_logging
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        # Prefect's console handlers write to the stream they were made with: made here, on the test process's own
        # stderr, not inside a CliRunner whose stream is closed when it returns (a later module's flows then
        # failed logging "I/O operation on closed file", depending on the order the modules ran in).
        setup_logging(incremental=False)
        yield


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuickDemo]:
    """The quick demo run once per session, in a temporary Prefect server and store (read it, do not undo it)."""
    demo = run_quick_demo(tmp_path_factory.mktemp("demo"))
    yield demo
    demo.engine.dispose()


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A SQLite file store's URL in tmp_path (not created yet; the code under test migrates it)."""
    return f"sqlite:///{tmp_path / 'jw.db'}"


@pytest.fixture
def sqlite_engine(db: str) -> Engine:
    """A migrated engine on the `db` SQLite file."""
    engine = make_engine(db)
    migrate(engine)
    return engine


@pytest.fixture
def baseline_full() -> Iterator[None]:
    """The service declares `full` its baseline tier (JUDGEWATCH_BASELINE_TIER), as no synthetic release does."""
    from judgewatch.testing.synthetic_labels import declared_baseline

    with declared_baseline("full"):
        yield


@pytest.fixture
def path_guard() -> PathGuard:
    """The session's path guard (for the tests that check the guard itself)."""
    return PATH_GUARD


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file in tmp_path, or a new schema on the PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'judgewatch.db'}"
        return
    with postgres_schema(postgres_url(), f"jw_test_{_SESSION_TOKEN}_{next(_schema_numbers)}") as url:
        yield url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """A migrated engine on `db_url`."""
    eng = make_engine(db_url)
    migrate(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def closed_port_url() -> str:
    """The base URL of a port nothing listens on (bound, then released): an endpoint that is down."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="session")
def rubric() -> Rubric:
    """The shipped answer_quality rubric (English and Chinese templates)."""
    return load_rubric("answer_quality", rubrics_dir=REPO_ROOT / "rubrics")


# --- No test reaches a real model endpoint it did not start ---------------------------------------------------
# As pydantic_evals forbids model requests in its tests: every HTTP request made through httpx or httpx2 (the
# transport of the `openai` client) is checked before it connects. A request to any host but a loopback address
# is refused; so is a request to a real judge on this machine (the shared vLLM at JUDGEWATCH_TEST_VLLM_URL, or the
# `make judge-up` judge at the default JUDGEWATCH_JUDGE_URL) unless the test is marked `vllm`. The refused
# request raises `RealEndpointBlocked` and the test fails at teardown even when the code under test swallowed it
# (a judge turns a failed call into an unscored verdict). Subprocesses a test starts are not covered.


class RealEndpointBlocked(RuntimeError):
    """A test tried to reach a model endpoint it did not start."""


def _host_port(url: str) -> tuple[str, int]:
    """(host, port) with the loopback spellings made one, so `localhost:8012` is the shared judge too."""
    parsed = urlsplit(url)
    host = parsed.hostname or ""
    if host in ("localhost", "::1"):
        host = "127.0.0.1"
    return (host, parsed.port or (443 if parsed.scheme == "https" else 80))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_GUARD = pytest.StashKey["EndpointGuard"]()


class EndpointGuard:
    """Checks every outgoing request; `allow_real_judges` is set per test from its `vllm` marker."""

    def __init__(self, real_judges: set[tuple[str, int]]) -> None:
        self.real_judges = real_judges
        self.allow_real_judges = False
        self.violations: list[str] = []

    def check(self, url: str) -> None:
        host, port = _host_port(url)
        if not host:
            return  # no host, nothing to reach: the transport fails on its own, as the code under test expects
        if not _is_loopback(host):
            why = f"{url}: not a loopback address"
        elif (host, port) in self.real_judges and not self.allow_real_judges:
            why = f"{url}: a real judge endpoint (mark the test `vllm` to use it)"
        else:
            return
        self.violations.append(why)
        raise RealEndpointBlocked(f"tests may not reach a model endpoint they did not start: {why}")

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Wrap the sync and async transports of httpx and httpx2 so each request is checked first."""
        import httpx
        import httpx2

        guard = self
        for module in (httpx, httpx2):
            sync_send = module.HTTPTransport.handle_request
            async_send = module.AsyncHTTPTransport.handle_async_request

            def handle_request(self: Any, request: Any, _send: Any = sync_send) -> Any:
                guard.check(str(request.url))
                return _send(self, request)

            async def handle_async_request(self: Any, request: Any, _send: Any = async_send) -> Any:
                guard.check(str(request.url))
                return await _send(self, request)

            monkeypatch.setattr(module.HTTPTransport, "handle_request", handle_request)
            monkeypatch.setattr(module.AsyncHTTPTransport, "handle_async_request", handle_async_request)


def pytest_configure(config: pytest.Config) -> None:
    shared = os.environ.get("JUDGEWATCH_TEST_VLLM_URL", "http://127.0.0.1:8012/v1")
    guard = EndpointGuard({_host_port(shared), _host_port(str(Settings.model_fields["judge_url"].default))})
    patcher = pytest.MonkeyPatch()
    guard.install(patcher)
    config.stash[_GUARD] = guard
    config.add_cleanup(patcher.undo)


def _arm_endpoint_guard(item: pytest.Item) -> None:
    # From the setup hook, not a fixture: it runs before any fixture, so a session fixture set up by a vllm test
    # is allowed too.
    guard = item.config.stash[_GUARD]
    guard.allow_real_judges = item.get_closest_marker("vllm") is not None
    guard.violations.clear()


@pytest.fixture
def endpoint_guard(request: pytest.FixtureRequest) -> EndpointGuard:
    """The session's guard, for tests about the guard itself."""
    return request.config.stash[_GUARD]


@pytest.fixture(autouse=True)
def _fail_on_blocked_endpoints(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    violations = request.config.stash[_GUARD].violations
    if violations:
        pytest.fail("reached a model endpoint it did not start: " + "; ".join(violations), pytrace=False)


# The fast tier (`make test-fast`) deselects every test that needs something started: a test is marked by the
# fixtures it uses, so a new test that takes one of these is kept out of the fast tier without anyone remembering.
# A test that runs a flow on Prefect's ephemeral server uses no fixture: it carries `prefect_server` by hand, and the
# fast tier (ephemeral mode off) fails it when it does not.
SERVER_FIXTURES = {
    "prefect_server": "prefect_server",  # prefect_test_harness: a real Prefect server
    "quick_demo": "prefect_server",  # the quick demo runs its flows on a temporary Prefect server
    "vllm_url": "vllm",
    "page": "browser",  # pytest-playwright
    "context": "browser",
    "browser": "browser",
    "promtool": "prometheus",
    "prometheus_bin": "prometheus",
    "pytester": "child_pytest",
}


def server_markers(fixturenames: list[str]) -> set[str]:
    """The markers a test gets from the fixtures it uses (SERVER_FIXTURES)."""
    return {SERVER_FIXTURES[name] for name in fixturenames if name in SERVER_FIXTURES}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by the servers its fixtures start; run browser tests last: playwright's sync API keeps an
    event loop running in the main thread for the rest of the session, and every async test or `asyncio.run`
    after it would fail on that loop."""
    for item in items:
        for marker in sorted(server_markers(list(getattr(item, "fixturenames", ())))):
            if item.get_closest_marker(marker) is None:
                item.add_marker(marker)
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
