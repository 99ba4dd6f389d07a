"""assign_tasks: a grouper's containers always land on live processors."""

from __future__ import annotations

from typing import Any

import pytest

from samza_nb.coordination.job_model_calculator import assign_tasks
from samza_nb.errors import ConfigError, GroupingError
from samza_nb.grouping import GrouperMetadata
from samza_nb.model import TaskModel

TASKS = [TaskModel(f"Partition {p}", changelog_partition=p) for p in range(4)]
SIX = [TaskModel(f"Partition {p}", changelog_partition=p) for p in range(6)]


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
    with pytest.raises(GroupingError, match=r"made containers \['0', '1', '2'\] for the live processors \['0', '1'\].*at most as many containers"):
        assign_tasks(TASKS, {"0": "a", "1": "b"}, GrouperMetadata(), grouper="group-by-container-count",
                     options={"container_count": 3})


def test_the_count_grouper_keeps_tasks_on_their_processors_whatever_their_ids() -> None:
    from samza_nb.grouping.balance import moved_tasks

    def grouped(processors: dict[str, str], previous: Any) -> Any:
        metadata = GrouperMetadata.from_job_model(previous, processors)
        return assign_tasks(SIX, processors, metadata, grouper="group-by-container-count")

    first = grouped({"0": "a", "1": "b", "2": "c"}, None)
    killed = grouped({"1": "b", "2": "c"}, first)
    # Only processor 0's tasks move; the others stay where they were.
    assert {m.before for m in moved_tasks(first, killed)} == {"0"}
    assert grouped({"1": "b", "2": "c"}, killed) == killed  # nothing changed, nothing moves
    joined = grouped({"1": "b", "2": "c", "3": "d"}, killed)
    assert len(moved_tasks(killed, joined)) == 2  # the least a balanced assignment moves
    named = grouped({"p1": "a", "p2": "b"}, None)
    assert grouped({"p1": "a", "p2": "b"}, named) == named


def test_a_processor_replaced_by_a_new_one_in_one_regroup_moves_only_its_tasks() -> None:
    from samza_nb.grouping.balance import moved_tasks

    def grouped(processors: dict[str, str], previous: Any) -> Any:
        metadata = GrouperMetadata.from_job_model(previous, processors)
        return assign_tasks(SIX, processors, metadata, grouper="group-by-container-count")

    first = grouped({"0": "a", "1": "b", "2": "c"}, None)
    replaced = grouped({"0": "a", "2": "c", "3": "d"}, first)  # 1 left as 3 joined
    moves = moved_tasks(first, replaced)
    assert {(m.before, m.after) for m in moves} == {("1", "3")}
    assert sorted(m.task for m in moves) == sorted(first.containers["1"].tasks)
    # Two leaving while one joins: only the departed processors' four tasks move.
    shrunk = grouped({"0": "a", "4": "e"}, first)
    assert sorted(m.task for m in moved_tasks(first, shrunk)) == sorted(
        first.containers["1"].tasks | first.containers["2"].tasks
    )
    # One leaving while two join: the new ones share the departed one's tasks, nothing else moves.
    grown = grouped({"0": "a", "2": "c", "3": "d", "4": "e"}, first)
    assert {(m.before, m.after) for m in moved_tasks(first, grown)} == {("1", "3"), ("1", "4")}


def test_a_grouper_that_cannot_place_standbys_is_refused_not_ignored() -> None:
    with pytest.raises(GroupingError, match=r"grouper 'single-container' cannot place tasks with hot standbys"):
        assign_tasks(SIX, {"0": "a", "1": "b"}, GrouperMetadata(), grouper="single-container", replication_factor=2)
    # Host affinity, and the embedded and standalone defaults standing for it.
    for standing in ("host-affinity", "group-by-container-count", "group-by-container-ids"):
        model = assign_tasks(SIX, {"0": "a", "1": "b"}, GrouperMetadata(), grouper=standing, replication_factor=2)
        assert len(model.standby_tasks()) == 6


