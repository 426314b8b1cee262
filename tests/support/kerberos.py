"""An MIT Kerberos KDC on 127.0.0.1 and a broker with a GSSAPI listener, for Kerberos tests.

``KerberosRealm`` makes a realm in a directory of its own (database, stash, kdc.conf,
krb5.conf), runs ``krb5kdc`` in the foreground on a free port, and writes keytabs with
``kadmin.local``. Its krb5.conf never asks DNS (no reverse lookups, no canonicalised
host names) and always speaks TCP to the KDC, which Java and MIT read alike.

``KerberizedKafka`` is an embedded broker with one more listener, KERBEROS
(SASL_PLAINTEXT, GSSAPI only), whose service principal is ``kafka/localhost@REALM``:
clients connect to it as ``localhost``, the name that principal holds.
"""

import os
import shutil
import subprocess
from pathlib import Path

from agent.embedded.kafka import EmbeddedKafka, KafkaDistribution
from agent.embedded.ports import LOOPBACK, free_port, is_listening
from agent.embedded.process import JvmProcess, wait_until
from agent.errors import SetupError

REALM = "KSMON.TEST"
BROKER_PRINCIPAL = f"kafka/localhost@{REALM}"
AGENT_PRINCIPAL = f"ksmon/agent@{REALM}"
# Its first keytab goes stale when a second one rotates its keys.
STALE_PRINCIPAL = f"ksmon/stale@{REALM}"
_SBIN = ("/usr/sbin", "/sbin")


def _tool(name: str) -> str:
    path = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *_SBIN]))
    if path is None:
        raise SetupError(
            f"{name} not found (MIT Kerberos: apt-get install krb5-kdc krb5-admin-server)"
        )
    return path


class KerberosRealm:
    """One realm and its running KDC; ``stop`` ends the KDC."""

    def __init__(self, directory: Path, realm: str = REALM) -> None:
        self.directory = directory
        self.realm = realm
        self.port = free_port()
        self.krb5_conf = directory / "krb5.conf"
        self._kdc_conf = directory / "kdc.conf"
        self._env = {
            **os.environ,
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self._kdc_conf),
        }
        self.process = JvmProcess(
            f"krb5kdc :{self.port}",
            [_tool("krb5kdc"), "-n", "-r", realm],
            directory / "kdc.log",
            env=self._env,
        )

    def start(self, timeout: float = 30.0) -> "KerberosRealm":
        self.directory.mkdir(parents=True, exist_ok=True)
        self._write_confs()
        self._run(_tool("kdb5_util"), "create", "-s", "-r", self.realm, "-P", "ksmon-test-master")
        self.process.start()
        try:
            wait_until(
                lambda: is_listening(self.port),
                timeout=timeout,
                what=f"the KDC on {LOOPBACK}:{self.port}",
                interval=0.1,
                abort=lambda: None if self.process.alive else "krb5kdc exited",
            )
        except (TimeoutError, RuntimeError) as e:
            self.process.kill()
            raise SetupError(f"{e}: {self.process.log_tail()}") from e
        return self

    def stop(self) -> None:
        self.process.stop(timeout=10)

    def add_principal(self, principal: str) -> None:
        self.kadmin(f"addprinc -randkey {principal}")

    def keytab(self, principal: str, path: Path, *, new_keys: bool = False) -> Path:
        """Write ``principal``'s keys to ``path``; ``new_keys`` first rotates them, so
        every keytab written before for it goes stale."""
        keep = "" if new_keys else "-norandkey "
        self.kadmin(f"ktadd -k {path} {keep}{principal}")
        return path

    def kadmin(self, query: str) -> None:
        self._run(_tool("kadmin.local"), "-r", self.realm, "-q", query)

    def _run(self, *argv: str) -> None:
        result = subprocess.run(
            argv, env=self._env, capture_output=True, text=True, timeout=60, check=False
        )
        # kadmin.local exits 0 even when its query fails; its stderr says so.
        if result.returncode != 0 or "error" in result.stderr.lower():
            raise SetupError(f"{' '.join(argv)} failed: {(result.stderr or result.stdout).strip()}")

    def _write_confs(self) -> None:
        d = self.directory
        self._kdc_conf.write_text(
            f"""[kdcdefaults]
    kdc_listen = {LOOPBACK}:{self.port}
    kdc_tcp_listen = {LOOPBACK}:{self.port}

[realms]
    {self.realm} = {{
        database_name = {d / "principal"}
        key_stash_file = {d / "stash"}
        acl_file = {d / "kadm5.acl"}
        max_life = 10h
        max_renewable_life = 1d
    }}

[logging]
    kdc = FILE:{d / "kdc-events.log"}
"""
        )
        self.krb5_conf.write_text(
            f"""[libdefaults]
    default_realm = {self.realm}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    ticket_lifetime = 10h

[realms]
    {self.realm} = {{
        kdc = {LOOPBACK}:{self.port}
    }}

[domain_realm]
    localhost = {self.realm}
"""
        )


class KerberizedKafka(EmbeddedKafka):
    """An embedded broker with a KERBEROS listener (SASL_PLAINTEXT, GSSAPI)."""

    def __init__(
        self,
        distribution: KafkaDistribution,
        data_dir: Path,
        realm: KerberosRealm,
        broker_keytab: Path,
    ) -> None:
        # Set before the base class builds the broker's command line from them.
        self.realm = realm
        self.broker_keytab = broker_keytab
        self.kerberos_port = free_port()
        super().__init__(distribution, data_dir, heap_mb=384)

    @property
    def kerberos_bootstrap_servers(self) -> str:
        return f"localhost:{self.kerberos_port}"

    def server_properties(self) -> dict[str, str]:
        props = super().server_properties()
        props["listeners"] += f",KERBEROS://{LOOPBACK}:{self.kerberos_port}"
        props["advertised.listeners"] += f",KERBEROS://localhost:{self.kerberos_port}"
        props["listener.security.protocol.map"] += ",KERBEROS:SASL_PLAINTEXT"
        props["listener.name.kerberos.sasl.enabled.mechanisms"] = "GSSAPI"
        # The broker's service name goes in its JAAS line: Kafka reads no per-listener
        # sasl.kerberos.service.name.
        props["listener.name.kerberos.gssapi.sasl.jaas.config"] = (
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
            f'storeKey=true keyTab="{self.broker_keytab}" principal="{BROKER_PRINCIPAL}" '
            'serviceName="kafka";'
        )
        return props

    def _broker_argv(self) -> list[str]:
        java, *rest = super()._broker_argv()
        return [java, f"-Djava.security.krb5.conf={self.realm.krb5_conf}", *rest]
