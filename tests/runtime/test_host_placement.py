"""Which cluster host runs each task's epochs: kept while the host lives, moved only as far as
the load needs, back to a host where the task's stores are only behind first."""

from __future__ import annotations

from collections import Counter

from samza_nb.runtime.executors.host_placement import HostPlacement
from samza_nb.runtime.executors.masters import on_this_machine

TASKS = ["t0", "t1", "t2", "t3"]


def test_new_tasks_spread_over_the_hosts_and_stay() -> None:
    placement = HostPlacement()
    first = placement.place(TASKS, ["a", "b", "c"])
    assert sorted(Counter(first.values()).values()) == [1, 1, 2]
    assert placement.place(TASKS, ["c", "a", "b"]) == first  # same hosts: nothing moves


def test_only_a_dead_hosts_tasks_move() -> None:
    placement = HostPlacement()
    first = placement.place(TASKS, ["a", "b", "c"])
    orphans = {task for task, host in first.items() if host == "c"}
    second = placement.place(TASKS, ["a", "b"])
    assert {task for task in TASKS if second[task] != first[task]} == orphans
    assert sorted(Counter(second.values()).values()) == [2, 2]


def test_a_host_that_comes_back_gets_a_task_whose_store_it_holds() -> None:
    placement = HostPlacement()
    first = placement.place(TASKS, ["a", "b", "c"])
    on_c = {task for task, host in first.items() if host == "c"}
    placement.place(TASKS, ["a", "b"])
    third = placement.place(TASKS, ["a", "b", "c"])
    back = {task for task, host in third.items() if host == "c"}
    assert back and back <= on_c  # no task that never ran on c goes there
    assert sorted(Counter(third.values()).values()) == [1, 1, 2]


def test_a_late_host_evens_out_the_load_with_as_few_moves_as_needed() -> None:
    placement = HostPlacement()
    first = placement.place(TASKS, ["a"])  # only one executor had registered
    assert set(first.values()) == {"a"}
    second = placement.place(TASKS, ["a", "b"])
    assert sum(first[task] != second[task] for task in TASKS) == 2


def test_where_spark_ran_a_task_becomes_its_host() -> None:
    placement = HostPlacement()
    placement.place(TASKS, ["a", "b"])
    placement.noted({"t0": "b", "t1": "gone"}, ["a", "b"])
    hosts = placement.tasks_by_host()
    assert hosts["t0"] == "b" and hosts["t1"] != "gone"  # a host that left is not noted


def test_masters_on_this_machine() -> None:
    assert on_this_machine("local[*]") and on_this_machine("local-cluster[2, 1, 1024]")
    assert on_this_machine("spark://127.0.0.1:7077") and on_this_machine("spark://localhost:7077")
    assert not on_this_machine("spark://10.213.0.1:7077")
    assert not on_this_machine("spark://127.0.0.1:7077,10.0.0.2:7077")
    assert not on_this_machine("spark://master.example:7077") and not on_this_machine("yarn")


def test_an_epoch_without_some_tasks_moves_nobody() -> None:
    placement = HostPlacement()
    first = placement.place(TASKS, ["a", "b", "c"])
    crowded = next(host for host in "abc" if list(first.values()).count(host) == 2)
    idle = next(task for task in TASKS if first[task] != crowded)  # nothing to do this epoch
    busy = [task for task in TASKS if task != idle]
    assert placement.place(busy, ["a", "b", "c"]) == {task: first[task] for task in busy}


def test_a_task_taken_over_from_another_processor_goes_where_its_store_was_reported() -> None:
    # This process ran t0 and t1; t2 and t3 come from a processor that died. Their stores were
    # reported at c and b; without the reports they would go to the least loaded hosts.
    placement = HostPlacement()
    placement.place(["t0", "t1"], ["a", "b", "c"])
    placement.held({"a": {"t0": 1}, "b": {"t1": 1, "t3": 4}, "c": {"t2": 2, "t3": 1}})
    placed = placement.place(TASKS, ["a", "b", "c"])
    assert placed["t2"] == "c" and placed["t3"] == "b"  # b holds t3's newest copy


