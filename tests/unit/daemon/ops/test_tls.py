"""The HTTPS certificate: generated once, reused, renewed before expiry."""

import ssl

import pytest

from daemon.config import parse_config
from daemon.errors import ConfigError
from daemon.ops import tls


def test_a_self_signed_certificate_is_made_once_and_reused(tmp_path):
    config = parse_config(f"state_dir: {tmp_path}\n")
    cert, key = tls.certificate_files(config, addresses=["192.168.1.20"])
    assert cert.parent == tmp_path / "tls"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    first = tls.fingerprint(cert)
    assert len(first.split(":")) == 32
    again, _ = tls.certificate_files(config, addresses=[])
    assert tls.fingerprint(again) == first
    # Python's own TLS stack accepts the pair and the names.
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    text = ssl._ssl._test_decode_cert(str(cert))  # type: ignore[attr-defined]
    names = {value for _, value in text["subjectAltName"]}
    assert {"localhost", "127.0.0.1", "192.168.1.20"} <= names


def test_a_certificate_close_to_expiry_is_renewed(tmp_path, monkeypatch):
    config = parse_config(f"state_dir: {tmp_path}\n")
    monkeypatch.setattr(tls, "VALID_DAYS", 20)  # already inside the 30-day renewal window
    cert, _ = tls.certificate_files(config, addresses=[])
    old = tls.fingerprint(cert)
    monkeypatch.setattr(tls, "VALID_DAYS", 365)
    cert, _ = tls.certificate_files(config, addresses=[])
    assert tls.fingerprint(cert) != old
    assert tls.fingerprint(tls.certificate_files(config, addresses=[])[0]) == tls.fingerprint(cert)


def test_configured_files_must_exist(tmp_path):
    config = parse_config(
        f"state_dir: {tmp_path}\nhttps:\n  cert_file: {tmp_path}/no.crt\n"
        f"  key_file: {tmp_path}/no.key\n"
    )
    with pytest.raises(ConfigError, match="no.crt does not exist"):
        tls.certificate_files(config)


def test_cert_and_key_come_in_pairs(tmp_path):
    with pytest.raises(ConfigError, match="https.cert_file: cert_file and key_file"):
        parse_config("https:\n  cert_file: /x.crt\n", "config.yaml")
