"""The HTTP server's /api/: JSON replies over a real socket, errors as JSON, GET only,
and a fault in an answer a 500 with a JSON body, never a traceback."""

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping

import pytest

from agent.aggregation.outputs.api import JobApi
from agent.exposition.http import MetricsServer
from tests.unit.aggregation.api_state import api_state


class Broken:
    """An answer that fails: what the server does then is the point."""

    def get(self, path: str, query: Mapping[str, list[str]]) -> tuple[int, object]:
        raise RuntimeError("secret=hunter2 broke")


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    s = MetricsServer(None, "127.0.0.1", 0, api=JobApi(api_state())).start()
    yield s
    s.stop()


def call(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - http only
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.mark.parametrize(
    ("path", "status", "field"),
    [
        ("/api/v1/clusters", 200, "clusters"),
        ("/api/v1/clusters/prod/groups/billing?", 200, "partitions"),
        ("/api/v1/findings?severity=critical", 200, "findings"),
        ("/api/v1/clusters/nowhere", 404, "error"),
        ("/api/v1/findings?severity=urgent", 400, "error"),
        ("/api/", 404, "error"),
    ],
)
def test_api_replies_are_json(server: MetricsServer, path: str, status: int, field: str) -> None:
    got, headers, body = call(server.port, path)
    assert got == status
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(body)
    assert field in json.loads(body)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_the_api_is_get_only(server: MetricsServer, method: str) -> None:
    status, headers, body = call(server.port, "/api/v1/findings", method)
    assert (status, headers["Allow"]) == (405, "GET")
    reply = json.loads(body)
    assert reply["error"] == "method_not_allowed"
    assert method in reply["message"]


def test_a_head_is_refused_with_headers_alone(server: MetricsServer) -> None:
    status, headers, body = call(server.port, "/api/v1/findings", "HEAD")
    assert (status, headers["Allow"], body) == (405, "GET", b"")


def test_a_failing_answer_is_a_json_500_that_shows_nothing_of_the_fault(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s = MetricsServer(None, "127.0.0.1", 0, api=Broken()).start()
    try:
        status, headers, body = call(s.port, "/api/v1/findings")
        # The server goes on serving after it.
        assert call(s.port, "/healthz")[0] == 200
    finally:
        s.stop()
    assert (status, headers["Content-Type"]) == (500, "application/json")
    assert json.loads(body)["error"] == "internal_error"
    assert b"hunter2" not in body
    assert b"Traceback" not in body
    assert "/api/v1/findings failed" in caplog.text


def test_the_index_page_names_the_api_only_where_it_is_served(server: MetricsServer) -> None:
    assert b"/api/v1" in call(server.port, "/")[2]
    agent = MetricsServer(None, "127.0.0.1", 0).start()
    try:
        assert b"/api" not in call(agent.port, "/")[2]
        # Without an API, /api/ is just a path that is not there.
        status, headers, _ = call(agent.port, "/api/v1/findings")
        assert (status, headers["Content-Type"]) == (404, "text/plain; charset=utf-8")
    finally:
        agent.stop()
