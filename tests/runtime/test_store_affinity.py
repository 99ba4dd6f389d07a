"""Host affinity follows the stores (issue #38): a processor killed at host-a and a new one
added there gets back the tasks whose stores are at host-a, so none of them restores its store
from the changelog's start; the processors report where they hold stores, per run id."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.coordination import StoreLocality
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import metadata_store_path, run
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.model import TaskMode
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import (
    AZURE_PROCESS_TIMINGS,
    StepClock,
    delete_azure_job,
    run_local,
    unique_name,
)

CONFIG = {"task.max.epoch.messages": "200", "processor.locations": "host-a,host-b,host-c"}


@pytest.fixture
def system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmbeddedSystem:
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path / "home"))
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _wait(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.05)


def _read(job: Any) -> int:
    return sum(
        offset
        for task in job.job_model.active_tasks()
        for key, offset in job.checkpoints.read_committed(task).offsets.items()
        if key.startswith("page-views#")
    )


def _last_at(reports: dict[str, dict[str, int]], location: str) -> set[str]:
    """The tasks whose report of the highest epoch names ``location``."""
    newest: dict[str, tuple[int, str]] = {}
    for at, tasks in reports.items():
        for task, epoch in tasks.items():
            if task not in newest or epoch > newest[task][0]:
                newest[task] = (epoch, at)
    return {task for task, (_epoch, at) in newest.items() if at == location}


def _tasks(model: Any) -> dict[str, set[str]]:
    return {pid: set(c.tasks) for pid, c in model.containers.items()}


@pytest.mark.parametrize("executor", ["local", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_processor_added_back_at_a_location_gets_the_tasks_whose_stores_are_there(
    system: EmbeddedSystem, executor: str, request: pytest.FixtureRequest
) -> None:
    events = generate_page_views(3_000, seed=5)
    write_page_views(system, events[:2_000], partitions=6, end=False)
    if executor == "spark":
        request.getfixturevalue("spark")  # the shared session: task epochs run on Spark
    job = run(build_app(system, name="store-affinity", partitions=6), CONFIG, processors=3,
              grouper="host-affinity", until="end-of-stream", background=True, clock=StepClock(),
              executor=executor)
    try:
        _wait(lambda: _read(job) == 2_000, "the first 2000 events read")
        first = _tasks(job.job_model)
        at_a = first["0"]
        assert job.job_model.containers["0"].location_id == "host-a"
        _wait(
            lambda: _last_at(StoreLocality(job.metadata).read(job.run_id), "host-a") == at_a,
            "processor 0 reporting its tasks' stores at host-a",
        )

        job.kill_processor("0")
        # Its tasks run at host-b and host-c now: each rebuilds its store there (the kill's
        # unavoidable cost) and the processors there report holding it.
        _wait(lambda: all(job.metrics()["tasks"][t]["full_restores"] == 1 for t in at_a), "the moved tasks restored")
        _wait(
            lambda: {t for loc in ("host-b", "host-c") for t in StoreLocality(job.metadata).read(job.run_id)[loc]}
            >= at_a,
            "the moved tasks' stores reported at host-b and host-c",
        )
        before_add = {t: dict(m) for t, m in job.metrics()["tasks"].items()}

        added = job.add_processor("host-a")
        assert added.containers["3"].location_id == "host-a"
        # The tasks whose stores are at host-a come back; only the surplus of 1 and 2 moves.
        assert _tasks(added)["3"] == at_a
        assert _tasks(added)["1"] == first["1"] and _tasks(added)["2"] == first["2"]

        system.write("page-views", events[2_000:])
        system.end_stream("page-views")
        status = job.wait(timeout=180)
    finally:
        job.stop()
    assert status.state == "finished"
    totals = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)
    after = job.metrics()["tasks"]
    # Back at host-a, each returning task only caught its store up with the tail its stint at
    # host-b or host-c wrote: no task restored from the changelog's start after the add.
    assert {t: after[t]["full_restores"] - before_add[t]["full_restores"] for t in after} == dict.fromkeys(after, 0)
    # The tail is every record written since host-a's last commit (host-b or host-c may have
    # processed some of the new events before handing the task back), so it is bounded by the
    # changelog's length, which a full restore would have read, not by the earlier full restore.
    (store,) = job.plan.store_names
    changelog = system.newest_offsets(job.plan.changelog_stream_id(store))
    for task in at_a:
        tail = after[task]["restored_records"] - before_add[task]["restored_records"]
        partition = int(task.removeprefix("Partition "))
        assert tail < changelog[partition], (task, tail, changelog[partition])


def test_store_reports_hold_within_a_run_id(system: EmbeddedSystem) -> None:
    events = generate_page_views(600, seed=9)
    write_page_views(system, events, partitions=4)
    app = build_app(system, name="store-reports", partitions=4)
    config = {**CONFIG, "processor.locations": "host-a,host-b", "app.run.id": "run-1"}
    job = run_local(app, config, processors=2, grouper="host-affinity", clock=StepClock())
    assert job.status().state == "finished"
    store = EmbeddedMetadataStore(metadata_store_path(job.plan))
    try:
        reported = StoreLocality(store).read("run-1")
        placed = job.job_model.task_to_processor(mode=TaskMode.ACTIVE)
        where = {pid: c.location_id for pid, c in job.job_model.containers.items()}
        assert reported == {
            location: {t: reported[location][t] for t in sorted(placed) if where[placed[t]] == location}
            for location in ("host-a", "host-b")
        }
        assert all(epoch >= 1 for tasks in reported.values() for epoch in tasks.values())
        assert StoreLocality(store).read("run-2") == {}  # another deployment keeps no locality
    finally:
        store.close()


def _left_and_back(system: EmbeddedSystem, start: Any, *, settle: float) -> None:
    """Processors p-a, p-b, p-c of a distributed job (one Job each, as one process each would
    be) at host-a, host-b, host-c; p-a stops (its tasks go to host-b and host-c), then p-a2
    starts at host-a and must get p-a's tasks back, opening their stores there. ``start(pid,
    location)`` runs a processor's Job; ``settle``: how long the group may take to agree."""
    events = generate_page_views(3_000, seed=13)
    write_page_views(system, events[:2_000], partitions=6, end=False)
    jobs = {pid: start(pid, f"host-{pid[-1]}") for pid in ("p-a", "p-b", "p-c")}

    def agreed(pids: set[str]) -> bool:
        return all(set(job.job_model.containers) == pids for pid, job in jobs.items() if pid in pids)

    try:
        _wait(lambda: agreed({"p-a", "p-b", "p-c"}), "a model over the three processors", timeout=settle)
        _wait(lambda: _read(jobs["p-b"]) == 2_000, "the first 2000 events read", timeout=90)
        at_a = set(jobs["p-a"].job_model.containers["p-a"].tasks)
        assert at_a
        metadata, run_id = jobs["p-b"].metadata, jobs["p-b"].run_id
        # A report is never withdrawn: on a loaded machine p-a may have run other tasks under an
        # earlier model (before p-b and p-c joined). A task's stores are where its report of the
        # highest epoch says (the grouper's rule, grouping/metadata.py).
        _wait(lambda: _last_at(StoreLocality(metadata).read(run_id), "host-a") == at_a, "p-a's stores reported")

        left = jobs.pop("p-a")
        left.stop()  # leaves the group: its tasks go to host-b and host-c
        left.metadata.close()
        _wait(lambda: agreed({"p-b", "p-c"}), "a model over p-b and p-c", timeout=settle)
        survivors = [jobs["p-b"], jobs["p-c"]]
        _wait(
            lambda: {t for loc in ("host-b", "host-c") for t in StoreLocality(metadata).read(run_id).get(loc, {})}
            >= at_a,
            "the moved tasks' stores reported at host-b and host-c",
        )

        jobs["p-a2"] = start("p-a2", "host-a")
        _wait(lambda: agreed({"p-a2", "p-b", "p-c"}), "a model with p-a2", timeout=settle)
        assert set(jobs["p-a2"].job_model.containers["p-a2"].tasks) == at_a

        system.write("page-views", events[2_000:])
        _wait(lambda: _read(jobs["p-a2"]) == 3_000, "every event read", timeout=90)
        # p-a2 opened the stores p-a left at host-a: it caught up their tails, never a full
        # restore; the kill's full restores happened at host-b and host-c.
        returned = jobs["p-a2"].metrics()["tasks"]
        assert all(returned[t]["epochs"] > 0 for t in at_a)
        assert {t: returned[t]["full_restores"] for t in at_a} == dict.fromkeys(at_a, 0)
        assert sum(job.metrics()["tasks"][t]["full_restores"] for job in survivors for t in at_a) == len(at_a)
    finally:
        for job in jobs.values():
            job.stop()
            # The handle keeps its metadata store open for reads after the run; a ZooKeeper
            # session left open here would ping on in this worker for the rest of the suite.
            job.metadata.close()


