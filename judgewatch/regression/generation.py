"""How a live tier is asked for its answers: the effective request, its identity (`TierRequest.config_hash`, stored
with every generated answer so a re-run reuses them), the client, the endpoint check. docs/release_gate.md.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import openai

from judges.chat_client import ChatClient
from judges.config import EndpointConfig
from judgewatch.contract.messages import conversation_parts, is_conversation
from judgewatch.redact import mask_url
from judgewatch.regression.answer_prompt import answer_messages
from judgewatch.regression.golden import GoldenItem
from judgewatch.regression.serving import TierError, TierSpec
from judgewatch.regression.tier_config import ENV_REFERENCE, credentials
from judgewatch.storage.types import stable_id
from judgewatch.url_secrets import reveal

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 10.0
BUILTIN_TEMPLATE = "built-in"
# Header names whose literal values are shown masked in reports (a `${VAR}` reference is shown as written).
_SECRET_HEADER = re.compile(r"auth|key|token|secret|password|cookie", re.IGNORECASE)
_LEGACY_PARAMS = {"temperature": 0.0}  # what a `NAME=URL#MODEL` tier always sent besides max_tokens and seed


@dataclass(frozen=True)
class TierRequest:
    """One live tier's requests: its template and effective params over the gate's max_tokens and seed."""

    spec: TierSpec
    max_tokens: int
    seed: int

    @property
    def model(self) -> str:
        if self.spec.kind != "live" or self.spec.base_url is None or self.spec.model is None:
            raise TierError(f"tier {self.spec.name} is not a live tier")
        return self.spec.model

    @property
    def params(self) -> dict[str, Any]:
        return self.spec.params.request(max_tokens=self.max_tokens, seed=self.seed)

    def messages(self, item: GoldenItem) -> list[dict[str, str]]:
        """The chat messages the tier receives for one golden item: the prompt (built-in or the tier's template);
        for a conversation, its earlier user and assistant turns first, between the system prompt and the
        question, as text (tool calls are the application's, not the tier's: the tier answers from the facts)."""
        if self.spec.template is None:
            prompt = answer_messages(item.question, item.reference_facts or item.context, item.language)
        else:
            prompt = self.spec.template.render(
                question=item.question, reference_facts=item.reference_facts, context=item.context,
                language=item.language,
            )  # fmt: skip
        earlier = _earlier_exchanges(item)
        if not earlier:
            return prompt
        system = [m for m in prompt if m["role"] == "system"]
        return [*system, *earlier, *(m for m in prompt if m["role"] != "system")]

    @property
    def config_hash(self) -> str:
        """Identity of the tier's effective configuration: model, template content, params, header templates."""
        template = self.spec.template.text if self.spec.template is not None else BUILTIN_TEMPLATE
        return stable_id("tier-config", self.model, template, _canonical(self.params), _canonical(self.spec.headers))

    def request_hash(self, messages: list[dict[str, str]]) -> str:
        """Identity of one generation request: the same prompt under the same configuration is answered once. A tier
        with nothing beyond model, max_tokens and seed keeps the identity `NAME=URL#MODEL` tiers always had, so answers
        stored before tiers files existed are still reused."""
        params = self.params
        rest = {k: v for k, v in params.items() if k not in ("max_tokens", "seed")}
        extra = [] if rest == _LEGACY_PARAMS and not self.spec.headers else [_canonical([rest, self.spec.headers])]
        text = json.dumps(messages, ensure_ascii=False)
        return stable_id("generation", self.model, params["max_tokens"], params["seed"], text, *extra)

    def client(self, *, concurrency: int, timeout_s: float, max_retries: int) -> ChatClient:
        """A chat client with the tier's key and headers (read from the environment now); the tier's own
        `concurrency`, when set, wins over the gate's."""
        key, headers = credentials(self.spec)
        params = self.params
        return ChatClient(
            EndpointConfig(
                self.spec.base_url or "",
                self.model,
                api_key=key,
                headers=tuple(headers.items()),
                concurrency=self.spec.concurrency or concurrency,
                timeout_s=timeout_s,
                max_retries=max_retries,
                max_tokens=params["max_tokens"],
                temperature=params["temperature"],
                seed=params["seed"],
            )
        )

    async def answer(self, client: ChatClient, messages: list[dict[str, str]]) -> str:
        """The tier's answer to `messages` under the effective params; raises CallError when it fails for good."""
        body = {k: v for k, v in self.params.items() if k not in ("max_tokens", "temperature", "seed")}
        return await client.complete(messages, extra_body=body or None)

    def summary(self) -> dict[str, Any]:
        """The configuration as the report shows it: URL, model, template name and hash, params; keys masked."""
        template = self.spec.template
        return {
            "url": mask_url(self.spec.base_url or ""),
            "model": self.model,
            "template": template.name if template is not None else BUILTIN_TEMPLATE,
            "template_hash": template.hash if template is not None else None,
            "params": self.params,
            "headers": {name: _shown_header(name, value) for name, value in self.spec.headers.items()},
            "api_key": f"${self.spec.api_key_env} (masked)" if self.spec.api_key_env else "none",
            "concurrency": self.spec.concurrency,
            "origin": self.spec.origin,
            "config_hash": self.config_hash,
        }


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _shown_header(name: str, value: str) -> str:
    if ENV_REFERENCE.search(value) or not _SECRET_HEADER.search(name):
        return value  # a ${VAR} reference is written in the file, never its value
    return "***"


async def check_live_tier(spec: TierSpec, *, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why a live tier cannot be asked (a missing variable, refused credentials, no answer), or None when it can. GET
    /models with the tier's key and headers, as every later call will be sent; the key is never in the text."""
    if spec.kind != "live" or spec.base_url is None:
        return None
    try:
        key, headers = credentials(spec)
    except TierError as exc:
        return str(exc)
    url = mask_url(spec.base_url)
    client = openai.AsyncOpenAI(
        base_url=reveal(spec.base_url), api_key=key, default_headers=headers or None, max_retries=0, timeout=timeout_s
    )
    try:
        await client.models.list()
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        via = f"the key in ${spec.api_key_env}" if spec.api_key_env else "no key (set api_key_env)"
        return f"{url} refused the credentials (HTTP {exc.status_code}) with {via}, model {spec.model}"
    except Exception as exc:
        logger.debug("tier %s: GET %s/models failed: %s", spec.name, url, type(exc).__name__)
        return f"{url} did not answer GET /models (model {spec.model})"
    finally:
        await client.close()
    return None


def config_change(tier: str, baseline: str, before: dict[str, Any] | None, after: dict[str, Any]) -> str | None:
    """A note when a tier's configuration differs from its baseline release's (e.g. a new prompt template)."""
    if not before or not after or before.get("config_hash") == after.get("config_hash"):
        return None
    keys = ("model", "template", "template_hash", "params", "headers")
    changed = [k for k in keys if before.get(k) != after.get(k)]
    return (
        f"tier {tier}: serving configuration changed since baseline {baseline} "
        f"(config {before.get('config_hash')} -> {after.get('config_hash')}; changed: {', '.join(changed) or 'n/a'})"
    )


def _earlier_exchanges(item: GoldenItem) -> list[dict[str, str]]:
    """A golden conversation's user and assistant turns before its question, with text (empty for a question)."""
    if not is_conversation(item.messages):
        return []
    earlier = conversation_parts(item.messages).earlier
    return [{"role": t.role, "content": t.content} for t in earlier if t.role in ("user", "assistant") and t.content]