def test_a_task_another_processor_ran_since_goes_to_its_newest_copy() -> None:
    placement = HostPlacement()
    first = placement.place(["t0", "t1"], ["a", "b", "c"])
    elsewhere = next(host for host in "abc" if host not in first.values())
    placement.held({first["t0"]: {"t0": 1}, elsewhere: {"t0": 7}}, {}, arrived=["t0"])
    assert placement.place(["t0", "t1"], ["a", "b", "c"])["t0"] == elsewhere
    # What this process ran last and nobody ran since stays where it is.
    placement.held({first["t1"]: {"t1": 1}})
    assert placement.place(["t0", "t1"], ["a", "b", "c"])["t1"] == first["t1"]


def test_a_task_never_runs_on_its_standbys_host_while_another_host_is_live() -> None:
    placement = HostPlacement()
    first = placement.place(TASKS, ["a", "b", "c"])
    # Standbys of t0 now sit on its host and on another one: t0 moves to the third host.
    others = [host for host in "abc" if host != first["t0"]]
    placement.held({}, standbys={"t0": {first["t0"], others[0]}, "t1": set("abc")})
    second = placement.place(TASKS, ["a", "b", "c"])
    assert second["t0"] == others[1]
    assert second["t1"] == first["t1"]  # standbys on every host: it stays where it is
    # No evening out of the load puts a task on its standby's host either.
    for _ in range(3):
        assert placement.place(TASKS, ["a", "b", "c"])["t0"] == others[1]
    # Only one live host: the task runs there, next to its standby.
    assert placement.place(TASKS, [first["t0"]])["t0"] == first["t0"]


def test_a_promoted_standbys_host_runs_the_task_next() -> None:
    # p1 ran t0 on a with a standby of t0 on b (its processor's host); host a died and the
    # standby was promoted onto this processor: t0 goes to b, where the standby's copy is.
    placement = HostPlacement()
    placement.place(["t1"], ["c"])
    placement.held({"a": {"t0": 5}}, {"b": {"t0": 3}}, arrived=["t0"])
    assert placement.place(["t0", "t1"], ["b", "c"])["t0"] == "b"
    # While a lives, t0's active copy there is newer than any standby's.
    placement = HostPlacement()
    placement.place(["t1"], ["c"])
    placement.held({"a": {"t0": 5}}, {"b": {"t0": 9}}, arrived=["t0"])
    assert placement.place(["t0", "t1"], ["a", "b", "c"])["t0"] == "a"


def test_standby_locations_name_the_hosts_of_each_tasks_standbys() -> None:
    from samza_nb.grouping import GrouperMetadata, assign_with_standbys
    from samza_nb.model import JobModel, TaskModel
    from samza_nb.runtime.processor.standby import standby_locations

    locality = {"p1": "10.0.0.1", "p2": "10.0.0.2", "p3": "10.0.0.3"}
    model = JobModel({}, assign_with_standbys([TaskModel(t) for t in TASKS], GrouperMetadata(processor_locality=locality), 2))
    where = standby_locations(model)
    active = model.task_to_processor()
    assert set(where) == set(TASKS)
    for task in TASKS:  # one standby each, never at its active's host (SEP standby constraint)
        assert len(where[task]) == 1 and locality[active[task]] not in where[task]


def test_a_task_this_process_kept_running_stays_whatever_other_copies_say() -> None:
    # A dead processor's standby of t0 reported a copy on c at a later epoch than t0's stint on
    # its host began: t0 did not arrive from elsewhere, so its copy where it runs is the newest.
    placement = HostPlacement()
    first = placement.place(["t0", "t1"], ["a", "b", "c"])
    other = next(host for host in "abc" if host not in first.values())
    placement.held({first["t0"]: {"t0": 1}}, {other: {"t0": 9}}, arrived=["t2"])
    assert placement.place(["t0", "t1", "t2"], ["a", "b", "c"])["t0"] == first["t0"]


def test_tasks_given_to_another_processor_stop_counting_on_their_hosts() -> None:
    placement = HostPlacement()
    first = placement.place(["t0", "t1", "t2", "t3", "t4", "t5"], ["a", "b", "c"])
    # The grouper gave the other processor every task but these three, on hosts a and b.
    kept = [task for task in sorted(first) if first[task] != "c"][:3]
    placement.held({}, arrived=[], mine=kept)
    second = placement.place(kept, ["a", "b", "c"])
    assert sorted(Counter(second.values()).values()) == [1, 1, 1]  # c is idle no longer
    assert sum(second[task] != first[task] for task in kept) == 1
