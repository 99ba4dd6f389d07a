"""Persisted assignments and locality (SAMZA.md §1.7–§1.9, §7.3; SEP host affinity data model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samza_nb.coordination import (
    PROCESSOR_LOCALITY_NAMESPACE,
    TASK_CONTAINER_NAMESPACE,
    TASK_LOCALITY_NAMESPACE,
    TASK_MODE_NAMESPACE,
    TASK_PARTITION_NAMESPACE,
    LocalityManager,
    TaskAssignmentManager,
    TaskPartitionAssignmentManager,
    grouper_metadata_from_store,
    update_task_assignments,
)
from samza_nb.errors import MetadataStoreError
from samza_nb.grouping import (
    GrouperMetadata,
    HostAffinityGrouper,
    assign_with_standbys,
    min_moves,
    moved_tasks,
)
from samza_nb.metadata import EmbeddedMetadataStore, InMemoryMetadataStore, NamespacedMetadataStore
from samza_nb.model import ContainerModel, JobModel, SystemStreamPartition, TaskMode, TaskModel

SSP0 = SystemStreamPartition("kafka", "PVE", 0)


def _values(store: InMemoryMetadataStore, namespace: str) -> dict[str, dict]:
    return {k: json.loads(v) for k, v in NamespacedMetadataStore(store, namespace).all().items()}


def test_task_container_and_mode_use_samza_namespaces_and_fields() -> None:
    store = InMemoryMetadataStore()
    manager = TaskAssignmentManager(store)
    manager.write_task_container_mappings(
        {"0": {"Partition 0": TaskMode.ACTIVE}, "0-0": {"Standby-Partition 0-0": TaskMode.STANDBY}}
    )
    containers = _values(store, TASK_CONTAINER_NAMESPACE)
    modes = _values(store, TASK_MODE_NAMESPACE)
    assert containers["Partition 0"]["values"] == {"containerId": "0"}
    assert modes["Standby-Partition 0-0"]["values"] == {"taskMode": "Standby"}
    assert manager.read_task_assignment() == {"Partition 0": "0", "Standby-Partition 0-0": "0-0"}
    assert manager.read_active_task_assignment() == {"Partition 0": "0"}
    manager.write_task_container_mappings({None: {"Partition 0": TaskMode.ACTIVE}})
    assert manager.read_task_assignment() == {"Standby-Partition 0-0": "0-0"}
    manager.delete_task_container_mappings(["Standby-Partition 0-0"])
    assert manager.read_task_assignment() == {} and manager.read_task_modes() == {}


def test_a_task_without_a_stored_mode_counts_as_active() -> None:
    store = InMemoryMetadataStore()
    NamespacedMetadataStore(store, TASK_CONTAINER_NAMESPACE).put(
        "Partition 1", b'{"values":{"containerId":"3"}}'
    )
    assert TaskAssignmentManager(store).read_active_task_assignment() == {"Partition 1": "3"}


def test_task_partition_assignment_is_stored_inverted() -> None:
    store = InMemoryMetadataStore()
    manager = TaskPartitionAssignmentManager(store)
    broadcast = SystemStreamPartition("kafka", "CFG", 0)
    manager.write_task_partition_assignments(
        {SSP0: ["Partition 0"], broadcast: ["Partition 0", "Partition 1"]}
    )
    raw = _values(store, TASK_PARTITION_NAMESPACE)
    key = '{"system":"kafka","partition":0,"stream":"PVE","keyBucket":-1}'
    assert raw[key]["values"] == {"taskNames": '["Partition 0"]'}
    assert manager.read_task_partition_assignments() == {
        broadcast: ["Partition 0", "Partition 1"],
        SSP0: ["Partition 0"],
    }
    manager.write_task_partition_assignments({SSP0: ["Partition 5"]})  # latest write wins
    assert manager.read_task_partition_assignments()[SSP0] == ["Partition 5"]
    manager.write_task_partition_assignments({SSP0: []})  # an empty list deletes
    manager.delete([broadcast])
    assert manager.read_task_partition_assignments() == {}


def test_locality() -> None:
    store = InMemoryMetadataStore()
    manager = LocalityManager(store)
    manager.write_processor_locality({"p1": "host-a", "p2": "host-b"})
    manager.write_task_locality({"Partition 0": "host-a"})
    assert _values(store, PROCESSOR_LOCALITY_NAMESPACE)["p1"]["values"] == {"host": "host-a"}
    assert _values(store, TASK_LOCALITY_NAMESPACE)["Partition 0"]["values"] == {
        "locationId": "host-a"
    }
    manager.write_processor_locality({"p2": None})
    assert manager.read_processor_locality() == {"p1": "host-a"}
    assert manager.read_task_locality() == {"Partition 0": "host-a"}


def test_corrupt_values_are_reported_with_namespace_and_key() -> None:
    store = InMemoryMetadataStore()
    NamespacedMetadataStore(store, TASK_MODE_NAMESPACE).put("t", b"{not json")
    with pytest.raises(MetadataStoreError, match="set-task-mode-assignment.*'t'"):
        TaskAssignmentManager(store).read_task_modes()
    NamespacedMetadataStore(store, TASK_MODE_NAMESPACE).put("t", b'{"values":{"taskMode":"Idle"}}')
    with pytest.raises(MetadataStoreError, match="unknown task mode"):
        TaskAssignmentManager(store).read_task_modes()


def _model(locality: dict[str, str], rf: int = 1, tasks: int = 6) -> JobModel:
    task_models = [
        TaskModel(f"Partition {i}", [SystemStreamPartition("kafka", "PVE", i)], i)
        for i in range(tasks)
    ]
    metadata = GrouperMetadata(processor_locality=locality)
    if rf == 1:
        return JobModel({}, HostAffinityGrouper().group(task_models, metadata))
    return JobModel({}, assign_with_standbys(task_models, metadata, rf))


def test_update_and_read_back_grouper_metadata(tmp_path: Path) -> None:
    locality = {"p1": "h1", "p2": "h2", "p3": "h3"}
    model = _model(locality, rf=2)
    with EmbeddedMetadataStore(tmp_path / "m.sqlite3") as store:
        update_task_assignments(store, model)
        metadata = grouper_metadata_from_store(store, {"p1": "h1", "p2": "h2"})
    assert dict(metadata.processor_locality) == {"p1": "h1", "p2": "h2"}
    assert dict(metadata.previous_task_to_processor) == model.task_to_processor(
        mode=TaskMode.ACTIVE
    )
    assert dict(metadata.previous_task_to_ssps) == model.task_to_ssps()
    # Task locality covers standby tasks too, so they can return to their location.
    assert len(metadata.task_locality) == 12
    assert (
        metadata.task_locality["Partition 0"] == locality[model.processor_of("Partition 0") or ""]
    )


def test_regrouping_from_the_store_moves_only_the_dead_processors_tasks() -> None:
    locality = {f"p{i}": f"h{i % 2}" for i in range(4)}
    store = InMemoryMetadataStore()
    first = _model(locality, tasks=12)
    update_task_assignments(store, first)
    live = {p: h for p, h in locality.items() if p != "p2"}
    metadata = grouper_metadata_from_store(store, live)
    tasks = first.active_tasks().values()
    second = JobModel({}, HostAffinityGrouper().group(tasks, metadata))
    moves = moved_tasks(first, second)
    assert {m.before for m in moves} == {"p2"}
    assert len(moves) == min_moves(
        metadata.previous_task_to_processor, live, [t.name for t in tasks]
    )
    # p2 was at h0 with p0, which has room for one more (12 tasks over 3 processors: 4 each).
    assert sum(1 for m in moves if live[m.after or ""] == "h0") == 1


def test_task_count_change_clears_the_previous_assignment() -> None:
    store = InMemoryMetadataStore()
    update_task_assignments(store, _model({"p1": "h1", "p2": "h2"}, tasks=4))
    smaller = JobModel({}, [ContainerModel("p1", [TaskModel("Partition 0", [SSP0], 0)], "h1")])
    update_task_assignments(store, smaller)
    assert TaskAssignmentManager(store).read_task_assignment() == {"Partition 0": "p1"}


def test_standby_set_change_clears_old_standby_entries() -> None:
    store = InMemoryMetadataStore()
    locality = {"p1": "h1", "p2": "h2", "p3": "h3"}
    update_task_assignments(store, _model(locality, rf=3, tasks=3))
    update_task_assignments(store, _model(locality, rf=2, tasks=3))
    modes = TaskAssignmentManager(store).read_task_modes()
    assert sum(1 for m in modes.values() if m is TaskMode.STANDBY) == 3
    assert not any(name.endswith("-1") for name in modes)
