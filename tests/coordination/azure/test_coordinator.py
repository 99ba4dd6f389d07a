"""AzureJobCoordinator in-process against Azurite (SAMZA.md §10.5): lease contention, a
follower dropped after the freshness window, a barrier that times out, storage that stops
answering, and the account key kept out of everything shown. The leader's SIGKILL costs a lease
duration (≥ 15 s on Azurite): tests/runtime/test_azure_processes.py covers it with real
processes and exact counts."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from samza_nb.config import Config
from samza_nb.coordination.azure import (
    BARRIER_END,
    BARRIER_TIMEOUT,
    AzureJobCoordinator,
    AzureJobObserver,
    AzureLock,
    AzureNames,
)
from samza_nb.coordination.azure.coordinator import STREAMS_LOCK_ID
from samza_nb.coordination.azure.processors import UNASSIGNED, new_incarnation
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.metadata.azure import AzureBlobMetadataStore, AzureWriteGuard
from samza_nb.services import ServiceInfo, ServicesHome
from samza_nb.services.azurite import Azurite

from ..zk.conftest import calculator
from .conftest import RecordingListener, azure_config, wait_until

pytestmark = pytest.mark.services

Make = Callable[..., tuple[AzureJobCoordinator, RecordingListener]]
ALL_TASKS = frozenset(f"Partition {p}" for p in range(6))


def crash(coordinator: AzureJobCoordinator) -> None:
    """Stop every thread of a coordinator without leaving: its rows, fencing lease and (as a
    leader) the blob lease stay behind, as after a SIGKILL."""
    coordinator._stop(CoordinationError("simulated crash"))


def agreed(*coordinators: AzureJobCoordinator) -> str | None:
    """The version all of them run, when they agree."""
    versions = {c.job_model_version for c in coordinators}
    return versions.pop() if len(versions) == 1 and None not in versions else None


def test_one_leader_and_a_dead_follower_is_dropped_and_fenced(
    coordinators: Make, metadata: AzureBlobMetadataStore
) -> None:
    first, _ = coordinators("p1", "host-a")
    second, _ = coordinators("p2", "host-b")
    both = (first, second)
    version = wait_until(
        lambda: (
            agreed(first, second)
            if first.job_model and len(first.job_model.containers) == 2
            else None
        ),
        30,
        "both processors on one model",
    )
    assert [c.is_leader for c in both].count(True) == 1
    assert first.blob.lease_state() == "leased"
    model = first.job_model
    assert model is not None and set(model.containers) == {"p1", "p2"}
    tasks = {pid: frozenset(c.tasks) for pid, c in model.containers.items()}
    assert tasks["p1"] | tasks["p2"] == ALL_TASKS and not tasks["p1"] & tasks["p2"]
    assert model.containers["p1"].location_id == "host-a"  # grouped over live processors
    leader_rows = [r for r in first.table.live(3.0) if r.is_leader]
    assert [r.processor_id for r in leader_rows] == [
        next(c for c in both if c.is_leader).processor_id
    ]

    follower = next(c for c in both if not c.is_leader)
    survivor = next(c for c in both if c.is_leader)
    observer = AzureJobObserver(first.config)
    try:
        seen = observer.observe()
    finally:
        observer.close()
    assert seen.leader == survivor.processor_id and seen.lease == "leased"
    assert seen.processors == {"p1": "host-a", "p2": "host-b"} and seen.published == ("p1", "p2")
    assert (seen.version, seen.barrier, seen.barrier_version) == (version, BARRIER_END, version)
    assert {task: pid for task, (pid, _) in seen.assignment.items()} == {
        task: pid for pid, names in tasks.items() for task in names
    }
    crash(follower)
    began = time.monotonic()
    moved = survivor.wait_for_job_model(30, newer_than=version)
    assert time.monotonic() - began >= 2.0  # not before the freshness window passed
    assert set(moved.containers) == {survivor.processor_id}
    assert frozenset(moved.containers[survivor.processor_id].tasks) == ALL_TASKS
    # The dropped processor lost its fencing lease: a commit it still had in flight is refused.
    with pytest.raises(JobLeaseError, match="no longer held"):
        metadata.put_all(
            {"late": b"1"},
            guard=lambda g: g.require_token(follower.processor_id, follower._fence.lease, "frozen p"),
        )
    assert metadata.get("late") is None
    metadata.put_all({"fresh": b"1"}, guard=survivor.fence)
    assert metadata.get("fresh") == b"1"


def _on_one_model(first: AzureJobCoordinator, second: AzureJobCoordinator) -> str:
    """The version both run once its model has a container for each."""
    return wait_until(  # type: ignore[no-any-return]
        lambda: agreed(first, second) if first.job_model and len(first.job_model.containers) == 2 else None,
        30,
        "both processors on one model",
    )


def _two_agreed(coordinators: Make) -> tuple[AzureJobCoordinator, AzureJobCoordinator, str]:
    first, _ = coordinators("p1", "host-a")
    second, _ = coordinators("p2", "host-b")
    return first, second, _on_one_model(first, second)


def test_a_processor_fenced_out_between_its_check_and_its_write_writes_nothing(
    coordinators: Make, metadata: AzureBlobMetadataStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The leader drops the follower right after the follower's commit checked its fence and
    # before that commit's write: check and write are one conditional write, so the write
    # fails at the server and, checked again, the commit is refused with one line, having
    # written none of its keys.
    first, second, _version = _two_agreed(coordinators)
    follower = first if not first.is_leader else second
    leader = second if follower is first else first
    verify = AzureWriteGuard.verify
    checks: list[str] = []

    def dropped_right_after_the_check(guard: AzureWriteGuard) -> None:
        verify(guard)
        checks.append("passed")
        if len(checks) == 1:
            leader._leadership.break_fence(follower.processor_id)

    monkeypatch.setattr(AzureWriteGuard, "verify", dropped_right_after_the_check)
    with pytest.raises(JobLeaseError) as refused:
        metadata.put_all({"cp-0": b"stale", "cp-1": b"stale"}, guard=follower.fence)
    message = str(refused.value)
    assert "\n" not in message and "the fencing lease is no longer held" in message, message
    assert f"processor {follower.processor_id!r}" in message
    assert metadata.get("cp-0") is None and metadata.get("cp-1") is None
    metadata.put_all({"cp-0": b"leader"}, guard=leader.fence)
    assert metadata.get("cp-0") == b"leader"


def test_a_processor_restarted_under_its_id_gets_its_tasks_back(coordinators: Make) -> None:
    first, second, version = _two_agreed(coordinators)
    assert first.job_model is not None
    tasks = frozenset(first.job_model.containers["p2"].tasks)
    crash(second)  # its rows stay fresh for the liveness window
    began = time.monotonic()
    restarted, listener = coordinators("p2", "host-b")  # at once, as a supervisor restarts it
    waited = time.monotonic() - began
    assert waited >= 1.5  # until the old process's rows went stale (liveness timeout 3 s)
    # The ids are the same, the incarnation is not: a new version lists the new process.
    wait_until(lambda: listener.tasks() == tasks, 30, "the restarted p2 running its tasks again")
    now = wait_until(lambda: agreed(first, restarted), 30, "p1 on the restarted p2's version")
    assert int(now) > int(version)
    model = restarted.job_model
    assert model is not None and frozenset(model.containers["p1"].tasks) == ALL_TASKS - tasks


def test_a_second_process_under_a_live_processors_id_is_a_duplicate(
    coordinators: Make, metadata: AzureBlobMetadataStore
) -> None:
    first, second, version = _two_agreed(coordinators)
    began = time.monotonic()
    with pytest.raises(CoordinationError, match="Processor: p2 is duplicate in the group .*own processor.id"):
        coordinators("p2", "host-c")
    assert time.monotonic() - began >= 2 * 3.0  # twice the liveness timeout
    # The running p2 lost nothing: its fencing lease still lets it commit, no new round ran.
    metadata.put_all({"still": b"1"}, guard=second.fence)
    assert metadata.get("still") == b"1"
    assert agreed(first, second) == version


def test_a_rolling_restart_starts_the_new_process_once_the_old_one_left(coordinators: Make) -> None:
    first, second, _ = _two_agreed(coordinators)
    assert first.job_model is not None
    tasks = frozenset(first.job_model.containers["p2"].tasks)
    started: list[tuple[AzureJobCoordinator, RecordingListener]] = []
    starting = threading.Thread(target=lambda: started.append(coordinators("p2", "host-b")))
    starting.start()
    time.sleep(1.5)
    assert not started  # it waits while the old p2 heartbeats
    second.stop()
    starting.join(30)
    assert started, "the new p2 did not start after the old one left"
    newer, listener = started[0]
    wait_until(lambda: listener.tasks() == tasks, 30, "the new p2 running p2's tasks")
    wait_until(lambda: agreed(first, newer), 30, "p1 on the new p2's version")


@pytest.mark.parametrize("sees_the_version_without_it", [True, False])
def test_a_processor_dropped_while_frozen_and_listed_again_commits_with_a_new_fencing_lease(
    coordinators: Make, metadata: AzureBlobMetadataStore, sees_the_version_without_it: bool
) -> None:
    # A processor whose heartbeats stop past the liveness timeout (a long pause, a network
    # cut) is dropped and its fencing lease broken; once it heartbeats again the leader lists
    # it again. It must then work and commit again, and nothing it did under the old model
    # may commit. ``sees_the_version_without_it``: it notices the version that left it out
    # (cut off from the table only), or it was frozen through it and sees only the next one.
    first, first_listener = coordinators("p1", "host-a")
    second, second_listener = coordinators("p2", "host-b")
    version = _on_one_model(first, second)
    follower, listener = (first, first_listener) if not first.is_leader else (second, second_listener)
    leader = second if follower is first else first
    frozen = threading.Event()
    heartbeat, read_barrier = follower._state.heartbeat, follower.blob.read_barrier
    follower._state.heartbeat = lambda: None if frozen.is_set() else heartbeat()  # type: ignore[method-assign]
    if not sees_the_version_without_it:
        follower.blob.read_barrier = (  # type: ignore[method-assign]
            lambda: None if frozen.is_set() else read_barrier()
        )
    old_lease = follower._fence.lease
    frozen.set()
    without = leader.wait_for_job_model(30, newer_than=version)
    assert set(without.containers) == {leader.processor_id}
    dropped_in = leader.job_model_version
    if sees_the_version_without_it:
        wait_until(lambda: "expired" in listener.kinds(), 10, "the dropped follower stopping its work")
    else:
        assert listener.kinds() == ["new"]  # frozen: it never heard of the version without it
    frozen.clear()
    wait_until(
        lambda: (
            agreed(first, second)
            if leader.job_model_version != dropped_in and len(leader.job_model.containers) == 2
            else None
        ),
        30,
        "the follower listed and agreed again",
    )
    kinds = listener.kinds()
    assert kinds == ["new", "expired", "new"]  # the old work stopped before the new started
    assert listener.tasks()
    assert follower._fence.lease != old_lease
    metadata.put_all({"relisted": b"1"}, guard=follower.fence)
    assert metadata.get("relisted") == b"1"
    # Work of the old model still in flight cannot commit: its lease is gone.
    with pytest.raises(JobLeaseError, match="no longer held"):
        metadata.put_all({"stale": b"1"}, guard=lambda g: g.require_token(follower.processor_id, old_lease, "stale p"))
    assert metadata.get("stale") is None
    assert not follower.stopped


def test_a_late_fence_break_by_a_former_leader_is_taken_back_and_the_work_restarts(
    coordinators: Make, metadata: AzureBlobMetadataStore
) -> None:
    # A leader froze between publishing a version without a processor and breaking its
    # fencing lease; meanwhile a new leader listed the processor again and it took a new
    # lease. The old leader wakes and breaks that new lease. The processor is listed in the
    # version it works on, so no round will come: without taking the lease back itself, every
    # commit of it would be refused for good.
    from azure.storage.blob import BlobLeaseClient

    first, first_listener = coordinators("p1", "host-a")
    second, second_listener = coordinators("p2", "host-b")
    version = _on_one_model(first, second)
    follower, listener = (first, first_listener) if not first.is_leader else (second, second_listener)
    assert listener.kinds() == ["new"]
    old_lease = follower._fence.lease
    BlobLeaseClient(follower._fence.blob).break_lease(lease_break_period=0)
    wait_until(
        lambda: follower._fence.lease != old_lease and listener.kinds() == ["new", "expired", "new"],
        15,
        "the processor taking its fencing lease back and starting again",
    )
    assert follower.job_model_version == version and not follower.stopped
    assert listener.tasks()
    metadata.put_all({"retaken": b"1"}, guard=follower.fence)
    assert metadata.get("retaken") == b"1"
    with pytest.raises(JobLeaseError, match="no longer held"):
        metadata.put_all({"stale": b"1"}, guard=lambda g: g.require_token(follower.processor_id, old_lease, "stale p"))


def test_a_processor_whose_id_another_process_took_over_stops(coordinators: Make) -> None:
    # What a processor frozen past the liveness window finds when it wakes up: another process
    # started under its id, took its fencing lease and heartbeats.
    from azure.storage.blob import BlobLeaseClient

    coordinators("p1", "host-a")
    second, listener = coordinators("p2", "host-b")
    second.table.upsert(UNASSIGNED, "p2", is_leader=False, location_id="host-c", incarnation=new_incarnation())
    BlobLeaseClient(second._fence.blob).break_lease(lease_break_period=0)
    BlobLeaseClient(second._fence.blob).acquire(lease_duration=-1)
    wait_until(lambda: "failure" in listener.kinds(), 10, "p2 stopping")
    error = next(value for kind, value in listener.events if kind == "failure")
    assert "taken over" in str(error) and "host-c" in str(error)
    assert second.stopped


def test_two_processes_racing_for_one_id_leave_one_that_can_commit(
    coordinators: Make, metadata: AzureBlobMetadataStore
) -> None:
    # A supervisor's restart racing a manual start after p2 crashed; the first to take the
    # fencing lease is slow to write its first row, so the other takes the lease after it.
    first, crashed, _ = _two_agreed(coordinators)
    crash(crashed)
    earlier, _ = coordinators("p2", "host-b", start=False)
    later, _ = coordinators("p2", "host-c", start=False)
    _first_row_after(earlier, lambda: time.sleep(0.5))
    failures: list[BaseException] = []

    def start(coordinator: AzureJobCoordinator) -> None:
        try:
            coordinator.start()
        except CoordinationError as error:  # a duplicate: it never joined
            failures.append(error)

    threads = [threading.Thread(target=start, args=(c,)) for c in (earlier, later)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(60)
    wait_until(lambda: [earlier.stopped, later.stopped].count(True) == 1, 30, "exactly one p2 left")
    survivor, loser = (earlier, later) if not earlier.stopped else (later, earlier)
    time.sleep(2)  # a few heartbeats: it stays
    assert not survivor.stopped
    # The crashed p2's rows go stale as the two start: the leader may drop p2 then and break
    # the lease the survivor had just taken (on a loaded machine it did, in CI). The survivor
    # is not taken over by that; it takes a lease again once the leader lists it again. So it
    # can commit within a bound, and the one that stopped never can.
    _commits_within(metadata, survivor, "survivor", "the surviving p2")
    assert metadata.get("survivor") == b"1"
    assert not _committed(metadata, loser, "loser")
    assert metadata.get("loser") is None
    assert not survivor.stopped


def test_a_restarted_processor_whose_new_lease_the_leader_breaks_takes_one_again_and_commits(
    coordinators: Make, metadata: AzureBlobMetadataStore
) -> None:
    # The race two_processes_racing_for_one_id met on a loaded machine: p2 restarts after a
    # crash, takes its fencing lease once the crashed rows went stale, and is slow to write
    # its first row; the leader, seeing only stale rows of p2, drops p2 and breaks the lease
    # the restarted p2 had just taken. The restarted p2 was not taken over (no other process
    # heartbeats under its id): it is listed again, takes a lease again and commits.
    first, crashed, _ = _two_agreed(coordinators)
    crash(crashed)
    restarted, listener = coordinators("p2", "host-b", start=False)
    # Past the liveness timeout (3 s): the leader drops p2 meanwhile.
    _first_row_after(restarted, lambda: _wait_dropped(first, "p2"))
    restarted.start()
    wait_until(lambda: listener.tasks(), 60, "the restarted p2 running tasks again")
    _commits_within(metadata, restarted, "restarted", "the restarted p2")
    assert not restarted.stopped


def test_two_restarts_racing_while_the_leader_drops_their_id_leave_one_that_commits(
    coordinators: Make, metadata: AzureBlobMetadataStore
) -> None:
    # Both restarted p2 processes take the fencing lease in turn and are slow to write their
    # first row; the leader, seeing only stale rows of p2, drops p2 and breaks the lease the
    # later one holds, so neither holds one. Still exactly one is left: one stops, taken over
    # (the other's row is fresh), and the other, listed again, takes a lease anew and commits.
    first, crashed, _ = _two_agreed(coordinators)
    crash(crashed)
    racers = [coordinators("p2", location, start=False)[0] for location in ("host-b", "host-c")]
    for racer in racers:
        _first_row_after(racer, lambda: _wait_dropped(first, "p2"))
    threads = [threading.Thread(target=racer.start) for racer in racers]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join(60)
    wait_until(lambda: [r.stopped for r in racers].count(True) == 1, 30, "exactly one p2 left")
    survivor, loser = (racers[0], racers[1]) if not racers[0].stopped else (racers[1], racers[0])
    _commits_within(metadata, survivor, "survivor", "the surviving p2")
    assert not _committed(metadata, loser, "loser")
    assert not survivor.stopped


def _first_row_after(coordinator: AzureJobCoordinator, wait: Callable[[], None]) -> None:
    """The coordinator's first row is written only after ``wait()`` returns."""
    write_row = coordinator._state.write_row
    waited = False

    def first_row_late(version: str) -> None:
        nonlocal waited
        if not waited:
            waited = True
            wait()
        write_row(version)

    coordinator._state.write_row = first_row_late  # type: ignore[method-assign]


