"""The simulator's tokenizer and vLLM 0.32's context-window errors, so tests can predict both: a word, a
punctuation mark or a CJK character is one token; a chat message adds its template's tokens (SmolLM2's ChatML)."""

from __future__ import annotations

import re
from typing import Any

_SIM_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+|[^\w\s]")
MESSAGE_TEMPLATE_TOKENS = 4  # "<|im_start|>role\n ... <|im_end|>\n"
GENERATION_PROMPT_TOKENS = 3  # "<|im_start|>assistant\n"


def text_tokens(text: str) -> int:
    """The simulator's token count of a text: words, punctuation marks and CJK characters."""
    return len(_SIM_TOKEN.findall(text))


def prompt_tokens(messages: list[dict[str, Any]], *, add_generation_prompt: bool = True) -> int:
    """Prompt tokens of a chat request: every message's text plus its template tokens."""
    texts = [m.get("content") for m in messages]
    counted = sum(text_tokens(t) + MESSAGE_TEMPLATE_TOKENS for t in texts if isinstance(t, str))
    return counted + (GENERATION_PROMPT_TOKENS if add_generation_prompt else 0)


def context_length_error(max_model_len: int, input_tokens: int) -> str:
    """vLLM 0.32's message for a prompt longer than its window (renderers/params.py `_token_len_check`).

    vLLM tokenizes with truncation at `max_model_len + 1` tokens, so it reports "at least" that many.
    """
    counted = min(input_tokens, max_model_len + 1)
    qualifier = "at least " if counted == max_model_len + 1 else ""
    return (
        f"This model's maximum context length is {max_model_len} tokens. However, your prompt contains "
        f"{qualifier}{counted} input tokens, which exceeds this limit even without any output tokens. "
        f"Please reduce the length of the input prompt. (parameter=input_tokens, value={counted})"
    )


def window_error(max_model_len: int, prompt: int) -> str | None:
    """vLLM's 400 message when a prompt of `prompt` tokens leaves no room for one output token, else None."""
    if prompt < max_model_len:
        return None
    if prompt == max_model_len:  # v1/engine/input_processor.py
        return (
            f"The decoder prompt (length {prompt}) plus the number of requested output tokens (at least 1) is "
            f"longer than the maximum model length of {max_model_len}. Make sure that `max_model_len` is no "
            "smaller than the number of text tokens (prompt + requested output tokens)."
        )
    return context_length_error(max_model_len, prompt)
