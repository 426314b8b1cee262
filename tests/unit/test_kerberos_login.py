"""The Kerberos login's pure parts: one identity per process, and MIT's refusals read
into one line that says what to do. (The logins themselves: tests/integration/
test_kerberos.py, against a real KDC.)"""

from pathlib import Path

import pytest

from agent.config import parse_config
from agent.config.kerberos_login import (
    KerberosIdentity,
    check_one_identity,
    gss_reason,
    login_failure,
)
from agent.errors import ConfigError


def cluster(name: str, principal: str, keytab: str = "/k.keytab") -> str:
    return (
        f"  - name: {name}\n    bootstrap_servers: [{name}:9092]\n    security:\n"
        "      protocol: SASL_PLAINTEXT\n      sasl:\n        mechanism: GSSAPI\n"
        f"        kerberos: {{principal: {principal}, keytab: {keytab}}}\n"
    )


PLAIN = "  - name: plain\n    bootstrap_servers: [plain:9092]\n"


@pytest.mark.parametrize(
    ("clusters", "message"),
    [
        pytest.param(
            cluster("a", "ksmon@EX.COM") + cluster("b", "ksmon@EX.COM"),
            None,
            id="one identity twice",
        ),
        pytest.param(
            cluster("a", "ksmon@EX.COM") + PLAIN,
            None,
            id="a cluster without Kerberos is no second identity",
        ),
        pytest.param(
            cluster("a", "ksmon@EX.COM") + PLAIN + cluster("c", "other@EX.COM"),
            "ksmon.yaml: clusters[2].security.sasl.kerberos: principal other@EX.COM (keytab "
            "/k.keytab) differs from clusters[0]'s principal ksmon@EX.COM (keytab /k.keytab)",
            id="two principals",
        ),
        pytest.param(
            cluster("a", "ksmon@EX.COM") + cluster("b", "ksmon@EX.COM", "/other.keytab"),
            "ksmon.yaml: clusters[1].security.sasl.kerberos: principal ksmon@EX.COM (keytab "
            "/other.keytab) differs",
            id="one principal from two keytabs",
        ),
    ],
)
def test_a_process_logs_in_as_one_kerberos_identity(clusters: str, message: str | None) -> None:
    config = parse_config("clusters:\n" + clusters, "ksmon.yaml", {})
    if message is None:
        check_one_identity(config, "ksmon.yaml")
        return
    with pytest.raises(ConfigError) as raised:
        check_one_identity(config, "ksmon.yaml")
    assert str(raised.value).startswith(message)
    assert str(raised.value).endswith("or run one agent per identity")


IDENTITY = KerberosIdentity("ksmon/agent@EX.COM", Path("/k.keytab"), None)


@pytest.mark.parametrize(
    ("gss_text", "reason", "hint"),
    [
        pytest.param(
            "Major (851968): Unspecified GSS failure.  Minor code may provide more information, "
            "Minor (2529638953): Preauthentication failed",
            "Preauthentication failed",
            "the keytab's keys are not the principal's current ones; export it again",
            id="rotated keys: MIT's minor status says it",
        ),
        pytest.param(
            "Major (851968): Unspecified GSS failure.  Minor code may provide more information, "
            "Minor (2529639053): Client 'ghost@EX.COM' not found in Kerberos database",
            "Client 'ghost@EX.COM' not found in Kerberos database",
            "the KDC does not know this principal",
            id="a principal the KDC lacks",
        ),
        pytest.param(
            "Major (851968): Unspecified GSS failure.  Minor code may provide more information, "
            "Minor (2529639068): Cannot contact any KDC for realm 'EX.COM'",
            "Cannot contact any KDC for realm 'EX.COM'",
            "no KDC of the realm answered",
            id="no KDC",
        ),
        pytest.param(
            "Major (458752): No credentials were supplied, or the credentials were unavailable "
            "or inaccessible, Minor (0): Unknown error",
            "No credentials were supplied, or the credentials were unavailable or inaccessible",
            None,
            id="an empty minor status: the major one is the reason",
        ),
    ],
)
def test_mits_refusal_is_one_line_with_what_it_means(
    gss_text: str, reason: str, hint: str | None
) -> None:
    assert gss_reason(Exception(gss_text)) == reason
    line = login_failure(IDENTITY, "kafka@broker-1", reason)
    assert line.startswith(
        "Kerberos login as ksmon/agent@EX.COM with keytab /k.keytab for kafka@broker-1 "
        f"failed: {reason}"
    )
    assert line.endswith(f" ({hint})" if hint else reason)
    assert "\n" not in line
