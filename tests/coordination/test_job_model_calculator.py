"""assign_tasks: a grouper's containers always land on live processors."""

from __future__ import annotations

import pytest

from samza_nb.coordination.job_model_calculator import assign_tasks
from samza_nb.errors import GroupingError
from samza_nb.grouping import GrouperMetadata
from samza_nb.model import TaskModel

TASKS = [TaskModel(f"Partition {p}", changelog_partition=p) for p in range(4)]


def test_count_grouper_containers_go_to_the_live_processor_ids() -> None:
    model = assign_tasks(TASKS, {"1": "host-b", "2": "host-c"}, GrouperMetadata(), grouper="group-by-container-count")
    assert set(model.containers) == {"1", "2"}
    assert sorted(t for c in model.containers.values() for t in c.tasks) == [f"Partition {p}" for p in range(4)]
    assert {c.location_id for c in model.containers.values()} == {"host-b", "host-c"}


def test_a_container_id_that_is_live_keeps_its_tasks() -> None:
    model = assign_tasks(TASKS, {"0": "a", "7": "b"}, GrouperMetadata(), grouper="group-by-container-count")
    # Round robin: "0" keeps partitions 0 and 2, container "1" moves to processor 7.
    assert sorted(model.containers["0"].tasks) == ["Partition 0", "Partition 2"]
    assert sorted(model.containers["7"].tasks) == ["Partition 1", "Partition 3"]


def test_more_containers_than_processors_is_a_grouping_error() -> None:
    with pytest.raises(GroupingError, match=r"made containers \['0', '1', '2'\] for the live processors \['0', '1'\].*job.container.count"):
        assign_tasks(TASKS, {"0": "a", "1": "b"}, GrouperMetadata(), grouper="group-by-container-count",
                     options={"container_count": 3})
