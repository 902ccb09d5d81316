"""One OpenAI-compatible chat client: bounded concurrency, a per-request timeout, retries for transient errors.

Retries live here and only here (the AsyncOpenAI client is built with `max_retries=0`). Both the judge and
the regression flow's answer generation use this class, so both share the same failure semantics.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion

from judges.budget import judge_slot
from judges.config import EndpointConfig
from judges.errors import CallError, classify_exception
from judgewatch.redact import mask_url
from judgewatch.url_secrets import reveal

logger = logging.getLogger(__name__)

HEALTH_TIMEOUT_S = 5.0
CHAT_PATH = "/chat/completions"  # where `chat.completions.create` posts, under the base URL
_CHAT: Any = {"security": {"bearer_auth": True}}  # the request options `create` gives (the API key as bearer token)


@dataclass(frozen=True)
class ChatResult:
    completion: ChatCompletion
    attempts: int
    latency_ms: float  # from the first attempt's start to the answer, backoff included


class ChatClient:
    """Chat completions against one endpoint. The client and semaphore are bound to the running event loop (again
    when it changes, as with successive `asyncio.run` calls); the pool never is the bottleneck of the concurrency."""

    def __init__(self, endpoint: EndpointConfig) -> None:
        self.endpoint = endpoint
        self._client: openai.AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._random = random.Random()
        self._models: list[dict[str, Any]] | None = None  # GET /models as the health check last read it

    def _bind(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._semaphore is None or self._loop is not loop:
            cfg = self.endpoint
            http_client = openai.DefaultAsyncHttpxClient(
                limits=httpx2.Limits(max_connections=cfg.concurrency + 4, max_keepalive_connections=cfg.concurrency),
                # asyncio.timeout below bounds each attempt; this is the transport's own backstop.
                timeout=httpx2.Timeout(cfg.timeout_s + 5.0, connect=min(cfg.timeout_s, 10.0)),
            )
            self._client = openai.AsyncOpenAI(
                base_url=reveal(cfg.base_url),  # the one place the credential is given back
                api_key=cfg.api_key,
                default_headers=dict(cfg.headers) or None,
                max_retries=0,
                http_client=http_client,
            )
            self._semaphore = asyncio.Semaphore(cfg.concurrency)
            self._loop = loop
        return self._client, self._semaphore

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        """Jittered exponential backoff; a server's Retry-After is honoured up to the cap."""
        cap = self.endpoint.max_backoff_s
        delay = min(cap, self.endpoint.backoff_s * 2.0 ** (attempt - 1)) * self._random.uniform(0.5, 1.0)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, cap))
        return delay

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        top_logprobs: int | None = None,
    ) -> ChatResult:
        """One chat completion, retried on transient errors; raises CallError when it fails for good. Sampling follows
        the endpoint's configuration; `max_tokens` overrides its budget for one call; `top_logprobs` asks for that many
        alternatives' log-probabilities at every token of the reply."""
        client, semaphore = self._bind()
        cfg = self.endpoint
        body: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "max_tokens": max_tokens or cfg.max_tokens,
            "temperature": cfg.temperature,
        }
        if cfg.seed is not None:
            body["seed"] = cfg.seed
        if response_format is not None:
            body["response_format"] = response_format
        if top_logprobs is not None:
            body["logprobs"], body["top_logprobs"] = True, top_logprobs
        if extra_body:
            body.update(extra_body)  # merged into the JSON body as is (stop, top_p, vendor fields), as openai does
        started: float | None = None
        attempt = 0
        while True:
            attempt += 1
            try:
                # The process-wide semaphore first, then the endpoint's slot in the Prefect global limit (if any).
                async with semaphore, judge_slot(cfg.base_url):
                    if started is None:
                        started = time.perf_counter()
                    async with asyncio.timeout(cfg.timeout_s):
                        # `chat.completions.create` without its walk of every parameter through openai's typed
                        # dicts: 0.5 ms of CPU a request (a fifth of a bare client loop's CPU), and the identity on
                        # this plain JSON (tests/judges/test_openai_judge.py holds the two requests equal).
                        completion = await client.post(CHAT_PATH, cast_to=ChatCompletion, body=body, options=_CHAT)
                return ChatResult(completion, attempt, (time.perf_counter() - started) * 1000)
            except Exception as exc:
                failure = classify_exception(exc)
                elapsed_ms = (time.perf_counter() - (started or time.perf_counter())) * 1000
                if not failure.transient or attempt > cfg.max_retries:
                    raise CallError(failure, attempts=attempt, latency_ms=elapsed_ms) from exc
                delay = self._backoff(attempt, failure.retry_after_s)
                where = mask_url(self.endpoint.base_url)
                logger.debug("%s attempt %d failed (%s); retrying in %.2fs", where, attempt, failure.detail, delay)
            await asyncio.sleep(delay)

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> str:
        """The assistant's text for `messages` (e.g. a tier's answer); raises CallError on failure."""
        result = await self.chat(messages, max_tokens=max_tokens, extra_body=extra_body)
        choices = result.completion.choices
        return (choices[0].message.content or "") if choices else ""

    async def health(self) -> bool:
        """True when the endpoint answers GET /models; never raises."""
        client, _ = self._bind()
        try:
            page = await client.models.list(timeout=min(self.endpoint.timeout_s, HEALTH_TIMEOUT_S))
        except Exception as exc:
            logger.debug("%s health check failed: %s", mask_url(self.endpoint.base_url), exc)
            return False
        self._models = [model.model_dump() for model in page.data]
        return True

    async def model_card(self) -> dict[str, Any] | None:
        """The served model's entry of GET /models (vLLM adds `max_model_len`), None when not listed, the client's error
        raised when the endpoint does not answer; the health check's answer when there was one (read once)."""
        if self._models is None:
            client, _ = self._bind()
            page = await client.models.list(timeout=min(self.endpoint.timeout_s, HEALTH_TIMEOUT_S))
            self._models = [model.model_dump() for model in page.data]
        return next((model for model in self._models if model.get("id") == self.endpoint.model), None)

    async def post_root(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST `body` to `path` at the server's root, beside /v1 (vLLM's /tokenize); the decoded JSON reply. Not
        retried and outside the concurrency budget: these are cheap calls the caller can do without."""
        client, _ = self._bind()
        url = reveal(self.endpoint.base_url).removesuffix("/v1") + path
        options: Any = {"timeout": min(self.endpoint.timeout_s, HEALTH_TIMEOUT_S)}
        return await client.post(url, cast_to=object, body=dict(body), options=options)

    async def aclose(self) -> None:
        client, loop = self._client, self._loop
        self._client, self._semaphore, self._loop = None, None, None
        # A client bound to a loop that has since ended cannot be closed from this one: drop it.
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()
