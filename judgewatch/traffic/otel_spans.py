"""LLM spans to log rows: OpenTelemetry GenAI semantic conventions and OpenInference read into the row an
OpenAI-compatible gateway log holds (the default `FieldMapping` reads it), tool calls and results kept as turns.
Which attributes and events each convention is read from, first found wins: docs/ingest.md."""

from __future__ import annotations

import json
import re
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from judgewatch.traffic.otel_decode import BadSpan, Span

_LABEL_TYPES = (str, int, float)  # a tuple: `isinstance` with a union is slower, and this runs per label and place
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
_INDEXED = re.compile(r"^(.*?)\.(\d+)\.(.+)$")
_FIRST_MESSAGE_KEYS = ("0.message.role", "0.message.content", "0.role", "0.content",
                       "0.message.contents.0.message_content.text")  # fmt: skip
_ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
# Labels: span attribute, then the OpenInference `metadata` object, then the resource's attributes.
LABELS: dict[str, tuple[str, ...]] = {
    "route": ("judgewatch.route", "route", "http.route"),
    "tier": ("judgewatch.tier", "tier"),
    "release": ("judgewatch.release", "release", "service.version"),
    "department": ("judgewatch.department", "department"),
    "language": ("judgewatch.language", "language"),
    "user": ("user.id", "enduser.id", "judgewatch.user", "user"),
    "session": ("session.id", "gen_ai.conversation.id", "session"),
    "service": ("service.name",),
}


def kind_of(span: Span) -> str:
    """ "llm", "retriever" or "other" (counted and dropped)."""
    attrs = span.attributes
    oi = attrs.get("openinference.span.kind")
    if isinstance(oi, str):
        return {"LLM": "llm", "RETRIEVER": "retriever"}.get(oi.upper(), "other")
    operation = attrs.get("gen_ai.operation.name")
    if operation in LLM_OPERATIONS:
        return "llm"
    if operation == "retrieval" or "gen_ai.retrieval.documents" in attrs:
        return "retriever"
    if operation is None and ("gen_ai.system" in attrs or "gen_ai.provider.name" in attrs):
        return "llm"  # older GenAI spans carry no operation name
    return "other"


class TraceDocuments:
    """The documents retriever spans returned, by trace, for the last `max_traces` traces (bounded): an LLM span
    exported in a later payload than its trace's retriever span (a per-span exporter, a batch boundary) gets them."""

    def __init__(self, max_traces: int = 10_000) -> None:
        self.max_traces = max_traces
        self._docs: OrderedDict[str, list[str]] = OrderedDict()

    def add(self, spans: Iterable[Span]) -> None:
        for span in spans:
            if kind_of(span) == "retriever" and (texts := documents_of(span)):
                self._docs.setdefault(span.trace_id, []).extend(texts)
                self._docs.move_to_end(span.trace_id)
        while len(self._docs) > self.max_traces:
            self._docs.popitem(last=False)

    def get(self, trace_id: str) -> list[str]:
        return list(self._docs.get(trace_id, ()))


def documents_of(span: Span) -> list[str]:
    attrs = span.attributes
    texts = [v for k, v in _indexed(attrs, "retrieval.documents", "document.content") if isinstance(v, str) and v]
    for value in _structured(attrs.get("gen_ai.retrieval.documents")) or []:
        if isinstance(value, dict):
            value = value.get("content", value.get("text", value.get("page_content")))
        if isinstance(value, str) and value:
            texts.append(value)
    return texts


def span_row(span: Span, documents: list[str]) -> dict[str, Any]:
    """The log row of an LLM span; missing parts are left out, so the mapping rejects the span with the reason."""
    attrs = span.attributes
    messages = input_messages(span)
    answer = output_text(span)
    usage = {
        "prompt_tokens": _first(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                                "llm.token_count.prompt"),
        "completion_tokens": _first(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                                    "llm.token_count.completion"),
        "prompt_tokens_details": {"cached_tokens": _first(attrs, "gen_ai.usage.cache_read.input_tokens",
                                                          "llm.token_count.prompt_details.cache_read")},
    }  # fmt: skip
    model = _first(attrs, "gen_ai.response.model", "llm.model_name", "gen_ai.request.model")
    labels = span_labels(span)
    labels["latency_ms"] = round(max(span.end_ns - span.start_ns, 0) / 1e6, 3)
    row: dict[str, Any] = {
        "id": span.key,
        "request": {"messages": messages},
        "response": {"usage": usage},
        "model": model,
        "metadata": labels,
        "timestamp": datetime.fromtimestamp(span.start_ns / 1e9, tz=UTC) if span.start_ns else None,
        "reference": {"context": documents},
    }
    if answer is not None:
        row["response"]["choices"] = [{"message": {"role": "assistant", "content": answer}}]
    return row


def span_labels(span: Span) -> dict[str, Any]:
    """Route, tier, release, department, language, user, session and service, where the span says them."""
    meta = _structured(span.attributes.get("metadata")) if "metadata" in span.attributes else None
    places = [span.attributes, meta, span.resource] if isinstance(meta, dict) else [span.attributes, span.resource]
    labels: dict[str, Any] = {}
    for name, keys in LABELS.items():
        found = next((v for where in places for key in keys if _is_label(v := where.get(key))), None)
        if found is not None:
            labels[name] = str(found)
    return labels


