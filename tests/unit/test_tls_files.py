"""TLS files named in the config are checked before use: one line naming the key."""

from pathlib import Path

import pytest

from agent.config import parse_config
from agent.config.tls_files import check_tls_files
from agent.errors import ConfigError
from tests.support.tls import CertificateAuthority

KEY_PASSWORD = "tls-key-secret-61c2"  # noqa: S105 - a throwaway key password


def config_with(tls: str) -> object:
    text = (
        "clusters:\n  - name: a\n    bootstrap_servers: [k:9093]\n"
        f"    security:\n      protocol: SSL\n      tls: {tls}\n"
    )
    return parse_config(text, "ksmon.yaml", {"KEY_PW": KEY_PASSWORD})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("tls")
    ca = CertificateAuthority.create("unit CA")
    client = ca.issue("client")
    other = ca.issue("someone else")
    cert, key = client.write(directory, "client")
    _, encrypted_key = client.write(directory, "client-encrypted", key_password=KEY_PASSWORD)
    _, other_key = other.write(directory, "other")
    not_pem = directory / "not.pem"
    not_pem.write_text("this is no certificate\n")
    return {
        "ca": ca.write(directory / "ca.pem"),
        "cert": cert,
        "key": key,
        "encrypted_key": encrypted_key,
        "other_key": other_key,
        "not_pem": not_pem,
    }


def check(tls: str) -> None:
    config = config_with(tls)
    check_tls_files(config, "ksmon.yaml")  # type: ignore[arg-type]


def test_usable_files_pass(files: dict[str, Path]) -> None:
    check(f"{{ca_file: {files['ca']}, cert_file: {files['cert']}, key_file: {files['key']}}}")
    check(
        f"{{cert_file: {files['cert']}, key_file: {files['encrypted_key']}, "
        "key_password: {env: KEY_PW}}"
    )


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        pytest.param(
            "{ca_file: /no/such/ca.pem}",
            "ksmon.yaml: clusters[0].security.tls.ca_file: cannot read /no/such/ca.pem: "
            "No such file or directory",
            id="missing CA file",
        ),
        pytest.param(
            "{ca_file: NOT_PEM}",
            "ksmon.yaml: clusters[0].security.tls.ca_file: NOT_PEM holds no PEM certificate",
            id="CA file that is no certificate",
        ),
        pytest.param(
            "{cert_file: CERT, key_file: /no/key.pem}",
            "clusters[0].security.tls.key_file: cannot read /no/key.pem",
            id="missing key file",
        ),
        pytest.param(
            "{cert_file: CERT, key_file: OTHER_KEY}",
            "clusters[0].security.tls.key_file: cannot use OTHER_KEY with CERT: not its PEM "
            "private key",
            id="the key of another certificate",
        ),
        pytest.param(
            # Without a password OpenSSL would prompt on the terminal: a daemon would hang.
            "{cert_file: CERT, key_file: ENCRYPTED_KEY}",
            "clusters[0].security.tls.key_file: cannot use ENCRYPTED_KEY with CERT",
            id="encrypted key without its password",
        ),
        pytest.param(
            "{cert_file: CERT, key_file: ENCRYPTED_KEY, key_password: wrong-password}",
            "clusters[0].security.tls.key_file: cannot use ENCRYPTED_KEY with CERT",
            id="encrypted key with a wrong password",
        ),
    ],
)
def test_unusable_files_are_one_line_naming_the_key(
    files: dict[str, Path], tls: str, message: str
) -> None:
    names = {
        "NOT_PEM": files["not_pem"],
        "CERT": files["cert"],
        "OTHER_KEY": files["other_key"],
        "ENCRYPTED_KEY": files["encrypted_key"],
    }
    for placeholder, path in names.items():
        tls, message = tls.replace(placeholder, str(path)), message.replace(placeholder, str(path))

    with pytest.raises(ConfigError) as raised:
        check(tls)

    assert str(raised.value).startswith(message) or message in str(raised.value), raised.value
    assert "\n" not in str(raised.value)
    assert KEY_PASSWORD not in str(raised.value)
    assert "wrong-password" not in str(raised.value)
