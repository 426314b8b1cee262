"""MSK IAM tokens: the signed request's shape and expiry on a fixed clock with fixed
credentials, the signature against botocore's own SigV4 presigner, where the region
and credentials come from, and the errors, one line each without a secret.

MSK itself cannot be reached from the tests: no token is checked by a broker here.
"""

import base64
import datetime
import string
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.session import Session

from agent.config import parse_config
from agent.config.msk_iam_token import (
    TOKEN_LIFETIME_SECONDS,
    AwsCredentials,
    MskIamTokenError,
    MskIamTokenProvider,
    region_of_host,
    signed_token,
)
from agent.config.sasl_files import check_sasl_files
from agent.config.schema import AwsIamConfig
from agent.errors import ConfigError

NOW = datetime.datetime(2026, 12, 3, 6, 30, 15, tzinfo=datetime.UTC)
ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  # noqa: S105 - AWS's example key
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE+/="  # noqa: S105 - a test value
BASE64URL = string.ascii_letters + string.digits + "-_"
MSK_BROKER = "b-1.monitoring.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"


def decoded(token: str) -> str:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()


def query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def test_the_token_is_a_presigned_connect_request_valid_for_fifteen_minutes() -> None:
    token = signed_token(AwsCredentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "eu-west-1", NOW)

    assert set(token.value) <= set(BASE64URL), "base64url, without padding"
    url = decoded(token.value)
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == (
        "https",
        "kafka.eu-west-1.amazonaws.com",
        "/",
    )
    params = query(url)
    signature = params.pop("X-Amz-Signature")
    assert len(signature) == 64
    assert set(signature) <= set(string.hexdigits.lower())
    assert params == {
        "Action": "kafka-cluster:Connect",
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{ACCESS_KEY}/20261203/eu-west-1/kafka-cluster/aws4_request",
        "X-Amz-Date": "20261203T063015Z",
        "X-Amz-Expires": "900",
        "X-Amz-SignedHeaders": "host",
        "X-Amz-Security-Token": SESSION_TOKEN,
        "User-Agent": "ksmon",
    }
    assert token.lifetime == TOKEN_LIFETIME_SECONDS == 900
    assert SECRET_KEY not in url


