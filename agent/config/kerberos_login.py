"""The agent's Kerberos (GSSAPI) login: the configured principal, with its keytab.

kafka-python's GSSAPI mechanism logs in with gssapi's default credentials, which
would ignore ``kerberos.principal`` and ``kerberos.keytab``. ksmon registers its own
mechanism under the same name instead (kafka-python's ``register_sasl_mechanism``):
it acquires the principal's credentials from the keytab (MIT's client keytab) into a
credentials cache in the process's memory, so no ``kinit`` and no cache file are
needed, and MIT fetches a new ticket from the keytab when the cached one nears its
end. ``kerberos.krb5_conf`` reaches MIT through ``KRB5_CONFIG``, read when each
Kerberos context is made.

The mechanism is made per connection with only kafka-python's client settings, so
it cannot tell one cluster's connections from another's: a process logs in as one
Kerberos identity. ``check_one_identity`` (by ``ksmon check-config`` and at start)
refuses a config whose clusters name different ones.
"""

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.config.schema import Config, KerberosConfig
from agent.errors import ConfigError

# What MIT's message means for the user, by the words it holds.
_HINTS = (
    (
        ("decrypt integrity check failed", "preauthentication failed"),
        "the keytab's keys are not the principal's current ones; export it again",
    ),
    (("not found in kerberos database",), "the KDC does not know this principal"),
    (
        ("no credentials cache found", "no key table entry found", "keytab"),
        "the keytab holds no key of this principal",
    ),
    (("cannot contact any kdc", "cannot find kdc"), "no KDC of the realm answered"),
)


@dataclass(frozen=True, slots=True)
class KerberosIdentity:
    """Who the process logs in as, and with what."""

    principal: str
    keytab: Path
    krb5_conf: Path | None

    @classmethod
    def of(cls, kerberos: KerberosConfig) -> "KerberosIdentity":
        return cls(kerberos.principal, kerberos.keytab, kerberos.krb5_conf)

    def describe(self) -> str:
        krb5 = f", krb5_conf {self.krb5_conf}" if self.krb5_conf is not None else ""
        return f"principal {self.principal} (keytab {self.keytab}{krb5})"

    def environment(self) -> dict[str, str]:
        """The process environment MIT needs for this identity (only krb5.conf: the
        keytab and cache are given to each login, not taken from the environment)."""
        return {"KRB5_CONFIG": str(self.krb5_conf)} if self.krb5_conf is not None else {}

    def credential_store(self) -> dict[bytes | str, bytes | str]:
        """gssapi's credential store: the principal's keytab, and a cache in memory
        private to this process and principal (shared by its connections)."""
        return {"client_keytab": str(self.keytab), "ccache": f"MEMORY:ksmon-{self.principal}"}


class KerberosAuthenticationError(Exception):
    """A login the KDC or the keytab refused; its text is one line for the user."""


def check_one_identity(config: Config, source: str) -> None:
    """Raise ``ConfigError`` naming the first cluster whose Kerberos identity differs
    from the first one's: one process logs in as one identity."""
    first: tuple[int, KerberosIdentity] | None = None
    for index, cluster in enumerate(config.clusters):
        sasl = cluster.security.sasl
        if sasl is None or sasl.kerberos is None:
            continue
        identity = KerberosIdentity.of(sasl.kerberos)
        if first is None:
            first = (index, identity)
        elif identity != first[1]:
            raise ConfigError(
                f"{source}: clusters[{index}].security.sasl.kerberos: {identity.describe()} "
                f"differs from clusters[{first[0]}]'s {first[1].describe()}; one ksmon "
                "process logs in as one Kerberos identity: give every cluster the same "
                "principal, keytab and krb5_conf, or run one agent per identity"
            )


def login_failure(identity: KerberosIdentity, service: str, reason: str) -> str:
    """The one line for a refused login: who, with what, for which service, and why."""
    hint = next(
        (text for needles, text in _HINTS if any(n in reason.lower() for n in needles)), None
    )
    because = f" ({hint})" if hint else ""
    return (
        f"Kerberos login as {identity.principal} with keytab {identity.keytab} for "
        f"{service} failed: {reason}{because}"
    )


