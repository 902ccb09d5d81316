"""Pairwise judges: given one question, its references and two answers, name the better one ("A", "B", "tie").

One call judges one order only; `judgewatch.trust.pairwise` asks in both orders and reconciles them. Every failure
is an unscored call with its reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from typing_extensions import override

from judges.base import config_hash
from judges.chat_client import ChatClient
from judges.config import EndpointConfig
from judges.errors import CallError
from judges.reference import ALGORITHM_VERSION, coverage
from judges.reference import NAME as REFERENCE_NAME
from judges.reference_model import load_models
from judges.replies import Unusable, read_reply
from judgewatch.contract.items import JudgeItem
from judgewatch.contract.prompt import render_pair_messages
from judgewatch.contract.reply import Winner, pair_response_format, parse_pair_reply
from judgewatch.contract.rubric import Rubric
from judgewatch.contract.verdicts import JudgeIdentity, UnscoredReason

PAIRWISE_FORMAT = "chat:system-rubric+user-pair;json_schema{winner,reason};v1"
# A pairwise reply is a winner and a short reason: its own token budget, whatever the endpoint's pointwise one.
PAIR_REPLY_MAX_TOKENS = 96


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


class OpenAIPairwiseJudge:
    """The vLLM (OpenAI-compatible) judge asked "A or B?" under a pairwise rubric."""

    kind = "openai"

    def __init__(self, endpoint: EndpointConfig) -> None:
        self.endpoint = endpoint.with_changes(max_tokens=PAIR_REPLY_MAX_TOKENS)
        self.client = ChatClient(self.endpoint)

    @property
    def model(self) -> str:
        return self.endpoint.model

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        # A pairwise reply names a winner and reads no log-probabilities: that setting is not part of its hash.
        params = self.endpoint.with_changes(logprobs=False).scoring_params()
        digest = config_hash(rubric, **params, prompt_format=PAIRWISE_FORMAT)
        return JudgeIdentity(kind=self.kind, name=self.model, endpoint=self.endpoint.base_url, config_hash=digest)

    async def prefer(self, item: JudgeItem, answer_a: str, answer_b: str, rubric: Rubric) -> PairCall:
        messages = render_pair_messages(rubric, item, answer_a, answer_b)
        try:
            result = await self.client.chat(messages, response_format=pair_response_format(rubric))
        except CallError as exc:
            return PairCall(None, unscored_reason=exc.failure.reason, detail=exc.failure.detail)
        outcome = read_reply(result, lambda text, finish: parse_pair_reply(text, finish_reason=finish))
        if isinstance(outcome, Unusable):
            return PairCall(None, unscored_reason=outcome.reason, detail=outcome.detail)
        winner, reason = outcome
        return PairCall(winner, reason[: rubric.reason_max_chars], latency_ms=result.latency_ms)

    async def aclose(self) -> None:
        await self.client.aclose()


class ReferencePairwiseJudge(PairwiseJudge):
    """The offline reference judge, pairwise: the answer whose words the references support more wins. Position-blind by
    construction (it compares two numbers), so it is consistent over both orders; a difference of support within
    `margin` is a tie."""

    kind = "reference"
    name = REFERENCE_NAME
    margin = 0.05

    def identity(self, rubric: Rubric) -> JudgeIdentity:
        digest = config_hash(rubric, algorithm="overlap-pairwise", version=ALGORITHM_VERSION, margin=self.margin)
        return JudgeIdentity(kind=self.kind, name=self.name, config_hash=digest)

    def fit_item_ids(self) -> frozenset[str]:
        """The reference judge's fit items: its support comes from the same fitted models."""
        return load_models().fit_item_ids()

    @override
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