def _is_label(value: Any) -> bool:
    return value not in (None, "") and isinstance(value, _LABEL_TYPES) and not isinstance(value, bool)


def input_messages(span: Span) -> list[dict[str, Any]]:
    """The request's turns (role, text, tool calls, the call a result answers) by the first convention having them."""
    attrs = span.attributes
    if found := _indexed_messages(attrs, "llm.input_messages"):
        return found
    current = _event_attr(span, "gen_ai.input.messages")
    if current is not None:
        system = _structured(_event_attr(span, "gen_ai.system_instructions"))
        head = [{"role": "system", "content": _content(system)}] if system else []
        return head + _messages(current)
    old = _event_attr(span, "gen_ai.prompt")
    if old is not None:
        return _messages(old) or [{"role": "user", "content": _content(old)}]
    events = [
        _turn({**a, "role": a.get("role") or _ROLE_EVENTS[name]}) for name, a in span.events if name in _ROLE_EVENTS
    ]
    return (
        events
        or _indexed_messages(attrs, "gen_ai.prompt")
        or _value_messages(attrs.get("input.value"), attrs.get("input.mime_type"))
    )


def output_text(span: Span) -> str | None:
    """The answer text: the first output message (or choice) that says something."""
    attrs = span.attributes
    conventions: tuple[Callable[[], list[dict[str, Any]]], ...] = (
        lambda: _indexed_messages(attrs, "llm.output_messages"),
        lambda: _messages(_event_attr(span, "gen_ai.output.messages")),
        lambda: _messages(_event_attr(span, "gen_ai.completion")),
        lambda: [_choice(a) for name, a in span.events if name == "gen_ai.choice"],
        lambda: _indexed_messages(attrs, "gen_ai.completion"),
    )
    for read in conventions:  # in order, reading only until one has an answer
        texts = [m["content"] for m in read() if m.get("content")]
        if texts:
            return texts[0]
    completion = _event_attr(span, "gen_ai.completion")
    if isinstance(completion, str) and _structured(completion) is None and completion:
        return completion
    return _value_answer(attrs.get("output.value"), attrs.get("output.mime_type"))


def payload_rows(
    spans: Iterable[Span | BadSpan], documents: TraceDocuments | None = None
) -> tuple[list[tuple[Span, dict[str, Any]] | BadSpan], int]:
    """(each LLM span with its row, or a span that cannot be keyed; how many other spans were dropped).
    `documents`: the retrieved documents of earlier payloads, kept across calls (default: this payload's)."""
    spans = list(spans)
    documents = documents if documents is not None else TraceDocuments()
    documents.add(s for s in spans if isinstance(s, Span))
    out: list[tuple[Span, dict[str, Any]] | BadSpan] = []
    dropped = 0
    for span in spans:
        if isinstance(span, BadSpan):
            out.append(span)
        elif kind_of(span) == "llm":
            out.append((span, span_row(span, documents.get(span.trace_id))))
        else:
            dropped += 1
    return out, dropped


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    return next((value for key in keys if (value := attrs.get(key)) is not None), None)


def _event_attr(span: Span, key: str) -> Any:
    """An attribute on the span, else on the first of its events that carries it."""
    if key in span.attributes:
        return span.attributes[key]
    for _name, attrs in span.events:
        if key in attrs:
            return attrs[key]
    return None


def _structured(value: Any) -> Any:
    """A JSON text decoded (None when it is not JSON); lists and dicts as they are."""
    if isinstance(value, str):
        if value[:1] not in ("[", "{"):
            return None
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    return value if isinstance(value, (list, dict)) else None


def _content(value: Any) -> str:
    """Message content as text: a string, OpenAI content parts, GenAI parts (text, tool calls and results)."""
    if value is None:
        return ""
    if isinstance(value, str):
        parsed = _structured(value)
        return value if parsed is None or not isinstance(parsed, list) else _content(parsed)
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list):
        texts = [part if isinstance(part, str) else _part_text(part) for part in value if isinstance(part, str | dict)]
        return "\n".join(t for t in texts if t)
    return str(value)


def _part_text(part: dict[str, Any]) -> str:
    """A part's text: a tool result's response is its turn's text; a tool call has none (`_turn` keeps it)."""
    kind = part.get("type", "text")
    if kind == "tool_call":
        return ""
    if kind == "tool_call_response":
        response = part.get("response", part.get("result"))
        return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)
    text = part.get("content", part.get("text"))
    return text if isinstance(text, str) else ""


def _messages(value: Any) -> list[dict[str, Any]]:
    """A list of messages (`content` or GenAI `parts`), from structured values or JSON text."""
    value = _structured(value)
    if isinstance(value, dict):
        value = value.get("messages", [value])
    if not isinstance(value, list):
        return []
    # a choice holds its message under "message"
    return [_turn(it["message"] if isinstance(it.get("message"), dict) else it) for it in value if isinstance(it, dict)]


