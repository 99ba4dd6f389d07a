"""The path layout (SAMZA.md §8.1)."""

from __future__ import annotations

import pytest

from samza_nb.config import Config
from samza_nb.coordination.zk import ZkKeyBuilder
from samza_nb.errors import CoordinationError


def test_root_from_global_app_id_job_name_and_id() -> None:
    keys = ZkKeyBuilder.for_job(Config({"app.name": "pv", "app.id": "3"}))
    assert keys.root == "/app-pv-3/pv-3-2.0-coordinationData"
    assert ZkKeyBuilder.for_job(Config({"job.name": "j"})).root == "/app-j-1/j-1-2.0-coordinationData"
    assert ZkKeyBuilder.for_job(Config()).root == "/app-defaultJob-1/defaultJob-1-2.0-coordinationData"


def test_every_node_under_the_root() -> None:
    keys = ZkKeyBuilder("app-a-1/a-1-2.0-coordinationData")
    root = "/app-a-1/a-1-2.0-coordinationData"
    assert keys.processors == f"{root}/processors"
    assert keys.processor("0000000003") == f"{root}/processors/0000000003"
    assert keys.job_model_version == f"{root}/jobModelGeneration/jobModelVersion"
    assert keys.active_job_model_version == f"{root}/jobModelGeneration/activeJobModelVersion"
    assert keys.job_model("7") == f"{root}/jobModelGeneration/jobModels/7"
    versions = f"{root}/jobModelGeneration/jobModelUpgradeBarrier/versionBarriers"
    assert keys.barrier("7") == f"{versions}/barrier_7"
    assert keys.barrier_state("7") == f"{versions}/barrier_7/barrier_state"
    assert keys.barrier_participants("7") == f"{versions}/barrier_7/barrier_participants"
    assert keys.task_locality_of("Partition 0") == f"{root}/taskLocality/Partition 0"
    assert keys.task_locality_of("a/b") == f"{root}/taskLocality/a%2Fb"
    assert keys.lock("run-id") == f"{root}/lock_run-id"


@pytest.mark.parametrize("prefix", ["", "  ", "/"])
def test_blank_prefix_is_an_error(prefix: str) -> None:
    with pytest.raises(CoordinationError, match="must not be empty"):
        ZkKeyBuilder(prefix)
