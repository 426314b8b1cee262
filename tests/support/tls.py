"""Test certificate authorities and certificates, made in-process with ``cryptography``.

Everything is written into a directory the caller owns (a pytest tmp dir),
never into the repository. Keys are EC P-256: quick to make, and both
OpenSSL (the Python clients) and Java (the broker's PEM key store) read them.
"""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=2)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password is not None
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


@dataclass(frozen=True)
class IssuedCertificate:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def write(
        self, directory: Path, name: str, *, key_password: str | None = None
    ) -> tuple[Path, Path]:
        """``<name>.pem`` (certificate) and ``<name>.key`` (PKCS#8 key); returns both paths."""
        cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
        cert_path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(_pem_key(self.key, key_password))
        key_path.chmod(0o600)
        return cert_path, key_path

    def write_key_store(self, path: Path, ca: "CertificateAuthority") -> Path:
        """One PEM file holding the key, the certificate and its CA: a Kafka PEM key store."""
        path.write_bytes(
            _pem_key(self.key)
            + self.certificate.public_bytes(serialization.Encoding.PEM)
            + ca.certificate.public_bytes(serialization.Encoding.PEM)
        )
        path.chmod(0o600)
        return path


@dataclass(frozen=True)
class CertificateAuthority:
    name: str
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def create(cls, name: str) -> "CertificateAuthority":
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        return cls(name, certificate, key)

    def write(self, path: Path) -> Path:
        path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        return path

    def issue(
        self,
        common_name: str,
        *,
        ip_addresses: tuple[str, ...] = (),
        dns_names: tuple[str, ...] = (),
    ) -> IssuedCertificate:
        """A server and client certificate naming exactly these addresses and host names."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
        names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return IssuedCertificate(builder.sign(self.key, hashes.SHA256()), key)


@dataclass(frozen=True)
class BrokerTlsFiles:
    """What the session broker's SASL_SSL listener and its tests need."""

    ca_file: Path  # the CA that signed the broker's certificate
    other_ca_file: Path  # a CA that signed nothing the broker holds: "untrusted"
    key_store: Path  # the broker's key + certificate chain (Kafka PEM key store)


def make_broker_tls(directory: Path) -> BrokerTlsFiles:
    """A CA, a broker certificate for 127.0.0.1 only (no host name: a name is a
    mismatch), and an unrelated CA, written into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create("ksmon test CA")
    broker = ca.issue("ksmon test broker", ip_addresses=("127.0.0.1",))
    return BrokerTlsFiles(
        ca_file=ca.write(directory / "ca.pem"),
        other_ca_file=CertificateAuthority.create("some other CA").write(
            directory / "other-ca.pem"
        ),
        key_store=broker.write_key_store(directory / "broker-keystore.pem", ca),
    )