def test_a_misspelled_grouper_or_option_fails_with_standbys_too() -> None:
    with pytest.raises(ConfigError, match="unknown task grouper 'host-afinity'; did you mean 'host-affinity'"):
        assign_tasks(SIX, {"0": "a", "1": "b"}, GrouperMetadata(), grouper="host-afinity", replication_factor=2)
    with pytest.raises(ConfigError, match=r"bad options \['bogus'\]"):
        assign_tasks(SIX, {"0": "a", "1": "b"}, GrouperMetadata(), grouper="host-affinity",
                     options={"bogus": 1}, replication_factor=2)


@pytest.mark.parametrize("factor", [0, -3, True, "2", 2.0])
def test_a_replication_factor_that_is_not_a_positive_int_is_refused(factor: Any) -> None:
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator

    with pytest.raises(GroupingError, match=r"replication factor .* must be an integer >= 1, got"):
        assign_tasks(SIX, {"0": "a", "1": "b"}, GrouperMetadata(), grouper="host-affinity", replication_factor=factor)
    with pytest.raises(GroupingError, match=r"must be an integer >= 1"):
        JobModelCalculator(JobInputs(frozenset())).with_replication_factor(factor)


def test_a_distributed_job_starts_with_the_standbys_its_locations_allow_and_gains_the_rest() -> None:
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
    from samza_nb.model import SystemStreamPartition

    inputs = JobInputs(frozenset(SystemStreamPartition("embedded", "in", p) for p in range(4)))
    strict = JobModelCalculator(inputs, replication_factor=2)
    with pytest.raises(GroupingError, match="replication factor 2 needs 2 distinct locations"):
        strict.calculate({"p1": "host-a"}, GrouperMetadata(), None)
    joining = JobModelCalculator(inputs, replication_factor=2, place_fewer_standbys=True)
    alone = joining.calculate({"p1": "host-a"}, GrouperMetadata(), None)
    assert len(alone.active_tasks()) == 4 and not alone.standby_tasks()
    processors = {"p1": "host-a", "p2": "host-b"}
    both = joining.calculate(processors, GrouperMetadata.from_job_model(alone, processors), alone)
    assert len(both.standby_tasks()) == 4
    from samza_nb.grouping.standby import active_task_name

    for standby in both.standby_tasks():  # never beside its active
        assert both.processor_of(standby) != both.processor_of(active_task_name(standby))
    assert joining.with_grouper("host-affinity", None).place_fewer_standbys
    assert joining.with_replication_factor(3).place_fewer_standbys


def test_a_processor_lost_while_another_joins_has_its_tasks_promoted_onto_their_standbys() -> None:
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
    from samza_nb.grouping.standby import active_task_name
    from samza_nb.model import SystemStreamPartition

    inputs = JobInputs(frozenset(SystemStreamPartition("embedded", "in", p) for p in range(4)))
    calculator = JobModelCalculator(inputs, grouper="host-affinity", replication_factor=2)
    first_processors = {"0": "host-a", "1": "host-b", "2": "host-c"}
    first = calculator.calculate(first_processors, GrouperMetadata(processor_locality=first_processors), None)
    holder = {active_task_name(standby): first.processor_of(standby) for standby in first.standby_tasks()}
    replaced = {"1": "host-b", "2": "host-c", "3": "host-d"}  # 0 died as 3 joined
    after = calculator.calculate(replaced, GrouperMetadata.from_job_model(first, replaced), first)
    for task in first.tasks_of("0"):
        if task in first.active_tasks():
            assert after.processor_of(task) == holder[task]  # promoted: its store is warm there
    for task in first.active_tasks():
        if first.processor_of(task) != "0":
            assert after.processor_of(task) == first.processor_of(task)  # nothing else moves
    assert len(after.standby_tasks()) == 4 and after.tasks_of("3")  # the new one holds standbys


def test_a_scale_out_while_a_processor_is_lost_is_a_fresh_balanced_placement() -> None:
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
    from samza_nb.model import SystemStreamPartition

    inputs = JobInputs(frozenset(SystemStreamPartition("embedded", "in", p) for p in range(6)))
    calculator = JobModelCalculator(inputs, grouper="host-affinity", replication_factor=2)
    two = {"0": "host-a", "1": "host-b"}
    first = calculator.calculate(two, GrouperMetadata(processor_locality=two), None)
    grown = {"1": "host-b", "2": "host-c", "3": "host-d", "4": "host-a"}  # 0 lost, three joined
    after = calculator.calculate(grown, GrouperMetadata.from_job_model(first, grown), first)
    assert all(after.tasks_of(pid) & set(after.active_tasks()) for pid in grown)  # each runs tasks


