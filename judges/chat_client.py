"""One OpenAI-compatible chat client: bounded concurrency, a per-request timeout, retries for transient errors.

Retries live here and only here (the AsyncOpenAI client is built with `max_retries=0`). Both the judge and
the regression flow's answer generation use this class, so both share the same failure semantics.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from typing import Any, cast

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from judges.budget import judge_slot
from judges.errors import CallError, classify_exception

logger = logging.getLogger(__name__)

HEALTH_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ChatResult:
    completion: ChatCompletion
    attempts: int
    latency_ms: float  # from the first attempt's start to the answer, backoff included


class ChatClient:
    """Chat completions against one endpoint (vLLM or any OpenAI-compatible server).

    The AsyncOpenAI client and the semaphore are created lazily in the running event loop (and again if
    the loop changes, as with successive `asyncio.run` calls); the connection pool is at least as large as
    the concurrency so the pool never becomes the bottleneck.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "EMPTY",
        concurrency: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._client: openai.AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._random = random.Random()

    def _bind(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._semaphore is None or self._loop is not loop:
            http_client = openai.DefaultAsyncHttpxClient(
                limits=httpx2.Limits(max_connections=self.concurrency + 4, max_keepalive_connections=self.concurrency),
                # asyncio.timeout below bounds each attempt; this is the transport's own backstop.
                timeout=httpx2.Timeout(self.timeout_s + 5.0, connect=min(self.timeout_s, 10.0)),
            )
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self.api_key, max_retries=0, http_client=http_client
            )
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._loop = loop
        return self._client, self._semaphore

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        """Jittered exponential backoff; a server's Retry-After is honoured up to the cap."""
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * self._random.uniform(0.5, 1.0)
        if retry_after_s is not None:
            delay = max(delay, min(retry_after_s, self.max_backoff_s))
        return delay

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        seed: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion, retried on transient errors; raises CallError when it fails for good."""
        client, semaphore = self._bind()
        params: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        if seed is not None:
            params["seed"] = seed
        if response_format is not None:
            params["response_format"] = response_format
        started: float | None = None
        attempt = 0
        while True:
            attempt += 1
            try:
                # The process-wide semaphore first, then the endpoint's slot in the Prefect global limit (if any).
                async with semaphore, judge_slot(self.base_url):
                    if started is None:
                        started = time.perf_counter()
                    async with asyncio.timeout(self.timeout_s):
                        completion = await client.chat.completions.create(
                            model=self.model,
                            messages=cast(list[ChatCompletionMessageParam], messages),
                            **params,
                        )
                return ChatResult(completion, attempt, (time.perf_counter() - started) * 1000)
            except Exception as exc:
                failure = classify_exception(exc)
                elapsed_ms = (time.perf_counter() - (started or time.perf_counter())) * 1000
                if not failure.transient or attempt > self.max_retries:
                    raise CallError(failure, attempts=attempt, latency_ms=elapsed_ms) from exc
                delay = self._backoff(attempt, failure.retry_after_s)
                logger.debug(
                    "%s attempt %d failed (%s); retrying in %.2fs", self.base_url, attempt, failure.detail, delay
                )
            await asyncio.sleep(delay)

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> str:
        """The assistant's text for `messages` (e.g. a tier's answer); raises CallError on failure."""
        result = await self.chat(messages, max_tokens=max_tokens, temperature=temperature, seed=seed)
        choices = result.completion.choices
        return (choices[0].message.content or "") if choices else ""

    async def health(self) -> bool:
        """True when the endpoint answers GET /models; never raises."""
        client, _ = self._bind()
        try:
            await client.models.list(timeout=min(self.timeout_s, HEALTH_TIMEOUT_S))
        except Exception as exc:
            logger.debug("%s health check failed: %s", self.base_url, exc)
            return False
        return True

    async def aclose(self) -> None:
        client, loop = self._client, self._loop
        self._client, self._semaphore, self._loop = None, None, None
        # A client bound to a loop that has since ended cannot be closed from this one: drop it.
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()
