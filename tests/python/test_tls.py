"""Opt-in TLS (`--tls-cert`, `--tls-key`): a client trusting the certificate is served over an
encrypted channel, and a plain-text client is not."""

from __future__ import annotations

import subprocess

import grpc
import pytest

from conftest import SMALL_BEAMS, showroom_manifest


def make_certificate(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
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
    assert "TLS: cannot read" in err and "none.pem" in err, err
