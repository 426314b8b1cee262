"""The small HTTP server of the agent and the job: /metrics, /healthz, /readyz, and
the job's read-only JSON API under /api/.

/healthz says the process serves requests; /readyz says it has started its
work (configuration loaded, schedulers running). Neither depends on Kafka
being reachable: a sidecar's readiness gates its whole pod, and a broker
outage must not take the application out of its Service.

The server only speaks HTTP: what /api/ answers comes from an ``Answers``
object its owner passes in (the job's ``JobApi``), as /metrics comes from a
``Renders``. Every /api/ reply is JSON, errors included; a fault in the
answer is a 500 with a JSON body and a log line, never a traceback on the wire.
"""

import json
import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol
from urllib.parse import parse_qs

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from agent.exposition.scrape_body import CONTENT_TYPE, Exposition

log = logging.getLogger(__name__)


class Renders(Protocol):
    """/metrics kept between scrapes: the agent's ``MetricsExposition``, the job's
    ``JobExposition``."""

    def render(self, *, gzipped: bool) -> Exposition: ...


API_PREFIX = "/api/"
JSON_CONTENT_TYPE = "application/json"


class Answers(Protocol):
    """/api/: the reply to a GET of ``path`` (below /api/, still percent-encoded) with
    its query parameters; the job's ``JobApi``."""

    def get(self, path: str, query: Mapping[str, list[str]]) -> tuple[int, object]: ...


def json_error(status: int, error: str, message: str) -> tuple[int, dict[str, object]]:
    """An /api/ error reply: a stable code (``not_found`` ...) and one line for people."""
    return status, {"error": error, "message": message}


class MetricsServer:
    def __init__(
        self,
        registry: CollectorRegistry | None,
        host: str,
        port: int,
        *,
        ready: Callable[[], bool] = lambda: True,
        exposition: Renders | None = None,
        api: Answers | None = None,
    ) -> None:
        """/metrics from ``exposition`` (bytes kept between scrapes: the agent's, built
        once per poll; the job's, once per micro-batch) or else from ``registry``
        (collected at every scrape); /api/ from ``api`` (else not served)."""
        self.registry = registry
        self.exposition = exposition
        self.api = api
        self.ready = ready
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ksmon-http", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> "MetricsServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler_for(server: MetricsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            if path.startswith(API_PREFIX) and server.api is not None:
                self._reply_api(path[len(API_PREFIX) :], query)
            elif path == "/metrics" and server.exposition is not None:
                gzipped = _accepts_gzip(self.headers.get("Accept-Encoding", ""))
                self._reply_exposition(server.exposition.render(gzipped=gzipped))
            elif path == "/metrics" and server.registry is not None:
                encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
                self._reply(200, encoder(server.registry), content_type)
            elif path == "/healthz":
                self._reply(200, b"ok\n", "text/plain; charset=utf-8")
            elif path == "/readyz":
                ready = server.ready()
                body = b"ready\n" if ready else b"starting\n"
                self._reply(200 if ready else 503, body, "text/plain; charset=utf-8")
            elif path == "/":
                paths = "/metrics /healthz /readyz" + (" /api/v1" if server.api else "")
                self._reply(200, f"ksmon: {paths}\n".encode(), "text/plain; charset=utf-8")
            else:
                self._reply(404, b"not found\n", "text/plain; charset=utf-8")

        def _not_allowed(self) -> None:
            """Everything here is read-only: any method but GET is refused, in JSON
            under /api/ (a HEAD gets the headers alone)."""
            if self.path.startswith(API_PREFIX) and server.api is not None:
                _status, body = json_error(
                    405, "method_not_allowed", f"{self.command} is not allowed here: only GET"
                )
                data, content_type = _json_bytes(body), JSON_CONTENT_TYPE
            else:
                data, content_type = b"method not allowed\n", "text/plain; charset=utf-8"
            self.send_response(405)
            self.send_header("Allow", "GET")
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed  # noqa: N815

        def _reply_api(self, path: str, query: str) -> None:
            assert server.api is not None  # noqa: S101 - only called when served
            try:
                status, body = server.api.get(path, parse_qs(query, keep_blank_values=True))
                data = _json_bytes(body)
            except Exception:
                log.exception("http: /api/%s failed", path)
                status, fault = json_error(
                    500, "internal_error", "the reply could not be made; the job's log says why"
                )
                data = _json_bytes(fault)
            self._reply(status, data, JSON_CONTENT_TYPE)

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _reply_exposition(self, exposition: Exposition) -> None:
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            if exposition.gzipped:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(exposition.length))
            self.end_headers()
            for chunk in exposition.chunks:
                self.wfile.write(chunk)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("http: " + format, *args)

    return Handler


def _json_bytes(body: object) -> bytes:
    """Strict JSON (no NaN: the answer writes non-finite numbers as null), one line."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _accepts_gzip(accept_encoding: str) -> bool:
    """Whether ``Accept-Encoding`` allows gzip (and does not refuse it with q=0)."""
    for item in accept_encoding.split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() not in ("gzip", "*"):
            continue
        name, _, value = params.partition("=")
        if name.strip().lower() != "q":
            return True
        try:
            return float(value) > 0
        except ValueError:
            return False
    return False
