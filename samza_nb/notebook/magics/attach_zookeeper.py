"""``zookeeper://HOST:PORT[/chroot]``: attach to a job coordinated through ZooKeeper.

The observer reads the job's coordination tree (:class:`ZkJobObserver`); drains go to the job's
ZooKeeper metadata store (``/<globalAppId>/ApplicationRunnerData``), where the processors'
DrainMonitors look. Neither joins the job's group.
"""

from __future__ import annotations

from samza_nb.config import Config
from samza_nb.coordination.zk.observer import ZkJobObserver
from samza_nb.metadata.registry import get_metadata_store
from samza_nb.notebook.magics.attach_handle import AttachedJob
from samza_nb.notebook.magics.attach_schemes import AttachTarget

__all__ = ["open_zookeeper"]

#: How long ``%samza attach`` waits for a ZooKeeper session unless the config says otherwise.
_ATTACH_CONNECT_MS = 10_000


def open_zookeeper(target: AttachTarget, config: Config) -> AttachedJob:
    """The :class:`AttachedJob` of ``config``'s job at ``target.address`` (``host:port/chroot``)."""
    connect = target.address
    overrides = {"job.coordinator.zk.connect": connect}
    if "job.coordinator.zk.connection.timeout.ms" not in config:
        # An observer waits less than a processor for a server that is not there.
        overrides["job.coordinator.zk.connection.timeout.ms"] = str(_ATTACH_CONNECT_MS)
    config = config.with_overrides(overrides)
    observer = ZkJobObserver(connect, config)
    try:
        metadata = get_metadata_store("zookeeper", config, connect=connect)
    except BaseException:
        observer.close()
        raise
    name, job_id = config.get_str("app.name") or "", config.get_str("job.id") or "1"
    return AttachedJob(target.display, name, job_id, observer, metadata)
