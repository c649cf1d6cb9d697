"""TLS for the worker protocol between machines: a station's self-signed certificate, pinned by its
SHA-256 fingerprint, TLS 1.3 only.

No certificate authority is involved: the client checks that the certificate the station presents is
the very one its peers file names (the fingerprint is the SHA-256 of the certificate's DER bytes), and
refuses anything else before it sends a byte of its own. The station proves who it is with its key;
the client proves it may drive the game with a token (`station.py`).

Try: python -m hoi4_arena.cluster.tls /tmp/station   # writes cert.pem and key.pem, prints the fingerprint
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import ipaddress
import os
import socket
import ssl
import sys
from pathlib import Path

from hoi4_arena.errors import UserError

CERT_FILE = "cert.pem"
KEY_FILE = "key.pem"


def make_certificate(name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"), days: int = 3650):
    """A new EC P-256 key and a self-signed certificate for `name` (hosts as subject alternative names).

    Returns (certificate PEM, private key PEM) as bytes.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"hoi4-arena station {name}")])
    alt_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert_pem, key_pem


def write_certificate(folder: Path, name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> str:
    """Write cert.pem and key.pem (readable by the owner only) into `folder`; returns the fingerprint."""
    folder.mkdir(parents=True, exist_ok=True)
    cert_pem, key_pem = make_certificate(name, hosts)
    key_path = folder / KEY_FILE
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key_pem)
    (folder / CERT_FILE).write_bytes(cert_pem)
    return fingerprint_pem(cert_pem)


def fingerprint_der(der: bytes) -> str:
    """The pin: 'sha256:' and the hex SHA-256 of a certificate's DER bytes."""
    return "sha256:" + hashlib.sha256(der).hexdigest()


def fingerprint_pem(pem: bytes) -> str:
    return fingerprint_der(ssl.PEM_cert_to_DER_cert(pem.decode("ascii")))


def server_context(folder: Path) -> ssl.SSLContext:
    """TLS 1.3 only, serving the certificate and key in `folder`."""
    try:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        context.load_cert_chain(folder / CERT_FILE, folder / KEY_FILE)
    except (OSError, ssl.SSLError) as error:
        raise UserError(f"{folder}: cannot load the station certificate and key: {error}") from None
    return context


def client_context() -> ssl.SSLContext:
    """TLS 1.3 only; the certificate is not checked against any CA but pinned (`connect_pinned`)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the pin below is the check: exactly one certificate passes
    return context


class PinError(ssl.SSLError):
    """The station presented a certificate other than the pinned one."""

    def __str__(self) -> str:
        # SSLError made with one argument prints it as a tuple's repr: ('...',)
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


def connect_pinned(host: str, port: int, fingerprint: str, timeout: float = 10.0) -> ssl.SSLSocket:
    """A TLS 1.3 connection to host:port whose certificate has `fingerprint`, or PinError / OSError."""
    raw = socket.create_connection((host, port), timeout=timeout)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # requests are small: no Nagle delay
    try:
        sock = client_context().wrap_socket(raw, server_hostname=None)
    except BaseException:
        raw.close()
        raise
    der = sock.getpeercert(binary_form=True) or b""
    if not hmac.compare_digest(fingerprint_der(der), fingerprint.strip().lower()):
        sock.close()
        raise PinError(
            f"{host}:{port} presented certificate {fingerprint_der(der)}, not the pinned {fingerprint}; "
            "someone else may be listening there, or the station's bundle was made anew"
        )
    return sock


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    print(write_certificate(target, target.name or "station"))
