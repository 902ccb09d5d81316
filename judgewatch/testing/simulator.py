"""A local OpenAI-compatible chat-completions server for tests and benchmarks.

Replies are valid against the request's `response_format` json_schema and derived deterministically from a
hash of the messages, so tests can predict them. Requests beyond `max_concurrency` queue like a real batch;
each takes a fixed latency. Faults are chosen per server (`--mode`) or per request, by a marker anywhere in
the messages: `[[sim:500]]` (any HTTP status), `[[sim:quota]]`, `[[sim:hang]]`, `[[sim:reset]]`,
`[[sim:garbage]]`, `[[sim:schema]]`, `[[sim:length]]` (cut after the scores), `[[sim:length_early]]` (cut
before them), `[[sim:content_filter]]`, `[[sim:slow=2000]]` (ms), `[[sim:flaky=2]]` (503 for the first 2
attempts of this prompt, then a normal reply), `[[sim:garbled=1]]` (a malformed reply to the first attempt of
this prompt, then a valid one), `[[sim:no_logprobs]]` (no log-probabilities though asked), `[[sim:nul]]` (a NUL
in every text of the reply).
A request with `logprobs=True` gets plausible per-token log-probabilities (`judgewatch.testing.sim_logprobs`).

Like vLLM 0.32, it can enforce a context window (`max_model_len`, reported in /v1/models): a prompt that fills
it gets vLLM's HTTP 400 and message; a prompt that fits but leaves less than `max_tokens` gets a reply cut at
the window (finish_reason "length"). `POST /tokenize` counts tokens as the window does (a word, a punctuation
mark or a CJK character is one token; a chat message adds its template's tokens).

    python -m judgewatch.testing.simulator --port 8011 --latency-ms 250 --max-concurrency 64 --mode ok
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import typer
from aiohttp import web

from judgewatch.testing.sim_logprobs import choice_logprobs
from judgewatch.testing.sim_tokens import prompt_tokens, text_tokens, window_error

logger = logging.getLogger(__name__)

MARKER = re.compile(r"\[\[sim:([a-z0-9_]+(?:=\d+)?)\]\]")
HANG_S = 3600.0
PREFIX_BLOCK_TOKENS = 128  # vLLM's CPU prefix cache works in blocks of this many tokens


@dataclass(frozen=True)
class Fault:
    kind: str = "ok"
    arg: int | None = None

    @classmethod
    def parse(cls, text: str) -> Fault:
        """'ok', '503', 'slow=2000' or a `[[sim:...]]` marker's inside."""
        kind, _, arg = text.partition("=")
        return cls(kind, int(arg) if arg else None)


@dataclass
class SimState:
    """Configuration and counters of one simulator; `/sim/stats` reports the counters."""

    model: str = "sim-judge"
    latency_s: float = 0.25
    mode: Fault = field(default_factory=Fault)
    max_model_len: int | None = None  # None: no window enforced or reported (not a vLLM server)
    tokenizer: bool = True  # serve POST /tokenize
    requests: int = 0  # chat completions
    tokenize_requests: int = 0
    models_requests: int = 0  # GET /v1/models
    status: Counter[int] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    captured: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=200))
    authorizations: Counter[str] = field(default_factory=Counter)  # the Authorization header of each request
    flaky_attempts: Counter[str] = field(default_factory=Counter)
    seen_prefixes: set[str] = field(default_factory=set)
    semaphore: asyncio.Semaphore | None = None

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "tokenize_requests": self.tokenize_requests,
            "status": {str(k): v for k, v in sorted(self.status.items())},
            "faults": dict(self.faults),
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "mode": self.mode.kind if self.mode.arg is None else f"{self.mode.kind}={self.mode.arg}",
        }

    def reset(self) -> None:
        self.requests = self.tokenize_requests = self.models_requests = self.in_flight = self.max_in_flight = 0
        for counter in (self.status, self.faults, self.flaky_attempts, self.authorizations):
            counter.clear()
        self.captured.clear()
        self.seen_prefixes.clear()


STATE = web.AppKey("state", SimState)


def prompt_key(messages: list[dict[str, Any]]) -> str:
    """The hash every simulated reply is derived from."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def simulated_object(schema: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The object the simulator answers for these messages: valid against `schema`, predictable in tests."""
    return _value(schema, bytes.fromhex(prompt_key(messages)), prompt_key(messages)[:8])


def _value(schema: dict[str, Any], digest: bytes, tag: str, index: int = 0) -> Any:
    if "enum" in schema:
        return schema["enum"][digest[index % len(digest)] % len(schema["enum"])]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _value(sub, digest, tag, i) for i, (name, sub) in enumerate(props.items())}
    if kind in ("integer", "number"):
        low, high = int(schema.get("minimum", 1)), int(schema.get("maximum", 5))
        return low + digest[index % len(digest)] % (high - low + 1)
    if kind == "boolean":
        return bool(digest[index % len(digest)] % 2)
    if kind == "array":
        return []
    text = f"simulated verdict {tag}: the answer was read against the rubric."
    return text[: int(schema.get("maxLength", len(text)))]


