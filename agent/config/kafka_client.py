"""A cluster's settings as kafka-python 3 client keyword arguments."""

from functools import cache
from typing import TYPE_CHECKING

from agent.config.kerberos_login import use_identity
from agent.config.schema import AwsIamConfig, ClusterConfig, OAuthConfig

if TYPE_CHECKING:
    from agent.config.msk_iam_token import MskIamTokenProvider
    from agent.config.oauth_token import ClientCredentialsTokenProvider


def kafka_client_settings(cluster: ClusterConfig) -> dict[str, object]:
    """Keyword arguments for ``KafkaAdminClient``, ``KafkaConsumer`` or ``KafkaProducer``.

    The one place where secrets are revealed: they go to the client, nowhere else.
    Unset options are left out, so the client's own defaults apply (system CAs).
    """
    settings: dict[str, object] = {
        "bootstrap_servers": list(cluster.bootstrap_servers),
        "client_id": cluster.client_id,
        "request_timeout_ms": max(1, round(cluster.poll.request_timeout * 1000)),
        "security_protocol": cluster.security.protocol,
    }
    tls = cluster.security.tls
    if tls is not None:
        settings["ssl_check_hostname"] = tls.check_hostname
        if tls.ca_file is not None:
            settings["ssl_cafile"] = str(tls.ca_file)
        if tls.cert_file is not None:
            settings["ssl_certfile"] = str(tls.cert_file)
        if tls.key_file is not None:
            settings["ssl_keyfile"] = str(tls.key_file)
        if tls.key_password is not None:
            settings["ssl_password"] = tls.key_password.reveal()
    sasl = cluster.security.sasl
    if sasl is not None:
        settings["sasl_mechanism"] = sasl.mechanism
        if sasl.username is not None and sasl.password is not None:
            settings["sasl_plain_username"] = sasl.username
            settings["sasl_plain_password"] = sasl.password.reveal()
        if sasl.oauth is not None:
            settings["sasl_oauth_token_provider"] = oauth_token_provider(
                sasl.oauth, cluster.poll.request_timeout
            )
        if sasl.kerberos is not None:
            settings["sasl_kerberos_service_name"] = sasl.kerberos.service_name
            # The login is process-wide (kerberos_login): the principal and its keytab.
            use_identity(cluster.name, sasl.kerberos)
        if sasl.aws is not None:
            # MSK's IAM listeners take OAUTHBEARER with a signed token (msk_iam_token).
            settings["sasl_mechanism"] = "OAUTHBEARER"
            settings["sasl_oauth_token_provider"] = msk_iam_token_provider(
                f"cluster {cluster.name}", sasl.aws, cluster.bootstrap_servers
            )
    return settings


@cache
def oauth_token_provider(oauth: OAuthConfig, timeout: float) -> "ClientCredentialsTokenProvider":
    """One token provider per ``oauth`` section (by value): the process's clients of a
    cluster share its token instead of each asking the endpoint for one."""
    from agent.config.oauth_token import (  # noqa: PLC0415 - kafka-python is slow to import
        ClientCredentialsTokenProvider,
    )

    return ClientCredentialsTokenProvider(oauth, timeout=timeout)


@cache
def msk_iam_token_provider(
    where: str, aws: AwsIamConfig, bootstrap_servers: tuple[str, ...]
) -> "MskIamTokenProvider":
    """One MSK token signer per cluster (``where`` names it in errors): its clients
    share its token and credentials."""
    from agent.config.msk_iam_token import (  # noqa: PLC0415 - kafka-python is slow to import
        MskIamTokenProvider,
    )

    return MskIamTokenProvider(where, aws, bootstrap_servers)
