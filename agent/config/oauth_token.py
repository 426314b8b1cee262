"""SASL/OAUTHBEARER access tokens for kafka-python, by the OAuth client credentials grant.

kafka-python asks its ``sasl_oauth_token_provider`` for a token at every login
(each new connection, each re-authentication). ``ClientCredentialsTokenProvider``
answers from a cached token and asks the identity provider's token endpoint
again once 80 % of the token's lifetime has passed. A failed request is one
``OAuthTokenError`` line naming the endpoint and the HTTP status or network
error, never the client secret; until a back-off has passed, logins get that
same error (or the old token, while it is still valid) without another request,
so a failing endpoint is not hammered by every reconnect. The login fails,
kafka-python reconnects, the daemon carries on.

``TokenCache`` is the timing, without I/O; ``request_token`` is the HTTP request.
"""

import base64
import json
import logging
import math
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO
from urllib.parse import quote, urlencode

from kafka.net.sasl.oauth import AbstractTokenProvider

from agent.config.schema import OAuthConfig

log = logging.getLogger(__name__)

# Asked again at this share of a token's lifetime: a login just before expiry still
# gets a token that outlives the broker's check.
REFRESH_AT = 0.8
# Never asked again sooner than this after a token came, however short its lifetime.
MIN_REFRESH = 1.0
# Back-off after failed requests: doubling from the first, at most the last.
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0
# A token's lifetime when the answer says none (no expires_in, not a JWT with exp).
DEFAULT_LIFETIME = 300.0
_MAX_ANSWER_BYTES = 1 << 20


class OAuthTokenError(Exception):
    """The token endpoint gave no token: one line naming it and why."""

    retriable = True


@dataclass(frozen=True, slots=True)
class Token:
    value: str
    lifetime: float  # seconds from when it was issued


class TokenCache:
    """When to ask for a token, and what to answer meanwhile; ``clock`` is monotonic seconds."""

    def __init__(self, fetch: Callable[[], Token], *, clock: Callable[[], float]) -> None:
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_at = -math.inf
        self._refresh_at = -math.inf
        self._retry_at = -math.inf
        self._failures = 0
        self._error: OAuthTokenError | None = None

    def token(self) -> str:
        """A valid token: the cached one, or a new one when its refresh is due."""
        with self._lock:
            now = self._clock()
            if self._token is not None and now < self._refresh_at:
                return self._token
            if now < self._retry_at:
                return self._while_failing(now)
            try:
                token = self._fetch()
            except OAuthTokenError as e:
                self._failed(now, e)
                return self._while_failing(now)
            self._got(now, token)
            return token.value

    @property
    def failures(self) -> int:
        """Requests failed in a row since the last token came."""
        return self._failures

    def _while_failing(self, now: float) -> str:
        if self._token is not None and now < self._expires_at:
            return self._token  # the old one still works
        assert self._error is not None  # noqa: S101 - set with _retry_at
        raise self._error

    def _failed(self, now: float, error: OAuthTokenError) -> None:
        self._failures += 1
        backoff = min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** (self._failures - 1))
        self._retry_at = now + backoff
        self._error = error
        log.warning(
            "%s (attempt %d; next one in %gs at the earliest)", error, self._failures, backoff
        )

    def _got(self, now: float, token: Token) -> None:
        if self._failures:
            log.info(
                "%s issues tokens again, after %d failed requests", self._fetch, self._failures
            )
        self._failures = 0
        self._error = None
        self._retry_at = -math.inf
        self._token = token.value
        self._expires_at = now + token.lifetime
        self._refresh_at = now + max(MIN_REFRESH, REFRESH_AT * token.lifetime)


class ClientCredentialsTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    """kafka-python's token provider for one ``oauth`` section."""

    def __init__(self, oauth: OAuthConfig, *, timeout: float = 30.0) -> None:
        super().__init__()
        self._extensions = dict(oauth.extensions)
        self._cache = TokenCache(TokenRequest(oauth, timeout), clock=time.monotonic)

    def token(self) -> str:
        return self._cache.token()

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)

    def __repr__(self) -> str:  # kafka-python logs its configuration at DEBUG
        return f"<{type(self).__name__} of {self._cache._fetch}>"


class TokenRequest:
    """``request_token`` for one ``oauth`` section, as a function of nothing."""

    def __init__(self, oauth: OAuthConfig, timeout: float) -> None:
        self.oauth = oauth
        self.timeout = timeout

    def __call__(self) -> Token:
        return request_token(self.oauth, self.timeout)

    def __str__(self) -> str:
        return f"OAuth token endpoint {self.oauth.token_endpoint_url}"


