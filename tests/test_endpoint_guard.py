"""The test-wide guard in tests/conftest.py: no test reaches a model endpoint it did not start."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import httpx2
import pytest

from judges.chat_client import ChatClient
from judges.config import EndpointConfig
from judges.errors import CallError
from judgewatch.testing.simulator import run_simulator_in_thread

from .conftest import EndpointGuard, RealEndpointBlocked

pytest_plugins = ["pytester"]

SHARED_VLLM = os.environ.get("JUDGEWATCH_TEST_VLLM_URL", "http://127.0.0.1:8012/v1")


def test_a_remote_host_is_refused_before_any_connection(endpoint_guard: EndpointGuard) -> None:
    with pytest.raises(RealEndpointBlocked, match="not a loopback address"):
        httpx.get("http://judge.example.com/v1/models")
    with pytest.raises(RealEndpointBlocked, match="not a loopback address"):
        httpx2.get("https://10.1.2.3:8000/v1/models")
    assert len(endpoint_guard.violations) == 2
    endpoint_guard.violations.clear()  # this test provoked them on purpose


async def test_an_openai_judge_call_that_swallows_the_refusal_is_still_recorded(endpoint_guard: EndpointGuard) -> None:
    client = ChatClient(EndpointConfig("http://api.example.com/v1", "m", max_retries=0))
    try:
        with pytest.raises(CallError):  # the client turns it into a failed call, as a judge would
            await client.chat([{"role": "user", "content": "hi"}])
    finally:
        await client.aclose()
    assert endpoint_guard.violations and "api.example.com" in endpoint_guard.violations[0]
    endpoint_guard.violations.clear()


def test_the_shared_vllm_judge_is_refused_to_a_test_not_marked_vllm(endpoint_guard: EndpointGuard) -> None:
    with pytest.raises(RealEndpointBlocked, match="mark the test `vllm`"):
        httpx.get(SHARED_VLLM + "/models")
    with pytest.raises(RealEndpointBlocked, match="mark the test `vllm`"):
        httpx.get(SHARED_VLLM.replace("127.0.0.1", "localhost") + "/models")
    endpoint_guard.violations.clear()


@pytest.mark.vllm
def test_a_vllm_test_may_reach_the_shared_judge(endpoint_guard: EndpointGuard) -> None:
    assert httpx.get(SHARED_VLLM + "/models", timeout=30).status_code == 200
    assert endpoint_guard.violations == []


def test_a_url_without_a_host_fails_in_the_transport_as_it_would_without_the_guard(
    endpoint_guard: EndpointGuard,
) -> None:
    with pytest.raises(httpx.UnsupportedProtocol):
        httpx.get("not a url")
    assert endpoint_guard.violations == []


def test_an_endpoint_the_test_started_on_loopback_is_allowed(endpoint_guard: EndpointGuard) -> None:
    with run_simulator_in_thread(latency_ms=1) as sim:
        assert httpx.get(sim.base_url + "/models").status_code == 200
    assert endpoint_guard.violations == []


def test_a_test_that_reaches_a_remote_endpoint_fails_even_when_it_swallows_the_error(
    pytester: pytest.Pytester,
) -> None:
    shutil.copy(Path(__file__).with_name("conftest.py"), pytester.path / "conftest.py")
    pytester.makepyfile(
        test_inner="""
        import httpx

        def test_swallows_it():
            try:
                httpx.get("http://judge.example.com/v1/models")
            except Exception:
                pass

        def test_stays_local():
            assert 1 + 1 == 2
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*reached a model endpoint it did not start*judge.example.com*"])