def _fault_for(messages: list[dict[str, Any]], mode: Fault) -> Fault:
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and (match := MARKER.search(content)):
            return Fault.parse(match.group(1))
    return mode


def _error(status: int, message: str, code: str | None = None) -> web.Response:
    kind = "insufficient_quota" if code == "insufficient_quota" else "simulated_error"
    return web.json_response({"error": {"message": message, "type": kind, "code": code or status}}, status=status)


def _usage(state: SimState, messages: list[dict[str, Any]], content: str) -> dict[str, Any]:
    texts = [m.get("content") for m in messages]
    prompt = prompt_tokens(messages)
    cached = 0
    if messages and isinstance(texts[0], str):
        prefix = hashlib.sha1(texts[0].encode()).hexdigest()
        if prefix in state.seen_prefixes:
            cached = (len(texts[0]) // 4 // PREFIX_BLOCK_TOKENS) * PREFIX_BLOCK_TOKENS
        state.seen_prefixes.add(prefix)
    completion = max(1, len(content) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _reply_text(body: dict[str, Any], messages: list[dict[str, Any]], kind: str) -> tuple[str, str]:
    """(content, finish_reason) for a request that gets an answer."""
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, dict) else None
    if kind == "garbage":
        return "I think this answer is quite good. Score: 4/5 {", "stop"
    if kind == "content_filter":
        return "", "content_filter"
    if not isinstance(schema, dict):
        return f"Simulated answer {prompt_key(messages)[:12]}.", "stop"
    obj = simulated_object(schema, messages)
    if kind == "schema":
        obj = {k: (v + 100 if isinstance(v, int) else v) for k, v in obj.items()}
    if kind == "nul":  # a NUL character in every text of the reply (PostgreSQL cannot store it)
        obj = {k: (f"{v}\x00 after NUL" if isinstance(v, str) else v) for k, v in obj.items()}
    text = json.dumps(obj, ensure_ascii=False)
    ints = [k for k, v in obj.items() if isinstance(v, int) and not isinstance(v, bool)]
    if kind == "length" and "reason" in obj:
        return text[: text.index('"reason"') + len('"reason": "') + 8], "length"
    if kind == "length_early" and ints:
        return text[: text.index(f'"{ints[-1]}"') + 3], "length"
    return text, "stop"


async def _chat(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    state.requests += 1
    try:
        body = await request.json()
        messages = list(body["messages"])
    except (ValueError, KeyError, TypeError):
        state.status[400] += 1
        return _error(400, "request body must be JSON with 'messages'")
    state.captured.append(body)
    state.authorizations[request.headers.get("Authorization", "")] += 1
    if state.max_model_len is not None:  # vLLM's HTTP 400 when the prompt alone fills the window
        message = window_error(state.max_model_len, prompt_tokens(messages))
        if message is not None:
            state.status[400] += 1
            state.faults["context_length"] += 1
            error = {"message": message, "type": "BadRequestError", "param": "input_tokens", "code": 400}
            return web.json_response({"error": error}, status=400)
    fault = _fault_for(messages, state.mode)
    state.faults[fault.kind] += 1
    kind = fault.kind
    if kind in ("flaky", "garbled"):  # the first `arg` attempts of this prompt fail, later ones get a reply
        key = prompt_key(messages)
        state.flaky_attempts[key] += 1
        failing = state.flaky_attempts[key] <= (fault.arg or 1)
        if failing and kind == "flaky":
            state.status[503] += 1
            return _error(503, "simulated flaky failure")
        kind = "garbage" if failing else "ok"
    if kind.isdigit():
        state.status[int(kind)] += 1
        return _error(int(kind), f"simulated HTTP {kind}")
    if kind == "quota":
        state.status[429] += 1
        return _error(429, "You exceeded your current quota", "insufficient_quota")
    if kind == "reset":
        state.status[0] += 1
        if request.transport is not None:
            request.transport.abort()
        raise asyncio.CancelledError
    if kind == "hang":
        await asyncio.sleep(HANG_S)
    latency = (fault.arg or 0) / 1000 if kind == "slow" else state.latency_s
    assert state.semaphore is not None
    async with state.semaphore:
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            await asyncio.sleep(latency)
        finally:
            state.in_flight -= 1
    content, finish_reason = _reply_text(body, messages, kind)
    if state.max_model_len is not None:
        room = state.max_model_len - prompt_tokens(messages)  # vLLM clamps max_tokens to what is left
        if len(content) // 4 > room:
            content, finish_reason = content[: room * 4], "length"
    state.status[200] += 1
    return web.json_response(
        {
            "id": f"chatcmpl-sim-{state.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", state.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                    "logprobs": choice_logprobs(body, content, prompt_key(messages), kind),
                }
            ],
            "usage": _usage(state, messages, content),
        }
    )