def _wait_dropped(leader: AzureJobCoordinator, processor_id: str) -> None:
    wait_until(
        lambda: leader.job_model is not None and processor_id not in leader.job_model.containers,
        30,
        f"{processor_id} dropped",
    )


def _commits_within(
    metadata: AzureBlobMetadataStore, coordinator: AzureJobCoordinator, key: str, who: str
) -> None:
    """A commit of ``key`` guarded by ``coordinator``'s fence is written within 30 s."""
    deadline = time.monotonic() + 30
    while not _committed(metadata, coordinator, key):
        assert time.monotonic() < deadline, f"{who} could not commit for 30 s"
        time.sleep(0.25)


def _committed(metadata: AzureBlobMetadataStore, coordinator: AzureJobCoordinator, key: str) -> bool:
    """Whether a commit of ``key`` guarded by ``coordinator``'s fence was written."""
    try:
        metadata.put_all({key: b"1"}, guard=coordinator.fence)
    except JobLeaseError:
        return False
    return True


def test_a_processor_missing_the_barrier_times_it_out_and_a_new_round_follows(
    coordinators: Make,
) -> None:
    first, first_listener = coordinators("p1", "host-a")
    wait_until(lambda: first_listener.tasks() == ALL_TASKS, 30, "the first model")
    assert first.is_leader and first.job_model_version == "1"
    # p2 heartbeats (it is live) but never looks for new versions, so never joins a barrier.
    slow, _ = coordinators(
        "p2", "host-b", **{"job.coordinator.azure.upgrade.check.interval.ms": 3_600_000}
    )
    seen: list[tuple[str, str]] = []

    def timed_out_and_retried() -> bool:
        barrier = first.blob.read_barrier()
        if barrier and barrier not in seen:
            seen.append(barrier)
        timeouts = [int(v) for s, v in seen if s == BARRIER_TIMEOUT]
        return bool(timeouts) and any(int(v) > min(timeouts) for _, v in seen)

    wait_until(timed_out_and_retried, 30, "a barrier TIMEOUT and a newer round")
    assert first.job_model_version == "1"  # p1 never confirmed a round that did not finish
    slow.stop()  # p2 leaves: the next round completes without it
    wait_until(lambda: first.blob.read_barrier()[0] == BARRIER_END, 30, "a completed round")
    assert first_listener.tasks() == ALL_TASKS


