"""OTLP trace payloads to plain spans: an `ExportTraceServiceRequest` in protobuf or its JSON mapping, decoded by
`opentelemetry-proto`, flattened to `Span`s with Python attribute values. A payload that does not decode is one
`PayloadError`; a span that cannot be read or keyed is a `BadSpan`, the spans around it still count (docs/ingest.md)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

MAX_BODY_BYTES = 64 * 1024 * 1024  # a decompressed payload larger than this is refused, not held in memory


class PayloadError(ValueError):
    """A payload that is not an OTLP trace export; the message is the reason sent back with the 400."""


@dataclass(frozen=True)
class Span:
    """One span, attributes as Python values (str, bool, int, float, list, dict), ids as lowercase hex."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    index: int = 0  # position in its payload, for quarantine records

    @property
    def key(self) -> str:
        """The span's identity within the service: "<trace id>:<span id>"."""
        return f"{self.trace_id}:{self.span_id}"


@dataclass(frozen=True)
class BadSpan:
    """A span that cannot be keyed (ids of the wrong size); quarantined with `reason`."""

    index: int
    name: str
    reason: str
    parsed: bool = True  # False: the JSON span did not parse (its index counts every span of the payload)

    @property
    def where(self) -> str:
        return f"span={self.index}" if self.parsed else f"unparsed-span={self.index}"


def payload_origin(body: bytes) -> str:
    """Where a received payload's spans are said to come from: "otlp:<digest of the payload>" (stable, so a
    re-sent payload's quarantine records replace their first copies)."""
    return f"otlp:{hashlib.blake2b(body, digest_size=8).hexdigest()}"


def decompress(body: bytes, encoding: str | None) -> bytes:
    """The body after its Content-Encoding (gzip, deflate or none), bounded to MAX_BODY_BYTES."""
    encoding = (encoding or "identity").strip().lower()
    try:
        if encoding == "gzip":
            with gzip.GzipFile(fileobj=io.BytesIO(body)) as f:
                data = f.read(MAX_BODY_BYTES + 1)
        elif encoding == "deflate":
            data = zlib.decompressobj().decompress(body, MAX_BODY_BYTES + 1)
        elif encoding in ("identity", ""):
            data = body
        else:
            raise PayloadError(f"unsupported Content-Encoding {encoding!r} (gzip, deflate or none)")
    except (OSError, EOFError, zlib.error) as exc:
        raise PayloadError(f"body is not valid {encoding}: {exc}") from None
    if len(data) > MAX_BODY_BYTES:
        raise PayloadError(f"decompressed body larger than {MAX_BODY_BYTES} bytes")
    return data


def decode_request(body: bytes, content_type: str | None) -> tuple[ExportTraceServiceRequest, list[BadSpan]]:
    """Protobuf or JSON to an `ExportTraceServiceRequest`, with the JSON spans that could not be read."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == "application/json":
        return decode_json(body)
    if kind not in ("application/x-protobuf", "application/protobuf"):
        raise PayloadError(f"unsupported Content-Type {content_type!r} (application/x-protobuf or application/json)")
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise PayloadError(f"not an ExportTraceServiceRequest protobuf: {exc}") from None
    return request, []


def decode_json(text: bytes | str) -> tuple[ExportTraceServiceRequest, list[BadSpan]]:
    """OTLP/JSON (hex ids, lowerCamelCase or snake_case names) to a request; a span that does not parse is left
    out and returned as a `BadSpan` with the parser's reason, so one bad span never costs the others."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage

    try:
        doc = json.loads(text)
    except UnicodeDecodeError as exc:
        raise PayloadError(f"JSON body is not UTF-8: {exc.reason}") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise PayloadError(f"not valid JSON: {_first_line(str(exc))}") from None
    if not isinstance(doc, dict):
        raise PayloadError(f"expected a JSON object (ExportTraceServiceRequest), got {type(doc).__name__}")
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(_hex_ids_as_base64(doc), request, ignore_unknown_fields=True)
        return request, []
    except (json_format.ParseError, ValueError, TypeError, RecursionError):
        request.Clear()  # read it again span by span: only the spans that do not parse are lost
    bad: list[BadSpan] = []
    index = 0
    for rs_doc in _list(doc, "resourceSpans", "resource_spans"):
        rs = ResourceSpans()
        try:
            json_format.ParseDict({k: v for k, v in rs_doc.items() if k in ("resource",)}, rs,
                                  ignore_unknown_fields=True)  # fmt: skip
        except (json_format.ParseError, ValueError, TypeError) as exc:
            raise PayloadError(f"resource: {_first_line(str(exc))}") from None
        for ss_doc in _list(rs_doc, "scopeSpans", "scope_spans"):
            ss = ScopeSpans()
            for span_doc in _list(ss_doc, "spans"):
                span = SpanMessage()
                try:
                    json_format.ParseDict(span_doc, span, ignore_unknown_fields=True)  # ids re-encoded already
                except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
                    name = span_doc.get("name") if isinstance(span_doc, dict) else None
                    bad.append(BadSpan(index=index, name=str(name or ""), reason=_first_line(str(exc)), parsed=False))
                else:
                    ss.spans.append(span)
                index += 1
            rs.scope_spans.append(ss)
        request.resource_spans.append(rs)
    return request, bad


def _list(doc: Any, *keys: str) -> list[Any]:
    if not isinstance(doc, dict):
        raise PayloadError(f"expected an object, got {type(doc).__name__}")
    for key in keys:
        value = doc.get(key)
        if value is not None:
            if not isinstance(value, list):
                raise PayloadError(f"{key}: expected a list, got {type(value).__name__}")
            return value
    return []


_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})


def _hex_ids_as_base64(node: Any) -> Any:
    """The document with every trace/span id re-encoded from OTLP/JSON's hex to the base64 that `json_format`
    reads for bytes fields (in place); an id that is not hex becomes empty, and `spans_of` names it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    node[key] = ""
            elif isinstance(value, dict | list):
                _hex_ids_as_base64(value)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, dict | list):
                _hex_ids_as_base64(item)
    return node


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "unknown error"


def any_value(value: AnyValue) -> Any:
    """An OTLP `AnyValue` as a Python value."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    if which == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, which)


def attributes_of(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


def spans_of(request: ExportTraceServiceRequest) -> Iterator[Span | BadSpan]:
    """Every span of the request in order, with its resource's attributes."""
    index = 0
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id, span_id = span.trace_id, span.span_id
                if len(trace_id) != 16 or len(span_id) != 8 or not any(trace_id) or not any(span_id):
                    reason = f"trace id of {len(trace_id)} bytes / span id of {len(span_id)} bytes (need 16 / 8)"
                    yield BadSpan(index=index, name=span.name, reason=reason)
                else:
                    yield Span(
                        trace_id=trace_id.hex(),
                        span_id=span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=span.name,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes=attributes_of(span.attributes),
                        resource=resource,
                        events=[(e.name, attributes_of(e.attributes)) for e in span.events],
                        index=index,
                    )
                index += 1