@pytest.mark.parametrize(
    "session_token",
    [
        pytest.param(None, id="long-term keys (an IAM user)"),
        pytest.param(SESSION_TOKEN, id="temporary credentials (a role, IRSA)"),
    ],
)
def test_the_signature_is_the_one_botocore_computes_at_the_same_instant(
    session_token: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two implementations of SigV4 agree: ours, and the AWS SDK's presigner with its
    clock held at the same instant."""
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: NOW.replace(tzinfo=None))
    request = AWSRequest(
        method="GET", url="https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect"
    )
    SigV4QueryAuth(
        Credentials(ACCESS_KEY, SECRET_KEY, session_token),
        "kafka-cluster",
        "eu-west-1",
        expires=TOKEN_LIFETIME_SECONDS,
    ).add_auth(request)

    ours = query(
        decoded(
            signed_token(
                AwsCredentials(ACCESS_KEY, SECRET_KEY, session_token), "eu-west-1", NOW
            ).value
        )
    )
    theirs = query(request.url)
    assert ours.pop("User-Agent") == "ksmon"
    assert ours == theirs


def test_a_later_clock_or_other_keys_sign_differently() -> None:
    credentials = AwsCredentials(ACCESS_KEY, SECRET_KEY)
    first = query(decoded(signed_token(credentials, "eu-west-1", NOW).value))
    later = query(
        decoded(signed_token(credentials, "eu-west-1", NOW + datetime.timedelta(seconds=1)).value)
    )
    rotated = query(
        decoded(signed_token(AwsCredentials(ACCESS_KEY, SECRET_KEY + "x"), "eu-west-1", NOW).value)
    )
    assert later["X-Amz-Date"] == "20261203T063016Z"
    assert (
        len({first["X-Amz-Signature"], later["X-Amz-Signature"], rotated["X-Amz-Signature"]}) == 3
    )


@pytest.mark.parametrize(
    ("host", "region"),
    [
        pytest.param(MSK_BROKER, "eu-west-1", id="a provisioned cluster's broker"),
        pytest.param(
            "boot-abc.c3.kafka-serverless.us-east-2.amazonaws.com:9098",
            "us-east-2",
            id="an MSK Serverless bootstrap address",
        ),
        pytest.param(
            "B-2.X.Y.C1.KAFKA.AP-SOUTHEAST-2.AMAZONAWS.COM",
            "ap-southeast-2",
            id="DNS is case-blind",
        ),
        pytest.param("kafka-1.internal.example.com:9092", None, id="not MSK: no region in it"),
        pytest.param(
            "kafka.eu-west-1.amazonaws.com.evil.example:9098",
            None,
            id="MSK's suffix must end the name",
        ),
    ],
)
def test_the_region_is_read_from_msk_broker_names(host: str, region: str | None) -> None:
    assert region_of_host(host) == region


@pytest.fixture
def aws_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An AWS environment of the test's own: no keys, profiles or region but its own, no
    instance metadata service asked."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ROLE_ARN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config").write_text("")
    (tmp_path / "credentials").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


def key_id(provider: MskIamTokenProvider) -> str:
    return query(decoded(provider.token()))["X-Amz-Credential"].split("/")[0]


@pytest.mark.parametrize(
    "variable",
    [
        pytest.param("AWS_DEFAULT_REGION", id="botocore's variable"),
        pytest.param("AWS_REGION", id="the Java SDK's and EKS's variable"),
    ],
)
def test_credentials_and_region_come_from_the_environment(
    variable: str, aws_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFROMENVIRONMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv(variable, "eu-central-1")
    provider = MskIamTokenProvider("cluster msk", AwsIamConfig(), ("kafka-1.internal:9098",))
    assert provider.region == "eu-central-1"
    assert key_id(provider) == "AKIAFROMENVIRONMENT"


def test_a_named_profile_gives_its_keys_and_the_region_order_is_key_host_chain(
    aws_home: Path,
) -> None:
    (aws_home / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = {SECRET_KEY}\n"
        f"[monitoring]\naws_access_key_id = AKIAMONITORING\naws_secret_access_key = {SECRET_KEY}\n"
    )
    (aws_home / "config").write_text("[profile monitoring]\nregion = us-west-2\n")
    monitoring = AwsIamConfig(profile="monitoring")

    by_chain = MskIamTokenProvider("cluster msk", monitoring, ("kafka-1.internal:9098",))
    assert (by_chain.region, key_id(by_chain)) == ("us-west-2", "AKIAMONITORING")
    by_host = MskIamTokenProvider("cluster msk", monitoring, (MSK_BROKER,))
    assert by_host.region == "eu-west-1", "the brokers' names say where the cluster is"
    by_key = MskIamTokenProvider(
        "cluster msk", AwsIamConfig(region="ap-south-1", profile="monitoring"), (MSK_BROKER,)
    )
    assert by_key.region == "ap-south-1", "aws.region wins"
    default = MskIamTokenProvider("cluster msk", AwsIamConfig(), (MSK_BROKER,))
    assert key_id(default) == "AKIADEFAULT"


def test_a_token_is_reused_until_four_fifths_of_its_lifetime_and_says_when_it_was_signed(
    aws_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    provider = MskIamTokenProvider(
        "cluster msk", AwsIamConfig(), (MSK_BROKER,), wall_clock=lambda: NOW
    )
    token = provider.token()
    assert provider.token() == token, "the clients of a cluster share one token"
    assert query(decoded(token))["X-Amz-Date"] == "20261203T063015Z"


@pytest.mark.parametrize(
    ("aws", "servers", "message"),
    [
        pytest.param(
            AwsIamConfig(profile="nowhere"),
            (MSK_BROKER,),
            "cluster msk: security.sasl.aws.profile: no profile 'nowhere' in the AWS config or "
            "credentials files",
            id="a profile the files lack",
        ),
        pytest.param(
            AwsIamConfig(),
            ("kafka-1.internal:9098",),
            "cluster msk: security.sasl.aws.region: no region set, none in the bootstrap "
            "servers' MSK host names and none from the AWS chain",
            id="no region anywhere",
        ),
    ],
)
def test_what_the_config_cannot_give_is_one_line_naming_the_key(
    aws_home: Path, aws: AwsIamConfig, servers: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        MskIamTokenProvider("cluster msk", aws, servers)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_no_credentials_is_a_retried_one_line_error_without_a_secret(aws_home: Path) -> None:
    provider = MskIamTokenProvider("cluster msk", AwsIamConfig(), (MSK_BROKER,))
    with pytest.raises(MskIamTokenError) as raised:
        provider.token()
    assert str(raised.value) == (
        "MSK IAM token of cluster msk (region eu-west-1): no AWS credentials found "
        "(environment, profile files, web identity, container or instance role)"
    )
    assert raised.value.retriable


def test_check_config_names_the_cluster_whose_msk_login_cannot_work(aws_home: Path) -> None:
    config = parse_config(
        "clusters:\n  - name: msk\n    bootstrap_servers: ['kafka-1.internal:9098']\n"
        "    security:\n      protocol: SASL_SSL\n      sasl: {mechanism: AWS_MSK_IAM}\n",
        "ksmon.yaml",
        {},
    )
    with pytest.raises(
        ConfigError, match=r"^ksmon\.yaml: clusters\[0\]: security\.sasl\.aws\.region: "
    ):
        check_sasl_files(config, "ksmon.yaml")
    (aws_home / "config").write_text("[default]\nregion = eu-west-1\n")
    check_sasl_files(config, "ksmon.yaml")


def test_a_session_of_botocore_is_what_the_provider_reads(aws_home: Path) -> None:
    """The provider asks botocore's session each time it signs, so credentials the chain
    refreshes (a role's, IRSA's) are used as they come."""
    (aws_home / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIAFIRST\naws_secret_access_key = {SECRET_KEY}\n"
    )
    session = Session()
    provider = MskIamTokenProvider(
        "cluster msk", AwsIamConfig(region="eu-west-1"), (MSK_BROKER,), session=session
    )
    assert key_id(provider) == "AKIAFIRST"
