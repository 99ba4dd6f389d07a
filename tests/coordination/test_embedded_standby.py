"""The embedded coordinator with standbys: failover promotes, and moving a standby never
expires a processor whose active tasks stay."""

from __future__ import annotations

import pytest

from samza_nb.config import Config
from samza_nb.coordination.embedded import EmbeddedJobCoordinator
from samza_nb.coordination.job_model_calculator import (
    JobInputs,
    JobModelCalculator,
    unassigned_standbys,
)
from samza_nb.errors import ModelError
from samza_nb.grouping.standby import active_task_name, check_standby_invariants
from samza_nb.metadata.in_memory import InMemoryMetadataStore
from samza_nb.model import JobModel, SystemStreamPartition, TaskMode


class Recorder:
    """A listener that records the coordinator's callbacks (stands in for a processor)."""

    def __init__(self, calls: list[tuple[str, str]], pid: str) -> None:
        self.calls, self.pid = calls, pid

    def on_job_model_expired(self) -> None:
        self.calls.append(("expired", self.pid))

    def on_new_job_model(self, processor_id: str, job_model: JobModel) -> None:
        self.calls.append(("new", processor_id))

    def on_coordinator_stop(self) -> None:
        self.calls.append(("stop", self.pid))

    def on_coordinator_failure(self, error: BaseException) -> None:
        self.calls.append(("failure", self.pid))


def _actives(model: JobModel) -> dict[str, set[str]]:
    return {
        pid: {n for n, t in c.tasks.items() if t.mode is TaskMode.ACTIVE} for pid, c in model.containers.items()
    }


def _coordinator(partitions: int, locations: dict[str, str]) -> tuple[EmbeddedJobCoordinator, list[tuple[str, str]]]:
    ssps = frozenset(SystemStreamPartition("embedded", "in", p) for p in range(partitions))
    calculator = JobModelCalculator(JobInputs(ssps, config=Config()), replication_factor=2)
    coordinator = EmbeddedJobCoordinator(calculator, InMemoryMetadataStore(), run_id="r1")
    calls: list[tuple[str, str]] = []
    for pid, location in locations.items():
        coordinator.attach(pid, location, Recorder(calls, pid))
    coordinator.start()
    return coordinator, calls


def test_losing_a_processor_promotes_its_standbys() -> None:
    coordinator, _ = _coordinator(4, {"0": "host-a", "1": "host-b", "2": "host-c"})
    before = coordinator.job_model
    assert before is not None and check_standby_invariants(before, replication_factor=2) == []
    holder = {
        active_task_name(n): pid for pid, c in before.containers.items() for n, t in c.tasks.items()
        if t.mode is TaskMode.STANDBY
    }
    after = coordinator.regroup({"0": "host-a", "2": "host-c"})
    for task in _actives(before)["1"]:
        assert task in _actives(after)[holder[task]]
    assert check_standby_invariants(after, replication_factor=2) == []
    assert unassigned_standbys(after, 2) == 0
    # One location left: the job keeps running without standbys and counts them.
    alone = coordinator.regroup({"0": "host-a"})
    assert _actives(alone)["0"] == set(before.active_tasks())
    assert unassigned_standbys(alone, 2) == 4


def test_moving_a_standby_does_not_expire_a_processor_whose_actives_stay() -> None:
    coordinator, calls = _coordinator(2, {"0": "host-a", "1": "host-b", "2": "host-c"})
    before = coordinator.job_model
    assert before is not None
    idle = next(pid for pid, tasks in _actives(before).items() if not tasks)
    calls.clear()
    after = coordinator.regroup({pid: loc for pid, loc in {"0": "host-a", "1": "host-b", "2": "host-c"}.items()
                                 if pid != idle})
    assert {pid: t for pid, t in _actives(after).items()} == {
        pid: t for pid, t in _actives(before).items() if pid != idle
    }
    gained = [pid for pid in after.containers if after.containers[pid] != before.containers[pid]]
    assert gained, "the lost standby was placed on a live processor"
    expired = {pid for kind, pid in calls if kind == "expired"}
    assert expired == {idle}  # only the removed processor; the one that got a standby was not
    assert {pid for kind, pid in calls if kind == "new"} == set(gained)


def test_locations_that_would_share_a_store_folder_are_refused() -> None:
    """``rack-1/host-7`` and ``rack-1:host-7`` are distinct locations to the standby rule but
    one folder under the store root: an active and its standby would open one store."""
    with pytest.raises(ModelError, match=r"locations 'rack-1/host-7' and 'rack-1:host-7' would share the store folder 'rack-1_host-7'"):
        _coordinator(2, {"0": "rack-1/host-7", "1": "rack-1:host-7"})
    coordinator, _ = _coordinator(2, {"0": "rack-1/host-7", "1": "rack-2/host-7"})
    coordinator.attach("2", "rack-1:host-7", Recorder([], "2"))
    with pytest.raises(ModelError, match="would share the store folder"):
        coordinator.regroup({"0": "rack-1/host-7", "2": "rack-1:host-7"})
    assert set(coordinator.job_model.containers) == {"0", "1"}  # the running model stays
