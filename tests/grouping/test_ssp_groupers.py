"""SSP groupers, broadcast inputs, partition expansion and changelog partitions (SAMZA.md §2)."""

from __future__ import annotations

import pytest

from samza_nb.errors import ConfigError, GroupingError
from samza_nb.grouping import (
    AllSspToSingleTask,
    GroupByPartition,
    GroupBySystemStreamPartition,
    assign_changelog_partitions,
    build_task_models,
    expand_partitions,
    get_ssp_grouper,
    parse_broadcast_inputs,
    ssp_grouper_from_config,
    ssp_grouper_names,
)
from samza_nb.model import SystemStreamPartition as SSP

AA0, AA1, AA2 = (
    SSP("SystemA", "StreamA", 0),
    SSP("SystemA", "StreamA", 1),
    SSP("SystemA", "StreamA", 2),
)
AB1, AB2, AC0 = (
    SSP("SystemA", "StreamB", 1),
    SSP("SystemA", "StreamB", 2),
    SSP("SystemA", "StreamB", 0),
)
ALL = {AA0, AA1, AA2, AB1, AB2, AC0}
BROADCAST = "SystemA.StreamA#0, SystemA.StreamB#1"


def test_group_by_partition_local_streams() -> None:
    grouper = GroupByPartition()
    assert grouper.group(set()) == {}
    assert grouper.group(ALL) == {
        "Partition 0": {AA0, AC0},
        "Partition 1": {AA1, AB1},
        "Partition 2": {AA2, AB2},
    }


def test_group_by_partition_broadcast_streams() -> None:
    assert GroupByPartition(BROADCAST).group(ALL) == {
        "Partition 0": {AA0, AC0, AB1},
        "Partition 1": {AA1, AA0, AB1},
        "Partition 2": {AA2, AA0, AB2, AB1},
    }


def test_no_task_holds_only_broadcast_streams() -> None:
    assert GroupByPartition(parse_broadcast_inputs(BROADCAST)).group({AA0, AB1, AB2}) == {
        "Partition 2": {AA0, AB1, AB2}
    }


def test_group_by_partition_with_elasticity() -> None:
    result = GroupByPartition(elasticity_factor=2).group(ALL)
    assert result == {
        f"Partition {p} {b}": {ssp.with_key_bucket(b) for ssp in ALL if ssp.partition == p}
        for p in range(3)
        for b in range(2)
    }
    assert list(result)[:2] == ["Partition 0 0", "Partition 0 1"]


def test_elasticity_below_one_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="elasticity"):
        GroupByPartition(elasticity_factor=0)


def test_group_by_system_stream_partition() -> None:
    result = GroupBySystemStreamPartition(BROADCAST).group(ALL)
    assert result == {
        "SystemStreamPartition [SystemA, StreamA, 1]": {AA1, AA0, AB1},
        "SystemStreamPartition [SystemA, StreamA, 2]": {AA2, AA0, AB1},
        "SystemStreamPartition [SystemA, StreamB, 0]": {AC0, AA0, AB1},
        "SystemStreamPartition [SystemA, StreamB, 2]": {AB2, AA0, AB1},
    }
    elastic = GroupBySystemStreamPartition(elasticity_factor=2).group({AA0})
    assert list(elastic) == [
        "SystemStreamPartition [SystemA, StreamA, 0, 0]",
        "SystemStreamPartition [SystemA, StreamA, 0, 1]",
    ]


def test_all_ssp_to_single_task() -> None:
    result = AllSspToSingleTask(["p2", "p1"]).group(ALL)
    assert result == {"Task-p1": ALL, "Task-p2": ALL}
    with pytest.raises(GroupingError, match="no input system stream partitions"):
        AllSspToSingleTask(["p1"]).group(set())
    with pytest.raises(ConfigError, match="at least one processor"):
        AllSspToSingleTask([])


def test_parse_broadcast_inputs() -> None:
    assert parse_broadcast_inputs("kafka.a#[1-3]") == {SSP("kafka", "a", p) for p in (1, 2, 3)}
    assert parse_broadcast_inputs("kafka.a#[3-1]") == frozenset()
    assert parse_broadcast_inputs("") == frozenset()
    assert parse_broadcast_inputs("kafka.topic.with.dots#2") == {SSP("kafka", "topic.with.dots", 2)}
    for bad in ("kafka.a", "kafka.a#x", "nodot#1", "kafka.a#[1-]"):
        with pytest.raises(ConfigError, match="task.broadcast.inputs"):
            parse_broadcast_inputs(bad)


