"""The SASL mechanisms beyond passwords: OAUTHBEARER, AWS_MSK_IAM and GSSAPI, read, refused
in one line naming the key, described without secrets, and mapped to both clients."""

import textwrap
from pathlib import Path

import pytest

from agent.aggregation.spark.source import (
    OAUTH_ALLOWED_URLS,
    jvm_system_properties,
    kafka_source_options,
)
from agent.config import Config, kafka_client_settings, parse_config
from agent.config.sasl_files import check_sasl_files
from agent.errors import ConfigError

CLUSTER = "clusters:\n  - name: a\n    bootstrap_servers: [k:9092]\n    security:\n"
SECRET = "s3cret-of-the-client"  # noqa: S105 - a test value
ENV = {"CLIENT_SECRET": SECRET}


def sasl(body: str, protocol: str = "SASL_SSL") -> str:
    return (
        CLUSTER + f"      protocol: {protocol}\n      sasl:\n" + textwrap.indent(body, "        ")
    )


OAUTH = (
    "mechanism: OAUTHBEARER\noauth:\n  token_endpoint_url: https://idp.example.com/token\n"
    "  client_id: ksmon\n  client_secret: {env: CLIENT_SECRET}\n"
)
KERBEROS = "mechanism: GSSAPI\nkerberos:\n  principal: ksmon@EX.COM\n  keytab: /k.keytab\n"


def parse(text: str) -> Config:
    return parse_config(text, "test.yaml", ENV)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            sasl(OAUTH + "username: u\n"),
            "test.yaml:12: clusters[0].security.sasl.username: only used with mechanism "
            "PLAIN or SCRAM-SHA-256 or SCRAM-SHA-512, but mechanism is OAUTHBEARER",
            id="a password mechanism's key with OAUTHBEARER",
        ),
        pytest.param(
            sasl("mechanism: SCRAM-SHA-512\nusername: u\npassword: p\noauth: {}\n"),
            "clusters[0].security.sasl.oauth: only used with mechanism OAUTHBEARER, "
            "but mechanism is SCRAM-SHA-512",
            id="a stray oauth section with SCRAM",
        ),
        pytest.param(
            sasl("mechanism: OAUTHBEARER\n"),
            "clusters[0].security.sasl.oauth: required with mechanism OAUTHBEARER "
            "(token_endpoint_url, client_id, client_secret)",
            id="OAUTHBEARER without its section",
        ),
        pytest.param(
            sasl(OAUTH.replace("https://idp.example.com", "http://idp.example.com")),
            "test.yaml:9: clusters[0].security.sasl.oauth.token_endpoint_url: must be https:// "
            "(the client secret is sent to it); http:// is allowed only for 127.0.0.1, "
            "localhost or ::1, got 'http://idp.example.com/token'",
            id="plain http to another host: the secret would travel in clear",
        ),
        pytest.param(
            sasl(OAUTH.replace("https://idp.example.com/token", "idp.example.com/token")),
            "oauth.token_endpoint_url: expected an https:// URL such as "
            "https://idp.example.com/oauth2/token, got 'idp.example.com/token'",
            id="no scheme",
        ),
        pytest.param(
            sasl(OAUTH.replace("https://idp", "https://me:pw@idp")),
            "oauth.token_endpoint_url: must not hold credentials (user:password@); "
            "use client_secret",
            id="credentials in the URL, not quoted",
        ),
        pytest.param(
            sasl(OAUTH.replace("  client_secret: {env: CLIENT_SECRET}\n", "")),
            "oauth.client_secret: required key missing",
            id="no client secret",
        ),
        pytest.param(
            sasl(OAUTH.replace("{env: CLIENT_SECRET}", "{file: /no/such/secret}")),
            "oauth.client_secret: cannot read secret file /no/such/secret: No such file",
            id="an unreadable secret file",
        ),
        pytest.param(
            sasl(OAUTH + "  extensions: {auth: x}\n"),
            "oauth.extensions.auth: an extension name must be letters only and not 'auth'",
            id="the reserved extension name",
        ),
        pytest.param(
            sasl(OAUTH + "  extensions: {logicalCluster: 7}\n"),
            "oauth.extensions.logicalCluster: expected text of visible ASCII characters and "
            "spaces, got 7 (quote it to make it text)",
            id="an extension value that is not text",
        ),
        pytest.param(
            sasl("mechanism: AWS_MSK_IAM\n", protocol="SASL_PLAINTEXT"),
            "clusters[0].security.sasl.mechanism: AWS_MSK_IAM needs protocol SASL_SSL",
            id="MSK IAM without TLS",
        ),
        pytest.param(
            sasl("mechanism: AWS_MSK_IAM\naws: {region: Ireland}\n"),
            "sasl.aws.region: expected an AWS region such as eu-west-1, got 'Ireland'",
            id="not a region",
        ),
        pytest.param(
            sasl(KERBEROS.replace("  keytab: /k.keytab\n", "")),
            "sasl.kerberos.keytab: required key missing; expected the keytab file of ksmon@EX.COM",
            id="Kerberos without a keytab",
        ),
        pytest.param(
            sasl(KERBEROS + "  service_name: kafka/broker@EX.COM\n"),
            "sasl.kerberos.service_name: expected the first part of the brokers' principal only",
            id="a whole principal as the service name",
        ),
        pytest.param(
            sasl("mechanism: GSSAPI\nkerberos: {keytab: /k}\n"),
            "sasl.kerberos.principal: required key missing",
            id="Kerberos without a principal",
        ),
    ],
)
def test_a_bad_sasl_section_is_one_line_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(text)

    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
    assert SECRET not in str(raised.value)
    assert "me:pw" not in str(raised.value)