def test_a_failover_places_the_jobs_replication_factor_not_the_models() -> None:
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
    from samza_nb.model import SystemStreamPartition

    inputs = JobInputs(frozenset(SystemStreamPartition("embedded", "in", p) for p in range(4)))
    calculator = JobModelCalculator(inputs, replication_factor=3, place_fewer_standbys=True)
    two_places = {"0": "host-a", "1": "host-b", "2": "host-b"}
    short = calculator.calculate(two_places, GrouperMetadata(processor_locality=two_places), None)
    assert len(short.standby_tasks()) == 4  # one copy per task: two locations
    three_places = {"0": "host-a", "1": "host-b", "3": "host-c"}  # 2 lost as 3 joins: a failover
    after = calculator.calculate(three_places, GrouperMetadata.from_job_model(short, three_places), short)
    assert len(after.standby_tasks()) == 8  # two copies per task, as the job asks


def _six_task_calculator(replication_factor: int, **options: Any) -> Any:
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
    from samza_nb.model import SystemStreamPartition

    inputs = JobInputs(frozenset(SystemStreamPartition("embedded", "in", p) for p in range(6)), has_durable_stores=True)
    return JobModelCalculator(inputs, replication_factor=replication_factor, **options)


def test_a_processor_lost_while_more_join_still_starts_its_tasks_on_their_standbys() -> None:
    """The hot-standby SEP (standalone): the failed processor's tasks go to the processors
    holding their backups, also when the same regroup adds more processors than it lost."""
    from samza_nb.grouping.standby import active_task_name, check_standby_invariants

    calculator = _six_task_calculator(2)
    three = {"p1": "A", "p2": "B", "p3": "C"}
    first = calculator.calculate(three, GrouperMetadata(processor_locality=three), None)
    holder = {active_task_name(standby): first.processor_of(standby) for standby in first.standby_tasks()}
    lost = sorted(set(first.tasks_of("p1")) & set(first.active_tasks()))
    grown = {"p2": "B", "p3": "C", "p4": "D", "p5": "E"}  # p1 lost as two joined
    after = calculator.calculate(grown, GrouperMetadata.from_job_model(first, grown), first)
    assert [after.processor_of(task) for task in lost] == [holder[task] for task in lost]
    assert check_standby_invariants(after, replication_factor=2) == []
    actives = {pid: len(after.tasks_of(pid) & set(after.active_tasks())) for pid in grown}
    assert max(actives.values()) - min(actives.values()) <= 1  # and balanced over all four


def test_a_failover_refuses_a_bad_grouper_as_any_regroup_does() -> None:
    calculator = _six_task_calculator(2)
    three = {"p1": "A", "p2": "B", "p3": "C"}
    first = calculator.calculate(three, GrouperMetadata(processor_locality=three), None)
    two = {"p2": "B", "p3": "C"}  # p1 lost: a failover
    metadata = GrouperMetadata.from_job_model(first, two)
    with pytest.raises(ConfigError, match="unknown task grouper 'group-by-contaner-count'"):
        calculator.with_grouper("group-by-contaner-count", None).calculate(two, metadata, first)
    with pytest.raises(GroupingError, match="'single-container' cannot place tasks with hot standbys"):
        calculator.with_grouper("single-container", None).calculate(two, metadata, first)
    with pytest.raises(GroupingError, match="must have at least one container, got container count -5"):
        calculator.with_grouper("group-by-container-count", {"container_count": -5}).calculate(two, metadata, first)


def test_a_failover_that_lowers_the_replication_factor_drops_the_copies_past_it() -> None:
    from samza_nb.grouping.standby import check_standby_invariants

    calculator = _six_task_calculator(3)
    four = {"p1": "A", "p2": "B", "p3": "C", "p4": "D"}
    first = calculator.calculate(four, GrouperMetadata(processor_locality=four), None)
    assert len(first.standby_tasks()) == 12
    three = {"p1": "A", "p2": "B", "p3": "C"}  # p4 lost, factor 3 -> 2 in the same regroup
    after = calculator.with_replication_factor(2).calculate(three, GrouperMetadata.from_job_model(first, three), first)
    assert len(after.standby_tasks()) == 6
    assert check_standby_invariants(after, replication_factor=2) == []


