"""Standalone coordination through ZooKeeper (SAMZA.md §8): one module per idea.

``keys`` (the path layout), ``protocol`` (the version node), ``processors`` (registration and
duplicate ids), ``election`` (leader by predecessor watch), ``debounce`` (the reaction thread),
``job_models`` (versions and cleanup), ``leader`` (the leader's model generation), ``barrier``
(NEW → DONE / TIMED_OUT), ``task_locality``, ``lock``, ``run_id`` (one run id per deployment),
``lease`` (:class:`ZkJobLease`), ``partition_monitor``, and the parts of
:class:`ZkJobCoordinator`: ``leadership`` (election and the leader's rounds), ``agreement`` (a
processor's side of a version), ``sessions``, ``fencing`` (commits) and ``coordinator``.
Importing the package registers ``zookeeper`` as a ``job.coordinator.factory``.
"""

from samza_nb.coordination.zk.barrier import DONE, NEW, TIMED_OUT, VersionBarrier
from samza_nb.coordination.zk.coordinator import KEEP_JOB_MODELS, ZkJobCoordinator
from samza_nb.coordination.zk.factory import zookeeper_job_coordinator
from samza_nb.coordination.zk.job_models import JobModelVersions, next_job_model_version
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.coordination.zk.lease import ZkJobLease
from samza_nb.coordination.zk.lock import ZkDistributedLock
from samza_nb.coordination.zk.run_id import ZkRunIdGenerator

__all__ = [
    "DONE",
    "KEEP_JOB_MODELS",
    "NEW",
    "TIMED_OUT",
    "JobModelVersions",
    "VersionBarrier",
    "ZkDistributedLock",
    "ZkJobCoordinator",
    "ZkJobLease",
    "ZkKeyBuilder",
    "ZkRunIdGenerator",
    "next_job_model_version",
    "zookeeper_job_coordinator",
]
