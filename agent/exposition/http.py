"""The small HTTP server of the agent and the job: /metrics, /healthz, /readyz.

/healthz says the process serves requests; /readyz says it has started its
work (configuration loaded, schedulers running). Neither depends on Kafka
being reachable: a sidecar's readiness gates its whole pod, and a broker
outage must not take the application out of its Service.
"""

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from agent.exposition.metrics_cache import CONTENT_TYPE, Exposition

log = logging.getLogger(__name__)


class Renders(Protocol):
    """/metrics kept between scrapes: the agent's ``MetricsExposition``, the job's
    ``JobExposition``."""

    def render(self, *, gzipped: bool) -> Exposition: ...


class MetricsServer:
    def __init__(
        self,
        registry: CollectorRegistry | None,
        host: str,
        port: int,
        *,
        ready: Callable[[], bool] = lambda: True,
        exposition: Renders | None = None,
    ) -> None:
        """/metrics from ``exposition`` (bytes kept between scrapes: the agent's, built
        once per poll; the job's, once per micro-batch) or else from ``registry``
        (collected at every scrape)."""
        self.registry = registry
        self.exposition = exposition
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
            path = self.path.split("?", 1)[0]
            if path == "/metrics" and server.exposition is not None:
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
                body = b"ksmon: /metrics /healthz /readyz\n"
                self._reply(200, body, "text/plain; charset=utf-8")
            else:
                self._reply(404, b"not found\n", "text/plain; charset=utf-8")

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
