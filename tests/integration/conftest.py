"""Integration fixtures: the real vLLM CPU judge started by scripts/run_tests.sh (scripts/judge_serve.sh)."""

from __future__ import annotations

import os

import httpx
import pytest

VLLM_MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def vllm_url() -> str:
    """Base URL of the real vLLM judge; fails (never skips) when it is not serving."""
    url = os.environ.get("JUDGEWATCH_TEST_VLLM_URL", "http://127.0.0.1:8012/v1")
    try:
        ok = httpx.get(url.removesuffix("/v1") + "/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        ok = False
    if not ok:
        pytest.fail(
            f"the real vLLM judge is not serving at {url}: run the tests with `make test` "
            "(or start it: JUDGEWATCH_JUDGE_PORT=8012 scripts/judge_serve.sh start), or deselect with -m 'not vllm'"
        )
    return url
