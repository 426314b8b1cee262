"""What a SASL login needs from the machine (keytab, krb5.conf, the token endpoint's
CA; for MSK, botocore, the AWS profile and a region), checked before any client uses it.

Like the TLS files (``tls_files``), they are read when the agent or the job starts
and by ``ksmon check-config``, not when the config loads, so that a file can be
validated on a laptop for a pod. A missing or unreadable file is one line naming
its key instead of a failed login on every poll.
"""

import ssl
from pathlib import Path

from agent.config.kerberos_login import check_one_identity, require_gssapi
from agent.config.schema import Config
from agent.errors import ConfigError


def check_sasl_files(config: Config, source: str) -> None:
    """Raise ``ConfigError`` naming the first unusable file; ``source`` names the config."""
    for index, cluster in enumerate(config.clusters):
        sasl = cluster.security.sasl
        prefix = f"{source}: clusters[{index}].security.sasl"
        if sasl is None:
            continue
        if sasl.kerberos is not None:
            require_gssapi(f"{source}: clusters[{index}]")
            _readable(sasl.kerberos.keytab, f"{prefix}.kerberos.keytab", "keytab")
            if sasl.kerberos.krb5_conf is not None:
                _readable(sasl.kerberos.krb5_conf, f"{prefix}.kerberos.krb5_conf", "file")
        if sasl.oauth is not None and sasl.oauth.ca_file is not None:
            _ca_file(sasl.oauth.ca_file, f"{prefix}.oauth.ca_file")
        if sasl.aws is not None:
            # Its credentials are not fetched here: on EKS or EC2 they come from the pod's
            # or instance's role, which a laptop checking the config does not have.
            from agent.config.msk_iam_token import MskIamTokenProvider  # noqa: PLC0415 - slow

            MskIamTokenProvider(f"{source}: clusters[{index}]", sasl.aws, cluster.bootstrap_servers)
    check_one_identity(config, source)


def _readable(path: Path, key: str, what: str) -> None:
    try:
        with path.open("rb") as f:
            empty = not f.read(1)
    except OSError as e:
        raise ConfigError(f"{key}: cannot read {what} {path}: {e.strerror}") from None
    if empty:
        raise ConfigError(f"{key}: {what} {path} is empty")


def _ca_file(path: Path, key: str) -> None:
    _readable(path, key, "CA file")
    try:
        ssl.create_default_context(cafile=str(path))
    except ssl.SSLError as e:
        reason = e.reason or e.strerror or e
        raise ConfigError(f"{key}: {path} holds no PEM certificate ({reason})") from None
