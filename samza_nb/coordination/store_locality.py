"""Where the tasks' stores are: per location, the tasks whose stores a processor there holds.

Samza's task locality (``taskLocality``) says where a task was *assigned*: a processor writes it
when it accepts a model, before the task runs, so a task that moves on and never runs at its new
location looks as if its stores had moved with it. Host affinity needs where the stores *are*
(the SEP's "the same physical host it had run before"), so the processor that holds a task's
stores reports it, once per location and stint, after the task's first committed epoch there
(an active task) or its first step (a standby):

=========================== ===================================== ==============================
namespace                   key (JSON)                            value (JSON)
=========================== ===================================== ==============================
samza-nb-store-locality-v1  ``["<location id>", "<task name>"]``   ``{"runId", "epoch", "mode",
                                                                  "processorId", "timestamp"}``
=========================== ===================================== ==============================

``epoch`` is the task's checkpoint epoch when the processor took its stores up there, so the
highest one names the task's last location; the others hold older copies (or a standby's),
which catch up from the changelog's tail instead of a full restore. A standby's record names
its active task (the store folder is the active's). Host affinity holds within a run id (the
SEP; DESIGN.md), so readers keep the records of one run id only. Records are never deleted by
the job: a location's stores stay on disk until someone removes them (``samza-nb reset``
clears the metadata store with them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from samza_nb.errors import MetadataStoreError
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore, namespaced_key
from samza_nb.model import LocationId, TaskMode, java_sort_key, java_sorted

__all__ = ["STORE_LOCALITY_NAMESPACE", "StoreLocality"]

STORE_LOCALITY_NAMESPACE = "samza-nb-store-locality-v1"


class StoreLocality:
    """Reads and writes the store records of one job's metadata store.

    >>> from samza_nb.metadata import InMemoryMetadataStore
    >>> locality = StoreLocality(InMemoryMetadataStore())
    >>> locality.record("host-a", {"Partition 0": 3}, run_id="r1", processor_id="0")
    >>> locality.record("host-b", {"Partition 0": 9}, run_id="r1", processor_id="1")
    >>> locality.read("r1")
    {'host-a': {'Partition 0': 3}, 'host-b': {'Partition 0': 9}}
    >>> locality.read("r2")
    {}
    """

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self._records = NamespacedMetadataStore(store, STORE_LOCALITY_NAMESPACE)

    def record(
        self,
        location: LocationId,
        tasks: Mapping[str, int],
        *,
        run_id: str,
        processor_id: str,
        mode: TaskMode = TaskMode.ACTIVE,
    ) -> None:
        """Report that the processor ``processor_id`` at ``location`` holds the stores of
        ``tasks`` (task name → its epoch now), in one ``put_all``."""
        if not tasks:
            return
        now = int(time.time() * 1000)
        entries = {
            namespaced_key(STORE_LOCALITY_NAMESPACE, _key(location, name)): json.dumps(
                {"runId": run_id, "epoch": int(epoch), "mode": mode.value, "processorId": processor_id,
                 "timestamp": now},
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
            for name, epoch in tasks.items()
        }
        self.store.put_all(entries)
        self.store.flush()

    def read(self, run_id: str, mode: TaskMode | None = None) -> dict[LocationId, dict[str, int]]:
        """Location → {task name → epoch} of ``run_id``'s records (Java order throughout);
        with ``mode``, only those of active tasks' stores, or of standbys' copies."""
        found: dict[LocationId, dict[str, int]] = {}
        for key, raw in self._records.all().items():
            location, name = _parse_key(key)
            try:
                value = json.loads(raw)
            except ValueError as error:
                msg = f"metadata namespace {STORE_LOCALITY_NAMESPACE!r}, key {key!r}: value is not JSON: {error}"
                raise MetadataStoreError(msg) from error
            epoch = value.get("epoch") if isinstance(value, dict) else None
            if not isinstance(epoch, int) or isinstance(epoch, bool):
                msg = f"metadata namespace {STORE_LOCALITY_NAMESPACE!r}, key {key!r}: value has no integer 'epoch'"
                raise MetadataStoreError(msg)
            if value.get("runId") == run_id and (mode is None or value.get("mode", TaskMode.ACTIVE.value) == mode.value):
                found.setdefault(location, {})[name] = epoch
        return {
            location: {name: found[location][name] for name in java_sorted(found[location])}
            for location in sorted(found, key=java_sort_key)
        }


def _key(location: LocationId, task_name: str) -> str:
    return json.dumps([location, task_name], separators=(",", ":"), ensure_ascii=False)


def _parse_key(key: str) -> tuple[LocationId, str]:
    try:
        parsed = json.loads(key)
    except ValueError:
        parsed = None
    if not (isinstance(parsed, list) and len(parsed) == 2 and all(isinstance(part, str) and part for part in parsed)):
        msg = (
            f"metadata namespace {STORE_LOCALITY_NAMESPACE!r}: key {key!r} is not "
            '["<location id>", "<task name>"]'
        )
        raise MetadataStoreError(msg)
    return parsed[0], parsed[1]
