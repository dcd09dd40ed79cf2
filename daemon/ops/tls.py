"""The HTTPS certificate: from config, or self-signed and kept in the state dir.

The self-signed certificate names the host, ``localhost`` and the host's LAN
addresses, is valid for a year, and is replaced when less than 30 days remain.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import socket
from pathlib import Path

from daemon.config import Config
from daemon.errors import ConfigError
from daemon.ops.jsonfile import write_atomic
from daemon.ops.storage import writing

_LOGGER = logging.getLogger(__name__)

VALID_DAYS = 365
RENEW_DAYS = 30


def certificate_files(config: Config, addresses: list[str] | None = None) -> tuple[Path, Path]:
    """(cert, key) to serve: the configured pair, else a self-signed one (made or
    renewed as needed)."""
    if config.https.cert_file:
        cert, key = Path(config.https.cert_file), Path(config.https.key_file)
        for path in (cert, key):
            if not path.is_file():
                raise ConfigError(f"{config.source} https: {path} does not exist")
        return cert, key
    folder = config.tls_path
    cert, key = folder / "hearth.crt", folder / "hearth.key"
    if not _fresh(cert):
        _generate(cert, key, addresses)
    return cert, key


def _fresh(cert: Path) -> bool:
    from cryptography import x509

    if not cert.is_file():
        return False
    try:
        loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    except ValueError:
        return False
    remaining = loaded.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    return remaining > datetime.timedelta(days=RENEW_DAYS)


def _generate(cert: Path, key: Path, addresses: list[str] | None) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    host = socket.gethostname() or "hearth"
    if addresses is None:
        from daemon.ops.mdns import lan_addresses

        addresses = lan_addresses([])
    names: list[x509.GeneralName] = [
        x509.DNSName(host),
        x509.DNSName(f"{host.split('.')[0]}.local"),
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ]
    for address in addresses:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(address)))
        except ValueError:
            continue
    private = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Hearth on {host}")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(private, hashes.SHA256())
    )
    key_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with writing("the TLS certificate", cert.parent):
        cert.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(key, key_pem, 0o600)
        write_atomic(cert, certificate.public_bytes(serialization.Encoding.PEM))
    _LOGGER.info("Generated a self-signed certificate %s (SHA-256 %s)", cert, fingerprint(cert))


def fingerprint(cert: Path) -> str:
    """SHA-256 fingerprint as browsers show it (AB:CD:...)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    return loaded.fingerprint(hashes.SHA256()).hex(":").upper()
