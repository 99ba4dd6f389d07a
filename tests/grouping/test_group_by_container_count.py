"""GroupByContainerCount behaves exactly as Samza's (SAMZA.md §1.2, TestGroupByContainerCount)."""

from __future__ import annotations

import pytest

from samza_nb.errors import GroupingError
from samza_nb.grouping import GroupByContainerCount, GrouperMetadata

from ._support import assignment, by_id, names, task_models


def _previous(containers: frozenset) -> GrouperMetadata:
    return GrouperMetadata(previous_task_to_processor=assignment(containers))


def test_empty_tasks_fail() -> None:
    with pytest.raises(GroupingError, match="no tasks"):
        GroupByContainerCount(1).group(set())
    with pytest.raises(GroupingError, match="no tasks"):
        GroupByContainerCount(5).group(set(), GrouperMetadata())


def test_fewer_tasks_than_containers_fail_with_both_counts() -> None:
    with pytest.raises(
        GroupingError, match=r"container count \(2\) is larger than task count \(1\)"
    ):
        GroupByContainerCount(2).group(task_models(1))


def test_container_count_must_be_positive() -> None:
    with pytest.raises(GroupingError, match="at least one container"):
        GroupByContainerCount(0)


def test_result_is_immutable() -> None:
    containers = GroupByContainerCount(3).group(task_models(3))
    assert isinstance(containers, frozenset)


def test_happy_path_round_robin_in_name_order() -> None:
    containers = by_id(GroupByContainerCount(2).group(task_models(5)))
    assert containers == {"0": names(0, 2, 4), "1": names(1, 3)}


def test_many_tasks_follow_lexicographic_order() -> None:
    containers = by_id(GroupByContainerCount(2).group(task_models(21)))
    assert containers["0"] == names(0, 10, 12, 14, 16, 18, 2, 3, 5, 7, 9)
    assert containers["1"] == names(1, 11, 13, 15, 17, 19, 20, 4, 6, 8)


def test_balancer_after_container_increase() -> None:
    tasks = task_models(9)
    previous = GroupByContainerCount(2).group(tasks)
    containers = by_id(GroupByContainerCount(4).group(tasks, _previous(previous)))
    assert containers == {"0": names(0, 2, 4), "1": names(1, 3), "2": names(8, 6), "3": names(5, 7)}


def test_balancer_after_container_decrease() -> None:
    tasks = task_models(9)
    previous = GroupByContainerCount(4).group(tasks)
    containers = by_id(GroupByContainerCount(2).group(tasks, _previous(previous)))
    assert containers == {"0": names(0, 4, 8, 6, 2), "1": names(1, 5, 7, 3)}


def test_balancer_from_four_to_three() -> None:
    tasks = task_models(9)
    previous = GroupByContainerCount(4).group(tasks)
    containers = by_id(GroupByContainerCount(3).group(tasks, _previous(previous)))
    assert containers == {"0": names(0, 4, 8), "1": names(1, 5, 7), "2": names(6, 2, 3)}


def test_balancer_same_count_keeps_previous() -> None:
    tasks = task_models(9)
    previous = GroupByContainerCount(2).group(tasks)
    containers = by_id(GroupByContainerCount(2).group(tasks, _previous(previous)))
    assert containers == {"0": names(0, 2, 4, 6, 8), "1": names(1, 3, 5, 7)}


def test_balancer_keeps_a_deliberately_unbalanced_custom_assignment() -> None:
    previous = {f"Partition {i}": "0" for i in range(6)} | {
        f"Partition {i}": "1" for i in (6, 7, 8)
    }
    containers = GroupByContainerCount(2).group(
        task_models(9), GrouperMetadata(previous_task_to_processor=previous)
    )
    assert by_id(containers) == {"0": names(0, 1, 2, 3, 4, 5), "1": names(6, 7, 8)}


def test_balancer_custom_assignment_and_container_increase() -> None:
    previous = {"Partition 0": "0"} | {f"Partition {i}": "1" for i in range(1, 6)}
    containers = GroupByContainerCount(3).group(
        task_models(6), GrouperMetadata(previous_task_to_processor=previous)
    )
    assert by_id(containers) == {"0": names(0, 5), "1": names(1, 2), "2": names(4, 3)}


@pytest.mark.parametrize(("old", "new"), [(1, 3), (3, 1)])
def test_balancer_with_one_container_on_either_side_is_round_robin(old: int, new: int) -> None:
    tasks = task_models(3)
    previous = GroupByContainerCount(old).group(tasks)
    grouper = GroupByContainerCount(new)
    assert grouper.group(tasks, _previous(previous)) == grouper.group(tasks)


def test_balancer_without_previous_assignment_is_round_robin() -> None:
    tasks = task_models(3)
    assert GroupByContainerCount(1).group(tasks, GrouperMetadata()) == GroupByContainerCount(
        1
    ).group(tasks)


@pytest.mark.parametrize("previous_count", [2, 4])
def test_task_count_change_is_round_robin(previous_count: int) -> None:
    tasks = task_models(3)
    previous = GroupByContainerCount(2 if previous_count == 2 else 3).group(
        task_models(previous_count)
    )
    grouper = GroupByContainerCount(1)
    assert grouper.group(tasks, _previous(previous)) == grouper.group(tasks)


def test_balancer_new_count_greater_than_tasks_fails() -> None:
    tasks = task_models(3)
    previous = GroupByContainerCount(3).group(tasks)
    with pytest.raises(GroupingError, match="larger than task count"):
        GroupByContainerCount(5).group(tasks, _previous(previous))


def test_previous_with_non_numeric_ids_is_round_robin() -> None:
    tasks = task_models(4)
    previous = {f"Partition {i}": ("a" if i % 2 else "b") for i in range(4)}
    grouper = GroupByContainerCount(3)
    assert grouper.group(
        tasks, GrouperMetadata(previous_task_to_processor=previous)
    ) == grouper.group(tasks)


def test_previous_of_same_size_naming_other_tasks_is_round_robin() -> None:
    # Samza fails here with a null dereference (Appendix A #3); we start afresh instead.
    tasks = task_models(4)
    previous = {f"Other {i}": str(i % 2) for i in range(4)}
    grouper = GroupByContainerCount(3)
    assert grouper.group(
        tasks, GrouperMetadata(previous_task_to_processor=previous)
    ) == grouper.group(tasks)


def test_result_does_not_depend_on_input_order() -> None:
    tasks = sorted(task_models(13), key=lambda t: t.changelog_partition)
    assert GroupByContainerCount(4).group(tasks) == GroupByContainerCount(4).group(reversed(tasks))
