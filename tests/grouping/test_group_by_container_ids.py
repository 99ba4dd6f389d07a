"""GroupByContainerIds behaves exactly as Samza's (SAMZA.md §1.3, TestGroupByContainerIds)."""

from __future__ import annotations

import pytest

from samza_nb.errors import GroupingError
from samza_nb.grouping import GroupByContainerIds, GrouperMetadata
from samza_nb.model import ContainerModel, TaskModel

from ._support import by_id, names, task_models


def test_empty_tasks_fail() -> None:
    with pytest.raises(GroupingError, match="empty set of tasks"):
        GroupByContainerIds(container_count=1).group(set())


def test_happy_path_uses_ids_0_to_count() -> None:
    containers = by_id(GroupByContainerIds(container_count=2).group(task_models(5)))
    assert containers == {"0": names(0, 2, 4), "1": names(1, 3)}


def test_empty_id_list_fails() -> None:
    with pytest.raises(GroupingError, match="at least one container"):
        GroupByContainerIds([]).group(task_models(5))


def test_ids_are_used_in_the_given_order() -> None:
    containers = by_id(GroupByContainerIds(["4", "2"]).group(task_models(5)))
    assert containers == {"4": names(0, 2, 4), "2": names(1, 3)}


def test_many_tasks_with_given_ids() -> None:
    containers = by_id(GroupByContainerIds(["4", "2"]).group(task_models(21)))
    assert containers["4"] == names(0, 10, 12, 14, 16, 18, 2, 3, 5, 7, 9)
    assert containers["2"] == names(1, 11, 13, 15, 17, 19, 20, 4, 6, 8)


def test_fewer_tasks_than_ids_keeps_smallest_ids() -> None:
    tasks = task_models(1)
    assert GroupByContainerIds(["2", "1"]).group(tasks) == frozenset([ContainerModel("1", tasks)])


def test_ids_default_to_processor_locality_keys_in_order() -> None:
    metadata = GrouperMetadata(processor_locality={"b": "h1", "a": "h2"})
    containers = GroupByContainerIds().group(task_models(3), metadata)
    assert by_id(containers) == {"b": names(0, 2), "a": names(1)}
    assert {c.processor_id: c.location_id for c in containers} == {"b": "h1", "a": "h2"}


# Host affinity enabled: Samza's location-aware variant.

P1, P2, P3 = "testProcessorId1", "testProcessorId2", "testProcessorId3"
L1, L2, L3 = "testLocationId1", "testLocationId2", "testLocationId3"
# Java order puts "testTasKId1" (capital K) before "testTaskId2".
T1, T2, T3 = "testTasKId1", "testTaskId2", "testTaskId3"
TASKS = {TaskModel(T1, [], 0), TaskModel(T2, [], 1), TaskModel(T3, [], 2)}


def _grouper() -> GroupByContainerIds:
    return GroupByContainerIds(container_count=3, host_affinity=True)


def test_uses_task_locality() -> None:
    metadata = GrouperMetadata(
        processor_locality={P1: L1, P2: L2, P3: L3}, task_locality={T1: L1, T2: L2, T3: L3}
    )
    assert by_id(_grouper().group(TASKS, metadata)) == {P1: {T1}, P2: {T2}, P3: {T3}}


def test_single_processor_gets_everything() -> None:
    metadata = GrouperMetadata(processor_locality={P1: L1}, task_locality={T1: L1, T2: L2, T3: L3})
    assert by_id(GroupByContainerIds(host_affinity=True).group(TASKS, metadata)) == {
        P1: {T1, T2, T3}
    }


def test_partial_task_locality() -> None:
    metadata = GrouperMetadata(processor_locality={P1: L1, P2: L2, P3: L3}, task_locality={T1: L1})
    assert by_id(_grouper().group(TASKS, metadata)) == {P1: {T1}, P2: {T2}, P3: {T3}}


def test_empty_processor_locality_fails() -> None:
    with pytest.raises(GroupingError, match="at least one container"):
        _grouper().group(TASKS, GrouperMetadata())
    with pytest.raises(GroupingError, match="no tasks"):
        _grouper().group(set(), GrouperMetadata())


def test_identical_distribution_when_processors_do_not_change() -> None:
    metadata = GrouperMetadata(
        processor_locality={P1: L1, P2: L2, P3: L3}, task_locality={T1: L1, T2: L2, T3: L3}
    )
    assert _grouper().group(TASKS, metadata) == _grouper().group(TASKS, metadata)


def test_minimal_shuffle_when_a_processor_leaves() -> None:
    metadata = GrouperMetadata(
        processor_locality={P1: L1, P2: L2}, task_locality={T1: L1, T2: L2, T3: L3}
    )
    assert by_id(_grouper().group(TASKS, metadata)) == {P1: {T1, T3}, P2: {T2}}


def test_more_processors_than_tasks_keeps_the_smallest_ids() -> None:
    tasks = task_models(1)
    metadata = GrouperMetadata(
        processor_locality={P2: L2, P1: L1}, task_locality={T1: L1, T2: L2, T3: L3}
    )
    containers = GroupByContainerIds(host_affinity=True).group(tasks, metadata)
    assert by_id(containers) == {P1: names(0)}


def test_location_quota_then_fill_then_round_robin() -> None:
    # Five tasks all last seen at L1, processors a,b at L1 and c at L2: quota 1.
    tasks = task_models(5)
    metadata = GrouperMetadata(
        processor_locality={"c": L2, "b": L1, "a": L1},
        task_locality={f"Partition {i}": L1 for i in range(5)},
    )
    containers = by_id(GroupByContainerIds(host_affinity=True).group(tasks, metadata))
    # Phase 1: P0 → a, P1 → b (L1 at quota). Phase 2: P2 → c. Round robin from "a": P3 → a, P4 → b.
    assert containers == {"a": names(0, 3), "b": names(1, 4), "c": names(2)}


def test_previous_processor_is_not_used() -> None:
    # Samza's variant looks at locations only (the SEP order is HostAffinityGrouper's).
    metadata = GrouperMetadata(
        processor_locality={"a": L1, "b": L1},
        previous_task_to_processor={"Partition 0": "b", "Partition 1": "a"},
        task_locality={"Partition 0": L1, "Partition 1": L1},
    )
    containers = by_id(GroupByContainerIds(host_affinity=True).group(task_models(2), metadata))
    assert containers == {"a": names(0), "b": names(1)}


def test_result_does_not_depend_on_input_order() -> None:
    metadata = GrouperMetadata(
        processor_locality={"c": L2, "b": L1, "a": L1},
        task_locality={f"Partition {i}": (L1 if i % 3 else L2) for i in range(11)},
    )
    ordered = sorted(task_models(11), key=lambda t: t.changelog_partition)
    grouper = GroupByContainerIds(host_affinity=True)
    assert grouper.group(ordered, metadata) == grouper.group(reversed(ordered), metadata)
