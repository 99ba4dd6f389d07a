"""Processor registration and membership (SAMZA.md §8.4, Samza's ZkUtils and ProcessorData).

Each processor owns one ephemeral-sequential node ``processors/<10-digit seq>`` whose data is
``"<location> <processorId>"``; the location is the LocationIdProvider's, the same string the
processor later writes as task locality (Samza writes the host name here, SAMZA.md §9). Neither
part may contain a space. When two live nodes carry the same processor id, the one with the
smallest path is valid; the other waits for it to go away and fails after a bounded time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import LocationId

__all__ = ["ProcessorNode", "ProcessorRegistry", "check_processor_identity", "processor_data"]


def check_processor_identity(processor_id: str, location_id: LocationId) -> None:
    """Both must be non-empty and free of spaces (the node data splits on one space)."""
    for what, value in (("processor id", processor_id), ("location id", location_id)):
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            msg = (
                f"ZooKeeper coordination needs a {what} without spaces, got {value!r} "
                "(the processor node stores '<location> <processor id>')"
            )
            raise CoordinationError(msg)


def processor_data(processor_id: str, location_id: LocationId) -> bytes:
    """The data of a processor node.

    >>> processor_data("p1", "host-a")
    b'host-a p1'
    """
    check_processor_identity(processor_id, location_id)
    return f"{location_id} {processor_id}".encode()


@dataclass(frozen=True)
class ProcessorNode:
    """One registered processor: its node name (the sequence), id and location."""

    node: str
    processor_id: str
    location_id: LocationId

    @classmethod
    def parse(cls, node: str, data: bytes) -> ProcessorNode:
        parts = data.decode("utf-8", "replace").split(" ")
        if len(parts) != 2 or not all(parts):
            msg = f"processor node {node} has data {data!r}, not '<location> <processor id>'"
            raise CoordinationError(msg)
        return cls(node, parts[1], parts[0])


class ProcessorRegistry:
    """Registers this processor and reads the group's processors."""

    def __init__(self, zk: ZkClient, keys: ZkKeyBuilder) -> None:
        self.zk = zk
        self.keys = keys

    def register(self, processor_id: str, location_id: LocationId) -> str:
        """Create this processor's ephemeral-sequential node; returns its node name."""
        path = self.zk.create(
            self.keys.processors + "/",
            processor_data(processor_id, location_id),
            ephemeral=True,
            sequence=True,
            makepath=True,
        )
        return path.rsplit("/", 1)[-1]

    def unregister(self, node: str) -> None:
        self.zk.delete(self.keys.processor(node))

    def read(self) -> list[ProcessorNode]:
        """The live processors in registration order (sequence order)."""
        result = []
        for node in sorted(self.zk.children(self.keys.processors) or []):
            found = self.zk.get(self.keys.processor(node))
            if found is not None:
                result.append(ProcessorNode.parse(node, found[0]))
        return result

    def wait_until_unique(
        self,
        node: str,
        processor_id: str,
        timeout: float,
        stopped: threading.Event | None = None,
        poll: float = 1.0,
    ) -> None:
        """Return once ``node`` is the valid (smallest) node of ``processor_id``.

        Another live node with the same id and a smaller path: poll every ``poll`` seconds for
        up to ``timeout``, then delete ``node`` and raise CoordinationError.
        """
        deadline = time.monotonic() + timeout
        while True:
            same = sorted(p.node for p in self.read() if p.processor_id == processor_id)
            if not same or same[0] == node:
                return
            if time.monotonic() >= deadline or (stopped is not None and stopped.is_set()):
                self.unregister(node)
                msg = (
                    f"Processor: {processor_id} is duplicate in the group "
                    f"{self.keys.processors} on {self.zk.description} (node {same[0]} has the "
                    f"same id). Registration failed; give every processor its own processor.id."
                )
                raise CoordinationError(msg)
            if stopped is not None:
                stopped.wait(poll)
            else:
                time.sleep(poll)
