"""Amazon MSK IAM logins for kafka-python: SASL/OAUTHBEARER with a signed MSK token.

MSK's IAM listeners take, besides Amazon's own ``AWS_MSK_IAM`` exchange, OAUTHBEARER
with a token that is a SigV4-presigned ``kafka-cluster:Connect`` request, base64url
encoded: what Amazon's MSK IAM SASL signer libraries make for non-Java clients. The
agent speaks that, because kafka-python's token provider is set per client: each
cluster signs with its own region and profile, where kafka-python's ``AWS_MSK_IAM``
mechanism reads botocore's process-wide defaults only.

``signed_token`` is the signing, pure, on a given clock; ``MskIamTokenProvider``
takes the credentials from botocore's chain (environment, profile files, web identity
as on EKS with IRSA, container and instance roles), so refreshed credentials are used
as they come, and signs a new token when 80 % of the last one's lifetime has passed
(``TokenCache``, as for OIDC tokens).
"""

import base64
import datetime
import hashlib
import hmac
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from kafka.net.sasl.oauth import AbstractTokenProvider

from agent.config.oauth_token import OAuthTokenError, Token, TokenCache
from agent.config.schema import AwsIamConfig
from agent.errors import ConfigError

SERVICE = "kafka-cluster"
ACTION = "kafka-cluster:Connect"
# How long MSK accepts a token after it was signed.
TOKEN_LIFETIME_SECONDS = 900
USER_AGENT = "ksmon"
_ALGORITHM = "AWS4-HMAC-SHA256"
_EMPTY_PAYLOAD_SHA256 = hashlib.sha256(b"").hexdigest()
# MSK's broker names end in .kafka.<region>.amazonaws.com (also .kafka-serverless.).
_MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z0-9]+)+)\.amazonaws\.com$")


class MskIamTokenError(OAuthTokenError):
    """No MSK token could be signed (no credentials): one line, never a secret."""


@dataclass(frozen=True, slots=True)
class AwsCredentials:
    access_key: str
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


def signed_token(credentials: AwsCredentials, region: str, now: datetime.datetime) -> Token:
    """The OAUTHBEARER token for MSK in ``region``, signed at ``now`` (UTC)."""
    host = f"kafka.{region}.amazonaws.com"
    amz_date = now.astimezone(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    scope = f"{day}/{region}/{SERVICE}/aws4_request"
    params = {
        "Action": ACTION,
        "X-Amz-Algorithm": _ALGORITHM,
        "X-Amz-Credential": f"{credentials.access_key}/{scope}",
        "X-Amz-Date": amz_date,
        "X-Amz-Expires": str(TOKEN_LIFETIME_SECONDS),
        "X-Amz-SignedHeaders": "host",
    }
    if credentials.session_token is not None:
        params["X-Amz-Security-Token"] = credentials.session_token
    query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(params.items()))
    canonical_request = "\n".join(
        ("GET", "/", query, f"host:{host}\n", "host", _EMPTY_PAYLOAD_SHA256)
    )
    string_to_sign = "\n".join(
        (_ALGORITHM, amz_date, scope, hashlib.sha256(canonical_request.encode()).hexdigest())
    )
    key = f"AWS4{credentials.secret_key}".encode()
    for part in (day, region, SERVICE, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    # The user agent is not signed: MSK reads it for its logs only.
    url = f"https://{host}/?{query}&X-Amz-Signature={signature}&User-Agent={USER_AGENT}"
    value = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return Token(value, lifetime=float(TOKEN_LIFETIME_SECONDS))


def _encode(text: str) -> str:
    """SigV4's URI encoding: everything but the unreserved characters."""
    return quote(text, safe="-_.~")


def region_of_host(host: str) -> str | None:
    """The region in an MSK broker's host name, None for any other name."""
    match = _MSK_HOST.search(host.rsplit(":", 1)[0].lower())
    return match.group(1) if match else None


class MskIamTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    """kafka-python's token provider for one cluster's ``aws`` section."""

    def __init__(
        self,
        where: str,
        aws: AwsIamConfig,
        bootstrap_servers: tuple[str, ...],
        *,
        session: Any = None,  # noqa: ANN401 - a botocore Session; made here when None
        wall_clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        """``where`` names the cluster in errors: ``cluster NAME`` or the config's key."""
        super().__init__()
        self._session = session if session is not None else _botocore_session(where, aws)
        self.region = _region(where, aws, bootstrap_servers, self._session)
        self._where = where
        self._profile = aws.profile
        self._wall_clock = wall_clock
        self._cache = TokenCache(self._sign, clock=time.monotonic)

    def token(self) -> str:
        return self._cache.token()

    def _sign(self) -> Token:
        return signed_token(self._credentials(), self.region, self._wall_clock())

    def _credentials(self) -> AwsCredentials:
        from botocore.exceptions import BotoCoreError  # noqa: PLC0415 - an optional extra

        try:
            found = self._session.get_credentials()
            frozen = found.get_frozen_credentials() if found is not None else None
        except BotoCoreError as e:
            raise MskIamTokenError(f"{self}: AWS credentials could not be loaded: {e}") from None
        if frozen is None or not frozen.access_key or not frozen.secret_key:
            raise MskIamTokenError(
                f"{self}: no AWS credentials found (environment, profile files, web "
                "identity, container or instance role)"
            )
        return AwsCredentials(frozen.access_key, frozen.secret_key, frozen.token or None)

    def __str__(self) -> str:
        profile = f", profile {self._profile}" if self._profile else ""
        return f"MSK IAM token of {self._where} (region {self.region}{profile})"

    def __repr__(self) -> str:  # kafka-python logs its configuration at DEBUG
        return f"<{type(self).__name__}: {self}>"


def _botocore_session(where: str, aws: AwsIamConfig) -> Any:  # noqa: ANN401 - botocore's
    try:
        from botocore.exceptions import ProfileNotFound  # noqa: PLC0415 - an optional extra
        from botocore.session import Session  # noqa: PLC0415
    except ImportError as e:
        raise ConfigError(
            f"{where}: security.sasl.mechanism: AWS_MSK_IAM needs the Python "
            f"package botocore (pip install 'ksmon[msk]'): {e}"
        ) from None
    session = Session(profile=aws.profile)
    if aws.profile is not None:
        try:
            session.get_scoped_config()
        except ProfileNotFound:
            raise ConfigError(
                f"{where}: security.sasl.aws.profile: no profile {aws.profile!r} "
                "in the AWS config or credentials files (AWS_CONFIG_FILE, "
                "AWS_SHARED_CREDENTIALS_FILE)"
            ) from None
    return session


def _region(
    where: str,
    aws: AwsIamConfig,
    bootstrap_servers: tuple[str, ...],
    session: Any,  # noqa: ANN401 - a botocore Session
) -> str:
    """``aws.region``, else the brokers' host names', else the AWS chain's."""
    if aws.region is not None:
        return aws.region
    for server in bootstrap_servers:
        if (region := region_of_host(server)) is not None:
            return region
    # botocore reads AWS_DEFAULT_REGION; the Java SDK (the job's) and EKS read AWS_REGION.
    region = session.get_config_variable("region") or os.environ.get("AWS_REGION")
    if region:
        return str(region)
    raise ConfigError(
        f"{where}: security.sasl.aws.region: no region set, none in the "
        "bootstrap servers' MSK host names and none from the AWS chain (AWS_REGION, "
        "AWS_DEFAULT_REGION, the profile's region); set aws.region such as eu-west-1"
    )
