"""Task groupers by name, from config, and the balance helpers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from samza_nb.errors import ConfigError
from samza_nb.grouping import (
    Balance,
    GroupByContainerCount,
    GroupByContainerIds,
    GrouperMetadata,
    HostAffinityGrouper,
    Move,
    SingleContainerGrouper,
    TaskNameGrouper,
    balance,
    get_grouper,
    grouper_from_config,
    grouper_names,
    min_moves,
    moved_tasks,
    register_grouper,
    task_assignment,
)
from samza_nb.model import ContainerModel, JobModel, TaskMode, TaskModel

from ._support import by_id, task_models


def test_names_and_lookup() -> None:
    assert {
        "group-by-container-count",
        "group-by-container-ids",
        "host-affinity",
        "single-container",
    } <= set(grouper_names())
    assert isinstance(get_grouper("host-affinity"), HostAffinityGrouper)
    grouper = get_grouper("group-by-container-ids", processor_ids=["b", "a"], host_affinity=False)
    assert isinstance(grouper, GroupByContainerIds) and grouper.processor_ids == ["b", "a"]
    assert isinstance(get_grouper("single-container", processor_id="p"), SingleContainerGrouper)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as error:
        get_grouper("round-robin")
    for name in (
        "group-by-container-count",
        "group-by-container-ids",
        "host-affinity",
        "single-container",
    ):
        assert name in str(error.value)


def test_bad_options_name_the_grouper_and_what_it_accepts() -> None:
    with pytest.raises(ConfigError, match="'group-by-container-count'.*accepted: container_count"):
        get_grouper("group-by-container-count", containers=2)


def test_custom_grouper() -> None:
    class Everything(TaskNameGrouper):
        name = "everything-on-one"

        def group(
            self,
            tasks: Iterable[TaskModel] | Mapping[str, TaskModel],
            metadata: GrouperMetadata | None = None,
        ) -> frozenset[ContainerModel]:
            values = tasks.values() if isinstance(tasks, Mapping) else tasks
            return frozenset([ContainerModel("only", list(values))])

    register_grouper("everything-on-one", Everything)
    assert by_id(get_grouper("everything-on-one").group(task_models(2))) == {
        "only": {"Partition 0", "Partition 1"}
    }


def test_from_config() -> None:
    grouper = grouper_from_config({"job.container.count": "3"})
    assert isinstance(grouper, GroupByContainerCount) and grouper.container_count == 3
    grouper = grouper_from_config(
        {"task.name.grouper.factory": "group-by-container-ids", "job.host-affinity.enabled": "true"}
    )
    assert isinstance(grouper, GroupByContainerIds) and grouper.host_affinity
    grouper = grouper_from_config(
        {"task.name.grouper.factory": "single-container", "processor.id": "p7"}
    )
    assert isinstance(grouper, SingleContainerGrouper) and grouper.processor_id == "p7"
    assert isinstance(
        grouper_from_config({"task.name.grouper.factory": "host-affinity"}), HostAffinityGrouper
    )


def test_single_container_grouper() -> None:
    containers = SingleContainerGrouper("p1").group(
        task_models(3), GrouperMetadata(processor_locality={"p1": "h"})
    )
    assert [(c.processor_id, len(c), c.location_id) for c in containers] == [("p1", 3, "h")]


def test_balance_and_moves() -> None:
    before = [
        ContainerModel("a", [TaskModel("t1"), TaskModel("t2")]),
        ContainerModel("b", [TaskModel("t3")]),
    ]
    after = JobModel(
        {},
        [
            ContainerModel("a", [TaskModel("t1")]),
            ContainerModel(
                "b", [TaskModel("t3"), TaskModel("Standby-t3-0", mode=TaskMode.STANDBY)]
            ),
            ContainerModel("c", [TaskModel("t2")]),
        ],
    )
    assert moved_tasks(before, after) == [Move("t2", "a", "c")]
    assert task_assignment(after, mode=TaskMode.STANDBY) == {"Standby-t3-0": "b"}
    assert balance(before) == Balance({"a": 2, "b": 1})
    assert balance(after).spread == 0 and balance(after, mode=None).spread == 1
    assert balance(before).is_balanced and not Balance({"a": 3, "b": 1}).is_balanced


def test_min_moves() -> None:
    previous = {f"t{i}": ("a" if i < 6 else "b") for i in range(9)}
    # 9 tasks on a, b, c: quota 3 and no bonus slot, so a gives up 3 of its 6.
    assert min_moves(previous, ["a", "b", "c"], list(previous)) == 3
    # a is gone: its 6 tasks move; b keeps its 3 (quota 4).
    assert min_moves(previous, ["b", "c"], list(previous)) == 6
    assert min_moves(previous, [], list(previous)) == 9
