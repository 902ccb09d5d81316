"""Pairwise judges: given one question, its references and two answers, name the better one ("A", "B", "tie").

One call judges one order only; `judgewatch.trust.pairwise` asks in both orders and reconciles them. The
vLLM judge answers `{"winner": "A"|"B"|"tie", "reason": ...}` under a json_schema built here (winner first,
so a reply cut by max_tokens still carries it); every failure is an unscored call with its reason.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judges.base import config_hash
from judges.chat_client import ChatClient
from judges.errors import CallError, excerpt
from judges.reference import ALGORITHM_VERSION, coverage
from judges.reference import NAME as REFERENCE_NAME
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import render_pair_messages
from judgewatch.contract.reply import ReplyError
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason

logger = logging.getLogger(__name__)

Winner = Literal["A", "B", "tie"]
PAIRWISE_FORMAT = "chat:system-rubric+user-pair;json_schema{winner,reason};v1"
_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class PairCall:
    """One ordered comparison: the winner by position, or why there is none."""

    winner: Winner | None
    reason: str = ""
    unscored_reason: UnscoredReason | None = None
    detail: str | None = None
    latency_ms: float = 0.0


@runtime_checkable
class PairwiseJudge(Protocol):
    """Names the better of answer A and answer B; never raises for a per-pair failure."""

    kind: str

    def identity(self, rubric: Rubric) -> JudgeIdentity: ...

    async def prefer(self, item: JudgeItem, answer_a: str, answer_b: str, rubric: Rubric) -> PairCall: ...

    async def aclose(self) -> None: ...


def pair_schema(rubric: Rubric) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "winner": {"type": "string", "enum": ["A", "B", "tie"]},
            "reason": {"type": "string", "maxLength": rubric.reason_max_chars},
        },
        "required": ["winner", "reason"],
        "additionalProperties": False,
    }


class _PairReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    winner: Winner
    reason: str = Field(default="", max_length=2000)


def parse_pair_reply(text: str, *, finish_reason: str | None = None) -> tuple[Winner, str]:
    """(winner, reason) from a reply, or ReplyError; a reply cut by max_tokens keeps a winner it already wrote."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if finish_reason == "length":
            match = re.search(r'"winner"\s*:\s*"(A|B|tie)"', text)
            if match:
                return match.group(1), "[truncated]"  # type: ignore[return-value]
            raise ReplyError("reply cut off by max_tokens before the winner", truncated=True) from exc
        raise ReplyError(f"reply is not JSON: {exc.msg} at char {exc.pos}") from exc
    try:
        reply = _PairReply.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(object)"
        raise ReplyError(f"reply does not match the pairwise schema: {loc}: {first['msg']}") from exc
    return reply.winner, reply.reason


class OpenAIPairwiseJudge:
    """The vLLM (OpenAI-compatible) judge asked "A or B?" under a pairwise rubric."""

    kind = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "EMPTY",
        concurrency: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        max_tokens: int = 96,
        seed: int = 1234,
        temperature: float = 0.0,
    ) -> None:
        self.client = ChatClient(
            base_url, model, api_key=api_key, concurrency=concurrency, timeout_s=timeout_s, max_retries=max_retries
        )
        self.model = model
        self.max_tokens = max_tokens
        self.seed = seed
        self.temperature = temperature

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        digest = config_hash(
            rubric,
            model=self.model,
            temperature=self.temperature,
            seed=self.seed,
            max_tokens=self.max_tokens,
            prompt_format=PAIRWISE_FORMAT,
        )
        return JudgeIdentity(kind=self.kind, name=self.model, endpoint=self.client.base_url, config_hash=digest)

    async def prefer(self, item: JudgeItem, answer_a: str, answer_b: str, rubric: Rubric) -> PairCall:
        messages = render_pair_messages(rubric, item, answer_a, answer_b)
        schema = {"name": f"{rubric.name}_verdict", "schema": pair_schema(rubric), "strict": True}
        fmt = {"type": "json_schema", "json_schema": schema}
        try:
            result = await self.client.chat(
                messages, max_tokens=self.max_tokens, temperature=self.temperature, seed=self.seed, response_format=fmt
            )
        except CallError as exc:
            return PairCall(None, unscored_reason=exc.failure.reason, detail=exc.failure.detail)
        if not result.completion.choices:
            return PairCall(None, unscored_reason=UnscoredReason.judge_error, detail="the endpoint returned no choices")
        choice = result.completion.choices[0]
        text = choice.message.content or ""
        try:
            winner, reason = parse_pair_reply(text, finish_reason=choice.finish_reason)
        except ReplyError as exc:
            why = UnscoredReason.truncated if exc.truncated else UnscoredReason.parse_error
            return PairCall(None, unscored_reason=why, detail=f"{exc}; reply: {excerpt(text, _EXCERPT_CHARS)!r}")
        return PairCall(winner, reason[: rubric.reason_max_chars], latency_ms=result.latency_ms)

    async def aclose(self) -> None:
        await self.client.aclose()


class ReferencePairwiseJudge:
    """The offline reference judge, pairwise: the answer whose words the references support more wins.

    Position-blind by construction (it compares two numbers), so it is consistent over both orders; a
    difference of support within `margin` is a tie.
    """

    kind = "reference"
    name = REFERENCE_NAME

    def __init__(self, margin: float = 0.05) -> None:
        self.margin = margin

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        digest = config_hash(rubric, algorithm="overlap-pairwise", version=ALGORITHM_VERSION, margin=self.margin)
        return JudgeIdentity(kind=self.kind, name=self.name, config_hash=digest)

    async def prefer(self, item: JudgeItem, answer_a: str, answer_b: str, rubric: Rubric) -> PairCall:
        start = time.perf_counter()
        support_a = coverage(item.model_copy(update={"answer": answer_a})).faithfulness
        support_b = coverage(item.model_copy(update={"answer": answer_b})).faithfulness
        latency = (time.perf_counter() - start) * 1000.0
        if support_a is None or support_b is None:
            return PairCall(None, unscored_reason=UnscoredReason.no_reference, detail="the item has no references")
        diff = support_a - support_b
        winner: Winner = "tie" if abs(diff) <= self.margin else ("A" if diff > 0 else "B")
        reason = f"references support {support_a:.0%} of A and {support_b:.0%} of B"
        return PairCall(winner, reason, latency_ms=latency)

    async def aclose(self) -> None:
        return None
