"""§8.7: job-model versions, cleanup, barrier scenarios; protocol version; task locality."""

from __future__ import annotations

import threading

import pytest

from samza_nb.coordination.zk import (
    DONE,
    NEW,
    TIMED_OUT,
    JobModelVersions,
    VersionBarrier,
    ZkKeyBuilder,
)
from samza_nb.coordination.zk.protocol import validate_protocol_version
from samza_nb.coordination.zk.task_locality import ZkTaskLocality
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import ContainerModel, JobModel, SystemStreamPartition, TaskModel

pytestmark = pytest.mark.services


def _model(processors: int) -> JobModel:
    containers = [
        ContainerModel(
            f"p{i}",
            [TaskModel(f"Partition {i}", [SystemStreamPartition("embedded", "in", i)], i)],
            location_id="host-a",
        )
        for i in range(processors)
    ]
    return JobModel({}, containers)


def test_next_version_after_a_published_one(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    versions = JobModelVersions(zk, keys)
    versions.ensure_nodes()
    assert versions.current() == (None, 0)
    assert versions.next_version(None) == "1"
    versions.write("1", _model(1))
    versions.publish("1", versions.current()[1])
    versions.write("2", _model(2))  # published by a leader that died before the CAS
    current, _ = versions.current()
    assert current == "1"
    assert versions.next_version(current) == "3"


def test_models_round_trip_and_publish_is_compare_and_set(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    versions = JobModelVersions(zk, keys)
    versions.ensure_nodes()
    versions.write("1", _model(3))
    assert versions.read("1") == _model(3)
    assert zk.children(keys.job_model("1")) == ["0"]  # jobModels/<version>/<segment>
    _, stat = versions.current()
    versions.publish("1", stat)
    with pytest.raises(CoordinationError, match="changed by someone else"):
        versions.publish("2", stat)
    versions.set_active("1")
    assert versions.active() == "1"
    versions.set_active("12")
    # A deposed leader resuming with an older barrier's DONE does not move it back.
    versions.set_active("3")
    assert versions.active() == "12"
    with pytest.raises(CoordinationError, match="version 9 is missing"):
        versions.read("9")


def test_cleanup_keeps_the_newest_models_and_barriers(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    versions = JobModelVersions(zk, keys)
    versions.ensure_nodes()
    for version in range(101, 110):
        versions.write(str(version), _model(1))
    assert versions.cleanup(5) == ["101", "102", "103", "104"]
    assert sorted(zk.children(keys.job_models) or [], key=int) == ["105", "106", "107", "108", "109"]

    barrier = VersionBarrier(zk, keys)
    for version in range(200, 210):
        barrier.create(str(version), ["p1"])
    barrier.cleanup(5)
    assert sorted(zk.children(keys.barriers) or []) == [f"barrier_{v}" for v in range(205, 210)]


def test_barrier_done_when_all_join(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    barrier = VersionBarrier(zk, keys)
    barrier.create("1", ["p1", "p2"])
    assert barrier.state("1") == NEW
    seen: list[str] = []
    settled = threading.Event()
    barrier.watch_state("1", lambda state: (seen.append(state), settled.set()))
    barrier.join("1", "p1")
    assert barrier.try_complete("1") == NEW
    barrier.join("1", "p2")
    assert barrier.try_complete("1") == DONE
    assert barrier.participants("1") == ["p1", "p2"]
    assert settled.wait(5)
    assert seen == [DONE]
    assert barrier.expire("1") == DONE  # expiring a DONE barrier leaves DONE


def test_barrier_times_out_and_a_late_join_does_not_change_it(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    barrier = VersionBarrier(zk, keys)
    barrier.create("1", ["p1", "p2", "p3"])
    barrier.join("1", "p1")
    barrier.join("1", "p2")
    assert barrier.expire("1") == TIMED_OUT
    barrier.join("1", "p3")
    assert barrier.try_complete("1") == TIMED_OUT
    assert barrier.state("1") == TIMED_OUT


def test_protocol_version_node(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    validate_protocol_version(zk, keys)
    assert zk.get(keys.root)[0] == b"1.0"  # type: ignore[index]
    zk.set(keys.root, b"")
    validate_protocol_version(zk, keys)  # no data: set to 1.0
    assert zk.get(keys.root)[0] == b"1.0"  # type: ignore[index]
    zk.set(keys.root, b"0.9")
    with pytest.raises(CoordinationError, match="ZK protocol mismatch.*'0.9'"):
        validate_protocol_version(zk, keys)


def test_task_locality_round_trip_with_odd_task_names(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    locality = ZkTaskLocality(zk, keys)
    assert locality.read() == {}
    mapping = {"Partition 0": "host-a", "SystemStreamPartition [kafka, a/b, 0]": "rack-1/host-b"}
    locality.write(mapping)
    assert locality.read() == mapping
    locality.write({"Partition 0": "host-c"})
    assert locality.read()["Partition 0"] == "host-c"