def test_oauthbearer_reads_every_key_and_http_only_on_loopback() -> None:
    config = parse(
        sasl(
            OAUTH.replace("https://idp.example.com", "http://127.0.0.1:8080")
            + "  scope: kafka read\n  extensions: {logicalCluster: lkc-1, poolId: p-2}\n"
            "  ca_file: /ca.pem\n"
        )
    )
    oauth = config.clusters[0].security.sasl.oauth  # type: ignore[union-attr]

    assert oauth is not None
    assert oauth.token_endpoint_url == "http://127.0.0.1:8080/token"  # noqa: S105
    assert (oauth.client_id, oauth.client_secret.reveal()) == ("ksmon", SECRET)
    assert (oauth.scope, oauth.ca_file) == ("kafka read", Path("/ca.pem"))
    assert oauth.extensions == (("logicalCluster", "lkc-1"), ("poolId", "p-2"))
    for host in ("localhost", "[::1]"):
        parse(sasl(OAUTH.replace("https://idp.example.com", f"http://{host}:1")))


def test_the_described_cluster_names_who_logs_in_and_never_the_secret() -> None:
    described = {
        "oauth": parse(sasl(OAUTH + "  scope: kafka\n")).describe(),
        "kerberos": parse(sasl(KERBEROS, protocol="SASL_PLAINTEXT")).describe(),
        "aws": parse(sasl("mechanism: AWS_MSK_IAM\naws: {profile: mon}\n")).describe(),
    }

    assert (
        "over SASL_SSL OAUTHBEARER as client ksmon of https://idp.example.com/token "
        "(secret from environment variable CLIENT_SECRET, scope kafka)"
    ) in described["oauth"]
    assert (
        "over SASL_PLAINTEXT GSSAPI as ksmon@EX.COM (keytab /k.keytab) to service kafka"
    ) in described["kerberos"]
    assert "AWS_MSK_IAM (credentials from the AWS chain; profile mon)" in described["aws"]
    assert all(SECRET not in text for text in described.values())


def test_each_mechanism_maps_to_kafka_python_and_to_the_java_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws_config = tmp_path / "aws-config"
    aws_config.write_text("[profile mon]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(aws_config))
    oauth = parse(sasl(OAUTH + "  scope: kafka\n  extensions: {logicalCluster: lkc-1}\n"))
    kerberos = parse(sasl(KERBEROS, protocol="SASL_PLAINTEXT"))
    aws = parse(sasl("mechanism: AWS_MSK_IAM\naws: {profile: mon}\n"))

    python = kafka_client_settings(oauth.clusters[0])
    provider = python["sasl_oauth_token_provider"]
    assert python["sasl_mechanism"] == "OAUTHBEARER"
    assert provider.extensions() == {"logicalCluster": "lkc-1"}  # type: ignore[attr-defined]
    assert provider is kafka_client_settings(oauth.clusters[0])["sasl_oauth_token_provider"], (
        "the clients of a cluster share one provider, so one token"
    )
    assert SECRET not in repr(python)
    java = kafka_source_options(oauth.clusters[0])
    assert java["kafka.sasl.mechanism"] == "OAUTHBEARER"
    assert java["kafka.sasl.oauthbearer.token.endpoint.url"] == "https://idp.example.com/token"
    assert java["kafka.sasl.login.callback.handler.class"].endswith(
        "OAuthBearerLoginCallbackHandler"
    )
    assert java["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        f'clientId="ksmon" clientSecret="{SECRET}" scope="kafka" extension_logicalCluster="lkc-1";'
    )
    assert jvm_system_properties(oauth.clusters) == {
        OAUTH_ALLOWED_URLS: "https://idp.example.com/token"
    }

    assert kafka_client_settings(kerberos.clusters[0])["sasl_kerberos_service_name"] == "kafka"
    assert kafka_source_options(kerberos.clusters[0])["kafka.sasl.jaas.config"] == (
        'com.sun.security.auth.module.Krb5LoginModule required useKeyTab="true" '
        'storeKey="true" keyTab="/k.keytab" principal="ksmon@EX.COM";'
    )
    # MSK's IAM listeners take OAUTHBEARER with a signed token from kafka-python.
    msk = kafka_client_settings(aws.clusters[0])
    assert msk["sasl_mechanism"] == "OAUTHBEARER"
    assert str(msk["sasl_oauth_token_provider"]) == (
        "MSK IAM token of cluster a (region eu-west-1, profile mon)"
    )
    assert kafka_source_options(aws.clusters[0])["kafka.sasl.mechanism"] == "AWS_MSK_IAM"
    assert kafka_source_options(aws.clusters[0])["kafka.sasl.jaas.config"] == (
        'software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="mon";'
    )


def test_a_missing_keytab_or_token_ca_is_one_line_at_start(tmp_path: Path) -> None:
    keytab = tmp_path / "ksmon.keytab"
    missing = parse(sasl(KERBEROS.replace("/k.keytab", str(keytab)), protocol="SASL_PLAINTEXT"))
    with pytest.raises(ConfigError) as raised:
        check_sasl_files(missing, "ksmon.yaml")
    assert str(raised.value) == (
        f"ksmon.yaml: clusters[0].security.sasl.kerberos.keytab: cannot read keytab {keytab}: "
        "No such file or directory"
    )
    keytab.write_bytes(b"\x05\x02")
    check_sasl_files(missing, "ksmon.yaml")

    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match=r"oauth\.ca_file: .* holds no PEM certificate"):
        check_sasl_files(parse(sasl(OAUTH + f"  ca_file: {not_pem}\n")), "ksmon.yaml")
