"""The judge's context window and its token counts, learned from the endpoint (vLLM's /v1/models and /tokenize;
other servers: the configured window and a conservative estimate, docs/judging.md)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import openai

from judges.chat_client import ChatClient
from judgewatch.redact import mask_url

logger = logging.getLogger(__name__)

CACHE_SIZE = 16384
MESSAGE_OVERHEAD = 8  # estimated tokens of a chat template's role markers per message
# A chat template's tokens per message (role markers, separators, a tokenizer's prefix) and for the generation
# prompt, taken generously: `surely_fits` must never call a prompt short that the endpoint would count long.
TEMPLATE_BOUND = 32
ESTIMATE_MARGIN = 0.05  # an estimate keeps this share of the budget free, in case it counted short


@dataclass(frozen=True)
class Window:
    """How many tokens the judge may read: the model's window minus the reply's `max_tokens`."""

    size: int  # max_model_len
    reply_tokens: int
    exact: bool  # token counts come from the endpoint's tokenizer
    source: str  # "endpoint" or "settings"

    @property
    def budget(self) -> int:
        """Prompt tokens that fit; an estimate keeps a margin for its own error."""
        room = self.size - self.reply_tokens
        return room if self.exact else math.floor(room * (1 - ESTIMATE_MARGIN))


def estimate_tokens(text: str, chars_per_token: float) -> int:
    """A conservative count without a tokenizer: ASCII at `chars_per_token`, every other character one token."""
    other = 0 if text.isascii() else len(text) - len(text.encode("ascii", "ignore"))  # characters over 127
    return math.ceil((len(text) - other) / chars_per_token) + other


def tokens_bound(messages: Sequence[dict[str, str]]) -> int:
    """An upper bound of a chat prompt's tokens whatever the tokenizer: no tokenizer makes more tokens of a text
    than its UTF-8 bytes (byte-level BPE makes at least one byte per token), plus TEMPLATE_BOUND per message and
    one more for the generation prompt."""
    return sum(len(m["content"].encode("utf-8")) + TEMPLATE_BOUND for m in messages) + TEMPLATE_BOUND


class _Lru(OrderedDict[Hashable, int]):
    def remember(self, key: Hashable, value: int) -> int:
        self[key] = value
        if len(self) > CACHE_SIZE:
            self.popitem(last=False)
        return value


class TokenCounter:
    """Token counts of texts and chat messages for one endpoint: exact through /tokenize when it has one."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.endpoint = client.endpoint
        self._window: Window | None = None
        self._exact = True  # until the endpoint shows it cannot count
        self._cache = _Lru()
        # One learner at a time: the first items of a run all ask at once, and one /models answer serves them all.
        self._learning: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._tries = 0

    async def window(self) -> Window | None:
        """The endpoint's window, learned once; None while the endpoint does not answer (try again later)."""
        if self._window is not None:
            return self._window
        loop = asyncio.get_running_loop()
        if self._learning is None or self._learning[0] is not loop:
            self._learning = (loop, asyncio.Lock())
        tries = self._tries
        async with self._learning[1]:
            if self._window is not None or self._tries != tries:
                return self._window  # learned, or just tried and failed while this caller waited
            self._tries += 1
            return await self._learn()

    async def _learn(self) -> Window | None:
        cfg = self.endpoint
        # The model card and whether /tokenize counts, asked at once: the run's first request waits for one answer.
        probe = {"prompt": "judgewatch", "add_special_tokens": False}
        card_or_error, counted = await asyncio.gather(
            self.client.model_card(), self._tokenize(probe) if self._exact else asyncio.sleep(0), return_exceptions=True
        )
        if isinstance(card_or_error, BaseException):  # down or not OpenAI-compatible: the chat call will say so
            logger.debug("%s: cannot read /models (%s); window not learned yet", mask_url(cfg.base_url), card_or_error)
            return None
        reported = (card_or_error or {}).get("max_model_len")
        if isinstance(reported, int) and reported > 0:
            size, source = reported, "endpoint"
        else:
            size, source = cfg.context_window, "settings"
            logger.info(
                "%s does not report its context window; assuming %d tokens (JUDGEWATCH_JUDGE_CONTEXT_WINDOW)",
                mask_url(cfg.base_url),
                size,
            )
        if counted is None or isinstance(counted, BaseException):
            self._exact = False
        self._window = Window(size=size, reply_tokens=cfg.max_tokens, exact=self._exact, source=source)
        logger.info(
            "%s: context window %d tokens (%s), %d kept for the reply, token counts %s",
            mask_url(cfg.base_url),
            size,
            source,
            cfg.max_tokens,
            "exact (/tokenize)" if self._exact else f"estimated ({cfg.chars_per_token} chars/token)",
        )
        return self._window

    async def _tokenize(self, body: dict[str, object]) -> int | None:
        """The endpoint's count, or None when it cannot count (no /tokenize, an error, a reply without count)."""
        try:
            reply = await self.client.post_root("/tokenize", {"model": self.endpoint.model, **body})
        except (openai.APIError, TimeoutError) as exc:
            if isinstance(exc, openai.APIStatusError) and exc.status_code in (404, 405):
                self._exact = False  # no tokenizer endpoint: estimate from now on
            logger.debug("%s /tokenize failed: %s", mask_url(self.endpoint.base_url), exc)
            return None
        count = reply.get("count") if isinstance(reply, dict) else None
        return count if isinstance(count, int) else None

    async def text(self, text: str) -> int:
        """Tokens of `text` alone (no special tokens), cached per text."""
        key = ("text", text)
        if (hit := self._cache.get(key)) is not None:
            return hit
        counted = await self._tokenize({"prompt": text, "add_special_tokens": False}) if self._exact else None
        if counted is None:
            return estimate_tokens(text, self.endpoint.chars_per_token)  # not cached: the endpoint may count later
        return self._cache.remember(key, counted)

    async def texts(self, texts: Sequence[str]) -> list[int]:
        return list(await asyncio.gather(*(self.text(t) for t in texts)))

    async def messages(self, messages: Sequence[dict[str, str]]) -> int:
        """Prompt tokens of a chat request with these messages (template and generation prompt included)."""
        key = ("messages", *((m["role"], m["content"]) for m in messages))
        if (hit := self._cache.get(key)) is not None:
            return hit
        body = {"messages": list(messages), "add_generation_prompt": True}
        counted = await self._tokenize(body) if self._exact else None
        if counted is None:
            cpt = self.endpoint.chars_per_token
            return sum(estimate_tokens(m["content"], cpt) + MESSAGE_OVERHEAD for m in messages)
        return self._cache.remember(key, counted)
