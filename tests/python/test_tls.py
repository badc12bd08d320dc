"""Opt-in TLS (`--tls-cert`, `--tls-key`): a client trusting the certificate is served over an
encrypted channel, and a plain-text client is not; a certificate or key that cannot be used
stops the server at startup with a message naming the file, its flag and what is wrong."""

from __future__ import annotations

import subprocess

import grpc
import pytest

from conftest import SMALL_BEAMS, showroom_manifest


def make_certificate(tmp_path, stem=""):
    cert, key = tmp_path / f"{stem}cert.pem", tmp_path / f"{stem}key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_serves_a_trusting_client_and_refuses_plain_text(tmp_path, serve):
    cert, key = make_certificate(tmp_path)
    server = serve(showroom_manifest(), extra=["--tls-cert", str(cert), "--tls-key", str(key)])
    from luckyrobots.grpc.generated import lidar_pb2, lidar_pb2_grpc

    credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    with grpc.secure_channel(f"127.0.0.1:{server.port}", credentials) as channel:
        stub = lidar_pb2_grpc.LidarServiceStub(channel)
        beams = stub.GetLidarBeamCount(lidar_pb2.LidarSensorRequest(sensor=0), timeout=60).beams
    assert beams == SMALL_BEAMS

    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = lidar_pb2_grpc.LidarServiceStub(channel)
        with pytest.raises(grpc.RpcError):
            stub.GetLidarBeamCount(lidar_pb2.LidarSensorRequest(sensor=0), timeout=10)


def test_an_unreadable_certificate_is_a_clear_error(tmp_path):
    from conftest import launch

    manifest = tmp_path / "m.toml"
    manifest.write_text(showroom_manifest())
    proc = launch(["serve", str(manifest), "--addr", "127.0.0.1:0", "--tls-cert", str(tmp_path / "none.pem"),
                   "--tls-key", str(tmp_path / "none.key")])
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "TLS: cannot read the certificate" in err and "none.pem" in err and "--tls-cert" in err, err


def damaged(pem: str) -> str:
    """`pem` with its first line of base64 made invalid."""
    lines = pem.splitlines()
    lines[1] = "!" + lines[1][1:]
    return "\n".join(lines) + "\n"


# case: (which file is bad, what the message says about it)
BAD_TLS_FILES = {
    "garbage-certificate": ("cert", "holds no PEM certificate"),
    "key-given-as-certificate": ("cert", "holds a private key, not a certificate"),
    "damaged-certificate": ("cert", "is not usable"),
    "garbage-key": ("key", "holds no PEM private key"),
    "certificate-given-as-key": ("key", "holds a certificate, not a private key"),
    "damaged-key": ("key", "is not usable"),
    "another-certificate's-key": ("key", "is not the key of the certificate"),
}


@pytest.mark.parametrize("case", list(BAD_TLS_FILES))
def test_a_bad_certificate_or_key_names_its_file(tmp_path, case):
    from conftest import launch

    cert, key = make_certificate(tmp_path)
    bad = tmp_path / f"bad-{case}.pem"
    which, said = BAD_TLS_FILES[case]
    bad.write_text(
        {
            "garbage-certificate": "not a certificate\n",
            "key-given-as-certificate": key.read_text(),
            "damaged-certificate": damaged(cert.read_text()),
            "garbage-key": "not a key\n",
            "certificate-given-as-key": cert.read_text(),
            "damaged-key": "-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n",
            "another-certificate's-key": make_certificate(tmp_path, "other-")[1].read_text(),
        }[case]
    )
    cert_arg, key_arg = (bad, key) if which == "cert" else (cert, bad)
    manifest = tmp_path / "m.toml"
    manifest.write_text(showroom_manifest())
    proc = launch(["serve", str(manifest), "--addr", "127.0.0.1:0", "--tls-cert", str(cert_arg),
                   "--tls-key", str(key_arg)])
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, (out, err)
    assert "listening" not in out
    assert err.startswith("error: TLS: "), err
    named = "certificate" if which == "cert" else "private key"
    flag = "--tls-cert" if which == "cert" else "--tls-key"
    assert f"the {named} '{bad}' ({flag}) {said}" in err, err