def test_ssp_grouper_registry_and_config() -> None:
    assert ssp_grouper_names() == [
        "all-ssp-to-single-task",
        "group-by-partition",
        "group-by-system-stream-partition",
    ]
    assert isinstance(get_ssp_grouper("group-by-partition"), GroupByPartition)
    with pytest.raises(ConfigError, match="known: all-ssp-to-single-task"):
        get_ssp_grouper("group-by-partitions")
    grouper = ssp_grouper_from_config(
        {"task.broadcast.inputs": "SystemA.StreamA#0", "job.elasticity.factor": "2"}
    )
    assert isinstance(grouper, GroupByPartition)
    assert grouper.broadcast_inputs == {AA0} and grouper.elasticity_factor == 2
    config = {
        "job.systemstreampartition.grouper.factory": "all-ssp-to-single-task",
        "task.broadcast.inputs": "SystemA.StreamA#0",
    }
    with pytest.raises(ConfigError, match="broadcast"):
        ssp_grouper_from_config(config)


# Partition expansion (SSPGrouperProxy, TestGroupByPartitionWithGrouperProxy).


def _pve(*partitions: int, stream: str = "PVE") -> set[SSP]:
    return {SSP("kafka", stream, p) for p in partitions}


def test_single_stream_expansion_keeps_keys_on_their_tasks() -> None:
    previous = {f"Partition {p}": _pve(p) for p in range(4)}
    current = GroupByPartition().group(_pve(*range(8)))
    assert expand_partitions(current, previous) == {
        f"Partition {p}": _pve(p, p + 4) for p in range(4)
    }
    # A stateless job does not call expand_partitions: the grouper's result stands.
    assert len(current) == 8


def test_expansion_of_one_stream_among_several_and_a_new_stream() -> None:
    previous = {f"Partition {p}": _pve(p) | _pve(p, stream="URE") for p in range(4)}
    current_ssps = _pve(*range(8)) | _pve(*range(4), stream="URE") | _pve(*range(8), stream="BOB")
    result = expand_partitions(GroupByPartition().group(current_ssps), previous)
    expected = {
        f"Partition {p}": _pve(p, p + 4) | _pve(p, stream="URE") | _pve(p, stream="BOB")
        for p in range(4)
    } | {f"Partition {p}": _pve(p, stream="BOB") for p in range(4, 8)}
    assert result == expected


def test_removed_stream_and_new_stream_keep_the_grouping() -> None:
    previous = {f"Partition {p}": _pve(p) | _pve(p, stream="URE") for p in range(4)}
    current = GroupByPartition().group(_pve(*range(8), stream="BOB"))
    assert expand_partitions(current, previous) == current


def test_expansion_with_group_by_system_stream_partition() -> None:
    previous = {str(SSP("kafka", "PVE", p)): _pve(p) for p in range(2)}
    current = GroupBySystemStreamPartition().group(_pve(*range(4)))
    assert expand_partitions(current, previous) == {
        "SystemStreamPartition [kafka, PVE, 0]": _pve(0, 2),
        "SystemStreamPartition [kafka, PVE, 1]": _pve(1, 3),
    }


def test_contraction_and_non_multiples_are_errors() -> None:
    previous = {f"Partition {p}": _pve(p) for p in range(4)}
    for partitions in (range(2), range(6)):
        with pytest.raises(GroupingError, match="integer multiple"):
            expand_partitions(GroupByPartition().group(_pve(*partitions)), previous)


def test_broadcast_partitions_are_not_moved_or_counted() -> None:
    broadcast = {SSP("kafka", "CFG", 0)}
    previous = {f"Partition {p}": _pve(p) | broadcast for p in range(2)}
    current = GroupByPartition(broadcast).group(_pve(*range(4)) | broadcast)
    result = expand_partitions(current, previous, broadcast_inputs=broadcast)
    assert result == {"Partition 0": _pve(0, 2) | broadcast, "Partition 1": _pve(1, 3) | broadcast}


def test_previous_task_missing_from_the_new_grouping_is_an_error() -> None:
    previous = {"Task-p1": _pve(0, 1)}
    with pytest.raises(GroupingError, match="no longer has"):
        expand_partitions(GroupByPartition().group(_pve(0, 1)), previous)


def test_without_previous_assignment_nothing_moves() -> None:
    current = GroupByPartition().group(_pve(*range(3)))
    assert expand_partitions(current, {}) == current


# Changelog partitions (JobModelCalculator, TestJobModelCalculator).


def test_previous_changelog_partitions_are_kept() -> None:
    assert assign_changelog_partitions(
        ["Partition 0", "Partition 1", "Partition 2", "Partition 3"],
        {"Partition 0": 1, "Partition 1": 0},
    ) == {"Partition 0": 1, "Partition 1": 0, "Partition 2": 2, "Partition 3": 3}


def test_new_tasks_get_partitions_in_task_name_order() -> None:
    assert assign_changelog_partitions(["Partition 10", "Partition 2", "Partition 1"]) == {
        "Partition 1": 0,
        "Partition 10": 1,
        "Partition 2": 2,
    }


def test_build_task_models() -> None:
    grouped = GroupByPartition().group(_pve(0, 1))
    models = build_task_models(grouped, {"Partition 1": 5})
    assert models["Partition 1"].changelog_partition == 5
    assert models["Partition 0"].changelog_partition == 6
    assert models["Partition 0"].ssps == _pve(0)
