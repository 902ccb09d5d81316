"""The OTLP/HTTP trace receiver: `POST /v1/traces` (protobuf or JSON, gzip or not), bearer-token auth, answers as
OTLP/HTTP asks (docs/ingest.md); 415 for another content type. `GET /healthz` gives the counts."""

from __future__ import annotations

import hmac
import json
import logging
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from judgewatch.traffic.otel_decode import MAX_BODY_BYTES, PayloadError, decode_request, decompress, payload_origin

if TYPE_CHECKING:
    from judgewatch.ingest.store import Accepted, SpanStore

logger = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def create_app(store: SpanStore, token: str) -> Starlette:
    """The receiver over one `SpanStore`; `token` is the bearer token every request must carry."""
    expected = f"Bearer {token}".encode()

    async def traces(request: Request) -> Response:
        given = request.headers.get("authorization", "").encode()
        if not token or not hmac.compare_digest(given, expected):
            return Response("missing or wrong bearer token", status_code=401,
                            headers={"WWW-Authenticate": 'Bearer realm="judgewatch-ingest"'})  # fmt: skip
        content_type = request.headers.get("content-type", "")
        as_json = content_type.split(";")[0].strip().lower() == JSON
        if content_type.split(";")[0].strip().lower() not in (JSON, PROTOBUF, "application/protobuf"):
            return _status(415, f"unsupported Content-Type {content_type!r}: {PROTOBUF} or {JSON}", as_json)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:  # refused before it is read into memory
            return _status(413, f"body larger than {MAX_BODY_BYTES} bytes", as_json)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return _status(413, f"body larger than {MAX_BODY_BYTES} bytes", as_json)
        try:
            data = decompress(body, request.headers.get("content-encoding"))
            decoded, bad = decode_request(data, content_type)
        except PayloadError as exc:
            await run_in_threadpool(store.store_unreadable, body, exc)
            logger.warning("OTLP payload refused: %s", exc)
            return _status(400, str(exc), as_json)
        origin = payload_origin(data)
        accepted = await run_in_threadpool(store.store_request, decoded, origin, bad)
        return _success(accepted, as_json)

    async def health(_request: Request) -> Response:
        return JSONResponse({"status": "ok", "source": store.config.name, **store.totals})

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/healthz", health)])


def _success(accepted: Accepted, as_json: bool) -> Response:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    if accepted.rejected:
        response.partial_success.rejected_spans = accepted.rejected
        response.partial_success.error_message = "; ".join(accepted.reasons)[:2000]
    if as_json:
        from google.protobuf import json_format

        return Response(json_format.MessageToJson(response), media_type=JSON)
    return Response(response.SerializeToString(), media_type=PROTOBUF)


def _status(code: int, message: str, as_json: bool) -> Response:
    """A `google.rpc.Status` body (code 3, INVALID_ARGUMENT) with the reason, as OTLP/HTTP specifies."""
    if as_json:
        return Response(json.dumps({"code": 3, "message": message}), status_code=code, media_type=JSON)
    from google.rpc.status_pb2 import Status

    return Response(Status(code=3, message=message).SerializeToString(), status_code=code, media_type=PROTOBUF)
