"""Why a bootstrap failed, in words a person can act on, from the errors kafka-python met."""

import pytest

from agent.collect.kafka_edge import _explain

AUTH = (
    "SaslAuthenticationFailedError",
    "Authentication failed during authentication due to invalid credentials",
)
UNTRUSTED = (
    "KafkaConnectionError",
    "Handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
    "self-signed certificate in certificate chain (_ssl.c:1006)",
)
HOST = (
    "KafkaConnectionError",
    "Handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
    "Hostname mismatch, certificate is not valid for 'localhost'. (_ssl.c:1006)",
)
DISCONNECTED = ("KafkaConnectionError", "socket disconnected")
REFUSED = ("KafkaConnectionError", "[Errno 111] Connection refused")
TIMED_OUT = ("RequestTimedOutError", "Request timed out after 47 ms")


@pytest.mark.parametrize(
    ("errors", "sasl", "starts"),
    [
        pytest.param([AUTH], True, "authentication failed (SaslAuthentication", id="refused login"),
        pytest.param(
            [DISCONNECTED, AUTH, DISCONNECTED],
            True,
            "authentication failed",
            id="one attempt's SASL error among disconnects names the cause",
        ),
        pytest.param(
            [UNTRUSTED],
            True,
            "TLS handshake failed: the broker's certificate is not trusted",
            id="untrusted certificate",
        ),
        pytest.param(
            [HOST],
            False,
            "TLS handshake failed: the broker's certificate does not name the host",
            id="host name mismatch, more specific than untrusted",
        ),
        pytest.param(
            [DISCONNECTED, DISCONNECTED],
            True,
            "cannot connect: KafkaConnectionError: socket disconnected: the broker closed "
            "every connection during login",
            id="SASL error lost by the client: a hint, not a guess stated as fact",
        ),
        pytest.param(
            [DISCONNECTED, DISCONNECTED, TIMED_OUT],
            True,
            "cannot connect: KafkaConnectionError: socket disconnected: the broker closed "
            "every connection during login",
            id="the last login cut short by the bootstrap timeout",
        ),
        pytest.param(
            [TIMED_OUT],
            True,
            "cannot connect: RequestTimedOutError: Request timed out after 47 ms",
            id="only timeouts: no reason to suspect the credentials",
        ),
        pytest.param(
            [DISCONNECTED],
            False,
            "cannot connect: KafkaConnectionError: socket disconnected",
            id="no SASL: a disconnect is only a disconnect",
        ),
        pytest.param(
            [REFUSED], True, "cannot connect: KafkaConnectionError: [Errno 111]", id="refused"
        ),
    ],
)
def test_bootstrap_failures_are_explained(
    errors: list[tuple[str, str]], sasl: bool, starts: str
) -> None:
    explained = _explain(errors, sasl=sasl)

    assert explained.startswith(starts), explained
    if errors == [DISCONNECTED] and not sasl:
        assert explained == "cannot connect: KafkaConnectionError: socket disconnected"
