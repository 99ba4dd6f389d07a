"""Task locality in ZooKeeper: ``taskLocality/<task>`` = the location id (SAMZA.md §8.6).

A processor writes it for each of its tasks when it accepts a changed assignment; the leader
reads it into GrouperMetadata, so a task returns to the location that holds its stores.
"""

from __future__ import annotations

from collections.abc import Mapping

from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.metadata.zookeeper import decode_key
from samza_nb.model import LocationId

__all__ = ["ZkTaskLocality"]


class ZkTaskLocality:
    """Reads and writes the task → location nodes of one coordination tree."""

    def __init__(self, zk: ZkClient, keys: ZkKeyBuilder) -> None:
        self.zk = zk
        self.keys = keys

    def read(self) -> dict[str, LocationId]:
        """Every recorded task → location (nodes that vanish meanwhile are skipped)."""
        result: dict[str, LocationId] = {}
        for name in self.zk.children(self.keys.task_locality) or []:
            found = self.zk.get(f"{self.keys.task_locality}/{name}")
            if found is not None and found[0]:
                result[decode_key(name)] = found[0].decode()
        return result

    def write(self, mapping: Mapping[str, LocationId]) -> None:
        for task_name, location in mapping.items():
            self.zk.put(self.keys.task_locality_of(task_name), location.encode())