@contextlib.contextmanager
def private_azurite(folder: Path) -> Iterator[ServiceInfo]:
    """An Azurite of the test's own (its data is wiped when stopped), sharing the npm install
    of the suite's services so it starts in seconds."""
    home = ServicesHome.resolve(folder)
    shared = ServicesHome.resolve().root / "npm"
    if shared.is_dir():
        home.root.mkdir(parents=True, exist_ok=True)
        (home.root / "npm").symlink_to(shared)
    service = Azurite(home)
    # Its own, even where the suite's Azurite is configured as an external account.
    external = os.environ.pop(service.external_variable, None) if service.external_variable else None
    try:
        info = service.start(timeout=120)
        try:
            yield info
        finally:
            service.stop()
    finally:
        if external is not None:
            os.environ[service.external_variable] = external


def test_unreachable_storage_fails_the_coordinator_after_bounded_retries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with private_azurite(tmp_path / "services") as info:
        connect = info.env["SAMZA_NB_AZURE_CONNECTION_STRING"]
        config = azure_config("unreachable", connect)
        coordinator = AzureJobCoordinator(calculator(config), config)
        listener = RecordingListener()
        coordinator.attach("p1", "host-a", listener)
        frozen = False
        try:
            coordinator.start()
            wait_until(lambda: listener.tasks() == ALL_TASKS, 30, "the first model")
            for pid in info.pids:
                os.kill(pid, signal.SIGSTOP)
            frozen = True
            wait_until(lambda: "failure" in listener.kinds(), 60, "the coordinator to fail")
            error = next(value for kind, value in listener.events if kind == "failure")
            assert isinstance(error, CoordinationError)
            assert "devstoreaccount1 at http://127.0.0.1" in str(error)  # names the account
            assert "timed out" in str(error).lower()
            assert coordinator.stopped and not coordinator.is_leader
            assert listener.kinds()[-2:] == ["expired", "failure"]  # work stopped, then failed
            for text in (str(error), repr(coordinator), caplog.text):
                assert connect not in text and "AccountKey=" not in text
        finally:
            if frozen:
                for pid in info.pids:
                    os.kill(pid, signal.SIGCONT)
            coordinator.stop()


