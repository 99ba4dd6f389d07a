"""A Tansu broker of a test's own behind a TCP gate on 127.0.0.1, for broker outages.

Tansu keeps its data in memory, so stopping it loses every topic: an outage is the gate
closing instead. The broker advertises the gate's port, so every connection a client makes
(bootstrap and broker alike) passes the gate; :meth:`TcpGate.close` resets the open ones and
refuses new ones until :meth:`TcpGate.open`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from samza_nb.services._process import free_ports, port_open
from samza_nb.services.kafka import KafkaBroker

__all__ = ["TcpGate", "gated_broker"]

_HOST = "127.0.0.1"


class TcpGate:
    """Forwards connections to ``port`` on 127.0.0.1 while open."""

    def __init__(self, listen_port: int, target_port: int) -> None:
        self.port = listen_port
        self._target = target_port
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self.open()

    def open(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((_HOST, self.port))
        listener.listen(64)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        """Refuse new connections and reset the open ones (as a broker that went away)."""
        with self._lock:
            listener, self._listener = self._listener, None
            pairs, self._pairs = self._pairs, []
        if listener is not None:
            listener.close()
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _address = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((_HOST, self._target), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._pairs.append((client, upstream))
            threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()


def _pump(a: socket.socket, b: socket.socket) -> None:
    selector = selectors.DefaultSelector()
    try:
        selector.register(a, selectors.EVENT_READ, b)
        selector.register(b, selectors.EVENT_READ, a)
        while True:
            for key, _events in selector.select(timeout=1.0):
                data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                if not data:
                    return
                key.data.sendall(data)
    except (OSError, ValueError):
        return
    finally:
        selector.close()
        for sock in (a, b):
            with contextlib.suppress(OSError):
                sock.close()


@contextlib.contextmanager
def gated_broker(directory: Path) -> Iterator[tuple[str, TcpGate]]:
    """A Tansu broker of its own, reached through a :class:`TcpGate`: (bootstrap, gate)."""
    broker_port, gate_port = free_ports(2, _HOST)
    binary = KafkaBroker(None, directory=directory).binary()  # type: ignore[arg-type]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "CLUSTER_ID")
    }
    with (directory / "tansu.log").open("ab") as log:
        process = subprocess.Popen(
            [
                str(binary), "broker",
                "--listener-url", f"tcp://{_HOST}:{broker_port}",
                "--advertised-listener-url", f"tcp://{_HOST}:{gate_port}",
                "--storage-engine", "memory://tansu/",
                "--cluster-id", "samza-nb-gated",
            ],
            stdout=log, stderr=log, env=env, cwd=directory,
        )
    gate: TcpGate | None = None
    try:
        deadline = time.monotonic() + 10
        while not port_open(_HOST, broker_port):
            if process.poll() is not None or time.monotonic() > deadline:
                msg = f"the gated Tansu broker did not start; see {directory / 'tansu.log'}"
                raise RuntimeError(msg)
            time.sleep(0.05)
        gate = TcpGate(gate_port, broker_port)
        yield f"{_HOST}:{gate_port}", gate
    finally:
        if gate is not None:
            gate.close()
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
