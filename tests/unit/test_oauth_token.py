"""OAUTHBEARER tokens by the client credentials grant: when they are asked for (a fixed
clock), what a failure says (one line naming the endpoint and the status or the network
error), and that the client secret is never in it.

The token endpoint is ``tests/support/oidc.py``'s, on 127.0.0.1.
"""

import logging

import pytest

from agent.config import parse_config
from agent.config.oauth_token import (
    MAX_BACKOFF,
    OAuthTokenError,
    Token,
    TokenCache,
    _jwt_claims,
    request_token,
)
from agent.config.schema import OAuthConfig
from agent.embedded.ports import free_port
from tests.support.oidc import AUDIENCE, Client, running_provider

SECRET = "client-secret-for-the-unit-test-9c1"  # noqa: S105 - a test value
CLIENT = Client("ksmon-unit", SECRET, "ksmon-unit-principal")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Endpoint:
    """A token endpoint as a function: hands out numbered tokens, or fails when told."""

    def __init__(self, lifetime: float = 100.0) -> None:
        self.lifetime = lifetime
        self.calls = 0
        self.failing = False

    def __call__(self) -> Token:
        self.calls += 1
        if self.failing:
            raise OAuthTokenError("OAuth token endpoint https://idp/token answered HTTP 503")
        return Token(f"token-{self.calls}", self.lifetime)

    def __str__(self) -> str:
        return "OAuth token endpoint https://idp/token"


def oauth(url: str, secret: str = SECRET) -> OAuthConfig:
    text = (
        "clusters:\n- name: a\n  bootstrap_servers: [k:1]\n  security:\n"
        "    protocol: SASL_PLAINTEXT\n    sasl:\n      mechanism: OAUTHBEARER\n"
        f"      oauth: {{token_endpoint_url: '{url}', client_id: {CLIENT.client_id}, "
        f"client_secret: '{secret}', scope: kafka}}\n"
    )
    sasl = parse_config(text, "t.yaml", {}).clusters[0].security.sasl
    assert sasl is not None
    assert sasl.oauth is not None
    return sasl.oauth


def test_a_token_is_reused_until_80_percent_of_its_lifetime() -> None:
    clock, endpoint = Clock(), Endpoint(lifetime=100.0)
    cache = TokenCache(endpoint, clock=clock)

    assert cache.token() == "token-1"
    clock.now += 79.9
    assert cache.token() == "token-1", "every login before the refresh point gets the same token"
    assert endpoint.calls == 1
    clock.now += 0.1
    assert cache.token() == "token-2", "at 80 % of its lifetime it is asked for again"


def test_a_failing_endpoint_is_asked_again_only_after_a_growing_back_off() -> None:
    clock, endpoint = Clock(), Endpoint()
    endpoint.failing = True
    cache = TokenCache(endpoint, clock=clock)

    intervals = []
    last = clock.now
    for _ in range(40):
        calls = endpoint.calls
        with pytest.raises(OAuthTokenError):
            cache.token()
        if endpoint.calls > calls:
            intervals.append(clock.now - last)
            last = clock.now
        clock.now += 0.5  # a reconnect every half second

    assert endpoint.calls < 8, "reconnects do not hammer the endpoint"
    assert intervals[1:] == sorted(intervals[1:]), "the back-off only grows"
    assert max(intervals) <= MAX_BACKOFF
    endpoint.failing = False
    clock.now += MAX_BACKOFF
    assert cache.token().startswith("token-")
    assert cache.failures == 0


def test_while_a_refresh_fails_the_old_token_serves_until_it_expires() -> None:
    clock, endpoint = Clock(), Endpoint(lifetime=100.0)
    cache = TokenCache(endpoint, clock=clock)
    assert cache.token() == "token-1"
    endpoint.failing = True

    clock.now += 85.0
    assert cache.token() == "token-1", "the refresh failed, the token still works"
    clock.now += 15.0
    with pytest.raises(OAuthTokenError):
        cache.token()


def test_the_grant_returns_the_issued_token_and_its_lifetime() -> None:
    with running_provider([CLIENT], lifetime=120.0) as provider:
        token = request_token(oauth(provider.token_url), timeout=5)

    assert token.lifetime == 120.0
    claims = _jwt_claims(token.value)
    assert (claims["sub"], claims["aud"]) == (CLIENT.subject, AUDIENCE)


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        pytest.param(
            "down",
            "OAuth token endpoint {url} answered HTTP 503 (Service Unavailable): "
            "temporarily_unavailable",
            id="endpoint down",
        ),
        pytest.param(
            "wrong secret",
            "OAuth token endpoint {url} answered HTTP 401 (Unauthorized): invalid_client: "
            "unknown client",
            id="a refused client secret",
        ),
        pytest.param(
            "nothing listening",
            "OAuth token endpoint {url} unreachable: Connection refused",
            id="nothing listening",
        ),
    ],
)
def test_a_failure_is_one_line_naming_the_endpoint_and_why_never_the_secret(
    setup: str, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    with running_provider([CLIENT]) as provider:
        url = provider.token_url
        secret = SECRET
        if setup == "down":
            provider.issue("down")
        elif setup == "wrong secret":
            secret = "not-the-secret-7e2"  # noqa: S105
        else:
            url = f"http://127.0.0.1:{free_port()}/token"
        cache = TokenCache(lambda: request_token(oauth(url, secret), timeout=5), clock=Clock())
        with caplog.at_level(logging.INFO), pytest.raises(OAuthTokenError) as raised:
            cache.token()

    assert str(raised.value) == expected.format(url=url)
    (record,) = [r for r in caplog.records if r.name == "agent.config.oauth_token"]
    assert record.getMessage().startswith(expected.format(url=url) + " (attempt 1; ")
    assert "\n" not in record.getMessage()
    for text in (str(raised.value), caplog.text):
        assert SECRET not in text
        assert secret not in text