def request_token(
    oauth: OAuthConfig, timeout: float, *, now: Callable[[], float] = time.time
) -> Token:
    """POST the client credentials grant; ``OAuthTokenError`` says why no token came."""
    endpoint = f"OAuth token endpoint {oauth.token_endpoint_url}"
    form = {"grant_type": "client_credentials"}
    if oauth.scope:
        form["scope"] = oauth.scope
    request = urllib.request.Request(  # noqa: S310 - the loader allows https and loopback http
        oauth.token_endpoint_url,
        data=urlencode(form).encode(),
        method="POST",
        headers={
            "Authorization": _basic_authorization(oauth),
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        },
    )
    try:
        with _opener(oauth).open(request, timeout=timeout) as answer:
            body = answer.read(_MAX_ANSWER_BYTES)
    except urllib.error.HTTPError as e:
        raise OAuthTokenError(f"{endpoint} answered HTTP {e.code}{_oauth_error(e)}") from None
    except urllib.error.URLError as e:
        raise OAuthTokenError(f"{endpoint} unreachable: {_reason(e.reason)}") from None
    except TimeoutError:
        raise OAuthTokenError(f"{endpoint} unreachable: no answer within {timeout:g}s") from None
    except (OSError, ssl.SSLError) as e:
        raise OAuthTokenError(f"{endpoint} unreachable: {_reason(e)}") from None
    return _token_of(body, endpoint, now())


def _basic_authorization(oauth: OAuthConfig) -> str:
    # RFC 6749 section 2.3.1: each part form-encoded, then HTTP Basic.
    user = quote(oauth.client_id, safe="")
    password = quote(oauth.client_secret.reveal(), safe="")
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the client's credentials elsewhere: it is an answer instead."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _opener(oauth: OAuthConfig) -> urllib.request.OpenerDirector:
    context = ssl.create_default_context(
        cafile=str(oauth.ca_file) if oauth.ca_file is not None else None
    )
    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _NoRedirects())


def _token_of(body: bytes, endpoint: str, now: float) -> Token:
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise OAuthTokenError(f"{endpoint} answered HTTP 200 without JSON") from None
    token = answer.get("access_token") if isinstance(answer, dict) else None
    if not isinstance(token, str) or not token:
        raise OAuthTokenError(f"{endpoint} answered HTTP 200 without an access_token")
    token_type = answer.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise OAuthTokenError(
            f"{endpoint} issued a token of type {str(token_type)[:40]!r}, not Bearer"
        )
    return Token(token, _lifetime(answer.get("expires_in"), token, now))


def _lifetime(expires_in: object, token: str, now: float) -> float:
    """expires_in when the answer has it (RFC 6749), else the JWT's exp, else a default."""
    if isinstance(expires_in, str) and expires_in.strip().isdigit():
        expires_in = int(expires_in)
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
        return max(0.0, float(expires_in))
    exp = _jwt_claims(token).get("exp")
    if isinstance(exp, int | float) and not isinstance(exp, bool):
        return max(0.0, float(exp) - now)
    return DEFAULT_LIFETIME


def _jwt_claims(token: str) -> dict[str, object]:
    """A JWT's claims, unverified (only its lifetime is read here); {} for another token."""
    parts = token.split(".")
    if len(parts) != 3:  # noqa: PLR2004 - header.payload.signature
        return {}
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return {}
    return claims if isinstance(claims, dict) else {}


def _oauth_error(error: urllib.error.HTTPError) -> str:
    """`` (reason): error: description`` from an RFC 6749 error answer, when it is one."""
    reason = f" ({error.reason})" if error.reason else ""
    try:
        answer = json.loads(_read(error.fp))
    except (ValueError, UnicodeDecodeError, OSError):
        return reason
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), str):
        return reason
    description = answer.get("error_description")
    said = answer["error"] + (f": {description}" if isinstance(description, str) else "")
    return f"{reason}: {' '.join(said.split())[:200]}"


def _read(fp: IO[bytes] | None) -> bytes:
    return fp.read(_MAX_ANSWER_BYTES) if fp is not None else b""


def _reason(reason: object) -> str:
    if isinstance(reason, ssl.SSLCertVerificationError):
        return f"TLS: {reason.verify_message or reason.reason}; check oauth.ca_file"
    if isinstance(reason, ssl.SSLError):
        return f"TLS: {reason.reason or reason}"
    if isinstance(reason, TimeoutError | socket.timeout):
        return "no answer in time"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return " ".join(str(reason).split())[:200]
