"""Task locality in ZooKeeper: ``taskLocality/<task>`` = the location id (SAMZA.md §8.6).

A processor writes it for each of its tasks when it accepts a changed assignment; the leader
reads it into GrouperMetadata. Where the stores *are* is what the processors that hold them
report in the job's metadata store (coordination/store_locality.py): the leader reads the
current deployment's reports too (:func:`current_store_locality`), so a processor that joins at
a location gets the tasks whose stores are there.
"""

from __future__ import annotations

from collections.abc import Mapping

from samza_nb.coordination.store_locality import StoreLocality
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.coordination.zk.run_id import RUN_ID_KEY, RUN_ID_NAMESPACE, member_run_ids
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.metadata.zookeeper import decode_key
from samza_nb.model import LocationId

__all__ = ["ZkTaskLocality", "current_store_locality"]


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


def current_store_locality(
    zk: ZkClient, keys: ZkKeyBuilder, metadata: MetadataStore
) -> dict[LocationId, dict[str, int]]:
    """Location → {task → epoch} the processors reported in the current deployment: the stored
    run id while a live member carries it (zk/run_id.py), else none (host affinity holds within
    a run id; a new deployment's first model may come before its run id is stored)."""
    stored = NamespacedMetadataStore(metadata, RUN_ID_NAMESPACE).get(RUN_ID_KEY)
    if stored is None:
        return {}
    run_id = stored.decode()
    if run_id not in member_run_ids(zk, keys):
        return {}
    return StoreLocality(metadata).read(run_id)
