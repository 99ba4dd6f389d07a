"""HostAffinityGrouper: SEP order, balance, minimal movement (checked against brute force)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samza_nb.errors import GroupingError
from samza_nb.grouping import GrouperMetadata, HostAffinityGrouper, min_moves, store_locations
from samza_nb.model import TaskModel

from ._support import assignment, by_id, task_models


def _tasks(names: list[str]) -> list[TaskModel]:
    return [TaskModel(name, changelog_partition=i) for i, name in enumerate(names)]


def _cost(result: dict[str, str], metadata: GrouperMetadata) -> tuple[int, int]:
    """(tasks off their previous live processor, moved tasks placed where none of their
    stores is)."""
    live = metadata.processor_locality
    stores = metadata.stores_by_task()
    moved = off_location = 0
    for name, pid in result.items():
        previous = metadata.previous_task_to_processor.get(name)
        if previous == pid and previous in live:
            continue
        moved += 1
        places = store_locations(
            name, live, metadata.task_locality, metadata.previous_task_to_processor, stores.get(name)
        )
        if live[pid] not in places:
            off_location += 1
    return moved, off_location


def _brute_force(names: list[str], metadata: GrouperMetadata) -> tuple[int, int]:
    processors = sorted(metadata.processor_locality)
    best: tuple[int, int] | None = None
    for combo in itertools.product(range(len(processors)), repeat=len(names)):
        counts = [combo.count(i) for i in range(len(processors))]
        if max(counts) - min(counts) > 1:
            continue
        cost = _cost({n: processors[c] for n, c in zip(names, combo, strict=True)}, metadata)
        if best is None or cost < best:
            best = cost
    assert best is not None
    return best


@st.composite
def scenarios(
    draw: st.DrawFn, max_tasks: int = 6, max_processors: int = 3
) -> tuple[list[str], GrouperMetadata]:
    task_count = draw(st.integers(1, max_tasks))
    processor_count = draw(st.integers(1, max_processors))
    locations = [f"host-{i}" for i in range(draw(st.integers(1, 3)))]
    processors = [f"p{i}" for i in range(processor_count)]
    gone = ["dead-1", "dead-2"]
    names = [f"Partition {i}" for i in range(task_count)]
    processor_locality = {p: draw(st.sampled_from(locations)) for p in processors}
    previous = {
        n: p
        for n in names
        if (p := draw(st.one_of(st.none(), st.sampled_from(processors + gone)))) is not None
    }
    task_locality = {
        n: loc
        for n in names
        if (loc := draw(st.one_of(st.none(), st.sampled_from([*locations, "host-gone"]))))
        is not None
    }
    store_locality: dict[str, dict[str, int]] = {}
    if draw(st.booleans()):  # where the processors reported the tasks' stores (some, maybe)
        for n in names:
            for loc in draw(st.lists(st.sampled_from([*locations, "host-gone"]), max_size=2, unique=True)):
                store_locality.setdefault(loc, {})[n] = draw(st.integers(0, 3))
    return names, GrouperMetadata(
        processor_locality=processor_locality,
        task_locality=task_locality,
        previous_task_to_processor=previous,
        store_locality=store_locality,
    )


@settings(max_examples=250, deadline=None)
@given(scenarios())
def test_optimal_against_brute_force(scenario: tuple[list[str], GrouperMetadata]) -> None:
    names, metadata = scenario
    result = assignment(HostAffinityGrouper().group(_tasks(names), metadata))
    assert _cost(result, metadata) == _brute_force(names, metadata)


@settings(max_examples=150, deadline=None)
@given(scenarios(max_tasks=30, max_processors=8))
def test_balanced_complete_and_minimal(scenario: tuple[list[str], GrouperMetadata]) -> None:
    names, metadata = scenario
    containers = HostAffinityGrouper().group(_tasks(names), metadata)
    assert {c.processor_id for c in containers} == set(metadata.processor_locality)
    sizes = [len(c) for c in containers]
    assert max(sizes) - min(sizes) <= 1
    placed = [name for c in containers for name in c.tasks]
    assert sorted(placed) == sorted(names)
    result = assignment(containers)
    moved = sum(
        1
        for name, previous in metadata.previous_task_to_processor.items()
        if result[name] != previous
    )
    assert moved == min_moves(
        metadata.previous_task_to_processor, metadata.processor_locality, names
    )
    for container in containers:
        assert container.location_id == metadata.processor_locality[container.processor_id]


@settings(max_examples=100, deadline=None)
@given(scenarios(max_tasks=20, max_processors=6), st.randoms(use_true_random=False))
def test_deterministic_whatever_the_input_order(
    scenario: tuple[list[str], GrouperMetadata], rng: random.Random
) -> None:
    names, metadata = scenario
    expected = HostAffinityGrouper().group(_tasks(names), metadata)

    def shuffled(mapping: dict) -> dict:
        items = list(mapping.items())
        rng.shuffle(items)
        return dict(items)

    tasks = _tasks(names)
    rng.shuffle(tasks)
    permuted = GrouperMetadata(
        processor_locality=shuffled(dict(metadata.processor_locality)),
        task_locality=shuffled(dict(metadata.task_locality)),
        previous_task_to_processor=shuffled(dict(metadata.previous_task_to_processor)),
        store_locality=shuffled({loc: shuffled(dict(t)) for loc, t in metadata.store_locality.items()}),
    )
    assert HostAffinityGrouper().group(tasks, permuted) == expected


def test_sep_example_dead_processor_tasks_stay_on_the_same_host() -> None:
    # P1, P2 on H1 and P3, P4 on H3 (SEP goal 3); P1 dies.
    processors = {"P1": "H1", "P2": "H1", "P3": "H3", "P4": "H3"}
    tasks = task_models(8)
    first = HostAffinityGrouper().group(tasks, GrouperMetadata(processor_locality=processors))
    before = assignment(first)
    survivors = {p: h for p, h in processors.items() if p != "P1"}
    metadata = GrouperMetadata(
        processor_locality=survivors,
        previous_task_to_processor=before,
        task_locality={name: processors[pid] for name, pid in before.items()},
    )
    after = assignment(HostAffinityGrouper().group(tasks, metadata))
    moved = {name for name in before if before[name] != after[name]}
    assert moved == {name for name, pid in before.items() if pid == "P1"}
    # 8 tasks over 3 processors: P2 can take one more (3), the other lands at H3.
    assert sorted(after[name] for name in moved)[0] == "P2"
    assert sorted(len(c) for c in HostAffinityGrouper().group(tasks, metadata)) == [2, 3, 3]


def test_previous_processor_beats_same_location() -> None:
    metadata = GrouperMetadata(
        processor_locality={"a": "h1", "b": "h1"},
        previous_task_to_processor={"Partition 0": "b", "Partition 1": "a"},
        task_locality={"Partition 0": "h1", "Partition 1": "h1"},
    )
    assert by_id(HostAffinityGrouper().group(task_models(2), metadata)) == {
        "a": {"Partition 1"},
        "b": {"Partition 0"},
    }


def test_orphaned_task_goes_to_its_previous_location() -> None:
    metadata = GrouperMetadata(
        processor_locality={"a": "h1", "b": "h2", "c": "h3"},
        previous_task_to_processor={"Partition 0": "gone"},
        task_locality={"Partition 0": "h3"},
    )
    containers = by_id(HostAffinityGrouper().group(task_models(1), metadata))
    assert containers == {"a": set(), "b": set(), "c": {"Partition 0"}}


def test_added_processor_takes_only_the_surplus() -> None:
    tasks = task_models(12)
    three = {"a": "h1", "b": "h2", "c": "h3"}
    before = assignment(
        HostAffinityGrouper().group(tasks, GrouperMetadata(processor_locality=three))
    )
    four = three | {"d": "h4"}
    metadata = GrouperMetadata(processor_locality=four, previous_task_to_processor=before)
    after = assignment(HostAffinityGrouper().group(tasks, metadata))
    moved = [name for name in before if before[name] != after[name]]
    assert len(moved) == 3 and {after[name] for name in moved} == {"d"}


def test_bonus_slots_go_where_released_tasks_can_stay_local() -> None:
    # 7 tasks, 3 processors: q = 2, r = 1. "x" at h1 held 3 tasks and dies; "a" (h1) and
    # "b" (h2) held 2 each, "c" is new at h2. Best: a takes the bonus and one h1 task, the
    # two others go where there is room, so only x's tasks move.
    metadata = GrouperMetadata(
        processor_locality={"a": "h1", "b": "h2", "c": "h2"},
        previous_task_to_processor={f"Partition {i}": p for i, p in enumerate("xxxaabb")},
        task_locality={f"Partition {i}": "h1" for i in range(5)},
    )
    containers = by_id(HostAffinityGrouper().group(task_models(7), metadata))
    assert len(containers["a"]) == 3 and {"Partition 3", "Partition 4"} <= containers["a"]
    assert {"Partition 5", "Partition 6"} == containers["b"]


def test_more_processors_than_tasks() -> None:
    metadata = GrouperMetadata(
        processor_locality={f"p{i}": "h" for i in range(5)},
        previous_task_to_processor={"Partition 0": "p3", "Partition 1": "p4"},
    )
    containers = by_id(HostAffinityGrouper().group(task_models(2), metadata))
    assert containers["p3"] == {"Partition 0"} and containers["p4"] == {"Partition 1"}
    assert sum(len(v) for v in containers.values()) == 2


def test_needs_processor_locality_and_tasks() -> None:
    with pytest.raises(GroupingError, match="processor_locality"):
        HostAffinityGrouper().group(task_models(2))
    with pytest.raises(GroupingError, match="processor_locality"):
        HostAffinityGrouper().group(task_models(2), GrouperMetadata())
    with pytest.raises(GroupingError, match="no tasks"):
        HostAffinityGrouper().group([], GrouperMetadata(processor_locality={"a": "h"}))


def test_one_dead_processor_in_a_larger_cluster_moves_only_its_tasks() -> None:
    processors = {f"processor-{i:02d}": f"host-{i % 5}" for i in range(20)}
    tasks = task_models(200)
    before = assignment(
        HostAffinityGrouper().group(tasks, GrouperMetadata(processor_locality=processors))
    )
    dead = "processor-07"
    metadata = GrouperMetadata(
        processor_locality={p: h for p, h in processors.items() if p != dead},
        previous_task_to_processor=before,
        task_locality={name: processors[pid] for name, pid in before.items()},
    )
    after = assignment(HostAffinityGrouper().group(tasks, metadata))
    moved = {name for name in before if before[name] != after[name]}
    assert moved == {name for name, pid in before.items() if pid == dead}
    # 200 tasks on 19 processors: 10 bonus slots; the dead host has 3 other processors.
    same_host = [n for n in moved if processors[after[n]] == processors[dead]]
    assert len(same_host) == 3


def test_a_processor_back_at_a_location_gets_the_tasks_whose_stores_are_there() -> None:
    # Issue #38: "0" at host-a dies and its tasks go to host-b and host-c, where they never
    # ran (the coordinator's task locality says host-b / host-c); a new processor joins at
    # host-a. It gets the tasks whose stores are at host-a, and only the surplus moves.
    store_locality = {
        "host-a": {"Partition 0": 4, "Partition 1": 4},
        "host-b": {"Partition 2": 4, "Partition 3": 4},
        "host-c": {"Partition 4": 4, "Partition 5": 4},
    }
    previous = {"Partition 0": "1", "Partition 2": "1", "Partition 3": "1",
                "Partition 1": "2", "Partition 4": "2", "Partition 5": "2"}
    metadata = GrouperMetadata(
        processor_locality={"1": "host-b", "2": "host-c", "3": "host-a"},
        previous_task_to_processor=previous,
        task_locality={name: {"1": "host-b", "2": "host-c"}[pid] for name, pid in previous.items()},
        store_locality=store_locality,
    )
    containers = by_id(HostAffinityGrouper().group(task_models(6), metadata))
    assert containers == {
        "1": {"Partition 2", "Partition 3"},
        "2": {"Partition 4", "Partition 5"},
        "3": {"Partition 0", "Partition 1"},
    }
    # Without the stores' report the grouper only knows the assignment: other tasks move.
    blind = GrouperMetadata(
        processor_locality=metadata.processor_locality,
        previous_task_to_processor=previous,
        task_locality=metadata.task_locality,
    )
    assert by_id(HostAffinityGrouper().group(task_models(6), blind))["3"] != {"Partition 0", "Partition 1"}


def test_an_orphan_goes_where_its_stores_are_not_where_it_was_last_assigned() -> None:
    # Assigned to a processor at h2 that died before running it: its stores are at h1 only.
    metadata = GrouperMetadata(
        processor_locality={"a": "h1", "b": "h2"},
        previous_task_to_processor={"Partition 0": "gone", "Partition 1": "b"},
        task_locality={"Partition 0": "h2", "Partition 1": "h2"},
        store_locality={"h1": {"Partition 0": 7}, "h2": {"Partition 1": 7}},
    )
    assert by_id(HostAffinityGrouper().group(task_models(2), metadata)) == {
        "a": {"Partition 0"},
        "b": {"Partition 1"},
    }


def test_a_moved_task_prefers_its_last_location_to_an_older_copy() -> None:
    # Partition 0 ran at h1 (epoch 2), then at h2 (epoch 9), whose processor died; h1 and h2
    # each have a free processor: the newest store wins.
    metadata = GrouperMetadata(
        processor_locality={"a": "h1", "b": "h2"},
        previous_task_to_processor={"Partition 0": "gone"},
        store_locality={"h1": {"Partition 0": 2}, "h2": {"Partition 0": 9}},
    )
    assert by_id(HostAffinityGrouper().group(task_models(1), metadata))["b"] == {"Partition 0"}
    older = metadata.with_store_locality({"h1": {"Partition 0": 9}, "h2": {"Partition 0": 2}})
    assert by_id(HostAffinityGrouper().group(task_models(1), older))["a"] == {"Partition 0"}


def test_store_locality_must_hold_epochs() -> None:
    with pytest.raises(GroupingError, match=r"store_locality\['h1'\]\['Partition 0'\] must be the task's epoch"):
        GrouperMetadata(store_locality={"h1": {"Partition 0": "7"}})
    with pytest.raises(GroupingError, match=r"store_locality\['h1'\] must be a mapping"):
        GrouperMetadata(store_locality={"h1": ["Partition 0"]})  # type: ignore[dict-item]
