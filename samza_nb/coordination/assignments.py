"""Persisted assignments and locality, read and written through a MetadataStore.

Namespaces and value fields follow Samza (SAMZA.md §1.7, §1.8, §7.3, §8.1):

============================== =============== =================================================
namespace                      key             value (JSON)
============================== =============== =================================================
set-task-container-assignment  task name       ``{"values": {"containerId": <processor id>}}``
set-task-mode-assignment       task name       ``{"values": {"taskMode": "Active"|"Standby"}}``
set-task-partition-assignment  SSP JSON        ``{"values": {"taskNames": "[\\"Partition 0\\"]"}}``
set-container-host-assignment  processor id    ``{"values": {"host": <location id>}}``
taskLocality                   task name       ``{"values": {"locationId": <location id>}}``
============================== =============== =================================================

Values use Samza's coordinator-stream wrapper (``values`` plus ``source`` and ``timestamp``),
so a Kafka coordinator-stream backend can carry them unchanged; ``taskNames`` is a JSON array
inside a string, as Samza writes it. ``taskLocality`` is the SEP's task → location record (the
ZooKeeper node Samza writes); ``set-container-host-assignment`` is the processor → location
record. Readers accept the bare payload object too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from samza_nb.coordination.store_locality import StoreLocality
from samza_nb.errors import MetadataStoreError, ModelError
from samza_nb.grouping import GrouperMetadata
from samza_nb.metadata import MetadataStore, NamespacedMetadataStore, namespaced_key
from samza_nb.model import JobModel, LocationId, SystemStreamPartition, TaskMode, java_sorted

__all__ = [
    "PROCESSOR_LOCALITY_NAMESPACE",
    "TASK_CONTAINER_NAMESPACE",
    "TASK_LOCALITY_NAMESPACE",
    "TASK_MODE_NAMESPACE",
    "TASK_PARTITION_NAMESPACE",
    "LocalityManager",
    "TaskAssignmentManager",
    "TaskPartitionAssignmentManager",
    "grouper_metadata_from_store",
    "update_task_assignments",
]

TASK_CONTAINER_NAMESPACE = "set-task-container-assignment"
TASK_MODE_NAMESPACE = "set-task-mode-assignment"
TASK_PARTITION_NAMESPACE = "set-task-partition-assignment"
PROCESSOR_LOCALITY_NAMESPACE = "set-container-host-assignment"
TASK_LOCALITY_NAMESPACE = "taskLocality"

_SOURCE = "samza_nb"


def _encode(field: str, value: str) -> bytes:
    message = {"values": {field: value}, "source": _SOURCE, "timestamp": int(time.time() * 1000)}
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def _decode(namespace: str, key: str, raw: bytes, field: str) -> Any:
    try:
        message = json.loads(raw)
    except ValueError as error:
        msg = f"metadata namespace {namespace!r}, key {key!r}: value is not JSON: {error}"
        raise MetadataStoreError(msg) from error
    if isinstance(message, dict):
        payload = message.get("values", message)
        if isinstance(payload, dict) and field in payload:
            return payload[field]
    msg = f"metadata namespace {namespace!r}, key {key!r}: value has no {field!r} field"
    raise MetadataStoreError(msg)


def _ssp_key(ssp: SystemStreamPartition) -> str:
    return json.dumps(ssp.to_json(), separators=(",", ":"), ensure_ascii=False)


def _parse_ssp_key(key: str) -> SystemStreamPartition:
    try:
        return SystemStreamPartition.from_json(json.loads(key))
    except (ValueError, ModelError) as error:
        msg = f"metadata namespace {TASK_PARTITION_NAMESPACE!r}: key {key!r} is not an SSP: {error}"
        raise MetadataStoreError(msg) from error


class TaskAssignmentManager:
    """Task → processor and task → mode (Samza's TaskAssignmentManager, §1.7).

    >>> from samza_nb.metadata import InMemoryMetadataStore
    >>> manager = TaskAssignmentManager(InMemoryMetadataStore())
    >>> manager.write_task_container_mappings({"p1": {"Partition 0": TaskMode.ACTIVE}})
    >>> manager.read_task_assignment(), manager.read_task_modes()
    ({'Partition 0': 'p1'}, {'Partition 0': <TaskMode.ACTIVE: 'Active'>})
    """

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self._containers = NamespacedMetadataStore(store, TASK_CONTAINER_NAMESPACE)
        self._modes = NamespacedMetadataStore(store, TASK_MODE_NAMESPACE)

    def read_task_assignment(self) -> dict[str, str]:
        """Task name → processor id."""
        result: dict[str, str] = {}
        for key, raw in self._containers.all().items():
            value = _decode(TASK_CONTAINER_NAMESPACE, key, raw, "containerId")
            if value is not None:
                result[key] = str(value)
        return {name: result[name] for name in java_sorted(result)}

    def read_task_modes(self) -> dict[str, TaskMode]:
        """Task name → mode (a task without a stored mode is not listed)."""
        result: dict[str, TaskMode] = {}
        for key, raw in self._modes.all().items():
            try:
                result[key] = TaskMode.parse(_decode(TASK_MODE_NAMESPACE, key, raw, "taskMode"))
            except ModelError as error:
                msg = f"metadata namespace {TASK_MODE_NAMESPACE!r}, key {key!r}: {error}"
                raise MetadataStoreError(msg) from error
        return {name: result[name] for name in java_sorted(result)}

    def read_active_task_assignment(self) -> dict[str, str]:
        """Task → processor of active tasks (a task with no stored mode counts as active)."""
        return self.read_task_assignment_by_mode()[0]

    def read_task_assignment_by_mode(self) -> tuple[dict[str, str], dict[str, str]]:
        """Task → processor of active tasks (a task with no stored mode counts as active),
        and of standby tasks."""
        modes = self.read_task_modes()
        active: dict[str, str] = {}
        standby: dict[str, str] = {}
        for name, pid in self.read_task_assignment().items():
            (standby if modes.get(name, TaskMode.ACTIVE) is TaskMode.STANDBY else active)[name] = pid
        return active, standby

    def write_task_container_mappings(
        self, mappings: Mapping[str | None, Mapping[str, TaskMode]]
    ) -> None:
        """Write processor id → {task → mode}; a ``None`` processor deletes its tasks."""
        entries: dict[str, bytes] = {}
        deleted: list[str] = []
        for pid, tasks in mappings.items():
            for name, mode in tasks.items():
                if pid is None:
                    deleted.append(name)
                    continue
                entries[namespaced_key(TASK_CONTAINER_NAMESPACE, name)] = _encode(
                    "containerId", pid
                )
                entries[namespaced_key(TASK_MODE_NAMESPACE, name)] = _encode(
                    "taskMode", TaskMode.parse(mode).value
                )
        self.store.put_all(entries)
        self.delete_task_container_mappings(deleted)

    def delete_task_container_mappings(self, task_names: Iterable[str]) -> None:
        """Delete both entries of each task."""
        for name in task_names:
            self._containers.delete(name)
            self._modes.delete(name)
        self.store.flush()


class TaskPartitionAssignmentManager:
    """SSP → task names, stored inverted as Samza does (§1.8).

    >>> from samza_nb.metadata import InMemoryMetadataStore
    >>> manager = TaskPartitionAssignmentManager(InMemoryMetadataStore())
    >>> ssp = SystemStreamPartition("kafka", "PVE", 0)
    >>> manager.write_task_partition_assignments({ssp: ["Partition 0"]})
    >>> manager.read_task_partition_assignments()[ssp]
    ['Partition 0']
    """

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self._partitions = NamespacedMetadataStore(store, TASK_PARTITION_NAMESPACE)

    def write_task_partition_assignments(
        self, mapping: Mapping[SystemStreamPartition, Sequence[str]]
    ) -> None:
        """Write SSP → task names; an empty list deletes the SSP's entry."""
        entries: dict[str, bytes] = {}
        for ssp, names in mapping.items():
            if not names:
                self._partitions.delete(_ssp_key(ssp))
                continue
            text = json.dumps(list(names), separators=(",", ":"), ensure_ascii=False)
            entries[namespaced_key(TASK_PARTITION_NAMESPACE, _ssp_key(ssp))] = _encode(
                "taskNames", text
            )
        self.store.put_all(entries)
        self.store.flush()

    def read_task_partition_assignments(self) -> dict[SystemStreamPartition, list[str]]:
        """SSP → task names (latest write wins)."""
        result: dict[SystemStreamPartition, list[str]] = {}
        for key, raw in self._partitions.all().items():
            value = _decode(TASK_PARTITION_NAMESPACE, key, raw, "taskNames")
            names = json.loads(value) if isinstance(value, str) else value
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                msg = f"metadata namespace {TASK_PARTITION_NAMESPACE!r}, key {key!r}: taskNames is not a list of names"
                raise MetadataStoreError(msg)
            result[_parse_ssp_key(key)] = names
        return {ssp: result[ssp] for ssp in sorted(result)}

    def delete(self, ssps: Iterable[SystemStreamPartition]) -> None:
        """Delete the entries of ``ssps``."""
        for ssp in ssps:
            self._partitions.delete(_ssp_key(ssp))
        self.store.flush()


class LocalityManager:
    """Processor → location and task → location (SEP host affinity data model).

    >>> from samza_nb.metadata import InMemoryMetadataStore
    >>> manager = LocalityManager(InMemoryMetadataStore())
    >>> manager.write_processor_locality({"p1": "host-a"})
    >>> manager.write_task_locality({"Partition 0": "host-a"})
    >>> manager.read_processor_locality(), manager.read_task_locality()
    ({'p1': 'host-a'}, {'Partition 0': 'host-a'})
    """

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self._processors = NamespacedMetadataStore(store, PROCESSOR_LOCALITY_NAMESPACE)
        self._tasks = NamespacedMetadataStore(store, TASK_LOCALITY_NAMESPACE)

    def _read(self, view: NamespacedMetadataStore, namespace: str, field: str) -> dict[str, str]:
        result: dict[str, str] = {}
        for key, raw in view.all().items():
            value = _decode(namespace, key, raw, field)
            if isinstance(value, str) and value:
                result[key] = value
        return {name: result[name] for name in java_sorted(result)}

    def _write(self, namespace: str, field: str, mapping: Mapping[str, LocationId | None]) -> None:
        entries: dict[str, bytes] = {}
        for key, location in mapping.items():
            if location is None:
                self.store.delete(namespaced_key(namespace, key))
            else:
                entries[namespaced_key(namespace, key)] = _encode(field, location)
        self.store.put_all(entries)
        self.store.flush()

    def read_processor_locality(self) -> dict[str, LocationId]:
        return self._read(self._processors, PROCESSOR_LOCALITY_NAMESPACE, "host")

    def write_processor_locality(self, mapping: Mapping[str, LocationId | None]) -> None:
        """Write processor id → location (None deletes)."""
        self._write(PROCESSOR_LOCALITY_NAMESPACE, "host", mapping)

    def read_task_locality(self) -> dict[str, LocationId]:
        return self._read(self._tasks, TASK_LOCALITY_NAMESPACE, "locationId")

    def write_task_locality(self, mapping: Mapping[str, LocationId | None]) -> None:
        """Write task name → location where it runs now (None deletes)."""
        self._write(TASK_LOCALITY_NAMESPACE, "locationId", mapping)


def update_task_assignments(
    store: MetadataStore, job_model: JobModel, *, write_locality: bool = True
) -> None:
    """Persist a new job model's assignments (Samza's JobModelHelper, §1.9).

    1. If the number of active tasks differs from the stored active assignment, the stored
       task → processor entries and the SSP entries of the new model are deleted first (keys
       may be misaligned; the grouping starts afresh).
    2. If the set of standby task names changed (e.g. another replication factor), the stored
       standby entries are deleted.
    3. Every (processor, task, mode) and every SSP → task names of the model is written in one
       ``put_all`` (one transaction on the embedded store).

    With ``write_locality``, containers that carry a location also record processor → location
    and, for each of their tasks, task → location.
    """
    tasks = TaskAssignmentManager(store)
    partitions = TaskPartitionAssignmentManager(store)
    active_names: set[str] = set()
    standby_names: set[str] = set()
    ssp_tasks: dict[SystemStreamPartition, list[str]] = {}
    for container in job_model.containers.values():
        for name, task in container.tasks.items():
            (active_names if task.mode is TaskMode.ACTIVE else standby_names).add(name)
            for ssp in task.ssps:
                ssp_tasks.setdefault(ssp, []).append(name)
    previous = tasks.read_active_task_assignment()
    if previous and len(previous) != len(active_names):
        tasks.delete_task_container_mappings(previous)
        partitions.delete(ssp_tasks)
    previous_standby = {
        name for name, mode in tasks.read_task_modes().items() if mode is TaskMode.STANDBY
    }
    if previous_standby != standby_names:
        tasks.delete_task_container_mappings(previous_standby)

    entries: dict[str, bytes] = {}
    for container in job_model.containers.values():
        for name, task in container.tasks.items():
            entries[namespaced_key(TASK_CONTAINER_NAMESPACE, name)] = _encode(
                "containerId", container.processor_id
            )
            entries[namespaced_key(TASK_MODE_NAMESPACE, name)] = _encode(
                "taskMode", task.mode.value
            )
            if write_locality and container.location_id is not None:
                entries[namespaced_key(TASK_LOCALITY_NAMESPACE, name)] = _encode(
                    "locationId", container.location_id
                )
        if write_locality and container.location_id is not None:
            entries[namespaced_key(PROCESSOR_LOCALITY_NAMESPACE, container.processor_id)] = _encode(
                "host", container.location_id
            )
    for ssp, names in ssp_tasks.items():
        text = json.dumps(java_sorted(names), separators=(",", ":"), ensure_ascii=False)
        entries[namespaced_key(TASK_PARTITION_NAMESPACE, _ssp_key(ssp))] = _encode(
            "taskNames", text
        )
    store.put_all(entries)
    store.flush()


def grouper_metadata_from_store(
    store: MetadataStore, processor_locality: Mapping[str, LocationId], *, run_id: str | None = None
) -> GrouperMetadata:
    """GrouperMetadata for the next grouping: the live processors given, the history stored
    (with ``run_id``, also where that run's processors reported the tasks' stores).

    The previous task → processor and task → SSPs maps hold **active** tasks only (a task with
    no stored mode counts as active), as Samza's JobModelHelper builds them; standby tasks have
    their own previous processors, and task locality holds every task recorded, standby tasks
    included, so standbys can return to their processor or location.
    """
    previous, standbys = TaskAssignmentManager(store).read_task_assignment_by_mode()
    task_to_ssps: dict[str, set[SystemStreamPartition]] = {}
    for ssp, names in (
        TaskPartitionAssignmentManager(store).read_task_partition_assignments().items()
    ):
        for name in names:
            if name in previous:
                task_to_ssps.setdefault(name, set()).add(ssp)
    return GrouperMetadata(
        processor_locality=processor_locality,
        task_locality=LocalityManager(store).read_task_locality(),
        previous_task_to_processor=previous,
        previous_task_to_ssps={name: frozenset(ssps) for name, ssps in task_to_ssps.items()},
        previous_standby_to_processor=standbys,
        store_locality={} if run_id is None else StoreLocality(store).read(run_id),
    )