def _processor_config(pid: str, location: str, home: Path) -> dict[str, str]:
    # Processes at one location share a job home, and so the store folder
    # {home}/stores/{location}/...
    return {
        "task.name.grouper.factory": "host-affinity",
        "task.max.epoch.messages": "200",
        "processor.id": pid,
        "processor.locations": location,
        "job.home": str(home / location),
    }


@pytest.mark.services
def test_on_zookeeper_a_processor_back_at_its_location_gets_the_tasks_whose_stores_are_there(
    system: EmbeddedSystem, tmp_path: Path, zk_connect: str
) -> None:
    def start(pid: str, location: str) -> Any:
        config = {
            "job.coordinator.factory": "zookeeper",
            "job.coordinator.zk.connect": zk_connect,
            "job.coordinator.zk.session.timeout.ms": "4000",
            "job.debounce.time.ms": "300",
            **_processor_config(pid, location, tmp_path),
        }
        app = build_app(system, name=f"zk-stores-{tmp_path.name}"[:40], partitions=6)
        return run_local(app, config, until="forever", background=True, clock=StepClock())

    _left_and_back(system, start, settle=60)


@pytest.mark.services
@pytest.mark.slow
def test_on_azure_a_processor_back_at_its_location_gets_the_tasks_whose_stores_are_there(
    system: EmbeddedSystem, tmp_path: Path, azure_connection_string: str
) -> None:
    name = unique_name("az-stores")
    timings = {**AZURE_PROCESS_TIMINGS, "job.debounce.time.ms": "1000"}

    def start(pid: str, location: str) -> Any:
        config = {
            "job.coordinator.factory": "azure",
            "azure.storage.connect": azure_connection_string,
            **timings,
            **_processor_config(pid, location, tmp_path),
        }
        return run_local(build_app(system, name=name, partitions=6), config, until="forever", background=True,
                         clock=StepClock())

    try:
        _left_and_back(system, start, settle=90)
    finally:
        delete_azure_job(name, azure_connection_string)
