"""ZkJobCoordinator with several coordinators in threads (each its own kazoo session) and a
processor process for the SIGKILL scenarios, against the real ZooKeeper (SAMZA.md §8.5)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from samza_nb.config import Config
from samza_nb.coordination.coordinator import get_job_coordinator
from samza_nb.coordination.zk import TIMED_OUT, ZkJobCoordinator, ZkKeyBuilder
from samza_nb.coordination.zk.processors import ProcessorRegistry
from samza_nb.errors import CoordinationError, StreamSystemError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import JobModel

from .conftest import (
    DEBOUNCE_MS,
    SESSION_MS,
    RecordingListener,
    calculator,
    expire_session,
    job_config,
    wait_until,
)

pytestmark = pytest.mark.services

ALL_TASKS = frozenset(f"Partition {p}" for p in range(6))
Make = Callable[..., tuple[ZkJobCoordinator, RecordingListener]]


def agreed(coordinators: list[ZkJobCoordinator], processors: set[str]) -> JobModel | None:
    """The model every coordinator runs, when they all run the same one over ``processors``."""
    models = {c.job_model_version for c in coordinators}
    model = coordinators[0].job_model
    if len(models) != 1 or model is None or set(model.containers) != processors:
        return None
    return model


@pytest.fixture
def process(zk_connect: str) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def spawn(pid: str, location: str) -> subprocess.Popen[str]:
        spec = {
            "config": job_config(zk_connect).to_dict(),
            "pid": pid,
            "location": location,
            "partitions": 6,
        }
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("_processor_main.py")), json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        return proc

    yield spawn
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_three_coordinators_elect_one_leader_and_agree(coordinators: Make) -> None:
    made = [coordinators(pid, loc) for pid, loc in (("p1", "host-a"), ("p2", "host-b"), ("p3", "host-b"))]
    coords = [c for c, _ in made]
    model = wait_until(lambda: agreed(coords, {"p1", "p2", "p3"}), 15, "three-way agreement")
    assert [c.is_leader for c in coords] == [True, False, False]
    tasks = [listener.tasks() for _, listener in made]
    assert all(tasks)
    assert frozenset().union(*tasks) == ALL_TASKS  # type: ignore[arg-type]
    assert sum(len(t) for t in tasks) == 6  # type: ignore[arg-type]
    for pid, (_, listener) in zip(("p1", "p2", "p3"), made, strict=True):
        assert listener.threads == {f"samza_nb-zk-{pid}"}
        assert model.containers[pid].location_id == {"p1": "host-a"}.get(pid, "host-b")


def test_factory_is_registered_as_zookeeper(zk_connect: str) -> None:
    config = job_config(zk_connect)
    listener = RecordingListener()
    coordinator = get_job_coordinator(
        "zookeeper",
        calculator=calculator(config),
        config=config,
        processor_id="p1",
        location_id="host-a",
        listener=listener,
    )
    assert isinstance(coordinator, ZkJobCoordinator)
    assert coordinator.hosted_processors == {"p1": "host-a"}
    with pytest.raises(CoordinationError, match="hosts one processor"):
        coordinator.attach("p2", "host-a", RecordingListener())
    with pytest.raises(CoordinationError, match="without spaces"):
        ZkJobCoordinator(calculator(config), config).attach("p 1", "host-a", listener)


def test_stop_leaves_the_group_at_once_and_the_leader_takes_over_its_tasks(
    coordinators: Make, zk: ZkClient, keys: ZkKeyBuilder
) -> None:
    first, first_listener = coordinators("p1", "host-a")
    second, second_listener = coordinators("p2", "host-b")
    wait_until(lambda: agreed([first, second], {"p1", "p2"}), 15, "two-way agreement")
    assert len(zk.children(keys.processors) or []) == 2
    second.stop()
    second.stop()  # idempotent
    assert len(zk.children(keys.processors) or []) == 1  # the session closed: node gone at once
    assert second_listener.kinds()[-2:] == ["expired", "stop"]
    wait_until(lambda: first.job_model and set(first.job_model.containers) == {"p1"}, 10, "p1 alone")
    assert first_listener.tasks() == ALL_TASKS


def test_unchanged_processors_are_not_interrupted(coordinators: Make) -> None:
    # Two tasks over three processors: p3 gets no container, so its coming and going changes
    # nothing for p1 and p2.
    p1, l1 = coordinators("p1", "host-a", partitions=2)
    p2, l2 = coordinators("p2", "host-b", partitions=2)
    first = wait_until(lambda: agreed([p1, p2], {"p1", "p2"}), 15, "p1 and p2 agree")
    version = p1.job_model_version
    p3, l3 = coordinators("p3", "host-a", partitions=2)
    wait_until(lambda: p3.job_model_version is not None and p1.job_model_version == p3.job_model_version != version, 15, "p3 joins")
    assert p3.job_model is not None and "p3" not in p3.job_model.containers
    assert l3.kinds() == ["new"] and l3.tasks() == frozenset()  # idle
    version = p1.job_model_version
    p3.stop()
    wait_until(lambda: p1.job_model_version != version, 15, "a model after p3 left")
    assert p1.job_model is not None and p1.job_model.containers == first.containers
    assert l1.kinds() == ["new"] and l2.kinds() == ["new"]  # never expired, never restarted


def test_duplicate_processor_id_is_a_clear_failure(coordinators: Make) -> None:
    first, _ = coordinators("p1", "host-a")
    wait_until(lambda: first.job_model, 15, "p1's model")
    started = time.monotonic()
    with pytest.raises(CoordinationError, match="p1 is duplicate in the group"):
        coordinators("p1", "host-b")
    assert time.monotonic() - started >= 2 * SESSION_MS / 1000 - 1
    assert first.job_model is not None and set(first.job_model.containers) == {"p1"}


def test_participant_that_never_joins_times_out_then_a_model_without_it(
    coordinators: Make, zk_connect: str, keys: ZkKeyBuilder
) -> None:
    p1, listener = coordinators("p1", "host-a", **{"job.coordinator.zk.consensus.timeout.ms": 1500})
    wait_until(lambda: p1.job_model, 15, "p1's first model")
    version = p1.job_model_version
    ghost = ZkClient(zk_connect, session_timeout=SESSION_MS / 1000, error=CoordinationError)
    try:
        ProcessorRegistry(ghost, keys).register("ghost", "host-z")  # registers, never joins

        def timed_out() -> bool:
            state = ghost.get(keys.barrier_state(str(int(version or 0) + 1)))
            return state is not None and state[0] == TIMED_OUT.encode()

        wait_until(timed_out, 15, "a TIMED_OUT barrier")
        assert p1.job_model_version == version  # the model with the ghost never became active
        assert listener.kinds() == ["new", "expired"]  # p1 stopped, as its container changed
    finally:
        ghost.close()  # the ghost's node goes away with its session
    wait_until(lambda: p1.job_model_version != version, 15, "a model without the ghost")
    assert p1.job_model is not None and set(p1.job_model.containers) == {"p1"}
    assert listener.kinds() == ["new", "expired", "new"]
    assert listener.tasks() == ALL_TASKS


def test_session_expiry_stops_work_and_rejoins(coordinators: Make) -> None:
    p1, l1 = coordinators("p1", "host-a")
    p2, l2 = coordinators("p2", "host-b")
    wait_until(lambda: agreed([p1, p2], {"p1", "p2"}), 15, "two-way agreement")
    version = p1.job_model_version
    assert p2._state.zk is not None
    expire_session(p2._state.zk.kazoo)
    wait_until(lambda: "expired" in l2.kinds(), 10, "p2 to stop work")
    wait_until(lambda: agreed([p1, p2], {"p1", "p2"}) and p1.job_model_version != version, 20, "p2 back")
    assert l2.kinds()[-2:] == ["expired", "new"]
    assert not p2.is_leader and p1.is_leader


def test_follower_death_moves_only_its_tasks_to_its_location_first(
    coordinators: Make, process: Callable[..., subprocess.Popen[str]]
) -> None:
    p1, l1 = coordinators("p1", "host-a")
    p2, l2 = coordinators("p2", "host-b")
    victim = process("p3", "host-b")
    before = wait_until(lambda: agreed([p1, p2], {"p1", "p2", "p3"}), 20, "three-way agreement")
    killed = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    after = wait_until(lambda: agreed([p1, p2], {"p1", "p2"}), 25, "a model without p3")
    elapsed = time.monotonic() - killed
    bound = (SESSION_MS + DEBOUNCE_MS) / 1000
    print(f"follower SIGKILL -> new model in {elapsed:.1f} s (lower bound {bound:.1f} s)")
    moved = set(before.containers["p3"].tasks)
    for pid in ("p1", "p2"):
        assert set(before.containers[pid].tasks) <= set(after.containers[pid].tasks)
    assert set(after.containers["p2"].tasks) - set(before.containers["p2"].tasks)  # same location
    assert set(after.task_to_processor()) == ALL_TASKS
    assert {t for t in moved if after.processor_of(t) == "p2"}
    assert elapsed < bound + 8


def test_leader_death_new_leader_publishes_within_session_timeout_and_debounce(
    coordinators: Make, process: Callable[..., subprocess.Popen[str]]
) -> None:
    leader = process("p0", "host-a")  # registers first: the leader
    p1, _ = coordinators("p1", "host-a")
    p2, _ = coordinators("p2", "host-b")
    wait_until(lambda: agreed([p1, p2], {"p0", "p1", "p2"}), 20, "three-way agreement")
    assert not p1.is_leader and not p2.is_leader
    killed = time.monotonic()
    os.kill(leader.pid, signal.SIGKILL)
    wait_until(lambda: agreed([p1, p2], {"p1", "p2"}), 25, "the new leader's model")
    elapsed = time.monotonic() - killed
    bound = (SESSION_MS + DEBOUNCE_MS) / 1000
    print(f"leader SIGKILL -> new model in {elapsed:.1f} s (lower bound {bound:.1f} s)")
    assert p1.is_leader and not p2.is_leader
    assert elapsed < bound + 8


def test_startup_with_active_job_model_runs_it_at_once(coordinators: Make, zk_connect: str) -> None:
    flag = {"job.coordinator.zk.enable-startup-with-active-job-model": "true"}
    p1, _ = coordinators("p1", "host-a", **flag)
    model = wait_until(lambda: p1.job_model, 15, "the first model")
    version = p1.job_model_version
    p1._state.scheduler.stop()  # type: ignore[union-attr]  # a frozen process: no more reactions
    config: dict[str, Any] = {**flag}
    # A restart of the same processor while its old session is still alive would be a
    # duplicate; close the old session first, as a restart does.
    p1._state.zk.close()  # type: ignore[union-attr]
    again, listener = coordinators("p1", "host-a", **config)
    wait_until(lambda: listener.kinds() == ["new"], 5, "the active model at once")
    assert again.job_model == model and again.job_model_version == version
    time.sleep(DEBOUNCE_MS / 1000 + 1)
    assert again.job_model_version == version  # the leader skipped the no-op rebalance
    assert Config(job_config(zk_connect)).get_str("app.name") == "zkjob"


def test_agreed_models_are_persisted_and_commits_are_fenced(zk_connect: str, keys: ZkKeyBuilder) -> None:
    from samza_nb.coordination.assignments import LocalityManager, TaskAssignmentManager
    from samza_nb.errors import JobLeaseError
    from samza_nb.metadata import InMemoryMetadataStore
    from samza_nb.metadata.zookeeper import ZkMetadataStore

    config = job_config(zk_connect)
    metadata = InMemoryMetadataStore()
    setups: list[JobModel] = []
    coordinator = ZkJobCoordinator(
        calculator(config), config, metadata=metadata, before_first_publish=setups.append
    )
    coordinator.attach("p1", "host-a", RecordingListener())
    coordinator.start()
    try:
        model = coordinator.wait_for_job_model(15)
        assert setups == [model]
        assignment = TaskAssignmentManager(metadata).read_active_task_assignment()
        assert assignment == dict.fromkeys(ALL_TASKS, "p1")
        assert LocalityManager(metadata).read_task_locality() == dict.fromkeys(ALL_TASKS, "host-a")
        with ZkMetadataStore(zk_connect, "/checkpoints", session_timeout=4) as checkpoints:
            checkpoints.put_all({"Partition 0": b"1"}, guard=coordinator.fence)
            assert coordinator._state.zk is not None
            expire_session(coordinator._state.zk.kazoo)
            with pytest.raises(JobLeaseError, match="fenced"):
                for _ in range(100):  # until the expiry reached the coordinator's view
                    checkpoints.put_all({"Partition 0": b"2"}, guard=coordinator.fence)
                    time.sleep(0.05)
            assert checkpoints.get("Partition 0") == b"1"
    finally:
        coordinator.stop()


def test_leader_regenerates_when_input_partitions_grow(coordinators: Make, zk_connect: str) -> None:
    counts = {"in": 6}
    config = job_config(zk_connect, **{"job.coordinator.monitor-partition-change.frequency.ms": 200})
    coordinator = ZkJobCoordinator(calculator(config), config, partition_counts=lambda: dict(counts))
    listener = RecordingListener()
    coordinator.attach("p1", "host-a", listener)
    coordinator.start()
    try:
        first = coordinator.wait_for_job_model(15)
        assert len(first.task_to_processor()) == 6
        counts["in"] = 8
        second = coordinator.wait_for_job_model(15, newer_than=coordinator.job_model_version)
        assert set(second.task_to_processor()) == {f"Partition {p}" for p in range(8)}
        assert listener.kinds() == ["new", "expired", "new"]
    finally:
        coordinator.stop()


def test_a_new_leader_models_the_partitions_its_inputs_have_now(zk_connect: str) -> None:
    # Planned with 6 partitions; the input has 8 by the time this process leads (it took over
    # from a leader that saw them grow, or they grew while it started): its first model has
    # all 8 tasks, not 6 until the next check of the monitor, minutes later.
    config = job_config(zk_connect)
    coordinator = ZkJobCoordinator(calculator(config), config, partition_counts=lambda: {"in": 8})
    coordinator.attach("p1", "host-a", RecordingListener())
    coordinator.start()
    try:
        first = coordinator.wait_for_job_model(15)
        assert set(first.task_to_processor()) == {f"Partition {p}" for p in range(8)}
    finally:
        coordinator.stop()


def test_a_failed_read_of_partition_counts_is_retried_and_the_leader_keeps_leading(zk_connect: str) -> None:
    # A broker that cannot answer for a moment stops nothing: the next interval reads again.
    phase = ["steady"]

    def counts() -> dict[str, int]:
        if phase[0] == "failing":
            phase[0] = "grown"  # the next read answers
            msg = "Kafka system 'kafka': list topics failed after 3 attempts"
            raise StreamSystemError(msg)
        return {"in": 8 if phase[0] == "grown" else 6}

    config = job_config(zk_connect, **{"job.coordinator.monitor-partition-change.frequency.ms": 200})
    coordinator = ZkJobCoordinator(calculator(config), config, partition_counts=counts)
    listener = RecordingListener()
    coordinator.attach("p1", "host-a", listener)
    coordinator.start()
    try:
        first = coordinator.wait_for_job_model(15)
        assert len(first.task_to_processor()) == 6
        phase[0] = "failing"
        second = coordinator.wait_for_job_model(15, newer_than=coordinator.job_model_version)
        assert phase[0] == "grown"
        assert set(second.task_to_processor()) == {f"Partition {p}" for p in range(8)}
        assert "failure" not in listener.kinds() and coordinator.is_leader
    finally:
        coordinator.stop()


def _single(connect: str) -> tuple[ZkJobCoordinator, RecordingListener]:
    config = job_config(connect)
    coordinator = ZkJobCoordinator(calculator(config), config)
    listener = RecordingListener()
    coordinator.attach("p1", "host-a", listener)
    coordinator.start()
    return coordinator, listener


def test_a_short_disconnection_does_not_interrupt_work(proxied_connect: tuple[str, Any]) -> None:
    connect, proxy = proxied_connect
    coordinator, listener = _single(connect)
    try:
        coordinator.wait_for_job_model(15)
        proxy.cut()
        time.sleep(1.5)  # well under the 4 s session timeout
        proxy.restore()
        assert coordinator._state.zk is not None
        wait_until(lambda: coordinator._state.zk.kazoo.connected, 10, "the reconnection")  # type: ignore[union-attr]
        time.sleep(SESSION_MS / 1000 + 0.5)  # past the moment a pending stop would have run
        assert listener.kinds() == ["new"]
    finally:
        coordinator.stop()


def test_disconnected_past_the_session_timeout_stops_with_a_failure(
    proxied_connect: tuple[str, Any],
) -> None:
    connect, proxy = proxied_connect
    coordinator, listener = _single(connect)
    try:
        coordinator.wait_for_job_model(15)
        proxy.cut()
        wait_until(lambda: "failure" in listener.kinds(), SESSION_MS / 1000 + 8, "the failure")
        assert listener.kinds() == ["new", "expired", "failure"]
        error = listener.events[-1][1]
        assert isinstance(error, CoordinationError) and "disconnected" in str(error)
        assert "127.0.0.1" in str(error)
    finally:
        coordinator.stop()


def test_leader_session_expiry_hands_leadership_over_and_rejoins_as_follower(coordinators: Make) -> None:
    p1, l1 = coordinators("p1", "host-a")
    p2, _ = coordinators("p2", "host-b")
    wait_until(lambda: agreed([p1, p2], {"p1", "p2"}), 15, "two-way agreement")
    version = p1.job_model_version
    assert p1._state.zk is not None and p1.is_leader
    expire_session(p1._state.zk.kazoo)
    wait_until(lambda: p2.is_leader, 10, "p2 to lead")
    wait_until(lambda: agreed([p1, p2], {"p1", "p2"}) and p1.job_model_version != version, 20, "p1 back")
    assert not p1.is_leader
    assert l1.kinds()[-2:] == ["expired", "new"]


def test_only_a_leader_creates_streams_and_under_the_streams_lock(zk_connect: str, zk: ZkClient) -> None:
    from samza_nb.coordination.zk.coordinator import STREAMS_LOCK_ID

    keys = ZkKeyBuilder.for_job(job_config(zk_connect))
    calls: list[tuple[str, list[str]]] = []

    def setup_of(pid: str) -> Callable[[JobModel], None]:
        def setup(model: JobModel) -> None:
            # Who holds the lock while the streams are created: the kazoo lock's contenders.
            holders = [
                zk.get(f"{keys.lock(STREAMS_LOCK_ID)}/{node}")[0].decode()  # type: ignore[index]
                for node in sorted(zk.children(keys.lock(STREAMS_LOCK_ID)) or [])
            ]
            calls.append((pid, holders))

        return setup

    made = []
    try:
        for pid, location in (("p1", "host-a"), ("p2", "host-a"), ("p3", "host-b")):
            config = job_config(zk_connect)
            coordinator = ZkJobCoordinator(
                calculator(config), config, before_first_publish=setup_of(pid)
            )
            coordinator.attach(pid, location, RecordingListener())
            coordinator.start()
            made.append(coordinator)
        wait_until(lambda: agreed(made, {"p1", "p2", "p3"}), 15, "three-way agreement")
        assert calls == [("p1", ["p1"])]  # the leader only, holding the lock
        made[0].stop()  # the leader leaves: the next leader creates (idempotently) once more
        wait_until(lambda: agreed(made[1:], {"p2", "p3"}), 15, "the new leader's model")
        assert calls == [("p1", ["p1"]), ("p2", ["p2"])]
    finally:
        for coordinator in made:
            coordinator.stop()