def _turn(item: dict[str, Any]) -> dict[str, Any]:
    """One message as a turn in the OpenAI chat format: role, content as text, and, kept apart from the text,
    its tool calls (OpenAI `tool_calls`, GenAI `tool_call` parts) and the call a tool result answers."""
    parts = _structured(item.get("parts"))
    turn: dict[str, Any] = {"role": str(item.get("role") or "user"),
                            "content": _content(parts if parts is not None else item.get("content"))}  # fmt: skip
    calls = [_tool_call(c) for c in _structured(item.get("tool_calls")) or [] if isinstance(c, dict)]
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and part.get("type") == "tool_call":
            calls.append(_tool_call(part))
        elif isinstance(part, dict) and part.get("type") == "tool_call_response" and part.get("id"):
            turn["tool_call_id"] = str(part["id"])
    if calls:
        turn["tool_calls"] = calls
    for key in ("tool_call_id", "id"):  # OpenAI's field; the GenAI tool message event's `id`
        if turn["role"] == "tool" and isinstance(item.get(key), str) and "tool_call_id" not in turn:
            turn["tool_call_id"] = item[key]
    if turn["role"] == "tool" and isinstance(item.get("name"), str):
        turn["name"] = item["name"]
    return turn


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as {id, name, arguments}: OpenAI's `{id, function: {name, arguments}}` or GenAI's flat part."""
    function = call.get("function")
    source = function if isinstance(function, dict) else call
    arguments = source.get("arguments")
    return {
        "id": str(call["id"]) if call.get("id") is not None else None,
        "name": str(source.get("name") or ""),
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False),
    }


def _choice(attrs: dict[str, Any]) -> dict[str, Any]:
    message = _structured(attrs.get("message"))
    if isinstance(message, dict):
        return {"role": str(message.get("role") or "assistant"), "content": _content(message.get("content"))}
    return {"role": "assistant", "content": _content(attrs.get("content", attrs.get("message")))}


def _indexed(attrs: dict[str, Any], prefix: str, suffix: str) -> list[tuple[int, Any]]:
    """(N, value) of every `prefix.N.suffix` attribute, in N order."""
    head = prefix + "."
    matches = ((_INDEXED.match(key), value) for key, value in attrs.items() if key.startswith(head))
    found = [(int(m[2]), value) for m, value in matches if m and m[1] == prefix and m[3] == suffix]
    return sorted(found, key=lambda kv: kv[0])


def _indexed_messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Messages flattened into `prefix.N.(message.)role/content` attributes (OpenInference, older GenAI), with their
    tool calls (`message.tool_calls.M.tool_call.*`, `tool_calls.M.*`) and `message.tool_call_id`."""
    head = prefix + "."
    if not any(head + first in attrs for first in _FIRST_MESSAGE_KEYS):
        return []  # the common case, found without walking every attribute
    by_index: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        index, _, rest = key[len(head) :].partition(".")
        if not index.isdigit():
            continue
        rest = rest.removeprefix("message.")
        if rest in ("role", "content", "tool_call_id", "name"):
            by_index[int(index)][rest] = value
        elif rest.startswith("contents.") and rest.endswith("message_content.text"):
            by_index[int(index)].setdefault("parts", []).append((rest, value))
        elif rest.startswith("tool_calls."):
            number, _, field = rest[len("tool_calls.") :].partition(".")
            if number.isdigit():
                field = field.removeprefix("tool_call.").removeprefix("function.")
                by_index[int(index)].setdefault("calls", {}).setdefault(int(number), {})[field] = value
    out = []
    for n in sorted(by_index):
        item = by_index[n]
        content = item.get("content")
        if content is None and "parts" in item:
            content = "\n".join(str(v) for _, v in sorted(item["parts"]))
        calls = [item["calls"][k] for k in sorted(item.get("calls", {}))]
        out.append(_turn({**item, "content": content, "tool_calls": calls or None, "parts": None}))
    return out


def _value_messages(value: Any, mime: Any) -> list[dict[str, Any]]:
    """`input.value`: an OpenAI request body's messages when it is one, else the text as one user message."""
    if not isinstance(value, str) or not value:
        return []
    parsed = _structured(value) if mime in (None, "application/json") else None
    if isinstance(parsed, dict):
        if isinstance(parsed.get("messages"), list):
            return _messages(parsed["messages"])
        prompt = parsed.get("prompt", parsed.get("input"))
        if isinstance(prompt, str):
            return [{"role": "user", "content": prompt}]
    return [{"role": "user", "content": value}]


def _value_answer(value: Any, mime: Any) -> str | None:
    """`output.value`: an OpenAI response body's first choice when it is one, else the text."""
    if not isinstance(value, str) or not value:
        return None
    parsed = _structured(value) if mime in (None, "application/json") else None
    if isinstance(parsed, dict):
        choices = parsed.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            first = choices[0]
            message = first.get("message")
            text = _content(message.get("content")) if isinstance(message, dict) else first.get("text")
            return text if isinstance(text, str) else None
        for key in ("output_text", "content", "text"):
            if isinstance(parsed.get(key), str):
                return str(parsed[key])
    return value