def gss_reason(error: BaseException) -> str:
    """MIT's own words from a gssapi error: the minor status when it says something."""
    text = " ".join(str(error).split())
    minor = re.search(r"Minor \(\d+\): (.+)$", text)
    if minor and minor.group(1).strip() not in {"", "Unknown error", "Success"}:
        return minor.group(1).strip()
    major = re.match(r"Major \(\d+\): (.+?)(, Minor \(\d+\).*)?$", text)
    return major.group(1) if major else text


_lock = threading.Lock()
_logged_in_as: KerberosIdentity | None = None


def use_identity(cluster: str, kerberos: KerberosConfig) -> None:
    """Make this process's GSSAPI logins those of ``kerberos``'s principal.

    Idempotent; a second, different identity is a ``ConfigError`` naming ``cluster``.
    """
    global _logged_in_as  # noqa: PLW0603 - one identity per process, by design
    identity = KerberosIdentity.of(kerberos)
    with _lock:
        if _logged_in_as == identity:
            return
        if _logged_in_as is not None:
            raise ConfigError(
                f"cluster {cluster}: security.sasl.kerberos: {identity.describe()} differs "
                f"from the {_logged_in_as.describe()} this process logs in as; one ksmon "
                "process logs in as one Kerberos identity"
            )
        mechanism = _keytab_mechanism(cluster, identity)
        os.environ.update(identity.environment())
        from kafka.net.sasl import register_sasl_mechanism  # noqa: PLC0415 - slow import

        register_sasl_mechanism("GSSAPI", mechanism, overwrite=True)
        _logged_in_as = identity


def require_gssapi(where: str) -> Any:  # noqa: ANN401 - the gssapi module
    """The gssapi module, or a ``ConfigError`` saying how to install it; ``where`` names
    the cluster (``cluster NAME`` or the config's key)."""
    try:
        import gssapi  # noqa: PLC0415 - an optional extra, needed only for GSSAPI
    except (ImportError, OSError) as e:
        raise ConfigError(
            f"{where}: security.sasl.mechanism: GSSAPI needs the Python package "
            f"gssapi and MIT Kerberos' libraries (pip install 'ksmon[kerberos]'): {e}"
        ) from None
    return gssapi


def _keytab_mechanism(cluster: str, identity: KerberosIdentity) -> type:
    gssapi = require_gssapi(f"cluster {cluster}")
    from kafka.net.sasl.gssapi import SaslMechanismGSSAPI  # noqa: PLC0415 - slow import

    principal = gssapi.Name(identity.principal, gssapi.NameType.kerberos_principal)
    store = identity.credential_store()

    class KeytabGssapiMechanism(SaslMechanismGSSAPI):  # type: ignore[misc]
        """kafka-python's GSSAPI exchange, initiated with the principal's keytab."""

        def __init__(self, **config: Any) -> None:  # noqa: ANN401 - kafka-python's settings
            # The state the inherited exchange reads, set as kafka-python's own does.
            self._is_done = False
            self._is_authenticated = False
            host = config.get("sasl_kerberos_domain_name") or config.get("host", "")
            self.auth_id = f"{config['sasl_kerberos_service_name']}@{host}"
            try:
                self.gssapi_name = gssapi.Name(
                    self.auth_id, name_type=gssapi.NameType.hostbased_service
                ).canonicalize(gssapi.MechType.kerberos)
                credentials = gssapi.Credentials(name=principal, usage="initiate", store=store)
                self._client_ctx = gssapi.SecurityContext(
                    name=self.gssapi_name, usage="initiate", creds=credentials
                )
                self._next_token = self._client_ctx.step(None)
            except gssapi.raw.misc.GSSError as e:
                raise KerberosAuthenticationError(
                    login_failure(identity, self.auth_id, gss_reason(e))
                ) from None

    return KeytabGssapiMechanism
