"""Serving the metrics: a small HTTP server for `judgewatch metrics serve`, and a Starlette route the review UI mounts
at its own `/metrics` (outside the login: the families carry no item text, reviewer names or answers)."""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest, start_http_server
from sqlalchemy import Engine
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from judgewatch.metrics.collector import DEFAULT_MIN_INTERVAL_S, make_registry

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9464  # the port OpenTelemetry's Prometheus exporter uses by convention


def start_server(
    engine: Engine,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    min_interval_s: float = DEFAULT_MIN_INTERVAL_S,
) -> tuple[WSGIServer, threading.Thread]:
    """Serve `/metrics` from a daemon thread; call `server.shutdown()` to stop it."""
    registry = make_registry(engine, min_interval_s=min_interval_s, warm=True)
    server, thread = start_http_server(port, addr=host, registry=registry)
    logger.info("metrics on http://%s:%d/metrics", host, server.server_port)
    return server, thread


def store_metrics_route(engine: Engine) -> Route:
    """The store's metrics as a `/metrics` route (Prometheus text format), for apps (the review UI) that serve them
    next to their own pages."""
    registry = make_registry(engine, warm=True)

    def endpoint(_request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", endpoint, methods=["GET"])
