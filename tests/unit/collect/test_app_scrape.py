"""Scraping the app's endpoint over real HTTP: filtering while reading, and every way it fails."""

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.collect.app_scrape import scrape_metrics
from agent.streams.app_metrics import relevant_raw_line

BODY = (
    b"# HELP jvm_threads_current ...\n"
    b"jvm_threads_current 42.0\n"
    b'kafka_streams_stream_metrics_alive_stream_threads{client_id="c"} 2.0\n'
    + b'kafka_consumer_consumer_fetch_manager_metrics_records_lag{partition="0"} 5.0\n'
    * 5000
)

DRIP = BODY.splitlines(keepends=True)[:50]  # one line every 50 ms: 2.5 s in all


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        # The scraper may give up first, as some tests intend.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._reply()

    def _reply(self) -> None:
        if self.path == "/missing":
            self.send_error(404, "Not Found")
            return
        if self.path == "/slow":
            time.sleep(3)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        if self.path == "/drip":
            for line in DRIP:
                self.wfile.write(line)
                self.wfile.flush()
                time.sleep(0.05)
            return
        self.wfile.write(BODY)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_keeps_only_the_relevant_lines_of_a_large_body(server: str) -> None:
    scrape = scrape_metrics(f"{server}/metrics", 5.0, relevant_raw_line)

    assert scrape.error is None
    assert scrape.text == 'kafka_streams_stream_metrics_alive_stream_threads{client_id="c"} 2.0\n'
    assert scrape.bytes_read == len(BODY)


def test_http_errors_say_the_status(server: str) -> None:
    scrape = scrape_metrics(f"{server}/missing", 5.0, relevant_raw_line)

    assert scrape.error == f"{server}/missing answered HTTP 404 Not Found"


def test_nothing_listening_says_so() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free once closed

    scrape = scrape_metrics(f"http://127.0.0.1:{port}/metrics", 5.0, relevant_raw_line)

    assert scrape.error == f"cannot reach http://127.0.0.1:{port}/metrics: Connection refused"


def test_an_endpoint_that_does_not_answer_in_time(server: str) -> None:
    scrape = scrape_metrics(f"{server}/slow", 0.5, relevant_raw_line)

    assert scrape.error == f"{server}/slow did not answer within 0.5s"


def test_the_timeout_bounds_the_whole_scrape_not_each_read(server: str) -> None:
    scrape = scrape_metrics(f"{server}/drip", 0.5, relevant_raw_line)

    # Every read comes within 0.05 s, so only the whole-scrape deadline stops it.
    assert scrape.error == f"{server}/drip did not finish within 0.5s"
    assert 0 < scrape.bytes_read < sum(len(line) for line in DRIP)
