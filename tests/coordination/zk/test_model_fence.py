"""Commits of a ZooKeeper processor are checked against its live session and the job model it
works on (issue #14): once a model that moves its active tasks is activated, a processor still
on its old model commits nothing; a newer model that leaves its tasks where they are does not
fence it (processors whose assignment did not change keep working through a rebalance); a
model that moves them away and a later one that gives them back still fence it."""

from __future__ import annotations

import pytest

from samza_nb.coordination.zk import ZkJobCoordinator, ZkKeyBuilder
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.errors import JobLeaseError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.metadata.zookeeper import ZkMetadataStore

from .conftest import RecordingListener, calculator, job_config

pytestmark = pytest.mark.services


def test_commits_are_fenced_once_a_model_moving_the_processors_tasks_is_active(
    zk_connect: str, zk: ZkClient, keys: ZkKeyBuilder
) -> None:
    config = job_config(zk_connect)
    coordinator = ZkJobCoordinator(calculator(config), config)
    coordinator.attach("p1", "host-a", RecordingListener())
    coordinator.start()
    try:
        model = coordinator.wait_for_job_model(15)
        version = int(coordinator.job_model_version or "0")
        versions = JobModelVersions(zk, keys)
        with ZkMetadataStore(zk_connect, "/checkpoints", session_timeout=4) as checkpoints:
            checkpoints.put_all({"Partition 0": b"1"}, guard=coordinator.fence)

            # A newer active model that leaves p1's tasks with p1: its commits go on.
            versions.write(str(version + 1), model)
            versions.set_active(str(version + 1))
            checkpoints.put_all({"Partition 0": b"2"}, guard=coordinator.fence)

            # The active version node changes between the fence's read and the commit: the
            # transaction fails on its check and is built once more from fresh reads.
            bumps = []

            def racing(tx: object) -> None:
                coordinator.fence(tx)
                if not bumps:
                    bumps.append(zk.set(keys.active_job_model_version, str(version + 1).encode()))

            checkpoints.put_all({"Partition 0": b"3"}, guard=racing)
            assert bumps and checkpoints.get("Partition 0") == b"3"

            # A newer active model that moves p1's tasks to p9, which p1 never read: fenced.
            moved = model.replace(containers={"p9": model.containers["p1"].replace(processor_id="p9")})
            versions.write(str(version + 2), moved)
            versions.set_active(str(version + 2))
            with pytest.raises(JobLeaseError, match=rf"version {version + 2} moved its tasks"):
                checkpoints.put_all({"Partition 0": b"4"}, guard=coordinator.fence)
            assert checkpoints.get("Partition 0") == b"3"

            # A still newer model gives p1's tasks back (host affinity, once a processor frozen
            # past its session rejoined): p1, still on its old model, stays fenced, as p9 may
            # have worked on its tasks meanwhile.
            versions.write(str(version + 3), model)
            versions.set_active(str(version + 3))
            with pytest.raises(JobLeaseError, match=rf"version {version + 2} moved its tasks"):
                checkpoints.put_all({"Partition 0": b"5"}, guard=coordinator.fence)
            assert checkpoints.get("Partition 0") == b"3"
    finally:
        coordinator.stop()