async def _tokenize(request: web.Request) -> web.Response:
    """vLLM's POST /tokenize: {"prompt": text} or {"messages": [...]} -> {"count", "max_model_len", "tokens"}."""
    state = request.app[STATE]
    if not state.tokenizer:
        raise web.HTTPNotFound()
    state.tokenize_requests += 1
    body = await request.json()
    if "messages" in body:
        count = prompt_tokens(body["messages"], add_generation_prompt=bool(body.get("add_generation_prompt", True)))
    else:
        count = text_tokens(str(body.get("prompt", ""))) + (1 if body.get("add_special_tokens", True) else 0)
    return web.json_response({"count": count, "max_model_len": state.max_model_len, "tokens": list(range(count))})


async def _models(request: web.Request) -> web.Response:
    state = request.app[STATE]
    state.models_requests += 1
    model: dict[str, Any] = {"id": state.model, "object": "model", "created": 0, "owned_by": "judgewatch-simulator"}
    if state.max_model_len is not None:
        model["max_model_len"] = state.max_model_len
    return web.json_response({"object": "list", "data": [model]})


async def _health(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[STATE].stats())


async def _requests(request: web.Request) -> web.Response:
    return web.json_response(list(request.app[STATE].captured))


async def _reset(request: web.Request) -> web.Response:
    request.app[STATE].reset()
    return web.json_response({"ok": True})


async def _set_mode(request: web.Request) -> web.Response:
    state = request.app[STATE]
    state.mode = Fault.parse(str((await request.json())["mode"]))
    return web.json_response(state.stats())


def build_app(state: SimState) -> web.Application:
    app = web.Application()
    app[STATE] = state
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_get("/v1/models", _models)
    app.router.add_post("/tokenize", _tokenize)
    app.router.add_get("/health", _health)
    app.router.add_get("/sim/stats", _stats)
    app.router.add_get("/sim/requests", _requests)
    app.router.add_post("/sim/reset", _reset)
    app.router.add_post("/sim/mode", _set_mode)
    return app


@dataclass
class SimulatorHandle:
    host: str
    port: int
    state: SimState

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (ends in /v1)."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"


@contextlib.asynccontextmanager
async def serve_simulator(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    latency_ms: float = 250.0,
    max_concurrency: int = 64,
    mode: str = "ok",
    model: str = "sim-judge",
    max_model_len: int | None = None,
    tokenizer: bool = True,
) -> AsyncIterator[SimulatorHandle]:
    """Run a simulator in the current event loop (port 0: a free port) until the block exits.

    `max_model_len` enforces and reports a context window as vLLM does; `tokenizer=False` drops /tokenize.
    """
    state = SimState(
        model=model,
        latency_s=latency_ms / 1000,
        mode=Fault.parse(mode),
        max_model_len=max_model_len,
        tokenizer=tokenizer,
    )
    state.semaphore = asyncio.Semaphore(max_concurrency)
    # handler_cancellation: a client that gives up (timeout) ends its handler, so hangs do not pile up.
    runner = web.AppRunner(build_app(state), access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    site = web.SockSite(runner, sock, backlog=1024)
    try:
        await site.start()
        yield SimulatorHandle(host, sock.getsockname()[1], state)
    finally:
        await runner.cleanup()
        sock.close()


@contextlib.contextmanager
def run_simulator_in_thread(**kwargs: Any) -> Iterator[SimulatorHandle]:
    """Run a simulator on its own event loop in a daemon thread (same arguments as `serve_simulator`)."""
    ready = threading.Event()
    stop: asyncio.Event | None = None
    loop: asyncio.AbstractEventLoop | None = None
    handle: list[SimulatorHandle] = []
    errors: list[BaseException] = []

    async def main() -> None:
        nonlocal stop, loop
        stop, loop = asyncio.Event(), asyncio.get_running_loop()
        try:
            async with serve_simulator(**kwargs) as sim:
                handle.append(sim)
                ready.set()
                await stop.wait()
        except BaseException as exc:
            errors.append(exc)
            ready.set()

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="judgewatch-simulator", daemon=True)
    thread.start()
    ready.wait(timeout=30)
    if errors or not handle:
        raise RuntimeError(f"simulator did not start: {errors[0] if errors else 'timed out'}")
    try:
        yield handle[0]
    finally:
        if loop is not None and stop is not None:
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m judgewatch.testing.simulator", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed on the first line)")
    parser.add_argument("--latency-ms", type=float, default=250.0)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--mode", default="ok", help="fault applied to every request without a marker")
    parser.add_argument("--model", default="sim-judge")
    parser.add_argument("--max-model-len", type=int, default=None, help="enforce a context window (tokens)")
    args = parser.parse_args(argv)

    async def serve() -> None:
        async with serve_simulator(**vars(args)) as sim:  # every option is the parameter of its name
            typer.echo(f"judgewatch simulator listening on {sim.base_url}")  # flushed: bench/ reads this line
            await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
