"""A throwaway certificate authority, so a fake can serve HTTPS under a real host name.

    ca = LocalCA()
    context = ca.server_context("login.microsoftonline.com")   # for the fake's TLS site
    bundle = ca.write_bundle(tmp_path / "ca.pem")              # REQUESTS_CA_BUNDLE for its clients

The CA and every leaf use P-256 keys (fast to make) and live for a day; nothing is written to disk
except the bundle (the CA certificate alone) and, briefly, the leaf's key for `ssl.load_cert_chain`
(in a private temporary folder).
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_LIFETIME = datetime.timedelta(days=1)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(hostname: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(hostname))
    except ValueError:
        return x509.DNSName(hostname)


class LocalCA:
    """A self-signed CA made at construction; `issue` signs server certificates with it."""

    def __init__(self, name: str = "Candor tests CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _LIFETIME)
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
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        """The CA certificate, PEM: what a client trusts."""
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def write_bundle(self, path: Path) -> Path:
        """The CA certificate written to `path` (for REQUESTS_CA_BUNDLE, `ssl.create_default_context(cafile=)`)."""
        path.write_bytes(self.pem)
        return path

    def issue(self, *hostnames: str) -> tuple[bytes, bytes]:
        """A server certificate for `hostnames` (DNS names or IP addresses) and its key, both PEM."""
        if not hostnames:
            raise ValueError("a server certificate needs at least one host name")
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(hostnames[0]))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _LIFETIME)
            .add_extension(x509.SubjectAlternativeName([_san(h) for h in hostnames]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return certificate.public_bytes(serialization.Encoding.PEM), key_pem

    def server_context(self, *hostnames: str) -> ssl.SSLContext:
        """A server-side TLS context presenting a certificate for `hostnames` signed by this CA."""
        certificate, key = self.issue(*hostnames)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory(prefix="candor-tls-") as folder:
            chain = Path(folder) / "server.pem"
            chain.write_bytes(key + certificate)
            context.load_cert_chain(chain)
        return context
