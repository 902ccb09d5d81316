"""From a chat completion to a judge's parsed reply, or the unscored reason there is none (no choices: judge error;
content filter or bare refusal: `refused`; rejected by the parser: `truncated` or `parse_error`, with an excerpt)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from judges.chat_client import ChatResult
from judges.errors import excerpt
from judgewatch.contract.reply import ReplyError
from judgewatch.contract.verdicts import UnscoredReason

ParsedT = TypeVar("ParsedT")
_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class Unusable:
    """Why a completion gives no verdict: the unscored reason and a detail for the stored verdict."""

    reason: UnscoredReason
    detail: str


def read_reply(result: ChatResult, parse: Callable[[str, str | None], ParsedT]) -> ParsedT | Unusable:
    """`parse(text, finish_reason)` of the first choice, or why the completion cannot be used."""
    if not result.completion.choices:
        return Unusable(UnscoredReason.judge_error, "the endpoint returned no choices")
    choice = result.completion.choices[0]
    finish_reason = choice.finish_reason
    text = choice.message.content or ""
    refusal = getattr(choice.message, "refusal", None)
    if finish_reason == "content_filter" or (not text and refusal):
        why = refusal or "finish_reason content_filter"
        return Unusable(UnscoredReason.refused, excerpt(f"refused: {why}", _EXCERPT_CHARS))
    try:
        return parse(text, finish_reason)
    except ReplyError as exc:
        reason = UnscoredReason.truncated if exc.truncated else UnscoredReason.parse_error
        detail = f"{exc}; reply (finish_reason={finish_reason}): {excerpt(text, _EXCERPT_CHARS)!r}"
        return Unusable(reason, detail)
