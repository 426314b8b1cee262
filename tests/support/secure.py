"""The session broker's SASL_SSL listener, as tests use it: where, whom, which CA.

``tests/conftest.py`` starts the session broker with this listener (SCRAM-SHA-512
logins over TLS, a certificate for 127.0.0.1 only, signed by a CA made for the
session) and an ACL authorizer under which only the PLAINTEXT principal and
``SUPER_USER`` are unrestricted. Any test can take the ``secure_listener``
fixture and write a ksmon cluster section for it with ``cluster_yaml``.
"""

import textwrap
from dataclasses import dataclass
from pathlib import Path

# SCRAM-SHA-512 logins created when the session broker formats its storage.
SUPER_USER = "ksmon"
SUPER_PASSWORD = "ksmon-scram-secret-4b1d"  # noqa: S105 - throwaway credentials of the test broker
# Principals without super-user rights: they get exactly the ACLs a test grants them.
AGENT_USER = "ksmon-agent"
AGENT_PASSWORD = "ksmon-agent-secret-93fa"  # noqa: S105
NO_READ_USER = "ksmon-noread"
NO_READ_PASSWORD = "ksmon-noread-secret-5e0c"  # noqa: S105
SCRAM_USERS = {
    SUPER_USER: SUPER_PASSWORD,
    AGENT_USER: AGENT_PASSWORD,
    NO_READ_USER: NO_READ_PASSWORD,
}


@dataclass(frozen=True)
class SecureListener:
    bootstrap_servers: str  # 127.0.0.1:<port>, the address the certificate names
    ca_file: Path  # signed the broker's certificate
    other_ca_file: Path  # signed nothing the broker holds

    @property
    def port(self) -> int:
        return int(self.bootstrap_servers.rsplit(":", 1)[1])

    def cluster_yaml(
        self,
        name: str,
        *,
        user: str = SUPER_USER,
        env_var: str = "KSMON_TEST_PASSWORD",
        ca_file: Path | None = None,
        check_hostname: bool = True,
        host: str = "127.0.0.1",
        poll: str = "{offsets_interval: 1s, metadata_interval: 5s, request_timeout: 5s}",
        extra: str = "",
    ) -> str:
        """One ``clusters:`` list item for this listener, indented for a config file."""
        check = str(check_hostname).lower()
        tls = f'{{ca_file: "{ca_file or self.ca_file}", check_hostname: {check}}}'
        sasl = f"{{mechanism: SCRAM-SHA-512, username: {user}, password: {{env: {env_var}}}}}"
        lines = [
            f"- name: {name}",
            f'  bootstrap_servers: ["{host}:{self.port}"]',
            f"  poll: {poll}",
            "  security:",
            "    protocol: SASL_SSL",
            f"    tls: {tls}",
            f"    sasl: {sasl}",
        ]
        # ``extra``: more keys of this cluster, written unindented.
        return textwrap.indent("\n".join(lines) + "\n" + textwrap.indent(extra, "  "), "  ")