def test_the_account_key_is_never_shown_or_stored(
    coordinators: Make, job_config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    connect = job_config.get_str("azure.storage.connect")
    key = dict(p.split("=", 1) for p in connect.split(";") if p)["AccountKey"]
    coordinator, _ = coordinators("p1", "host-a")
    wait_until(lambda: coordinator.job_model_version, 30, "the first model")
    raw = coordinator.blob.blob.download_blob().readall()
    rows = repr([vars(r) for r in coordinator.table.rows()])
    for text in (repr(coordinator), str(coordinator.account), caplog.text, repr(job_config), rows):
        assert key not in text
    assert key.encode() not in raw
    names = AzureNames.for_job(job_config)
    assert names.container in repr(coordinator)


def test_missing_connection_string_is_a_config_error(
    app_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from samza_nb.errors import ConfigError

    monkeypatch.delenv("SAMZA_NB_AZURE_CONNECTION_STRING", raising=False)
    config = Config({"app.name": app_name})
    with pytest.raises(ConfigError, match=r"azure\.storage\.connect"):
        AzureJobCoordinator(calculator(config), config)


def test_run_id_is_shared_by_the_deployment(
    coordinators: Make, metadata: AzureBlobMetadataStore, job_config: Config
) -> None:
    from samza_nb import drain

    first, _ = coordinators("p1", "host-a")
    second, _ = coordinators("p2", "host-b")
    run_id = first.run_id_generator(metadata).run_id()
    assert second.run_id_generator(metadata).run_id() == run_id
    assert drain.read_run_id(metadata) == run_id
    first.stop()
    second.stop()
    # A new deployment (nobody of the old one is live) gets a new run id.
    third, _ = coordinators("p3", "host-c")
    assert third.run_id_generator(metadata).run_id() != run_id


def test_the_leader_creates_the_streams_once_under_the_lock(
    job_config: Config, metadata: AzureBlobMetadataStore
) -> None:
    held: list[bool] = []

    def create_streams(model: object) -> None:
        other = AzureLock(coordinator.container, STREAMS_LOCK_ID, lease_duration=15)
        try:
            other.acquire(timeout=0.3)
            other.release()
            held.append(False)
        except CoordinationError:
            held.append(True)

    coordinator = AzureJobCoordinator(
        calculator(job_config), job_config, metadata=metadata, before_first_publish=create_streams
    )
    listener = RecordingListener()
    coordinator.attach("p1", "host-a", listener)
    coordinator.start()
    try:
        wait_until(lambda: listener.tasks() == ALL_TASKS, 30, "the first model")
        assert held == [True]  # once, while the leader held the lock
    finally:
        coordinator.stop()
