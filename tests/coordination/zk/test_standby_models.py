"""Hot standby on ZooKeeper (issue #15): a model that only places or moves standby tasks never
expires a processor's active work; the processor takes the new standby set once it is agreed."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from samza_nb.coordination.zk import ZkJobCoordinator
from samza_nb.model import JobModel, TaskMode

from .conftest import RecordingListener, calculator, job_config, wait_until

pytestmark = pytest.mark.services

Make = Callable[[str, str], tuple[ZkJobCoordinator, RecordingListener]]


@pytest.fixture
def standby_coordinators(zk_connect: str) -> Iterator[Make]:
    """Coordinators of a two-task job with one standby per task (replication factor 2)."""
    made: list[ZkJobCoordinator] = []

    def make(pid: str, location: str) -> tuple[ZkJobCoordinator, RecordingListener]:
        config = job_config(zk_connect)
        coordinator = ZkJobCoordinator(calculator(config, 2).with_replication_factor(2), config)
        listener = RecordingListener()
        coordinator.attach(pid, location, listener)
        made.append(coordinator)
        coordinator.start()
        return coordinator, listener

    yield make
    for coordinator in made:
        coordinator.stop()


def _tasks(model: JobModel, pid: str, mode: TaskMode) -> set[str]:
    return {name for name, task in model.containers[pid].tasks.items() if task.mode is mode}


def test_moving_a_standby_does_not_expire_the_processors_active_work(standby_coordinators: Make) -> None:
    p1, l1 = standby_coordinators("p1", "host-a")
    p2, l2 = standby_coordinators("p2", "host-b")
    first = wait_until(
        lambda: p1.job_model_version == p2.job_model_version and p1.job_model is not None
        and set(p1.job_model.containers) == {"p1", "p2"} and p1.job_model,
        15,
        "p1 and p2 agree",
    )
    assert _tasks(first, "p1", TaskMode.STANDBY)  # each holds the other's standby
    version = p1.job_model_version
    p3, l3 = standby_coordinators("p3", "host-c")
    second = wait_until(
        lambda: p3.job_model_version is not None
        and p1.job_model_version == p2.job_model_version == p3.job_model_version != version
        and p1.job_model,
        15,
        "p3 joins",
    )
    # p3 (a third location) takes a standby away from p1; every active task stays.
    assert {pid: _tasks(second, pid, TaskMode.ACTIVE) for pid in ("p1", "p2")} == {
        pid: _tasks(first, pid, TaskMode.ACTIVE) for pid in ("p1", "p2")
    }
    assert _tasks(second, "p3", TaskMode.STANDBY)
    assert _tasks(second, "p1", TaskMode.STANDBY) != _tasks(first, "p1", TaskMode.STANDBY)
    # p1 was never expired: it dropped the standby it loses before the barrier (an interim
    # model with its actives only), then took the agreed model.
    assert "expired" not in l1.kinds()
    assert l1.kinds() == ["new", "new", "new"]
    assert l1.models[-1] == second
    assert _tasks(l1.models[1], "p1", TaskMode.ACTIVE) == _tasks(first, "p1", TaskMode.ACTIVE)
    assert not _tasks(l1.models[1], "p1", TaskMode.STANDBY) - _tasks(second, "p1", TaskMode.STANDBY)
    assert l2.kinds() == ["new"]  # untouched
    assert l3.kinds() == ["new"]
