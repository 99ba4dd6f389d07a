"""TaskMode, TaskModel and ContainerModel (SAMZA.md §3.1, §3.3)."""

from __future__ import annotations

import pytest

from samza_nb.errors import ModelError
from samza_nb.model import ContainerModel, SystemStreamPartition, TaskMode, TaskModel, java_sorted

SSP = SystemStreamPartition("kafka", "PVE", 0)


def test_task_mode_values_and_parsing() -> None:
    assert TaskMode.ACTIVE.value == "Active" and TaskMode.STANDBY.value == "Standby"
    assert TaskMode.parse(None) is TaskMode.ACTIVE
    assert TaskMode.parse("") is TaskMode.ACTIVE
    assert TaskMode.parse("Standby") is TaskMode.STANDBY
    with pytest.raises(ModelError, match="unknown task mode"):
        TaskMode.parse("Passive")


def test_task_model_equality_uses_all_fields_and_ordering_the_name() -> None:
    task = TaskModel("Partition 0", [SSP], 0)
    assert task == TaskModel("Partition 0", {SSP}, 0, "Active")
    assert task != TaskModel("Partition 0", [SSP], 1)
    assert task != task.replace(mode=TaskMode.STANDBY)
    assert hash(task) == hash(TaskModel("Partition 0", (SSP,), 0))
    names = [t.name for t in sorted([TaskModel("Partition 2"), TaskModel("Partition 10")])]
    assert names == ["Partition 10", "Partition 2"]


def test_task_model_json_defaults_to_active() -> None:
    raw = {"task-name": "Partition 0", "system-stream-partitions": [], "changelog-partition": 0}
    assert TaskModel.from_json(raw) == TaskModel("Partition 0", [], 0, TaskMode.ACTIVE)
    standby = TaskModel("Standby Partition 0", [], 0, TaskMode.STANDBY)
    assert TaskModel.from_json(standby.to_json()) == standby
    with pytest.raises(ModelError, match="changelog-partition"):
        TaskModel.from_json({"task-name": "x"})


def test_java_order_of_names() -> None:
    assert java_sorted(["testTaskId2", "testTasKId1", "Partition 10", "Partition 2"]) == [
        "Partition 10",
        "Partition 2",
        "testTasKId1",
        "testTaskId2",
    ]
    # A supplementary character is two UTF-16 code units starting at 0xD8xx, below U+FF01.
    assert java_sorted(["\uff01", "\U0001f600"]) == ["\U0001f600", "\uff01"]


def test_container_model_is_immutable_and_hashable() -> None:
    container = ContainerModel("p1", [TaskModel("b"), TaskModel("a")], "host-a")
    assert list(container.tasks) == ["a", "b"]
    assert container == ContainerModel("p1", {"a": TaskModel("a"), "b": TaskModel("b")}, "host-a")
    assert container != ContainerModel("p1", [TaskModel("a"), TaskModel("b")])
    assert len({container, container.replace()}) == 1
    with pytest.raises(AttributeError, match="immutable"):
        container.location_id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        container.tasks["c"] = TaskModel("c")  # type: ignore[index]


def test_container_model_rejects_inconsistent_tasks() -> None:
    with pytest.raises(ModelError, match="does not match"):
        ContainerModel("p1", {"x": TaskModel("y")})
    with pytest.raises(ModelError, match="twice"):
        ContainerModel("p1", [TaskModel("x"), TaskModel("x")])


def test_container_active_and_standby_views() -> None:
    container = ContainerModel(
        "p1", [TaskModel("t"), TaskModel("Standby-u-0", mode=TaskMode.STANDBY)]
    )
    assert list(container.active_tasks()) == ["t"]
    assert list(container.standby_tasks()) == ["Standby-u-0"]
    assert "t" in container and len(container) == 2
