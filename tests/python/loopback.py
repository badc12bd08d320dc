"""A network namespace with loopback only, for the tests that start Ray.

Ray 2.60's gRPC servers (GCS, raylet, workers) listen on every interface even when the node
address is 127.0.0.1 (its runtime-env agent on the host's address), so the node address
alone does not keep a test cluster off the network. :func:`loopback_only` moves the calling
thread into a new network namespace whose one interface is ``lo``: every process it starts
from then on (Ray's, ``glint run``'s) can listen and connect on loopback only, and nothing
outside the machine can reach them. Entering one needs ``CAP_SYS_ADMIN`` (CI runs as root);
without it the tests run on the host's network with a warning, and the test of the
isolation itself is skipped.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import fcntl
import os
import socket
import struct
import warnings
from pathlib import Path

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


class Namespace:
    """The namespace entered (``isolated``), with a thread left on the host's network to
    look at it from outside."""

    def __init__(self, isolated: bool, host: concurrent.futures.ThreadPoolExecutor):
        self.isolated = isolated
        self._host = host

    @staticmethod
    def interfaces() -> set[str]:
        """The interfaces of the calling thread's namespace."""
        lines = Path("/proc/thread-self/net/dev").read_text().splitlines()[2:]
        return {line.split(":", 1)[0].strip() for line in lines}

    @staticmethod
    def listening_ports() -> set[int]:
        """TCP ports listened on in the calling thread's namespace."""
        ports = set()
        for table in ("tcp", "tcp6"):
            path = Path("/proc/thread-self/net") / table
            if not path.exists():
                continue
            for line in path.read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        return ports

    def host_listening_ports(self) -> set[int]:
        """TCP ports listened on in the host's namespace (read from a thread still there)."""
        return self._host.submit(Namespace.listening_ports).result()


def _bring_up_loopback() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


@contextlib.contextmanager
def loopback_only():
    """Runs the body, and every process it starts, in a network namespace with ``lo`` only;
    the calling thread goes back to the host's namespace at the end."""
    libc = ctypes.CDLL(None, use_errno=True)
    host = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    host.submit(lambda: None).result()  # started now, so it stays on the host's network
    saved = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        isolated = libc.unshare(CLONE_NEWNET) == 0
        if isolated:
            _bring_up_loopback()
        else:
            warnings.warn(f"cannot enter a loopback-only network namespace ({os.strerror(ctypes.get_errno())}): "
                          "Ray's servers in these tests listen on the host's interfaces", stacklevel=3)
        yield Namespace(isolated, host)
    finally:
        if libc.setns(saved, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "cannot go back to the host's network namespace")
        os.close(saved)
        host.shutdown()
