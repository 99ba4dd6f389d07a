"""GrouperMetadata: immutable, and built from a previous job model (SAMZA.md §1.6)."""

from __future__ import annotations

import pytest

from samza_nb.errors import GroupingError
from samza_nb.grouping import GrouperMetadata
from samza_nb.model import ContainerModel, JobModel, SystemStreamPartition, TaskMode, TaskModel

SSP = SystemStreamPartition("kafka", "PVE", 0)


def test_maps_are_read_only_copies() -> None:
    locality = {"p1": "h1"}
    metadata = GrouperMetadata(processor_locality=locality, previous_task_to_ssps={"t": [SSP]})
    locality["p2"] = "h2"
    assert dict(metadata.processor_locality) == {"p1": "h1"}
    assert metadata.previous_task_to_ssps["t"] == frozenset({SSP})
    with pytest.raises(TypeError):
        metadata.processor_locality["p3"] = "h3"  # type: ignore[index]
    with pytest.raises(GroupingError, match="must be a mapping"):
        GrouperMetadata(processor_locality=["p1"])  # type: ignore[arg-type]
    assert hash(metadata) == hash(GrouperMetadata(processor_locality={"p1": "h1"}))


def test_from_job_model_uses_active_tasks_for_the_previous_assignment() -> None:
    previous = JobModel(
        {},
        [
            ContainerModel("p1", [TaskModel("t", [SSP], 0)], "h1"),
            ContainerModel("p2", [TaskModel("Standby-t-0", [SSP], 0, TaskMode.STANDBY)], "h2"),
        ],
    )
    metadata = GrouperMetadata.from_job_model(previous, {"p2": "h2", "p3": "h3"})
    assert dict(metadata.previous_task_to_processor) == {"t": "p1"}
    assert dict(metadata.previous_task_to_ssps) == {"t": frozenset({SSP})}
    assert dict(metadata.task_locality) == {"t": "h1", "Standby-t-0": "h2"}
    assert list(metadata.without_processors(["p2"]).processor_locality) == ["p3"]
    assert GrouperMetadata.from_job_model(None, {"p": "h"}).previous_task_to_processor == {}


def test_store_locality_is_carried_through_history_changes() -> None:
    stores = {"host-a": {"Partition 0": 2}, "host-b": {"Partition 0": 5, "Partition 1": 5}}
    metadata = GrouperMetadata.from_job_model(None, {"p1": "host-a"}, store_locality=stores)
    assert metadata.store_locality == stores
    assert metadata.with_processors({"p2": "host-b"}).store_locality == stores
    assert metadata.without_processors(["p1"]).store_locality == stores
    assert metadata.stores_by_task() == {"Partition 0": {"host-a": 2, "host-b": 5}, "Partition 1": {"host-b": 5}}
    assert hash(metadata) != hash(metadata.with_store_locality({}))
