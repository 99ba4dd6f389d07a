"""Hot standby: Samza's naming (§4.1–§4.3), standalone placement and failover (SEP hot standby)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samza_nb.errors import GroupingError
from samza_nb.grouping import (
    GroupByContainerCount,
    GrouperMetadata,
    active_container_id,
    active_task_name,
    add_standby_containers,
    assign_with_standbys,
    balance,
    check_standby_invariants,
    failover,
    is_standby_task_name,
    moved_tasks,
    standby_constraints,
    standby_container_id,
    standby_task_name,
)
from samza_nb.model import ContainerModel, JobModel, TaskMode, TaskModel

from ._support import by_id, task_models

# Naming (StandbyTaskUtil)


def test_standby_names() -> None:
    assert [standby_container_id("0", r) for r in range(2)] == ["0-0", "0-1"]
    assert standby_task_name("Partition 0", 0) == "Standby-Partition 0-0"
    assert active_task_name("Standby-Partition 0-0") == "Partition 0"
    assert active_container_id("0-1") == "0"
    assert is_standby_task_name("Standby-Partition 0-0")
    assert not is_standby_task_name("Partition 0")


def test_names_containing_dashes_round_trip() -> None:
    # Samza splits on "-" and breaks here (Appendix A #6).
    name = "SystemStreamPartition [kafka, my-topic, 0]"
    assert active_task_name(standby_task_name(name, 1)) == name
    processor = "3f2b-11ee-uuid"
    assert active_container_id(standby_container_id(processor, 0)) == processor
    with pytest.raises(GroupingError, match="not a standby task name"):
        active_task_name("Partition 0")
    with pytest.raises(GroupingError, match="not a standby container id"):
        active_container_id("0")


# Generation (TaskNameGrouperProxy)


def test_replication_factor_one_adds_nothing_and_empty_stays_empty() -> None:
    containers = GroupByContainerCount(2).group(task_models(4))
    assert add_standby_containers(containers, 1) == containers
    assert add_standby_containers([], 3) == frozenset()
    with pytest.raises(GroupingError, match="replication factor"):
        add_standby_containers(containers, 0)


def test_standby_containers_mirror_the_active_ones() -> None:
    containers = GroupByContainerCount(2).group(task_models(4))
    result = add_standby_containers(containers, 3)
    assert len(result) == 6 and sum(len(c) for c in result) == 12
    ids = by_id(result)
    assert ids["0-0"] == {"Standby-Partition 0-0", "Standby-Partition 2-0"}
    assert ids["1-1"] == {"Standby-Partition 1-1", "Standby-Partition 3-1"}
    model = JobModel({}, result)
    active = model.task_models()["Partition 2"]
    standby = model.task_models()["Standby-Partition 2-1"]
    assert standby.mode is TaskMode.STANDBY
    assert (standby.ssps, standby.changelog_partition) == (active.ssps, active.changelog_partition)


def test_standby_constraints() -> None:
    model = JobModel({}, add_standby_containers(GroupByContainerCount(2).group(task_models(4)), 3))
    assert sorted(standby_constraints("0", model)) == ["0-0", "0-1"]
    assert sorted(standby_constraints("0-0", model)) == ["0", "0-1"]
    with pytest.raises(GroupingError, match="no container"):
        standby_constraints("9", model)


# The invariant checker


def _standby(active: str, replica: int = 0, partition: int = 0) -> TaskModel:
    return TaskModel(standby_task_name(active, replica), [], partition, TaskMode.STANDBY)


def test_checker_accepts_a_good_placement() -> None:
    containers = [
        ContainerModel("p1", [TaskModel("t"), _standby("u")], "h1"),
        ContainerModel("p2", [TaskModel("u"), _standby("t")], "h2"),
    ]
    assert check_standby_invariants(containers, replication_factor=2) == []


def test_checker_reports_every_kind_of_violation() -> None:
    containers = [
        ContainerModel("p1", [TaskModel("t"), _standby("u", partition=3)], "h1"),
        ContainerModel("p2", [TaskModel("u"), _standby("t"), _standby("v")], "h1"),
        ContainerModel(
            "p3", [TaskModel("w"), TaskModel("Standby-bad", mode=TaskMode.STANDBY)], "h2"
        ),
        ContainerModel("p4", [TaskModel("w")], "h3"),
    ]
    problems = check_standby_invariants(containers, replication_factor=2)
    text = "\n".join(problems)
    assert "share location 'h1'" in text
    assert "changelog partition 3" in text
    assert "'Standby-v-0' has no active task" in text
    assert "does not follow" in text
    assert "assigned twice" in text
    assert "task 'w' has 0 standby task(s)" in text
    assert check_standby_invariants(containers[:2], check_location=False) == [
        "task 'u': standby 'Standby-u-0' restores changelog partition 3, the active task uses 0",
        "task 'v': standby 'Standby-v-0' has no active task in the model",
    ]
    # Locations given explicitly win over the containers' own.
    assert not any(
        "share location" in p
        for p in check_standby_invariants(containers[:2], {"p1": "a", "p2": "b"})
    )


# Standalone placement and failover: properties


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[TaskModel], dict[str, str], int, bool]:
    processors = draw(st.integers(1, 7))
    locations = draw(st.integers(1, 4))
    locality = {f"p{i}": f"h{draw(st.integers(0, locations - 1))}" for i in range(processors)}
    tasks = [
        TaskModel(f"Partition {i}", changelog_partition=i) for i in range(draw(st.integers(1, 25)))
    ]
    return tasks, locality, draw(st.integers(1, 3)), draw(st.booleans())


def _groups(locality: dict[str, str], check_location: bool) -> int:
    return len(set(locality.values())) if check_location else len(locality)


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_assign_with_standbys_properties(
    cluster: tuple[list[TaskModel], dict[str, str], int, bool],
) -> None:
    tasks, locality, rf, check = cluster
    metadata = GrouperMetadata(processor_locality=locality)
    if _groups(locality, check) < rf:
        with pytest.raises(GroupingError, match="distinct"):
            assign_with_standbys(tasks, metadata, rf, check_location=check)
        return
    containers = assign_with_standbys(tasks, metadata, rf, check_location=check)
    assert (
        check_standby_invariants(containers, locality, replication_factor=rf, check_location=check)
        == []
    )
    assert {c.processor_id for c in containers} == set(locality)
    model = JobModel({}, containers)
    assert sorted(model.active_tasks()) == sorted(t.name for t in tasks)
    assert len(model.standby_tasks()) == len(tasks) * (rf - 1)
    assert balance(containers).spread <= 1


def _min_max_load(
    containers: frozenset[ContainerModel], locality: dict[str, str], rf: int, check: bool
) -> int:
    group = {p: (locality[p] if check else p) for p in locality}
    actives = JobModel({}, containers).task_to_processor(mode=TaskMode.ACTIVE)
    base = dict.fromkeys(locality, 0)
    for pid in actives.values():
        base[pid] += 1
    options = [
        [
            c
            for c in itertools.combinations(sorted(locality), rf - 1)
            if len({group[x] for x in c} | {group[pid]}) == rf
        ]
        for pid in actives.values()
    ]
    best = None
    for choice in itertools.product(*options):
        load = dict(base)
        for combo in choice:
            for pid in combo:
                load[pid] += 1
        best = max(load.values()) if best is None else min(best, max(load.values()))
    assert best is not None
    return best


@settings(max_examples=120, deadline=None)
@given(
    st.integers(2, 4),
    st.integers(1, 4),
    st.integers(2, 3),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_largest_load_is_minimal_for_the_actives(
    processors: int, task_count: int, rf: int, check: bool, rng: random.Random
) -> None:
    locality = {f"p{i}": f"h{rng.randrange(3)}" for i in range(processors)}
    if _groups(locality, check) < rf:
        return
    tasks = task_models(task_count)
    containers = assign_with_standbys(
        tasks, GrouperMetadata(processor_locality=locality), rf, check_location=check
    )
    assert balance(containers, mode=None).max == _min_max_load(containers, locality, rf, check)


@settings(max_examples=150, deadline=None)
@given(clusters(), st.randoms(use_true_random=False))
def test_failover_properties(
    cluster: tuple[list[TaskModel], dict[str, str], int, bool], rng: random.Random
) -> None:
    tasks, locality, rf, check = cluster
    if _groups(locality, check) < rf:
        return
    metadata = GrouperMetadata(processor_locality=locality)
    before = JobModel({}, assign_with_standbys(tasks, metadata, rf, check_location=check))
    dead = (
        set(rng.sample(sorted(locality), rng.randint(1, len(locality))))
        if len(locality) > 1
        else set()
    )
    if len(dead) == len(locality):
        dead.pop()
    after = failover(before, dead, metadata, check_location=check)
    live = {p: loc for p, loc in locality.items() if p not in dead}
    assert set(after.containers) == set(live)
    assert check_standby_invariants(after, live, check_location=check) == []
    assert sorted(after.active_tasks()) == sorted(t.name for t in tasks)
    old = before.task_to_processor(mode=TaskMode.ACTIVE)
    new = after.task_to_processor(mode=TaskMode.ACTIVE)
    for name, pid in old.items():
        if pid not in dead:
            assert new[name] == pid  # survivors' active tasks do not move
            continue
        holders = {
            p
            for p in live
            for t in before.containers[p].standby_tasks()
            if active_task_name(t) == name
        }
        if holders:
            assert new[name] in holders  # promoted where a standby was
    # Replication is restored whenever enough groups are left.
    if _groups(live, check) >= rf:
        assert (
            check_standby_invariants(after, live, replication_factor=rf, check_location=check) == []
        )


def test_failover_promotes_the_standby_and_recreates_one() -> None:
    locality = {"p1": "h1", "p2": "h2", "p3": "h3"}
    metadata = GrouperMetadata(processor_locality=locality)
    before = JobModel({"job.name": "x"}, assign_with_standbys(task_models(6), metadata, 2))
    after = failover(before, ["p1"], metadata)
    assert after.config == before.config
    moved = moved_tasks(before, after)
    assert {m.before for m in moved} == {"p1"}
    for move in moved:
        standby_before = before.processor_of(
            standby_task_name(move.task, 0)
        ) or before.processor_of(standby_task_name(move.task, 1))
        assert move.after == standby_before
    assert check_standby_invariants(after, replication_factor=2) == []
    assert balance(after).spread <= 1


def test_failover_without_enough_locations_places_fewer_standbys() -> None:
    locality = {"p1": "h1", "p2": "h2"}
    metadata = GrouperMetadata(processor_locality=locality)
    before = JobModel({}, assign_with_standbys(task_models(4), metadata, 2))
    after = failover(before, ["p2"], metadata)
    assert list(after.containers) == ["p1"]
    assert len(after.active_tasks()) == 4 and not after.standby_tasks()


def test_failover_rejects_unknown_processors_and_total_loss() -> None:
    metadata = GrouperMetadata(processor_locality={"p1": "h1", "p2": "h2"})
    model = JobModel({}, assign_with_standbys(task_models(2), metadata, 2))
    with pytest.raises(GroupingError, match="unknown processor ids"):
        failover(model, ["p9"], metadata)
    with pytest.raises(GroupingError, match="no live processor"):
        failover(model, ["p1", "p2"], metadata)


def test_standbys_return_to_their_previous_processor() -> None:
    locality = {f"p{i}": f"h{i}" for i in range(4)}
    metadata = GrouperMetadata(processor_locality=locality)
    first = JobModel({}, assign_with_standbys(task_models(8), metadata, 2))
    again = GrouperMetadata(
        processor_locality=locality, previous_task_to_processor=first.task_to_processor()
    )
    assert assign_with_standbys(task_models(8), again, 2) == frozenset(first.containers.values())


def test_assign_with_standbys_rejects_standby_input_and_missing_processors() -> None:
    with pytest.raises(GroupingError, match="active tasks only"):
        assign_with_standbys([_standby("t")], GrouperMetadata(processor_locality={"p": "h"}), 1)
    with pytest.raises(GroupingError, match="processor_locality"):
        assign_with_standbys(task_models(2), GrouperMetadata(), 2)
    with pytest.raises(GroupingError, match="check_location=False"):
        assign_with_standbys(
            task_models(2), GrouperMetadata(processor_locality={"a": "h", "b": "h"}), 2
        )
    same_host = assign_with_standbys(
        task_models(2),
        GrouperMetadata(processor_locality={"a": "h", "b": "h"}),
        2,
        check_location=False,
    )
    assert check_standby_invariants(same_host, check_location=False, replication_factor=2) == []
