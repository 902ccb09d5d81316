"""The OpenAI-compatible (vLLM) judge: rubric prompt -> json_schema-constrained reply -> validated Verdict.

Every failure is an unscored verdict with its reason, never raised and never a silent 0; prompts are fitted to
the context window first (`judges.fit`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openai.types.chat import ChatCompletion

from judges.alignment import Alignment, for_rubric
from judges.base import config_hash, no_reference_verdict, plan, scored_verdict, unscored
from judges.chat_client import ChatClient, ChatResult
from judges.config import EndpointConfig
from judges.errors import CallError
from judges.fit import Fitted, TooLong, fit_messages, with_shots
from judges.replies import Unusable, read_reply
from judges.score_logprobs import expected_scores, readable_scale, token_logprobs
from judges.window import TokenCounter
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import render_messages
from judgewatch.contract.reply import parse_reply, response_format
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, ScoreReading, TokenUsage, UnscoredReason, Verdict
from judgewatch.redact import mask_url

logger = logging.getLogger(__name__)

# Names the request layout (system rubric + user content, json_schema output): part of the config hash.
PROMPT_FORMAT = "chat:system-rubric+user-content;json_schema;v1"
# A reply the parser rejects (`parse_error`) is asked for once more with the same request; a second malformed
# reply is stored unscored. Sampled judges often answer well the second time; a truncated reply is not retried
# (the same max_tokens would cut it again).
PARSE_REPAIRS = 1


def token_usage(completion: ChatCompletion) -> TokenUsage:
    """Prompt, completion and prefix-cached prompt tokens as the endpoint reported them (0 when absent)."""
    usage = completion.usage
    if usage is None:
        return TokenUsage()
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details is not None and details.cached_tokens else 0
    return TokenUsage(prompt=usage.prompt_tokens or 0, completion=usage.completion_tokens or 0, cached=cached)


@dataclass(frozen=True)
class _Spent:
    """Latency, attempts and tokens of the requests made for an item before the current one."""

    latency_ms: float = 0.0
    attempts: int = 0
    tokens: TokenUsage = field(default_factory=TokenUsage)


class OpenAIJudge:
    """A judge served behind an OpenAI-compatible chat-completions endpoint (vLLM in production)."""

    kind = "openai"

    def __init__(self, endpoint: EndpointConfig, alignments: Mapping[str, Alignment] | None = None) -> None:
        self.endpoint = endpoint
        self.alignments = dict(alignments or {})  # rubric name -> few-shot examples (`judgewatch judges align`)
        self.client = ChatClient(endpoint)
        self.tokens = TokenCounter(self.client)
        # Per rubric content hash: identities and response formats are the same for every item.
        self._identities: dict[str, JudgeIdentity] = {}
        self._shots: dict[str, list[dict[str, str]]] = {}
        self._formats: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
        self._warned_reading = False  # "no usable log-probabilities" is logged once per judge, i.e. once per run

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    def __repr__(self) -> str:
        return f"OpenAIJudge({mask_url(self.base_url)!r}, {self.model!r})"

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        """kind/model/endpoint; the hash leaves the URL out, so replicas of one model are one series."""
        identity = self._identities.get(rubric.content_hash)
        if identity is None:
            aligned = for_rubric(self.alignments, rubric)
            examples = {"examples": aligned.digest} if aligned else {}  # unaligned: the hash it always had
            params = {**self.endpoint.scoring_params(), "prompt_format": PROMPT_FORMAT, **examples}
            digest, endpoint = config_hash(rubric, **params), mask_url(self.base_url)
            identity = JudgeIdentity(kind=self.kind, name=self.model, endpoint=endpoint, config_hash=digest)
            self._shots[rubric.content_hash] = aligned.shots(rubric) if aligned else []
            self._identities[rubric.content_hash] = identity
        return identity

    def fit_item_ids(self) -> frozenset[str]:
        """Content keys of every few-shot example's question: validation on those items is in-sample."""
        return frozenset().union(*(a.fit_item_ids() for a in self.alignments.values()))

    def _response_format(self, rubric: Rubric, to_score: list[str]) -> dict[str, Any]:
        key = (rubric.content_hash, tuple(to_score))
        fmt = self._formats.get(key)
        if fmt is None:
            fmt = self._formats[key] = response_format(rubric, to_score)
        return fmt

    async def judge(self, item: JudgeItem, rubric: Rubric) -> Verdict:
        """Grade one item; every per-item failure comes back as an unscored Verdict."""
        identity = self.identity(rubric)
        to_score, not_applicable = plan(rubric, item)
        if not to_score:
            return no_reference_verdict(item, rubric, identity)
        fitted = await self._fit(item, rubric, to_score)
        if isinstance(fitted, TooLong):
            too_long = UnscoredReason.too_long  # nothing was sent
            return unscored(item, rubric, identity, too_long, fitted.detail, not_applicable=not_applicable, attempts=0)
        response_format = self._response_format(rubric, to_score)
        top_logprobs = self.endpoint.top_logprobs if self.endpoint.logprobs else None
        spent = _Spent()  # of the requests before a repair
        for repair in range(PARSE_REPAIRS + 1):
            try:
                result = await self.client.chat(
                    fitted.messages, response_format=response_format, top_logprobs=top_logprobs
                )
            except CallError as exc:
                return unscored(
                    item, rubric, identity, exc.failure.reason, exc.failure.detail, not_applicable=not_applicable,
                    latency_ms=spent.latency_ms + exc.latency_ms, attempts=spent.attempts + exc.attempts,
                    tokens=spent.tokens,
                )  # fmt: skip
            verdict = self._verdict(item, rubric, identity, to_score, not_applicable, result, spent)
            if verdict.unscored_reason is not UnscoredReason.parse_error or repair == PARSE_REPAIRS:
                break
            logger.debug("item %s: malformed reply, asking once more", item.id)
            spent = _Spent(verdict.latency_ms, verdict.attempts, verdict.tokens)
        verdict.trimmed = fitted.trimmed
        return verdict

    async def _fit(self, item: JudgeItem, rubric: Rubric, to_score: list[str]) -> Fitted | TooLong:
        """The messages fitted to the endpoint's window; the whole prompt when fitting is off or not yet possible."""
        shots = self._shots[rubric.content_hash]  # set by `identity`, which `judge` calls first
        window = await self.tokens.window() if self.endpoint.fit_prompt else None
        if window is None:
            return Fitted(with_shots(render_messages(rubric, item, to_score), shots))
        return await fit_messages(item, rubric, to_score, self.tokens, window, shots)

    def _verdict(
        self,
        item: JudgeItem,
        rubric: Rubric,
        identity: JudgeIdentity,
        to_score: list[str],
        not_applicable: list[str],
        result: ChatResult,
        spent: _Spent,
    ) -> Verdict:
        cost: dict[str, Any] = {
            "latency_ms": spent.latency_ms + result.latency_ms,
            "attempts": spent.attempts + result.attempts,
            "tokens": spent.tokens + token_usage(result.completion),
            "not_applicable": not_applicable,
        }
        outcome = read_reply(result, lambda text, finish: parse_reply(rubric, to_score, text, finish_reason=finish))
        if isinstance(outcome, Unusable):
            return unscored(item, rubric, identity, outcome.reason, outcome.detail, **cost)
        scores, reason = outcome
        cost.pop("not_applicable")
        cost.update(self._reading(rubric, scores, result))
        return scored_verdict(item, rubric, identity, scores, not_applicable, reason, **cost)

    def _reading(self, rubric: Rubric, scores: dict[str, int], result: ChatResult) -> dict[str, Any]:
        """`expected_scores` and `score_reading` of a scored reply (integers only unless logprobs were asked)."""
        if not self.endpoint.logprobs:
            return {}
        choices = result.completion.choices
        entries = token_logprobs(choices[0]) if choices else None
        read = expected_scores(rubric, scores, entries) if entries else None
        if read is None:
            self._warn_once(rubric, "no log-probabilities in the reply" if not entries else "no score token found")
            return {"score_reading": ScoreReading.no_logprobs}
        expected = {name: round(levels.expected, 4) for name, levels in read.items()}
        return {"score_reading": ScoreReading.expected, "expected_scores": expected}

    def _warn_once(self, rubric: Rubric, why: str) -> None:
        if self._warned_reading:
            return
        self._warned_reading = True
        if not readable_scale(rubric):
            why = f"the scale {rubric.scale.min}-{rubric.scale.max} has levels of more than one digit"
        logger.warning(
            "%s: probability-weighted scores asked for, but %s: verdicts carry the integers only "
            "(score_reading=no_logprobs); said once per run",
            self,
            why,
        )

    async def health(self) -> bool:
        """True when the endpoint answers GET /models (the gate's 'endpoint unreachable' check)."""
        return await self.client.health()

    async def aclose(self) -> None:
        await self.client.aclose()
