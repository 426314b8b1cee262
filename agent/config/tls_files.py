"""The files a TLS setting names, checked before any client uses them.

Loading the config stays pure (it can be validated on a laptop for a pod);
this check reads the CA, certificate and key files the way the Kafka client
will (``ssl.SSLContext.load_verify_locations`` / ``load_cert_chain``), so a
missing file, a file that is not PEM, or a key its password does not open is
one line naming the key, not a TLS failure on every poll.
"""

import ssl
from pathlib import Path

from agent.config.schema import Config, TlsConfig
from agent.errors import ConfigError


def check_tls_files(config: Config, source: str) -> None:
    """Raise ``ConfigError`` naming the first unusable TLS file; ``source`` names the config."""
    for index, cluster in enumerate(config.clusters):
        tls = cluster.security.tls
        if tls is not None:
            _check(tls, f"{source}: clusters[{index}].security.tls")


def _check(tls: TlsConfig, prefix: str) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if tls.ca_file is not None:
        _readable(tls.ca_file, f"{prefix}.ca_file")
        try:
            context.load_verify_locations(cafile=str(tls.ca_file))
        except ssl.SSLError as e:
            raise ConfigError(
                f"{prefix}.ca_file: {tls.ca_file} holds no PEM certificate ({_reason(e)})"
            ) from None
    if tls.cert_file is not None and tls.key_file is not None:
        _readable(tls.cert_file, f"{prefix}.cert_file")
        _readable(tls.key_file, f"{prefix}.key_file")
        # Never None: for an encrypted key without a password OpenSSL would
        # otherwise prompt on the terminal, and a daemon would hang there.
        password = tls.key_password.reveal() if tls.key_password is not None else ""
        try:
            context.load_cert_chain(str(tls.cert_file), str(tls.key_file), password)
        except ssl.SSLError as e:
            raise ConfigError(
                f"{prefix}.key_file: cannot use {tls.key_file} with {tls.cert_file}: "
                "not its PEM private key, or an encrypted key whose key_password is "
                f"missing or wrong ({_reason(e)})"
            ) from None


def _readable(path: Path, key: str) -> None:
    try:
        with path.open("rb"):
            pass
    except OSError as e:
        raise ConfigError(f"{key}: cannot read {path}: {e.strerror}") from None


def _reason(error: ssl.SSLError) -> str:
    # The bare reason ("NO_CERTIFICATE_OR_CRL_FOUND"), without OpenSSL's file and line.
    return str(error.reason or error.strerror or error)
