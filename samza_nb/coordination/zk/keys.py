"""Where the ZooKeeper coordinator keeps what (SAMZA.md §8.1, Samza's ZkKeyBuilder).

The root is ``/<globalAppId>/<jobName>-<jobId>-2.0-coordinationData`` (jobName = the app
name, jobId = the app/job id); everything the coordinator writes lives below it:

============================================================= ==================================
``processors/<10-digit seq>``                                 ephemeral ``"<location> <id>"``
``jobModelGeneration/jobModelVersion``                        latest published version
``jobModelGeneration/activeJobModelVersion``                  last version that reached consensus
``jobModelGeneration/jobModels/<version>/<segment>``          job model JSON (ZkMetadataStore)
``jobModelGeneration/jobModelUpgradeBarrier/versionBarriers/
barrier_<version>/{barrier_state,barrier_participants/<id>}`` the barrier of one version
``taskLocality/<task>``                                       location id where the task last ran
``lock_<id>/…``                                               a distributed lock
``jobLease`` / ``jobLeaseGeneration``                         the job lease and its generation
============================================================= ==================================

Task names are encoded as node names the way the metadata store encodes keys, so a task name
with ``/`` does not break the layout (Samza's does, §8.6).
"""

from __future__ import annotations

from samza_nb.config import Config, app_name_and_id, global_app_id
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zookeeper import encode_key

__all__ = ["PATH_PROTOCOL_VERSION", "ZkKeyBuilder"]

#: The coordinator's path-layout constant (part of the root's name).
PATH_PROTOCOL_VERSION = "2.0"


class ZkKeyBuilder:
    """The paths of one job's coordination tree.

    >>> keys = ZkKeyBuilder.for_job(Config({"app.name": "pageviews", "job.id": "7"}))
    >>> keys.root
    '/app-pageviews-7/pageviews-7-2.0-coordinationData'
    >>> keys.barrier_state("3")
    '/app-pageviews-7/pageviews-7-2.0-coordinationData/jobModelGeneration/jobModelUpgradeBarrier/versionBarriers/barrier_3/barrier_state'
    """

    def __init__(self, prefix: str) -> None:
        if not isinstance(prefix, str) or not prefix.strip("/ "):
            msg = f"the ZooKeeper path prefix must not be empty, got {prefix!r}"
            raise CoordinationError(msg)
        self.root = "/" + prefix.strip("/")

    @classmethod
    def for_job(cls, config: Config) -> ZkKeyBuilder:
        name, job_id = app_name_and_id(config)
        return cls(f"{global_app_id(config)}/{name}-{job_id}-{PATH_PROTOCOL_VERSION}-coordinationData")

    def __repr__(self) -> str:
        return f"ZkKeyBuilder({self.root!r})"

    @property
    def processors(self) -> str:
        return f"{self.root}/processors"

    def processor(self, node: str) -> str:
        return f"{self.processors}/{node}"

    @property
    def job_model_generation(self) -> str:
        return f"{self.root}/jobModelGeneration"

    @property
    def job_model_version(self) -> str:
        return f"{self.job_model_generation}/jobModelVersion"

    @property
    def active_job_model_version(self) -> str:
        return f"{self.job_model_generation}/activeJobModelVersion"

    @property
    def job_models(self) -> str:
        return f"{self.job_model_generation}/jobModels"

    def job_model(self, version: str) -> str:
        return f"{self.job_models}/{version}"

    @property
    def barriers(self) -> str:
        return f"{self.job_model_generation}/jobModelUpgradeBarrier/versionBarriers"

    def barrier(self, version: str) -> str:
        return f"{self.barriers}/barrier_{version}"

    def barrier_state(self, version: str) -> str:
        return f"{self.barrier(version)}/barrier_state"

    def barrier_participants(self, version: str) -> str:
        return f"{self.barrier(version)}/barrier_participants"

    @property
    def task_locality(self) -> str:
        return f"{self.root}/taskLocality"

    def task_locality_of(self, task_name: str) -> str:
        return f"{self.task_locality}/{encode_key(task_name)}"

    def lock(self, lock_id: str) -> str:
        return f"{self.root}/lock_{encode_key(lock_id)}"

    @property
    def lease(self) -> str:
        return f"{self.root}/jobLease"

    @property
    def lease_generation(self) -> str:
        return f"{self.root}/jobLeaseGeneration"