def test_a_new_run_id_does_not_fail_over_from_the_previous_runs_placement() -> None:
    calculator = _six_task_calculator(2)
    three = {"0": "host-z", "1": "host-y", "2": "host-x"}
    first = calculator.calculate(three, GrouperMetadata(processor_locality=three), None)
    two = {"0": "host-z", "1": "host-y"}
    fresh = calculator.calculate(two, GrouperMetadata(processor_locality=two), None)
    failed_over = calculator.calculate(two, GrouperMetadata.from_job_model(first, two), first)
    new_run = calculator.calculate(two, GrouperMetadata(processor_locality=two), first, same_run=False)
    assert failed_over != fresh  # within a run, processor 2's tasks move onto their standbys
    assert new_run == fresh  # a new run keeps checkpoints (changelog partitions), not locality


def test_standbys_return_to_their_processor_when_one_joins() -> None:
    from samza_nb.model import TaskMode

    calculator = _six_task_calculator(2)
    before = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    first = calculator.calculate(before, GrouperMetadata(processor_locality=before), None)
    metadata = GrouperMetadata.from_job_model(first, {**before, "d1": "D"})
    assert dict(metadata.previous_standby_to_processor) == first.task_to_processor(mode=TaskMode.STANDBY)
    grown = calculator.calculate({**before, "d1": "D"}, metadata, first)
    stayed = [s for s in first.standby_tasks() if grown.processor_of(s) == first.processor_of(s)]
    moved_within_location = [
        s for s in first.standby_tasks()
        if grown.processor_of(s) != first.processor_of(s) and grown.processor_of(s) in before
        and before[grown.processor_of(s)] == before[first.processor_of(s)]
    ]
    assert stayed and not moved_within_location


def test_all_ssp_to_single_task_with_several_processors_is_refused() -> None:
    """Each processor's task would read every partition: samza_nb's readers do not split
    partitions between consumers, so every message would be processed once per processor."""
    from samza_nb.config import Config
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
    from samza_nb.model import SystemStreamPartition

    config = Config({"job.systemstreampartition.grouper.factory": "all-ssp-to-single-task"})
    inputs = JobInputs(frozenset(SystemStreamPartition("embedded", "in", p) for p in range(4)), config=config)
    calculator = JobModelCalculator(inputs)
    alone = calculator.calculate({"0": "a"}, GrouperMetadata(), None)
    assert list(alone.active_tasks()) == ["Task-0"]
    with pytest.raises(GroupingError, match="all-ssp-to-single-task with 2 processors .* run it with one processor"):
        calculator.calculate({"0": "a", "1": "b"}, GrouperMetadata(), None)


def test_a_redeploy_under_new_processor_ids_places_tasks_by_location_not_by_a_failover() -> None:
    """ZooKeeper and Azure processes get new ids (host-pid) on a redeploy: no previous
    processor survives, so there is no standby to promote onto; tasks go back to the
    locations of their stores, as a fresh placement with the stored locality puts them."""
    from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
    from samza_nb.model import SystemStreamPartition

    inputs = JobInputs(frozenset(SystemStreamPartition("embedded", "in", p) for p in range(8)), has_durable_stores=True)
    calculator = JobModelCalculator(inputs, replication_factor=2, place_fewer_standbys=True)
    old = {"h1-100": "h1", "h2-100": "h2", "h3-100": "h3"}
    first = calculator.calculate(old, GrouperMetadata(processor_locality=old), None)
    locality = {task: old[pid] for task, pid in first.task_to_processor().items()}
    new = {"h1-200": "h1", "h2-200": "h2", "h3-200": "h3", "h4-200": "h4"}
    metadata = GrouperMetadata.from_job_model(first, new, locality)
    assert calculator.calculate(new, metadata, first) == calculator.calculate(new, metadata, first, same_run=False)
