"""A small OpenID Connect provider on 127.0.0.1 for OAUTHBEARER tests: a token endpoint
(client credentials grant, HTTP Basic client authentication) issuing RS256 JWTs, and
the JWKS that verifies them (Kafka's broker-side validator fetches it).

``issue`` switches what the endpoint hands out: good tokens, expired ones, ones for
another audience, or HTTP errors (the endpoint "down").
"""

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import parse_qs, unquote

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.support.secure import SUPER_USER

Issuing = Literal["good", "expired", "wrong_audience", "down"]
AUDIENCE = "ksmon-test-kafka"
ISSUER = "https://idp.ksmon.test"
KEY_ID = "ksmon-test-key-1"


@dataclass
class Client:
    client_id: str
    client_secret: str
    subject: str  # the token's sub: the broker's principal User:<subject>


# The session provider's client: its tokens' subject is the broker's super user.
OAUTH_CLIENT = Client("ksmon-oauth-client", "ksmon-oauth-secret-2f8e", SUPER_USER)
OAUTH_CLIENTS = [OAUTH_CLIENT]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(number: int) -> str:
    return _b64(number.to_bytes((number.bit_length() + 7) // 8, "big"))


class OidcProvider:
    def __init__(self, clients: list[Client], *, lifetime: float = 3600.0) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._clients = {c.client_id: c for c in clients}
        self.lifetime = lifetime
        self.issuing: Issuing = "good"
        self.down_status = 503
        self.token_requests = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/jwks"

    def start(self) -> "OidcProvider":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def issue(self, issuing: Issuing, *, lifetime: float | None = None) -> None:
        with self._lock:
            self.issuing = issuing
            if lifetime is not None:
                self.lifetime = lifetime

    def jwks(self) -> dict[str, object]:
        public = self._key.public_key().public_numbers()
        key = {"kty": "RSA", "kid": KEY_ID, "use": "sig", "alg": "RS256"}
        return {"keys": [{**key, "n": _uint(public.n), "e": _uint(public.e)}]}

    def token_for(self, subject: str, *, audience: str = AUDIENCE, expires_in: float) -> str:
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": KEY_ID}
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": audience,
            "iat": now if expires_in > 0 else now - 3600,
            "exp": now + int(expires_in),
            "scope": "kafka",
        }
        signed = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signed}.{_b64(signature)}"

    def _answer(self, authorization: str, form: dict[str, list[str]]) -> tuple[int, object]:
        with self._lock:
            self.token_requests += 1
            issuing, lifetime = self.issuing, self.lifetime
        if issuing == "down":
            return self.down_status, {"error": "temporarily_unavailable"}
        client = self._authenticated(authorization)
        if client is None:
            return 401, {"error": "invalid_client", "error_description": "unknown client"}
        if form.get("grant_type") != ["client_credentials"]:
            return 400, {"error": "unsupported_grant_type"}
        if issuing == "expired":
            # Expired well beyond the broker's allowed clock skew; the answer still says
            # it lives, as a provider with a wrong clock would.
            token = self.token_for(client.subject, expires_in=-600)
        elif issuing == "wrong_audience":
            token = self.token_for(client.subject, audience="someone-else", expires_in=lifetime)
        else:
            token = self.token_for(client.subject, expires_in=lifetime)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": lifetime}

    def _authenticated(self, authorization: str) -> Client | None:
        scheme, _, encoded = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, password = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            return None
        client = self._clients.get(unquote(user))
        return client if client is not None and client.client_secret == unquote(password) else None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._send(200, provider.jwks())
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                if self.path != "/token":
                    self._send(404, {"error": "not_found"})
                    return
                self._send(*provider._answer(self.headers.get("Authorization", ""), form))

        return Handler


@contextmanager
def running_provider(clients: list[Client], **kwargs: float) -> Iterator[OidcProvider]:
    provider = OidcProvider(clients, **kwargs).start()
    try:
        yield provider
    finally:
        provider.stop()
